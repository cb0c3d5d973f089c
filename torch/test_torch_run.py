"""torch/test_torch_run.py - the launcher, python3 -m coll_torch.run, run for real.

    PYTHONPATH=build/python /usr/bin/python3 torch/test_torch_run.py

Jobs through the launcher, each rank this same file ("rank" mode):
  - 2 ranks, and 3 ranks (torchrun's --nproc_per_node spelling,
    --standalone, then three times more: every rank ends by a plain
    interpreter exit, which must not abort), and two launchers as two
    nodes of one rank each: every
    rank checks torchrun's environment against the job's shape, joins
    init_process_group("coll") by env://, and all-reduces, gathers and
    compares with the plain sum of every rank's input;
  - rank 1 of 3 exits 3 while the others sleep: the launcher exits 3,
    names rank 1 and its code, and no rank is left;
  - a rank that kills itself with SIGKILL: named with the signal, 137;
  - SIGTERM and SIGINT to the launcher: every rank gets it (each says so
    in a file), a rank that ignores it is killed after --grace, the
    launcher exits 128 + the signal and no rank is left;
  - wrong options (an elastic --nnodes, a --node-rank past --nnodes) are
    refused with a message before anything starts.
Ends with "torch-run: N passed, N failed".
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
PY = sys.executable

passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL %s%s" % (what, ("\n  " + detail.replace("\n", "\n  ")) if detail else ""))
        sys.stdout.flush()


def launcher(args, tmp, **kw):
    """Starts the launcher on this file's rank mode; returns the Popen."""
    cmd = [PY, "-m", "coll_torch.run"] + args
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, TEST_DIR=tmp), **kw)


def finish(p, limit):
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += "\n(the launcher was still running after %d s: killed)" % limit
    return p.returncode, out, err


def rank_results(out):
    """The RESULT lines the ranks printed: (ranks that reported, passed, failed)."""
    n = a = b = 0
    for line in out.splitlines():
        if line.startswith("RESULT "):
            x, y = line.split()[1:3]
            n, a, b = n + 1, a + int(x), b + int(y)
    return n, a, b


def gone(pid):
    """The process is no more (or a zombie nobody has reaped yet)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def pids(tmp):
    got = {}
    for name in os.listdir(tmp):
        if name.startswith("pid-"):
            with open(os.path.join(tmp, name)) as f:
                got[int(name[4:])] = int(f.read())
    return got


def wait_for(pred, limit):
    t0 = time.time()
    while time.time() - t0 < limit:
        if pred():
            return True
        time.sleep(0.1)
    return False


def job_ok(name, args, world, tmp, extra=()):
    """A job that all-reduces; every launcher exits 0, every rank reports."""
    t0 = time.time()
    ps = [launcher(a + [HERE, "rank", "ok", str(world)], tmp) for a in ([args] + list(extra))]
    res = [finish(p, 120) for p in ps]
    n = a = b = 0
    for rc, out, err in res:
        check(rc == 0, "%s: the launcher exits 0 (it said %s)" % (name, rc), err[-3000:] + out[-2000:])
        k, x, y = rank_results(out)
        n, a, b = n + k, a + x, b + y
    global passed, failed
    passed += a
    failed += b
    check(n == world, "%s: %d of %d ranks reported" % (name, n, world),
          "\n".join(out[-2000:] + err[-2000:] for _, out, err in res))
    print("%-36s %5.1f s  (%d checks in the ranks, %d failed)" % (name, time.time() - t0, a + b, b))
    sys.stdout.flush()


def main():
    for need in ("torch", "coll_torch.run"):
        try:
            __import__(need)
        except ImportError as e:
            print("cannot import %s (%s): make torch, PYTHONPATH=build/python" % (need, e))
            print("torch-run: 0 passed, 1 failed")
            sys.exit(1)
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        job_ok("2 ranks", ["--nproc-per-node", "2", "--master-port", str(port)], 2, tmp)
        job_ok("3 ranks (--nproc_per_node, --standalone)", ["--nproc_per_node=3", "--standalone"], 3, tmp)
        port = free_port()
        node = ["--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", str(port)]
        job_ok("two nodes of one rank", node + ["--node-rank", "0"], 2, tmp, extra=[node + ["--node_rank=1"]])
        # ranks that end by a plain interpreter exit, as a user's script does: the
        # group's thread once dropped the last reference to a Python tensor
        # there, after finalization began, and about 1 job in 3 aborted
        for k in range(3):
            job_ok("3 ranks, plain exit, again (%d)" % (k + 1), ["--nproc-per-node", "3", "--standalone"], 3, tmp)

    # rank 1 of 3 exits 3 after an all-reduce; the others would sleep for 10 minutes
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        p = launcher(["--nproc-per-node", "3", "--standalone", "--grace", "2", HERE, "rank", "exit3", "3"], tmp)
        rc, out, err = finish(p, 120)
        took = time.time() - t0
        check(rc == 3, "a rank exits 3: the launcher exits 3 (it said %s)" % rc, err)
        check("rank 1 (local rank 1" in err and "exited with code 3" in err,
              "a rank exits 3: the launcher names rank 1 and code 3", err)
        check(took < 60, "a rank exits 3: the job ends in %.1f s, not at the others' sleep" % took)
        ps = pids(tmp)
        check(len(ps) == 3 and all(gone(x) for x in ps.values()),
              "a rank exits 3: no rank is left (%s)" % {r: gone(x) for r, x in ps.items()})
        check(not any(n.startswith("slept-") for n in os.listdir(tmp)), "a rank exits 3: the others never woke")
        print("%-36s %5.1f s" % ("rank 1 of 3 exits 3", took))

    # a rank that dies of a signal
    with tempfile.TemporaryDirectory() as tmp:
        p = launcher(["--nproc-per-node", "2", "--grace", "2", HERE, "rank", "sigkill", "2"], tmp)
        rc, out, err = finish(p, 60)
        check(rc == 128 + 9, "a rank killed by SIGKILL: the launcher exits 137 (it said %s)" % rc, err)
        check("rank 0 (local rank 0" in err and "SIGKILL" in err, "a rank killed by SIGKILL is named, with the signal",
              err)
        ps = pids(tmp)
        check(len(ps) == 2 and all(gone(x) for x in ps.values()), "a rank killed by SIGKILL: no rank is left")

    # signals to the launcher: every rank hears it; rank 1 ignores it and is killed after the grace
    for sig in (signal.SIGTERM, signal.SIGINT):
        with tempfile.TemporaryDirectory() as tmp:
            p = launcher(["--nproc-per-node", "3", "--grace", "1", HERE, "rank", "sleep", "3"], tmp)
            up = wait_for(lambda: len([n for n in os.listdir(tmp) if n.startswith("ready-")]) == 3, 60)
            check(up, "%s: all 3 ranks started" % sig.name)
            t0 = time.time()
            p.send_signal(sig)
            rc, out, err = finish(p, 30)
            took = time.time() - t0
            heard = sorted(int(n[6:]) for n in os.listdir(tmp) if n.startswith("heard-"))
            check(rc == 128 + sig, "%s to the launcher: it exits %d (it said %s)" % (sig.name, 128 + sig, rc), err)
            check(heard == [0, 1, 2], "%s to the launcher reaches every rank (%s did)" % (sig.name, heard), err)
            ps = pids(tmp)
            check(len(ps) == 3 and all(gone(x) for x in ps.values()),
                  "%s: no rank is left (%s)" % (sig.name, {r: gone(x) for r, x in ps.items()}))
            check("rank 1 still running" in err and "killing" in err,
                  "%s: the rank that ignores it is killed after --grace, and the launcher says so" % sig.name, err)
            check(took < 15, "%s: the job ends in %.1f s" % (sig.name, took))
            print("%-36s %5.1f s" % ("%s to the launcher" % sig.name, took))

    # wrong options: refused before any rank starts
    with tempfile.TemporaryDirectory() as tmp:
        for args, words in ((["--nnodes", "1:2"], "elastic"), (["--nnodes", "2", "--node-rank", "2"], "--node-rank 2"),
                            (["--nproc-per-node", "0"], "at least 1")):
            p = launcher(args + [HERE, "rank", "ok", "1"], tmp)
            rc, out, err = finish(p, 60)
            check(rc == 2 and words in err and not pids(tmp), "%s is refused (%s): %s" % (" ".join(args), words, rc),
                  err)

    print("torch-run: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- a rank -----------------------------------------------------------------------


def rank_main(mode, world):
    tmp = os.environ["TEST_DIR"]
    rank = int(os.environ.get("RANK", "-1"))
    with open(os.path.join(tmp, "pid-%d" % rank), "w") as f:
        f.write(str(os.getpid()))
    if mode == "sleep":
        # signals only: no torch, so the ranks are up in a moment
        def heard(sig, _frame):
            open(os.path.join(tmp, "heard-%d" % rank), "w").close()
            if rank != 1:                 # rank 1 goes on sleeping: the launcher must kill it
                os._exit(0)
        signal.signal(signal.SIGTERM, heard)
        signal.signal(signal.SIGINT, heard)
        open(os.path.join(tmp, "ready-%d" % rank), "w").close()
        for _ in range(600):
            time.sleep(1)
        os._exit(0)
    if mode == "sigkill":
        if rank == 0:
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(600)
        os._exit(0)

    import torch
    import torch.distributed as dist
    import coll_torch  # noqa: F401

    ok = bad = 0

    def c(cond, what):
        nonlocal ok, bad
        if cond:
            ok += 1
        else:
            bad += 1
            print("FAIL rank %d: %s" % (rank, what))

    e = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                                        "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR",
                                        "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID")}
    c(all(v is not None for v in e.values()), "torchrun's variables are all set: %s" % e)
    lr, lw, g, gw = (int(e[k]) for k in ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE"))
    c(int(e["WORLD_SIZE"]) == world and lw * gw == world, "WORLD_SIZE %s = %d x %d = %d" % (e["WORLD_SIZE"], lw, gw,
                                                                                            world))
    c(rank == g * lw + lr and 0 <= lr < lw and 0 <= g < gw, "RANK %d = GROUP_RANK %d x %d + LOCAL_RANK %d"
      % (rank, g, lw, lr))
    c(e["ROLE_RANK"] == e["RANK"] and e["ROLE_WORLD_SIZE"] == e["WORLD_SIZE"], "ROLE_RANK, ROLE_WORLD_SIZE")
    c(e["TORCHELASTIC_RESTART_COUNT"] == "0", "TORCHELASTIC_RESTART_COUNT is 0")
    c(os.environ.get("OMP_NUM_THREADS") == ("1" if lw > 1 else os.environ.get("OMP_NUM_THREADS")),
      "OMP_NUM_THREADS is 1 with more than one rank on a node")

    dist.init_process_group("coll")
    c(dist.get_rank() == rank and dist.get_world_size() == world, "init_process_group by env://: rank %d of %d"
      % (dist.get_rank(), dist.get_world_size()))
    n = 1000
    x = (torch.arange(n, dtype=torch.float64) * (rank + 1)) % 7
    want = sum((torch.arange(n, dtype=torch.float64) * (r + 1)) % 7 for r in range(world))
    dist.all_reduce(x)
    c(torch.equal(x, want), "all_reduce against the plain sum of every rank's input")
    who = [torch.zeros(3, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(who, torch.tensor([rank, lr, g]))
    c(all(who[r].tolist() == [r, r % lw, r // lw] for r in range(world)),
      "every rank's (RANK, LOCAL_RANK, GROUP_RANK) as the job's shape says: %s" % [w.tolist() for w in who])
    if mode == "exit3":
        dist.barrier()
        if rank == 1:
            print("RESULT %d %d" % (ok, bad))
            sys.stdout.flush()
            os._exit(3)
        time.sleep(600)
        open(os.path.join(tmp, "slept-%d" % rank), "w").close()
    dist.destroy_process_group()
    print("RESULT %d %d" % (ok, bad))
    sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "rank":
        rank_main(sys.argv[2], int(sys.argv[3]))
    else:
        main()
