"""torch/bench_torch_jobs.py - training jobs over backend="coll" against "gloo".

    PYTHONPATH=build/python /usr/bin/python3 torch/bench_torch_jobs.py [-n 2,4] [-r ROUNDS] [-k STEPS] [-j ddp,zero,zero-ar,ps]

Three communication-bound jobs on one wide, cheap model (bench_torch_ddp.py's
"linear": two 2048 x 2048 Linear layers, 8.4 M parameters, 33.6 MB of
float32, a batch of 4 per rank), each step's time mostly its collectives:
  - ddp:  DistributedDataParallel (its gradient all-reduces);
  - zero: ZeRO-2 style by hand (FSDP's SHARD_GRAD_OP): each rank keeps
          1/p of the parameters; a step all-gathers them into the model,
          runs forward and backward, reduce-scatters the gradients (SUM)
          and updates its own shard. On coll: all_gather_into_tensor and
          reduce_scatter_tensor. gloo in torch 1.13 has no reduce_scatter
          (nor _allgather_base): there, all_gather into the shards' views
          and all_reduce of all gradients, of which each rank keeps its
          shard - the closest gloo offers, and twice the reduce's bytes;
  - zero-ar: the same job in gloo's form on both backends (all_gather
          into views, all_reduce), to tell the operation from the backend;
  - ps:   parameter server: rank 0 holds the parameters and updates them;
          a step broadcasts them from rank 0, every rank runs forward and
          backward, the gradients are reduced (SUM) to rank 0.
In each rank the job is built twice from one seed, over the default group
(coll) and over dist.new_group(backend="gloo"); a round times STEPS steps of
one, then STEPS of the other, on the same batches. The figure is rank 0's
median over the rounds of the time per step. Checked: the two copies end
with the same parameters (within 1e-4) and every rank holds rank 0's,
bitwise. torch/test_torch_jobs.py checks zero and ps (these functions)
against a one-process run of the same model and data, to 1e-5.
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Flat:
    """A model's parameters as views into one flat buffer (padded to a
    multiple of p), and their gradients as views into another, so that a
    collective moves all of them in one call; backward accumulates into
    the gradient buffer in place."""

    def __init__(self, torch, model, p):
        self.params = list(model.parameters())
        self.n = sum(q.numel() for q in self.params)
        self.size = -(-self.n // p) * p
        self.full = torch.zeros(self.size)
        self.grad = torch.zeros(self.size)
        o = 0
        with torch.no_grad():
            for q in self.params:
                m = q.numel()
                self.full[o:o + m].copy_(q.reshape(-1))
                q.data = self.full[o:o + m].view_as(q)
                q.grad = self.grad[o:o + m].view_as(q)
                o += m

    def shard(self, p, rank):
        return self.full.chunk(p)[rank]


def zero_job(torch, dist, model, p, rank, lr, group=None, gloo_style=False):
    """ZeRO-2 style: returns step(x, y, loss); the rank's own parameters are
    the returned state's shard; flat.full holds all after each step's gather."""
    flat = Flat(torch, model, p)
    shard = flat.shard(p, rank).clone()          # the rank's own copy, the one it updates
    views = list(flat.full.chunk(p))
    gshard = torch.zeros(flat.size // p)

    def step(x, y, loss):
        if gloo_style:
            dist.all_gather(views, shard, group=group)
        else:
            dist.all_gather_into_tensor(flat.full, shard, group=group)
        flat.grad.zero_()
        loss(model(*x), y).backward()
        if gloo_style:
            dist.all_reduce(flat.grad, group=group)
            g = flat.grad.chunk(p)[rank]
        else:
            dist.reduce_scatter_tensor(gshard, flat.grad, group=group)
            g = gshard
        shard.add_(g, alpha=-lr / p)                 # the mean of the ranks' gradients

    def final():
        """all parameters as every rank holds them after one more gather"""
        if gloo_style:
            dist.all_gather(views, shard, group=group)
        else:
            dist.all_gather_into_tensor(flat.full, shard, group=group)
        return flat.full[:flat.n].clone()
    return step, final


def ps_job(torch, dist, model, p, rank, lr, group=None):
    """Parameter server on rank 0: broadcast, forward/backward, reduce to 0, 0 updates."""
    flat = Flat(torch, model, p)

    def step(x, y, loss):
        dist.broadcast(flat.full, src=0, group=group)
        flat.grad.zero_()
        loss(model(*x), y).backward()
        dist.reduce(flat.grad, dst=0, group=group)
        if rank == 0:
            flat.full.add_(flat.grad, alpha=-lr / p)

    def final():
        dist.broadcast(flat.full, src=0, group=group)
        return flat.full[:flat.n].clone()
    return step, final


def ddp_job(torch, dist, model, p, rank, lr, group=None):
    from torch.nn.parallel import DistributedDataParallel as DDP
    d = DDP(model, process_group=group)
    opt = torch.optim.SGD(d.parameters(), lr=lr)

    def step(x, y, loss):
        opt.zero_grad()
        loss(d(*x), y).backward()
        opt.step()

    def final():
        return torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    return step, final


JOBS = {"ddp": ddp_job, "zero": zero_job, "zero-ar": zero_job, "ps": ps_job}


def worker(rounds, k, jobs):
    import torch
    import torch.nn as nn
    import torch.distributed as dist
    import coll_torch  # noqa: F401
    sys.dont_write_bytecode = True          # no torch/__pycache__ in the tree
    sys.path.insert(0, HERE)
    from bench_torch_ddp import models, batches, alternate

    torch.set_num_threads(1)
    dist.init_process_group("coll")
    rank, p = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    loss = nn.functional.mse_loss
    data = batches(torch, "linear", rank, k)
    for job in jobs:
        runs = {}
        for backend, group in (("coll", None), ("gloo", gloo)):
            gloo_style = job == "zero-ar" or (job == "zero" and backend == "gloo")
            extra = {"gloo_style": True} if gloo_style else {}
            runs[backend] = JOBS[job](torch, dist, models(torch, nn, "linear"), p, rank, 0.01, group=group, **extra)

        def steps(backend):
            step = runs[backend][0]
            for x, y in data:
                step(x, y, loss)

        times = alternate(runs, steps, rounds, k, lambda: dist.barrier(group=gloo))
        a = runs["coll"][1]()
        b = runs["gloo"][1]()
        same = torch.allclose(a, b, rtol=1e-4, atol=1e-5)
        r0 = a.clone()
        dist.broadcast(r0, src=0, group=gloo)
        flags = torch.tensor([int(same), int(torch.equal(a, r0))])
        dist.all_reduce(flags, op=dist.ReduceOp.MIN, group=gloo)
        if rank == 0:
            print("ROW\t%s\t%d\t%d\t%.2f\t%.2f\t%s" % (job, p, a.numel(), statistics.median(times["coll"]) * 1e3,
                                                     statistics.median(times["gloo"]) * 1e3,
                                                     "ok" if bool(flags.all()) else "FAIL"))
            sys.stdout.flush()
        del runs
    dist.destroy_process_group()


def main():
    ranks, rounds, k, jobs = [2, 4], 5, 5, ["ddp", "zero", "zero-ar", "ps"]
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "-n":
            ranks = [int(x) for x in args.pop(0).split(",")]
        elif a == "-r":
            rounds = int(args.pop(0))
        elif a == "-k":
            k = int(args.pop(0))
        elif a == "-j":
            jobs = args.pop(0).split(",")
        else:
            sys.exit("usage: bench_torch_jobs.py [-n 2,4] [-r ROUNDS] [-k STEPS] [-j ddp,zero,zero-ar,ps]")
    if any(j not in JOBS for j in jobs):
        sys.exit("jobs: ddp, zero, zero-ar, ps")
    rows, bad = [], False
    for n in ranks:
        print("%d ranks: load before: %s" % (n, open("/proc/loadavg").read().strip()))
        cmd = [sys.executable, "-m", "coll_torch.run", "--standalone", "--nproc-per-node", str(n),
               os.path.abspath(__file__), "worker", str(rounds), str(k), ",".join(jobs)]
        pr = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
        print("%d ranks: load after: %s" % (n, open("/proc/loadavg").read().strip()))
        got = [line.split("\t")[1:] for line in pr.stdout.splitlines() if line.startswith("ROW\t")]
        if pr.returncode or len(got) != len(jobs):
            print(pr.stdout[-4000:])
            bad = True
        rows += got
    what = {"ddp": "DDP", "zero": "ZeRO-2 (gloo: all_reduce, keep the shard)",
            "zero-ar": "ZeRO-2, all_reduce on both", "ps": "parameter server"}
    print("\n| job | ranks | coll ms/step | gloo ms/step | gloo / coll |")
    print("|---|---:|---:|---:|---:|")
    for job, p, n, c, g, ok in rows:
        print("| %s | %s | %s | %s | **%.2f×** |" % (what[job], p, c, g, float(g) / float(c)))
    print()
    for r in rows:
        print("\t".join(r))
    sys.exit(1 if bad or any(r[5] != "ok" for r in rows) else 0)


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[1] == "worker":
        worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(","))
    else:
        main()
