"""torch/bench_torch_ddp.py - DDP training steps over backend="coll" against "gloo".

    PYTHONPATH=build/python /usr/bin/python3 torch/bench_torch_ddp.py [-n 2] [-r ROUNDS] [-k STEPS]

A communication-bound job: models that are wide and do little arithmetic,
so a step's time is mostly DDP's gradient all-reduces -
  - "linear": two 2048 x 2048 Linear layers (8.4 M parameters, 33.6 MB of
    gradients a step) on a batch of 4;
  - "embbag": an EmbeddingBag of 100 000 x 64 (6.4 M parameters, dense
    gradients, 25.6 MB a step) on 16 bags of 8 indices, then a Linear 64 -> 8.
The ranks are started by the launcher (python3 -m coll_torch.run). In each
rank the same model is built twice from one seed, once under DDP over the
default group (coll) and once over dist.new_group(backend="gloo"); a round
times STEPS steps of one, then STEPS of the other, on the same batches.
The figure is the median over the rounds of the time per step, on rank 0.
Checked: after the last round the two copies hold the same parameters
(within float tolerance: same data, same number of steps) and every rank
holds the same as rank 0, bitwise.
"""
import os
import statistics
import subprocess
import sys
import time



def alternate(runs, steps, rounds, k, barrier):
    """Seconds a step of each backend in `runs`, `rounds` times in turns
    after one untimed round each (steps(backend) runs k steps)."""
    for backend in runs:
        steps(backend)
    times = {b: [] for b in runs}
    for _ in range(rounds):
        for backend in runs:
            barrier()
            t0 = time.perf_counter()
            steps(backend)
            times[backend].append((time.perf_counter() - t0) / k)
    return times

def models(torch, nn, name):
    torch.manual_seed(7)
    if name == "linear":
        return nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 2048))
    return EmbBag(torch, nn)


def EmbBag(torch, nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.EmbeddingBag(100000, 64, mode="sum", sparse=False)
            self.out = nn.Linear(64, 8)

        def forward(self, idx, offsets):
            return self.out(self.emb(idx, offsets))
    return M()


def batches(torch, name, rank, k):
    g = torch.Generator().manual_seed(1000 + rank)
    out = []
    for _ in range(k):
        if name == "linear":
            out.append(((torch.randn(4, 2048, generator=g),), torch.randn(4, 2048, generator=g)))
        else:
            idx = torch.randint(0, 100000, (16 * 8,), generator=g)
            off = torch.arange(0, 16 * 8, 8)
            out.append(((idx, off), torch.randn(16, 8, generator=g)))
    return out


def worker(rounds, k):
    import torch
    import torch.nn as nn
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import coll_torch  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("coll")
    rank, p = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    for name in ("linear", "embbag"):
        runs = {}
        for backend, group in (("coll", None), ("gloo", gloo)):
            m = models(torch, nn, name)
            d = DDP(m, process_group=group)
            runs[backend] = (m, d, torch.optim.SGD(d.parameters(), lr=0.01))
        data = batches(torch, name, rank, k)

        def steps(backend):
            m, d, opt = runs[backend]
            for x, y in data:
                opt.zero_grad()
                nn.functional.mse_loss(d(*x), y).backward()
                opt.step()

        times = alternate(runs, steps, rounds, k, lambda: dist.barrier(group=gloo))
        a = torch.cat([q.detach().reshape(-1) for q in runs["coll"][0].parameters()])
        b = torch.cat([q.detach().reshape(-1) for q in runs["gloo"][0].parameters()])
        same = torch.allclose(a, b, rtol=1e-4, atol=1e-5)
        r0 = a.clone()
        dist.broadcast(r0, src=0, group=gloo)
        flags = torch.tensor([int(same), int(torch.equal(a, r0))])
        dist.all_reduce(flags, op=dist.ReduceOp.MIN, group=gloo)
        nparam = a.numel()
        if rank == 0:
            print("ROW\t%s\t%d\t%d\t%.2f\t%.2f\t%s" % (name, p, nparam, statistics.median(times["coll"]) * 1e3,
                                                     statistics.median(times["gloo"]) * 1e3,
                                                     "ok" if bool(flags.all()) else "FAIL"))
            sys.stdout.flush()
    dist.destroy_process_group()


def main():
    ranks, rounds, k = 2, 7, 5
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "-n":
            ranks = int(args.pop(0))
        elif a == "-r":
            rounds = int(args.pop(0))
        elif a == "-k":
            k = int(args.pop(0))
        else:
            sys.exit("usage: bench_torch_ddp.py [-n RANKS] [-r ROUNDS] [-k STEPS]")
    print("load before: %s" % open("/proc/loadavg").read().strip())
    cmd = [sys.executable, "-m", "coll_torch.run", "--standalone", "--nproc-per-node", str(ranks),
           os.path.abspath(__file__), "worker", str(rounds), str(k)]
    pr = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    print("load after: %s" % open("/proc/loadavg").read().strip())
    rows = [line.split("\t")[1:] for line in pr.stdout.splitlines() if line.startswith("ROW\t")]
    if pr.returncode or len(rows) != 2:
        print(pr.stdout[-4000:])
    print("\n| model | ranks | parameters | coll ms/step | gloo ms/step | gloo / coll |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, p, n, c, g, ok in rows:
        print("| %s | %s | %.1f M | %s | %s | **%.2f×** |" % (name, p, int(n) / 1e6, c, g, float(g) / float(c)))
    print()
    for r in rows:
        print("\t".join(r))
    sys.exit(1 if pr.returncode or len(rows) != 2 or any(r[5] != "ok" for r in rows) else 0)


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "worker":
        worker(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
