"""bench/bench_torch.py -n 2,4 -s quick|full - all-reduce timings of torch.distributed
(gloo backend) and of the torch seed's own naive and ring programs
(examples/seeds_py/torch_all_reduce.py), as rows of bench/run.sh's table:
impl, collective, algo, ranks, bytes, time_us, algbw_GBps, busbw_GBps, check.
Ranks are processes on 127.0.0.1, like coll-tcp's. Float32 sums; the result
of the last call is checked against the plain sum on every rank. The seed's
ring needs a length divisible by the ranks: other sizes get no row."""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "seeds_py"))
from torch_all_reduce import naive_all_reduce, ring_all_reduce  # noqa: E402

SIZES = {"quick": [8, 65536, 8 << 20], "full": [8 << (2 * i) for i in range(12)] + [64 << 20]}


def worker(rank, p, sizes, port, q):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=p)
    impls = [("torch-gloo", "auto", dist.all_reduce), ("torch-seed", "naive", naive_all_reduce),
             ("torch-seed", "ring", ring_all_reduce)]
    for nbytes in sizes:
        n = max(1, nbytes // 4)
        for impl, algo, fn in impls:
            if algo == "ring" and n % p:
                continue
            iters = max(3, min(200, int(2e7 // max(nbytes, 1))))
            x = torch.full((n,), float(rank + 1))
            fn(x)                                  # warm up
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                x.fill_(float(rank + 1))
                fn(x)
            dist.barrier()
            t = (time.perf_counter() - t0) / iters
            ok = bool(torch.all(x == float(p * (p + 1) // 2)))
            oks = torch.tensor([1 if ok else 0])
            dist.all_reduce(oks, op=dist.ReduceOp.MIN)
            if rank == 0:
                alg = nbytes / t / 1e9
                q.put("%s\tallreduce\t%s\t%d\t%d\t%.2f\t%.4f\t%.4f\t%s" % (
                    impl, algo, p, nbytes, t * 1e6, alg, alg * 2 * (p - 1) / p, "ok" if oks.item() else "FAIL"))
    dist.destroy_process_group()


def main():
    ranks, mode = [2, 4], "quick"
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "-n":
            ranks = [int(v) for v in args.pop(0).split(",")]
        elif a == "-s":
            mode = args.pop(0)
    bad = 0
    for p in ranks:
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        port = 29900 + os.getpid() % 50 + p
        procs = [ctx.Process(target=worker, args=(r, p, SIZES[mode], port, q)) for r in range(p)]
        for pr in procs:
            pr.start()
        for pr in procs:
            pr.join()
        while not q.empty():
            row = q.get()
            bad += row.endswith("FAIL")
            print(row)
        bad += sum(pr.exitcode != 0 for pr in procs)
        sys.stdout.flush()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
