"""torch/bench_torch.py - dist.all_reduce with backend="coll" against "gloo".

    PYTHONPATH=build/python /usr/bin/python3 torch/bench_torch.py [-n 2,4] [-r ROUNDS] [--port shm|tcp]

In one run per rank count, the same processes time float32 sum all-reduces
of 8 B, 64 KiB, 8 MiB and 64 MiB over the default group (coll) and over a
gloo group (dist.new_group(backend="gloo")), in turns: each round times a
batch of calls on one backend, then the same batch on the other. The figure
is the median over the rounds of the time per call. Every rank checks one
call's result per size and backend against the plain sum. --port forces
coll's port (COLL_TORCH_PORT); by default shm, all ranks being on this host.
Prints a markdown table, then one tab-separated row per measurement.
"""
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = [8, 64 << 10, 8 << 20, 64 << 20]


def calls_per_round(nbytes):
    return max(2, min(200, int(32e6 // max(nbytes, 1))))


def worker(rounds):
    import torch
    import torch.distributed as dist
    import coll_torch  # noqa: F401

    rank, p = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("coll", rank=rank, world_size=p)
    gloo = dist.new_group(backend="gloo")
    groups = [("coll", None), ("gloo", gloo)]
    for nbytes in SIZES:
        n = max(1, nbytes // 4)
        k = calls_per_round(nbytes)
        times = {name: [] for name, _ in groups}
        ok = {}
        for name, g in groups:
            # the check: one call on rank-dependent values
            x = torch.full((n,), float(rank + 1))
            dist.all_reduce(x, group=g)
            ok[name] = bool(torch.all(x == float(p * (p + 1) // 2)))
            x.zero_()
            for _ in range(min(2000, 10 * k)):          # warm up: spins and caches settle
                dist.all_reduce(x, group=g)
        for _ in range(rounds):
            for name, g in groups:
                dist.barrier(group=g)
                t0 = time.perf_counter()
                for _ in range(k):
                    dist.all_reduce(x, group=g)
                times[name].append((time.perf_counter() - t0) / k)
        # every rank's verdict, rank 0 reports
        flags = torch.tensor([int(ok["coll"]), int(ok["gloo"])])
        dist.all_reduce(flags, op=dist.ReduceOp.MIN, group=gloo)
        if rank == 0:
            for i, (name, _) in enumerate(groups):
                print("ROW\t%s\t%d\t%d\t%.2f\t%s" % (name, p, nbytes, statistics.median(times[name]) * 1e6,
                                                   "ok" if flags[i].item() else "FAIL"))
                sys.stdout.flush()
    dist.destroy_process_group()


def run(p, rounds, port):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    mport = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(p):
        e = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(mport), RANK=str(r), WORLD_SIZE=str(p))
        e["PYTHONPATH"] = os.pathsep.join(x for x in (os.path.join(ROOT, "build", "python"),
                                                      os.environ.get("PYTHONPATH")) if x)
        if port:
            e["COLL_TORCH_PORT"] = port
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", str(rounds)], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    rows, bad = [], 0
    for pr in procs:
        out, _ = pr.communicate(timeout=900)
        bad += pr.returncode != 0
        for line in out.splitlines():
            if line.startswith("ROW\t"):
                rows.append(line.split("\t")[1:])
        if pr.returncode:
            print(out[-3000:])
    return rows, bad


def human(nbytes):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div:
            return "%d %s" % (nbytes // div, unit)
    return "%d B" % nbytes


def main():
    ranks, rounds, port = [2, 4], 7, None
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "-n":
            ranks = [int(v) for v in args.pop(0).split(",")]
        elif a == "-r":
            rounds = int(args.pop(0))
        elif a == "--port":
            port = args.pop(0)
    print("load before: %s" % open("/proc/loadavg").read().strip())
    all_rows, bad = [], 0
    for p in ranks:
        rows, b = run(p, rounds, port)
        all_rows += rows
        bad += b
    print("load after: %s" % open("/proc/loadavg").read().strip())
    t = {(r[0], int(r[1]), int(r[2])): float(r[3]) for r in all_rows}
    label = "coll (%s)" % (port or "shm")
    print("\n| ranks | size | %s µs | gloo µs | gloo / coll |" % label)
    print("|---:|---:|---:|---:|---:|")
    for p in ranks:
        for nbytes in SIZES:
            c, g = t.get(("coll", p, nbytes)), t.get(("gloo", p, nbytes))
            if c is None or g is None:
                print("| %d | %s | - | - | - |" % (p, human(nbytes)))
                continue
            print("| %d | %s | %.1f | %.1f | **%.1f×** |" % (p, human(nbytes), c, g, g / c))
    print()
    for r in all_rows:
        print("\t".join(r))
        bad += r[4] != "ok"
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "worker":
        worker(int(sys.argv[2]))
    else:
        main()
