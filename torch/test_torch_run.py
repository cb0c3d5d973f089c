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


def launcher(args, tmp, env=None, **kw):
    """Starts the launcher on this file's rank mode; returns the Popen."""
    cmd = [PY, "-m", "coll_torch.run"] + args
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, TEST_DIR=tmp, **(env or {})), **kw)


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
    import re
    n = a = b = 0
    # (two ranks' lines may run together: "RESULT 9 0RESULT 9 0")
    for x, y in re.findall(r"RESULT (\d+) (\d+?)(?=RESULT|\s|$)", out):
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


def job_ok(name, args, world, tmp, extra=(), mode="ok", envs=None):
    """A job that all-reduces; every launcher exits 0, every rank reports.
    envs: each launcher's extra environment."""
    t0 = time.time()
    launches = [args] + list(extra)
    envs = envs or [None] * len(launches)
    ps = [launcher(a + [HERE, "rank", mode, str(world)], tmp, env=e) for a, e in zip(launches, envs)]
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
        # two "hosts" of two ranks on this machine, told apart by COLL_HOST_ID:
        # the hosts port and coll_hier's phases, results against plain Python
        port = free_port()
        node = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(port)]
        job_ok("two hosts of two ranks (coll_hier)", node + ["--node-rank", "0"], 4, tmp,
               extra=[node + ["--node-rank", "1"]], mode="hier",
               envs=[{"COLL_HOST_ID": "test-host-a"}, {"COLL_HOST_ID": "test-host-b"}])
        # the flight recorder: rank 1 stops calling past the 2 s timeout
        job_ok("a rank that stops calling (recorder)", ["--nproc-per-node", "2", "--standalone"], 2, tmp,
               mode="record", envs=[{"COLL_TORCH_RECORD": os.path.join(tmp, "record-%r.txt")}])
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

    if mode == "record":
        record_main(rank, world, c, tmp)
        print("RESULT %d %d" % (ok, bad))
        sys.stdout.flush()
        os._exit(0)
    dist.init_process_group("coll")
    c(dist.get_rank() == rank and dist.get_world_size() == world, "init_process_group by env://: rank %d of %d"
      % (dist.get_rank(), dist.get_world_size()))
    pg = dist.distributed_c10d._get_default_group()
    c(pg.port() == ("hosts" if world > lw else "shm"), "port %s for %d nodes of %d ranks" % (pg.port(), gw, lw))
    n = 1000
    x = (torch.arange(n, dtype=torch.float64) * (rank + 1)) % 7
    want = sum((torch.arange(n, dtype=torch.float64) * (r + 1)) % 7 for r in range(world))
    dist.all_reduce(x)
    c(torch.equal(x, want), "all_reduce against the plain sum of every rank's input")
    who = [torch.zeros(3, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(who, torch.tensor([rank, lr, g]))
    c(all(who[r].tolist() == [r, r % lw, r // lw] for r in range(world)),
      "every rank's (RANK, LOCAL_RANK, GROUP_RANK) as the job's shape says: %s" % [w.tolist() for w in who])
    if mode == "hier":
        hier_checks(rank, world, lw, c)
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


def hier_checks(rank, world, lw, c):
    """Two hosts by COLL_HOST_ID: every collective against plain Python, each
    through coll_hier's phases (the group's road() says which it took)."""
    import torch
    import torch.distributed as dist
    pg = dist.distributed_c10d._get_default_group()
    c(pg.hosts() == world // lw, "the hosts port learned %d hosts, %d expected" % (pg.hosts(), world // lw))

    def road(what):
        c(pg.road() == "phases", "%s took coll_hier's phases, not %s" % (what, pg.road()))

    def val(r, i):                 # rank r's element i: small integers, exact in float32 sums
        return float((i * (r + 3) + r) % 11)
    for n in (1, 37, 100000):
        x = torch.tensor([val(rank, i) for i in range(n)], dtype=torch.float32)
        dist.all_reduce(x)
        road("all_reduce of %d" % n)
        want = [sum(val(r, i) for r in range(world)) for i in range(n)]
        c(x.tolist() == want, "all_reduce (sum) of %d float32 against plain Python" % n)
    x = torch.tensor([rank * 10 + i for i in range(5)], dtype=torch.int64)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    road("all_reduce max")
    c(x.tolist() == [(world - 1) * 10 + i for i in range(5)], "all_reduce (max) of int64: %s" % x.tolist())
    for root in range(world):
        x = torch.tensor([float(rank * 100 + i) for i in range(1000)]) if rank == root else torch.zeros(1000)
        dist.broadcast(x, src=root)
        road("broadcast from %d" % root)
        c(x.tolist() == [float(root * 100 + i) for i in range(1000)], "broadcast from rank %d" % root)
    for n in (1, 300):
        out = [torch.zeros(n, dtype=torch.int32) for _ in range(world)]
        dist.all_gather(out, torch.tensor([rank * 1000 + i for i in range(n)], dtype=torch.int32))
        road("all_gather of %d" % n)
        c(all(out[r].tolist() == [r * 1000 + i for i in range(n)] for r in range(world)),
          "all_gather of %d int32 in rank order" % n)
    for n in (1, 250):
        ins = [torch.tensor([val(rank, j * n + i) for i in range(n)], dtype=torch.float64) for j in range(world)]
        out = torch.zeros(n, dtype=torch.float64)
        dist.reduce_scatter(out, ins)
        road("reduce_scatter of %d" % n)
        want = [sum(val(r, rank * n + i) for r in range(world)) for i in range(n)]
        c(out.tolist() == want, "reduce_scatter (sum) of %d float64: this rank's block" % n)
    dist.barrier()
    road("barrier")
    c(pg.roads().get("phases", 0) >= 14, "collectives by road: %s" % pg.roads())


def record_main(rank, world, c, tmp):
    """The flight recorder: three calls, then rank 1 sleeps past the group's
    2 s timeout; rank 0's fourth call must raise naming rank 1 and the call,
    and COLL_TORCH_RECORD (%r: the rank) must hold the calls made."""
    import datetime
    import torch
    import torch.distributed as dist
    dist.init_process_group("coll", timeout=datetime.timedelta(seconds=2))
    x = torch.ones(16)
    dist.all_reduce(x)
    dist.broadcast(x, src=1)
    dist.all_reduce(x)
    c(x.tolist() == [4.0] * 16, "three calls before the stop: %s" % x.tolist()[:2])
    t0 = time.time()
    err = ""
    try:
        if rank == 1:
            time.sleep(4)
        dist.all_reduce(x)
    except RuntimeError as e:
        err = str(e)
    took = time.time() - t0
    if rank == 0:
        c("COLL_ERR_TIMEOUT" in err and "rank 1" in err and "call 4" in err,
          "rank 0's fourth call raises a timeout naming rank 1 and call 4: %r" % err)
        c(1.5 < took < 4, "it raises at the 2 s timeout: %.2f s" % took)
        path = os.path.join(tmp, "record-0.txt")
        c(path in err, "the message names the record file: %r" % err)
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            text = ""
            c(False, "the record file %s: %s" % (path, e))
        lines = [ln for ln in text.splitlines() if ln.startswith("call ")]
        kinds = [ln.split()[2] for ln in lines]
        c(kinds == ["allreduce", "broadcast", "allreduce", "allreduce"],
          "the record's calls: %s\n%s" % (kinds, text))
        c(len(lines) == 4 and " result 0 " in lines[2] and " result -110 " in lines[3] and " peer 1 " in lines[3],
          "calls 1-3 ok, call 4 timed out waiting for peer 1:\n%s" % text)
        c("COLL_ERR_TIMEOUT" in text.splitlines()[1], "the record's header carries the error: %s" % text[:300])
        c(pg_record() == text[text.index("# world"):], "the group's record() is the file's text after its header")
    else:
        c(err != "", "rank 1's call after its sleep raises too (the port was aborted): %r" % err)
        c(os.path.exists(os.path.join(tmp, "record-1.txt")), "rank 1 wrote its record too")


def pg_record():
    import torch.distributed as dist
    return dist.distributed_c10d._get_default_group().record()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "rank":
        rank_main(sys.argv[2], int(sys.argv[3]))
    else:
        main()
