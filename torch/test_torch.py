"""torch/test_torch.py - the "coll" torch.distributed backend, run for real.

    PYTHONPATH=build/python /usr/bin/python3 torch/test_torch.py

Starts its own processes (torchrun is not used: Debian's fails on Python
3.11), several runs of 2, 3 and 4 ranks, by env:// and tcp://, over the shm
port and the TCP port. In each, every rank checks every operation the
backend has, over every dtype coll reduces, against a plain-loop reference
computed from all ranks' inputs, which every rank can rebuild; then the
torch seed's own naive and ring all-reduce; a DDP training loop against the
same loop over gloo; and wrong calls, which must raise on every rank (and
leave the group usable where coll says so). Ends with
"torch: N passed, N failed".
"""
import datetime
import os
import socket
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# ---- the launcher -------------------------------------------------------------


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def launch(name, p, mode, init="env", env_per_rank=None, env=None, limit=150):
    """Runs p ranks of this file's worker; returns (passed, failed)."""
    port = free_port()
    procs = []
    t0 = time.time()
    for r in range(p):
        e = dict(os.environ)
        e.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(r), "WORLD_SIZE": str(p),
                  "PYTHONPATH": os.pathsep.join([x for x in (os.environ.get("PYTHONPATH"), ) if x] +
                                                [os.path.join(ROOT, "build", "python")])})
        e.update(env or {})
        if env_per_rank:
            e.update(env_per_rank[r])
        cmd = [sys.executable, os.path.abspath(__file__), "worker", mode, init]
        if e.pop("TEST_OTHER_SHM", None):
            # another "host" as far as shared memory goes: its own /dev/shm
            cmd = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"', "sh"] + cmd
        procs.append(subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    passed = failed = 0
    outs = []
    for r, pr in enumerate(procs):
        try:
            out, _ = pr.communicate(timeout=max(1, limit - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = pr.communicate()
            out += "\nKILLED after %d s" % limit
        outs.append(out)
        ok = False
        for line in out.splitlines():
            if line.startswith("RESULT "):
                a, b = line.split()[1:3]
                passed += int(a)
                failed += int(b)
                ok = True
        if not ok or pr.returncode != 0:
            failed += 1
    print("%-34s %d ranks %5.1f s  %d passed, %d failed" % (name, p, time.time() - t0, passed, failed))
    if failed:
        for r, out in enumerate(outs):
            lines = [l for l in out.splitlines() if not l.startswith("RESULT ")]
            print("  --- rank %d ---\n  " % r + "\n  ".join(lines[-40:]))
    sys.stdout.flush()
    return passed, failed


def main():
    runs = [
        ("shm, env://, everything", 2, "full", "env", None, None),
        ("shm, tcp://, everything", 4, "full", "tcp", None, None),
        ("tcp port (forced), env://", 3, "full", "env", None, {"COLL_TORCH_PORT": "tcp"}),
    ]
    # Two "hosts" of two ranks (COLL_HOST_ID): the hosts port, every
    # collective through coll_hier (its phases where they apply)
    two_hosts = [{"COLL_HOST_ID": h} for h in ("a", "a", "b", "b")]
    runs.append(("two hosts (COLL_HOST_ID), coll_hier", 4, "hosts", "env", two_hosts, {"TEST_WANT_PORT": "hosts"}))
    # The newer checks over the same two hosts: refusals (AVG of bool,
    # PREMUL_SUM) on every rank, then calls on the same group
    runs.append(("two hosts, the newer checks", 4, "new", "env", two_hosts, {"TEST_WANT_PORT": "hosts"}))
    two_hosts_new = runs[-1]
    # A rank with a /dev/shm of its own (a private mount: root only) cannot
    # share memory with the others: it is another host, by itself.
    if os.geteuid() == 0 and subprocess.run(["unshare", "-m", "true"]).returncode == 0:
        runs.append(("other /dev/shm: hosts picked", 2, "small", "env", [{}, {"TEST_OTHER_SHM": "1"}],
                     {"TEST_WANT_PORT": "hosts"}))
    else:
        print("(not root: the run with a private /dev/shm is left out)")
    # the last of 3 ranks started with WORLD_SIZE=4: every rank raises at
    # once, naming the sizes, instead of waiting for a fourth rank
    runs.append(("a rank with another WORLD_SIZE", 3, "worldsize", "env", [{}, {}, {"WORLD_SIZE": "4"}], None))
    if "quick" in sys.argv[1:]:
        runs = runs[:1]
    if "new" in sys.argv[1:]:
        runs = [("shm, env://, the newer checks", 2, "new", "env", None, None),
                ("tcp port (forced), the newer checks", 3, "new", "env", None, {"COLL_TORCH_PORT": "tcp"}),
                two_hosts_new, runs[-1]]
    tp = tf = 0
    for name, p, mode, init, per, env in runs:
        a, b = launch(name, p, mode, init, per, env)
        tp += a
        tf += b
    print("torch: %d passed, %d failed" % (tp, tf))
    sys.exit(1 if tf else 0)


# ---- the worker ------------------------------------------------------------------

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL rank %s: %s" % (os.environ.get("RANK"), what))
        sys.stdout.flush()


def raises(fn, *words):
    """fn() raises RuntimeError whose text has every word; the text or None."""
    try:
        w = fn()
        if w is not None and hasattr(w, "wait"):
            w.wait()
    except RuntimeError as e:
        text = str(e)
        return text if all(x in text for x in words) else None
    return None


def worker(mode, init):
    import torch
    import torch.distributed as dist
    import coll_torch  # noqa: F401  (registers "coll")

    rank, p = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    url = "env://" if init == "env" else "tcp://127.0.0.1:%s" % os.environ["MASTER_PORT"]

    if mode == "worldsize":
        t0 = time.time()
        t = raises(lambda: dist.init_process_group("coll", init_method=url, rank=rank, world_size=p,
                                                   timeout=datetime.timedelta(seconds=60)),
                   "disagree on the group's size (WORLD_SIZE)", "on rank")
        check(t is not None and time.time() - t0 < 20, "WORLD_SIZE %d here, 4 or 3 elsewhere: init raises in %.1f s "
              "naming it (%s)" % (p, time.time() - t0, t))
        return
    dist.init_process_group("coll", init_method=url, rank=rank, world_size=p,
                            timeout=datetime.timedelta(seconds=60))
    pg = dist.distributed_c10d._get_default_group()
    want_port = os.environ.get("TEST_WANT_PORT", os.environ.get("COLL_TORCH_PORT", "shm"))
    check(pg.port() == want_port, "port %s picked, %s expected" % (pg.port(), want_port))
    check(dist.get_backend() == "coll", "get_backend() says coll")

    t0 = time.time()
    if mode == "small":
        for n in (1, 1000, 300000):
            x = value(torch, rank, n, torch.float32)
            dist.all_reduce(x)
            check(torch.equal(x, reference(torch, [value(torch, r, n, torch.float32) for r in range(p)], "sum")),
                  "all_reduce n=%d" % n)
        p2p(torch, dist, rank, p)
        seed(torch, dist, rank, p)
        # the last rank dies: the others raise promptly, and can still shut down
        dist.barrier()
        if rank == p - 1:
            print("RESULT %d %d" % (passed, failed))
            sys.stdout.flush()
            os._exit(0)
        t0 = time.time()
        t = raises(lambda: dist.all_reduce(torch.ones(100)), "COLL_ERR")
        check(t is not None and time.time() - t0 < 10, "a dead peer: all_reduce raises in %.2f s (%s)"
              % (time.time() - t0, t))
        dist.destroy_process_group()
        return
    if mode == "hosts":
        check(pg.hosts() == 2, "two hosts learned (%d)" % pg.hosts())
        ops_matrix(torch, dist, rank, p)
        p2p(torch, dist, rank, p)
        seed(torch, dist, rank, p)
        ddp(torch, dist, rank, p)
        roads = pg.roads()
        check(roads.get("phases", 0) > 100 and set(roads) <= {"phases", "byhost", "world"},
              "collectives by road: %s" % roads)
        print("rank %d: checks took %.1f s; roads %s" % (rank, time.time() - t0, roads))
        dist.destroy_process_group()
        return
    if mode == "new":
        more_ops(torch, dist, rank, p)
        dtype_calls(torch, dist, rank, p)
        if pg.port() == "hosts":
            hier_refusals(torch, dist, rank, p)
        print("rank %d: checks took %.1f s" % (rank, time.time() - t0))
        dist.destroy_process_group()
        return
    ops_matrix(torch, dist, rank, p)
    more_ops(torch, dist, rank, p)
    p2p(torch, dist, rank, p)
    seed(torch, dist, rank, p)
    ddp(torch, dist, rank, p)
    wrong_calls(torch, dist, rank, p)
    dtype_calls(torch, dist, rank, p)
    print("rank %d: checks took %.1f s" % (rank, time.time() - t0))
    dist.destroy_process_group()


DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64"]


def value(torch, r, n, dtype, salt=0):
    """Rank r's input: small whole numbers, exact in every dtype and sum."""
    i = torch.arange(n, dtype=torch.int64)
    v = (i * 7 + r * 3 + salt) % 5 + 1
    if dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.float32, torch.float64, torch.float16, torch.bfloat16):
        v = torch.where(i % 3 == 0, -v, v)
    return v.to(dtype)


def reference(torch, xs, op):
    """The plain loop: fold the ranks' inputs in rank order."""
    acc = xs[0].clone()
    for x in xs[1:]:
        if op == "sum" or op == "avg":
            acc = acc + x
        elif op == "product":
            acc = acc * x
        elif op == "min":
            acc = torch.minimum(acc, x)
        elif op == "max":
            acc = torch.maximum(acc, x)
        elif op == "band":
            acc = acc & x
        elif op == "bor":
            acc = acc | x
        elif op == "bxor":
            acc = acc ^ x
    if op == "avg":
        acc = (acc.double() / len(xs)).to(xs[0].dtype)
    return acc


def ops_matrix(torch, dist, rank, p):
    R = dist.ReduceOp
    for name in DTYPES:
        dt = getattr(torch, name)
        is_int = not dt.is_floating_point
        ops = ["sum", "product", "min", "max"] + (["band", "bor", "bxor"] if is_int else ["avg"])
        for n in (1, 7, 1000, 70001 if name == "float32" else 300):
            xs = [value(torch, r, n, dt) for r in range(p)]
            tag = "%s n=%d" % (name, n)
            for op in ops:
                x = xs[rank].clone()
                dist.all_reduce(x, op=getattr(R, op.upper()))
                check(torch.equal(x, reference(torch, xs, op)), "all_reduce %s %s" % (op, tag))
            # reduce: the root gets the result, the others keep their input
            root = p - 1
            for op in ("sum", "max"):
                x = xs[rank].clone()
                dist.reduce(x, dst=root, op=getattr(R, op.upper()))
                want = reference(torch, xs, op) if rank == root else xs[rank]
                check(torch.equal(x, want), "reduce %s root %d %s" % (op, root, tag))
            # broadcast from each root in turn
            for root in range(p):
                x = xs[rank].clone()
                dist.broadcast(x, src=root)
                check(torch.equal(x, xs[root]), "broadcast root %d %s" % (root, tag))
            # all-gather, list and tensor forms
            out = [torch.zeros(n, dtype=dt) for _ in range(p)]
            dist.all_gather(out, xs[rank])
            check(all(torch.equal(out[r], xs[r]) for r in range(p)), "all_gather %s" % tag)
            flat = torch.zeros(n * p, dtype=dt)
            dist.all_gather_into_tensor(flat, xs[rank])
            check(torch.equal(flat, torch.cat(xs)), "all_gather_into_tensor %s" % tag)
            # reduce-scatter, list and tensor forms: block j of rank r's input is value(r, n, salt=j)
            blocks = [[value(torch, r, n, dt, salt=j) for j in range(p)] for r in range(p)]
            want = reference(torch, [blocks[r][rank] for r in range(p)], "sum")
            out = torch.zeros(n, dtype=dt)
            dist.reduce_scatter(out, [b.clone() for b in blocks[rank]])
            check(torch.equal(out, want), "reduce_scatter %s" % tag)
            out = torch.zeros(n, dtype=dt)
            dist.reduce_scatter_tensor(out, torch.cat(blocks[rank]))
            check(torch.equal(out, want), "reduce_scatter_tensor %s" % tag)
            out = torch.zeros(n, dtype=dt)
            dist.reduce_scatter_tensor(out, torch.cat(blocks[rank]), op=R.MAX)
            check(torch.equal(out, reference(torch, [blocks[r][rank] for r in range(p)], "max")),
                  "reduce_scatter_tensor max %s" % tag)
            # gather and scatter, root 0 and the last rank
            for root in (0, p - 1):
                out = [torch.zeros(n, dtype=dt) for _ in range(p)] if rank == root else None
                dist.gather(xs[rank], gather_list=out, dst=root)
                if rank == root:
                    check(all(torch.equal(out[r], xs[r]) for r in range(p)), "gather root %d %s" % (root, tag))
                out = torch.zeros(n, dtype=dt)
                dist.scatter(out, scatter_list=[b.clone() for b in blocks[root]] if rank == root else None, src=root)
                check(torch.equal(out, blocks[root][rank]), "scatter root %d %s" % (root, tag))
            # all-to-all: equal blocks, then split sizes (rank r sends r+j+1 rows to j)
            a = torch.cat(blocks[rank])
            out = torch.zeros_like(a)
            dist.all_to_all_single(out, a)
            check(torch.equal(out, torch.cat([blocks[r][rank] for r in range(p)])), "all_to_all_single %s" % tag)
            rows = lambda r, j: (r + j + 1) % 3          # noqa: E731 (some zero)
            ins = [torch.cat([value(torch, r, rows(r, j) * 2, dt, salt=j).view(-1, 2) for j in range(p)])
                   for r in range(p)]
            out = torch.zeros(sum(rows(r, rank) for r in range(p)), 2, dtype=dt)
            dist.all_to_all_single(out, ins[rank], output_split_sizes=[rows(r, rank) for r in range(p)],
                                   input_split_sizes=[rows(rank, j) for j in range(p)])
            want = torch.cat([value(torch, r, rows(r, rank) * 2, dt, salt=rank).view(-1, 2) for r in range(p)])
            check(torch.equal(out, want), "all_to_all_single with split sizes %s" % tag)
            outs = [torch.zeros(rows(r, rank) * 2, dtype=dt) for r in range(p)]
            dist.all_to_all(outs, [value(torch, rank, rows(rank, j) * 2, dt, salt=j) for j in range(p)])
            check(all(torch.equal(outs[r], value(torch, r, rows(r, rank) * 2, dt, salt=rank)) for r in range(p)),
                  "all_to_all (lists) %s" % tag)
    # dtypes coll cannot reduce still move: bool, int16, complex as bytes
    for dt in (torch.bool, torch.int16, torch.complex64):
        xs = [(torch.arange(10) * (r + 1) % 3).to(dt) for r in range(p)]
        x = xs[rank].clone()
        dist.broadcast(x, src=p - 1)
        check(torch.equal(x, xs[p - 1]), "broadcast %s" % dt)
        out = [torch.zeros(10, dtype=dt) for _ in range(p)]
        dist.all_gather(out, xs[rank])
        check(all(torch.equal(out[r], xs[r]) for r in range(p)), "all_gather %s" % dt)
    # coalesced all-reduce, object collectives, barrier
    ts = [value(torch, rank, 5, torch.float32), value(torch, rank, 3, torch.float32)]
    dist.all_reduce_coalesced(ts)
    check(torch.equal(ts[0], reference(torch, [value(torch, r, 5, torch.float32) for r in range(p)], "sum")) and
          torch.equal(ts[1], reference(torch, [value(torch, r, 3, torch.float32) for r in range(p)], "sum")),
          "all_reduce_coalesced")
    objs = [None] * p
    dist.all_gather_object(objs, {"rank": rank, "pad": "x" * rank * 50})
    check(objs == [{"rank": r, "pad": "x" * r * 50} for r in range(p)], "all_gather_object (uneven sizes)")
    dist.barrier()
    check(True, "barrier")
    # several in flight, in issue order; wait() and getFuture() agree
    works, xs = [], []
    for k in range(6):
        x = torch.full((4096,), float(rank + k))
        xs.append(x)
        works.append(dist.all_reduce(x, async_op=True))
    fut = works[-1].get_future()
    for k, w in enumerate(works):
        w.wait()
        check(torch.equal(xs[k], torch.full((4096,), float(sum(r + k for r in range(p))))), "async all_reduce %d" % k)
    v = fut.wait()
    check(isinstance(v, list) and torch.equal(v[0], xs[-1]), "getFuture() gives the result tensor")
    check(works[0].is_completed() and works[0].is_success(), "Work.is_completed / is_success")


def bool_reference(xs, op):
    """bool reductions as gloo does them (C++ bool arithmetic), element by element."""
    cols = list(zip(*[x.tolist() for x in xs]))
    if op in ("sum", "max", "bor"):
        f = any
    elif op in ("product", "min", "band"):
        f = all
    else:
        def f(c):
            return sum(c) % 2 == 1
    return [f(c) for c in cols]


def more_ops(torch, dist, rank, p):
    """What the matrix leaves out: bool and complex reductions, the copies
    of dtypes coll has no name for, ops torch 1.13 or this backend refuse
    (by their message), several kinds of call in flight at once, a subgroup
    of every other rank, irecv before isend."""
    R = dist.ReduceOp
    # bool: every op, all_reduce, reduce, reduce_scatter
    n = 37
    xs = [(torch.arange(n) * (r + 2)) % 3 == 0 for r in range(p)]
    for op in ("sum", "product", "min", "max", "band", "bor", "bxor"):
        x = xs[rank].clone()
        dist.all_reduce(x, op=getattr(R, op.upper()))
        check(x.dtype == torch.bool and x.tolist() == bool_reference(xs, op), "all_reduce %s of bool" % op)
    x = xs[rank].clone()
    dist.reduce(x, dst=p - 1, op=R.SUM)
    check(x.tolist() == (bool_reference(xs, "sum") if rank == p - 1 else xs[rank].tolist()), "reduce sum of bool")
    blocks = [[(torch.arange(n) + r + j) % 4 == 0 for j in range(p)] for r in range(p)]
    out = torch.zeros(n, dtype=torch.bool)
    dist.reduce_scatter(out, [b.clone() for b in blocks[rank]], op=R.MIN)
    check(out.tolist() == bool_reference([blocks[r][rank] for r in range(p)], "min"), "reduce_scatter min of bool")
    check(raises(lambda: dist.all_reduce(xs[rank].clone(), op=R.AVG), "bool") is not None,
          "all_reduce AVG of bool says why")
    # complex: torch reduces them as their real view (SUM, AVG); the others it refuses itself
    cs = [torch.complex((torch.arange(9.) + r) % 4, (torch.arange(9.) * r) % 3) for r in range(p)]
    x = cs[rank].clone()
    dist.all_reduce(x)
    check(x.dtype == torch.complex64 and x.tolist() == [sum(c) for c in zip(*[c.tolist() for c in cs])],
          "all_reduce sum of complex64")
    c128 = [c.to(torch.complex128) for c in cs]
    x = c128[rank].clone()
    dist.broadcast(x, src=p - 1)
    check(torch.equal(x, c128[p - 1]), "broadcast of complex128")
    check(raises(lambda: dist.all_reduce(cs[rank].clone(), op=R.MAX), "complex") is not None,
          "all_reduce MAX of complex raises (torch's own refusal)")
    # dtypes carried as bytes, through every copy: gather, scatter, all_to_all_single, all_gather_into_tensor
    for dt in (torch.bool, torch.int16):
        vs = [((torch.arange(4 * p) * (r + 1)) % 5).to(dt) for r in range(p)]
        root = p - 1
        got = [torch.zeros(4 * p, dtype=dt) for _ in range(p)] if rank == root else None
        dist.gather(vs[rank], gather_list=got, dst=root)
        if rank == root:
            check(all(torch.equal(got[r], vs[r]) for r in range(p)), "gather of %s" % dt)
        out = torch.zeros(4 * p, dtype=dt)
        dist.scatter(out, scatter_list=[v.clone() for v in vs] if rank == 0 else None, src=0)
        check(torch.equal(out, vs[rank]), "scatter of %s" % dt)
        out = torch.zeros(4 * p, dtype=dt)
        dist.all_to_all_single(out, vs[rank])
        check(torch.equal(out, torch.cat([vs[r][4 * rank:4 * rank + 4] for r in range(p)])),
              "all_to_all_single of %s" % dt)
        flat = torch.zeros(4 * p * p, dtype=dt)
        dist.all_gather_into_tensor(flat, vs[rank])
        check(torch.equal(flat, torch.cat(vs)), "all_gather_into_tensor of %s" % dt)
    # the underscore forms, as older code calls them
    flat = torch.zeros(3 * p)
    dist._all_gather_base(flat, torch.full((3,), float(rank)))
    check(flat.tolist() == [float(r) for r in range(p) for _ in range(3)], "_all_gather_base")
    out = torch.zeros(2)
    dist._reduce_scatter_base(out, torch.arange(2. * p) + rank)
    check(out.tolist() == [sum(2. * rank + k + r for r in range(p)) for k in range(2)], "_reduce_scatter_base")
    # refused with a message that says why
    premul = dist._make_nccl_premul_sum(2.0)
    check(raises(lambda: dist.all_reduce(torch.ones(3), op=premul), "PREMUL_SUM") is not None,
          "all_reduce PREMUL_SUM says it is not supported")
    check(raises(lambda: dist.monitored_barrier(), "only implemented for GLOO") is not None,
          "monitored_barrier raises torch 1.13's own message (gloo only)")
    x = torch.full((3,), float(rank))
    dist.all_reduce(x)
    check(x.tolist() == [float(sum(range(p)))] * 3, "the group works after the refusals")
    # every kind of collective in flight at once, then waited for in reverse
    a = torch.full((5,), float(rank + 1))
    b = torch.full((4,), float(rank * 10)) if rank == 0 else torch.zeros(4)
    g = [torch.zeros(2, dtype=torch.int64) for _ in range(p)]
    rs = torch.zeros(3)
    ta = torch.zeros(p)
    red = torch.full((2,), float(rank))
    gat = [torch.zeros(2) for _ in range(p)] if rank == 0 else None
    sc = torch.zeros(2)
    ws = [dist.all_reduce(a, async_op=True),
          dist.broadcast(b, src=0, async_op=True),
          dist.all_gather(g, torch.tensor([rank, -rank]), async_op=True),
          dist.reduce_scatter(rs, [torch.full((3,), float(rank + j)) for j in range(p)], async_op=True),
          dist.all_to_all_single(ta, torch.arange(p, dtype=torch.float32) + 100 * rank, async_op=True),
          dist.reduce(red, dst=0, op=R.MAX, async_op=True),
          dist.gather(torch.full((2,), float(rank)), gather_list=gat, dst=0, async_op=True),
          dist.scatter(sc, scatter_list=[torch.full((2,), float(j)) for j in range(p)] if rank == 0 else None,
                       src=0, async_op=True),
          dist.barrier(async_op=True)]
    for w in reversed(ws):
        w.wait()
    check(a.tolist() == [float(sum(r + 1 for r in range(p)))] * 5, "async all_reduce among others")
    check(b.tolist() == [0.0] * 4, "async broadcast")
    check([t.tolist() for t in g] == [[r, -r] for r in range(p)], "async all_gather")
    check(rs.tolist() == [float(sum(r + rank for r in range(p)))] * 3, "async reduce_scatter")
    check(ta.tolist() == [float(rank + 100 * r) for r in range(p)], "async all_to_all_single")
    check(rank != 0 or red.tolist() == [float(p - 1)] * 2, "async reduce max")
    check(rank != 0 or [t.tolist() for t in gat] == [[float(r)] * 2 for r in range(p)], "async gather")
    check(sc.tolist() == [float(rank)] * 2, "async scatter")
    check(all(w.is_completed() for w in ws), "async: every Work completed")
    # irecv before isend, in a ring: every rank receives first
    right, left = (rank + 1) % p, (rank - 1) % p
    x = torch.zeros(1000)
    rq = dist.irecv(x, src=left, tag=5)
    sq = dist.isend(torch.arange(1000.) + left * 0 + rank, dst=right, tag=5)
    rq.wait()
    sq.wait()
    check(torch.equal(x, torch.arange(1000.) + left), "irecv then isend, a ring")
    # the same with the receive surely under way before the send is issued
    x = torch.zeros(1000)
    rq = dist.irecv(x, src=left, tag=6)
    time.sleep(0.3)
    sq = dist.isend(torch.arange(1000.) * 2 + rank, dst=right, tag=6)
    rq.wait()
    sq.wait()
    check(torch.equal(x, torch.arange(1000.) * 2 + left), "irecv, 0.3 s, then isend, a ring")
    ops = [dist.P2POp(dist.irecv, torch.zeros(10, dtype=torch.int32), left),
           dist.P2POp(dist.isend, torch.full((10,), rank, dtype=torch.int32), right)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check(ops[0].tensor.tolist() == [left] * 10, "batch_isend_irecv, irecv first")
    # a subgroup of every other rank (0, 2, ...): ranks by their global numbers
    members = list(range(0, p, 2))
    sub = dist.new_group(ranks=members, backend="coll")
    if rank in members:
        last = members[-1]
        x = torch.full((3,), float(rank))
        dist.all_reduce(x, group=sub)
        check(x.tolist() == [float(sum(members))] * 3, "subgroup %s: all_reduce" % members)
        x = torch.full((3,), float(rank))
        dist.broadcast(x, src=last, group=sub)
        check(x.tolist() == [float(last)] * 3, "subgroup %s: broadcast from global rank %d" % (members, last))
        got = [torch.zeros(1) for _ in members]
        dist.all_gather(got, torch.tensor([float(rank)]), group=sub)
        check([t.item() for t in got] == [float(m) for m in members], "subgroup %s: all_gather" % members)
        x = torch.tensor([float(rank + 1)])
        dist.reduce(x, dst=last, op=R.PRODUCT, group=sub)
        if rank == last:
            prod = 1.0
            for m in members:
                prod *= m + 1
            check(x.item() == prod, "subgroup %s: reduce product to global rank %d" % (members, last))
        if len(members) > 1:
            if rank == members[0]:
                dist.send(torch.tensor([42.0 + rank]), dst=last, group=sub)
            elif rank == last:
                y = torch.zeros(1)
                dist.recv(y, src=members[0], group=sub)
                check(y.item() == 42.0 + members[0], "subgroup %s: send/recv by global ranks" % members)
        dist.barrier(group=sub)
    dist.barrier()


def hier_refusals(torch, dist, rank, p):
    """Through coll_hier: a refusal on one rank, and sizes that differ
    (which would take different roads), raise on every rank, and the group
    goes on working after each."""
    def works(after):
        x = torch.full((7,), float(rank))
        dist.all_reduce(x)
        check(x.tolist() == [float(sum(range(p)))] * 7, "the group works after %s" % after)
    y = torch.ones(10, 2).t() if rank == 0 else torch.ones(20)
    want = "non-contiguous" if rank == 0 else "COLL_ERR_PEER"
    check(raises(lambda: dist.all_reduce(y), want) is not None,
          "a non-contiguous tensor on rank 0 raises on every rank (%s)" % want)
    works("a refusal on one rank")
    b = torch.ones(4, 2, dtype=torch.bool).t() if rank == p - 1 else torch.ones(8, dtype=torch.bool)
    check(raises(lambda: dist.broadcast(b, src=0), "non-contiguous" if rank == p - 1 else "COLL_ERR") is not None,
          "a refused bool broadcast on rank %d raises on every rank" % (p - 1))
    works("a refused bool broadcast")
    x = torch.ones(5 if rank == 1 else 6)
    check(raises(lambda: dist.all_reduce(x), "coll") is not None, "all_reduce of sizes that differ raises everywhere")
    works("sizes that differ")


def dtype_calls(torch, dist, rank, p):
    """Ranks whose tensors differ in dtype but not in bytes raise on every
    rank, and leave the group usable: dtypes coll has (float32 against
    int32), one it has against one it does not (bool against uint8,
    int16 against float16), and two it does not (bool x 8 against int16 x 4)."""
    def still_works(what):
        x = torch.full((5,), float(rank))
        dist.all_reduce(x)
        check(torch.equal(x, torch.full((5,), float(sum(range(p))))), "the group works after %s" % what)

    for a, b in ((torch.float32, torch.int32), (torch.bool, torch.uint8), (torch.int16, torch.float16),
                 (torch.uint8, torch.bool)):
        x = torch.ones(6, dtype=a if rank == 0 else b)
        t = raises(lambda: dist.broadcast(x, src=0), "coll")
        check(t is not None, "broadcast of %s on rank 0, %s on the others raises on every rank" % (a, b))
        still_works("broadcast of %s against %s" % (a, b))
        out = [torch.zeros(6, dtype=x.dtype) for _ in range(p)]
        t = raises(lambda: dist.all_gather(out, x), "coll")
        check(t is not None, "all_gather of %s on rank 0, %s on the others raises on every rank" % (a, b))
        still_works("all_gather of %s against %s" % (a, b))
    x = torch.ones(8, dtype=torch.bool) if rank == 0 else torch.ones(4, dtype=torch.int16)
    t = raises(lambda: dist.broadcast(x, src=0), "differ in dtype", "bool", "int16")
    check(t is not None, "broadcast of bool x 8 against int16 x 4 (the same bytes) names both dtypes on every rank")
    still_works("bool against int16")
    x = torch.ones(4, dtype=torch.bool)
    t = raises(lambda: dist.all_reduce(x, op=dist.ReduceOp.MAX if rank == 0 else dist.ReduceOp.SUM),
               "reduce ops differ")
    check(t is not None, "all_reduce of bool, MAX on rank 0, SUM elsewhere, raises on every rank")
    still_works("bool ops that differ")


def p2p(torch, dist, rank, p):
    # every ordered pair, blocking and isend/irecv, with a tag
    for src in range(p):
        for dst in range(p):
            if src == dst:
                continue
            n = 1000 + src * 10 + dst
            if rank == src:
                dist.send(value(torch, src, n, torch.float32, salt=dst), dst=dst, tag=7)
            elif rank == dst:
                x = torch.zeros(n)
                got = dist.recv(x, src=src, tag=7)
                check(got == src and torch.equal(x, value(torch, src, n, torch.float32, salt=dst)),
                      "send/recv %d -> %d" % (src, dst))
    # a ring of isend then recv: every rank sends first; 1 MiB (beyond any eager buffer)
    n = 1 << 18
    right, left = (rank + 1) % p, (rank - 1) % p
    s = dist.isend(value(torch, rank, n, torch.float32), dst=right)
    x = torch.zeros(n)
    dist.recv(x, src=left)
    s.wait()
    check(torch.equal(x, value(torch, left, n, torch.float32)), "isend/recv ring, 1 MiB")
    ops = [dist.P2POp(dist.isend, value(torch, rank, 100, torch.int64), right),
           dist.P2POp(dist.irecv, torch.zeros(100, dtype=torch.int64), left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check(torch.equal(ops[1].tensor, value(torch, left, 100, torch.int64)), "batch_isend_irecv ring")


def seed(torch, dist, rank, p):
    """The torch seed's own all-reduces (examples/seeds_py/torch_all_reduce.py,
    unchanged) over the coll group, on the seed's inputs and on ramps."""
    sys.path.insert(0, os.path.join(ROOT, "examples", "seeds_py"))
    from torch_all_reduce import naive_all_reduce, ring_all_reduce
    fns = [("naive", naive_all_reduce), ("ring", ring_all_reduce), ("torch", dist.all_reduce)]
    for n, fill in ((p, "rank"), (4 * p, "ramp"), (64 * p, "ramp")):
        for name, fn in fns:
            if fill == "ramp":
                tensor = torch.tensor([rank * 10 + i for i in range(n)])
            else:
                tensor = torch.tensor([rank for _ in range(n)])
            fn(tensor)
            want = torch.tensor([sum(r if fill == "rank" else r * 10 + i for r in range(p)) for i in range(n)])
            check(torch.equal(tensor, want), "seed %s all-reduce n=%d %s" % (name, n, fill))


def ddp(torch, dist, rank, p):
    """A few steps of a small model under DDP over coll and over gloo: the
    same parameters (float tolerance), and the same on every rank."""
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    gloo = dist.new_group(backend="gloo")

    def train(group):
        torch.manual_seed(100 + rank)          # different on each rank: DDP broadcasts rank 0's
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        m = DDP(model, process_group=group)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(1000 + rank)
        for _ in range(5):
            x = torch.randn(8, 16, generator=g)
            y = torch.randn(8, 4, generator=g)
            opt.zero_grad()
            nn.functional.mse_loss(m(x), y).backward()
            opt.step()
        return torch.cat([q.detach().reshape(-1) for q in model.parameters()])

    a = train(None)
    b = train(gloo)
    check(torch.allclose(a, b, rtol=1e-5, atol=1e-6), "DDP over coll == DDP over gloo (max diff %.3g)"
          % (a - b).abs().max().item())
    check(not torch.equal(a, train_start(torch, nn, rank)), "DDP moved the parameters")
    everyone = [torch.zeros_like(a) for _ in range(p)]
    dist.all_gather(everyone, a, group=gloo)
    check(all(torch.equal(e, a) for e in everyone), "DDP over coll: every rank holds the same parameters")


def train_start(torch, nn, rank):
    torch.manual_seed(100)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    return torch.cat([q.detach().reshape(-1) for q in model.parameters()])


def wrong_calls(torch, dist, rank, p):
    """Calls the ranks disagree on raise on every rank, and coll's call
    check leaves the group usable after them."""
    def still_works(what):
        x = torch.full((5,), float(rank))
        dist.all_reduce(x)
        check(torch.equal(x, torch.full((5,), float(sum(range(p))))), "the group works after %s" % what)

    # sizes differ: rank 0 has one element more
    x = torch.ones(10 + (rank == 0))
    t = raises(lambda: dist.all_reduce(x), "COLL_ERR_MISMATCH")
    check(t is not None, "all_reduce of different sizes raises (COLL_ERR_MISMATCH) on every rank")
    still_works("different sizes")
    # different collectives: rank 0 broadcasts, the others all-reduce
    x = torch.ones(10)
    t = raises(lambda: dist.broadcast(x, src=0) if rank == 0 else dist.all_reduce(x), "coll")
    check(t is not None, "broadcast against all_reduce raises on every rank")
    still_works("different collectives")
    # dtypes differ
    x = torch.ones(10, dtype=torch.float32 if rank else torch.float64)
    check(raises(lambda: dist.all_reduce(x), "coll") is not None, "all_reduce of different dtypes raises everywhere")
    still_works("different dtypes")
    # one rank refuses (non-contiguous): it raises at once, the others from the call check
    x = torch.ones(10, 2)
    y = x.t() if rank == 0 else torch.ones(20)
    want = "non-contiguous" if rank == 0 else "refused"
    t = raises(lambda: dist.all_reduce(y), want)
    check(t is not None, "a non-contiguous tensor on rank 0 raises on every rank (%s)" % want)
    still_works("a refusal")
    # refused on every rank: a dtype coll cannot reduce, a sparse tensor
    check(raises(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16), op=dist.ReduceOp.AVG), "int16",
                 "AVG") is not None, "all_reduce AVG of int16 says why")
    sp = torch.ones(4).to_sparse()
    check(raises(lambda: dist.broadcast(sp, src=0), "sparse") is not None, "a sparse tensor says why")
    check(raises(lambda: dist.recv(torch.zeros(1)), "src") is not None, "recv from any source says why")
    still_works("refusals everywhere")
    # p2p: a refused send raises on both ends; sizes that differ
    if p >= 2 and rank < 2:
        if rank == 0:
            t = raises(lambda: dist.send(torch.ones(4, 2).t(), dst=1), "non-contiguous")
        else:
            t = raises(lambda: dist.recv(torch.zeros(8), src=0), "refused")
        check(t is not None, "a refused send raises on sender and receiver")
    still_works("a refused send")
    # a refused receive raises at once; its message is taken off the link
    if p >= 2 and rank < 2:
        if rank == 0:
            dist.send(torch.ones(8), dst=1)
        else:
            check(raises(lambda: dist.recv(torch.zeros(4, 2).t(), src=0), "non-contiguous") is not None,
                  "a refused receive raises on the receiver")
    still_works("a refused receive")
    # all-to-all split sizes that do not fit together: rank 0 expects 2 rows from rank 0, none from rank 1
    a = torch.arange(p * 2, dtype=torch.float32).view(p, 2)
    outs = [2, 0] + [1] * (p - 2) if rank == 0 else [1] * p
    t = raises(lambda: dist.all_to_all_single(torch.zeros(p, 2), a, output_split_sizes=outs,
                                              input_split_sizes=[1] * p), "split sizes disagree")
    check(t is not None, "all_to_all_single with split sizes that disagree raises on every rank")
    still_works("split sizes that disagree")
    # p2p on a group of its own: a tag that differs (the receiver raises, the
    # link stays in step), then a size that differs (the group is aborted)
    pp = dist.new_group(backend="coll")
    if rank == 0:
        dist.send(torch.ones(10), dst=1, group=pp, tag=3)
    elif rank == 1:
        check(raises(lambda: dist.recv(torch.zeros(10), src=0, group=pp, tag=4), "tag 3 sent, tag 4 expected")
              is not None, "recv with another tag raises on the receiver")
    x = torch.full((4,), float(rank))
    dist.all_reduce(x, group=pp)
    check(torch.equal(x, torch.full((4,), float(sum(range(p))))), "the group works after a tag that differs")
    if rank == 0:
        try:                             # the receiver may abort the group before this send is through
            dist.send(torch.ones(10), dst=1, group=pp)
        except RuntimeError as e:
            check("coll" in str(e), "a send to a receiver of another size completes or raises coll's error")
    elif rank == 1:
        check(raises(lambda: dist.recv(torch.zeros(12), src=0, group=pp), "40 bytes", "aborted") is not None,
              "recv of another size raises on the receiver and aborts the group")
    check(raises(lambda: dist.all_reduce(torch.ones(4), group=pp), "coll") is not None,
          "after a p2p size mismatch every rank's next call on the group raises")
    # ranks that ask for different ports: the group is refused on every rank
    saved = os.environ.get("COLL_TORCH_PORT")
    os.environ["COLL_TORCH_PORT"] = "tcp" if rank == p - 1 else "shm"
    t = raises(lambda: dist.new_group(backend="coll"), "COLL_TORCH_PORT differs")
    check(t is not None, "a group whose ranks set COLL_TORCH_PORT differently raises on every rank")
    os.environ["COLL_TORCH_PORT"] = "bogus"
    t = raises(lambda: dist.new_group(backend="coll"), "none of auto, shm, tcp")
    check(t is not None, "COLL_TORCH_PORT=bogus raises on every rank")
    if saved is None:
        del os.environ["COLL_TORCH_PORT"]
    else:
        os.environ["COLL_TORCH_PORT"] = saved
    os.environ["COLL_TORCH_SCRATCH"] = str(65536 * (1 + (rank == 0)))
    t = raises(lambda: dist.new_group(backend="coll"), "COLL_TORCH_SCRATCH differs")
    check(t is not None, "a group whose ranks set COLL_TORCH_SCRATCH differently raises on every rank")
    del os.environ["COLL_TORCH_SCRATCH"]
    # a subgroup: ranks 1.. only (rank 0 is not in it), its own port
    sub = dist.new_group(ranks=list(range(1, p)), backend="coll")
    if rank > 0:
        x = torch.full((3,), float(rank))
        dist.all_reduce(x, group=sub)
        check(torch.equal(x, torch.full((3,), float(sum(range(1, p))))), "all_reduce on a subgroup of ranks 1..")
    # a rank that does not come: the others time out (a group with a 1 s timeout)
    short = dist.new_group(backend="coll", timeout=datetime.timedelta(seconds=1))
    t0 = time.time()
    if rank != 0:
        t = raises(lambda: dist.all_reduce(torch.ones(4), group=short), "coll")
        check(t is not None and time.time() - t0 < 20, "a missing rank: the others raise after the timeout (%.1f s)"
              % (time.time() - t0))
    dist.barrier()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        try:
            worker(sys.argv[2], sys.argv[3])
        except Exception:
            traceback.print_exc()
            failed += 1
        print("RESULT %d %d" % (passed, failed))
        sys.stdout.flush()
        os._exit(0)
    main()
