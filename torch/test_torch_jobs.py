"""torch/test_torch_jobs.py - training jobs over backend="coll" against a one-process run.

    PYTHONPATH=build/python /usr/bin/python3 torch/test_torch_jobs.py

Runs 2 and 3 ranks (python3 -m coll_torch.run --standalone). Every rank
trains a small model (Linear 16 -> 32, ReLU, Linear 32 -> 5: 709
parameters, a multiple of neither 2 nor 3, so the shards are padded) for 5
SGD steps on its own batches, and compares its final parameters with a
one-process run of the same model on all ranks' batches at once (no
torch.distributed at all), to 1e-5:
  - FSDP (torch.distributed.fsdp.FullyShardedDataParallel) over "coll",
    where torch lets it run. Debian's torch 1.13 on Python 3.11 does not:
    importing torch.distributed.fsdp raises "ValueError: mutable default
    <class '...TensorProperties'> for field tensor_properties is not
    allowed: use default_factory"; imported again with that let through
    (import_fsdp), FSDP's constructor raises "AssertionError: Torch not
    compiled with CUDA enabled" (its _get_compute_device asks
    torch.cuda.current_device() for a module on the CPU), and 1.13's
    first forward would raise "FSDP does not support CPU only execution"
    without CUDA. These errors are printed, exactly, and counted as FSDP
    not running; any other error, or a run that ends elsewhere than the
    reference, fails;
  - bench_torch_jobs.py's ZeRO-2 job over "coll" (all_gather_into_tensor,
    reduce_scatter_tensor), its gloo form over "coll" (all_gather into
    views, all_reduce) and over a gloo group, and its parameter-server job
    (broadcast, reduce) over "coll".
Ends with "torch-jobs: N passed, N failed".
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS, LR, BATCH = 5, 0.1, 8
FSDP_KNOWN = ("mutable default <class 'torch.distributed._shard.sharded_tensor.metadata.TensorProperties'> "
              "for field tensor_properties is not allowed: use default_factory",
              "Torch not compiled with CUDA enabled",
              "FSDP does not support CPU only execution")

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s" % what)
        sys.stdout.flush()


def model(torch, nn):
    torch.manual_seed(5)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))


def batch(torch, rank, step):
    g = torch.Generator().manual_seed(1000 + 100 * step + rank)
    return torch.randn(BATCH, 16, generator=g), torch.randn(BATCH, 5, generator=g)


def flat(torch, m):
    return torch.cat([q.detach().reshape(-1) for q in m.parameters()])


def reference(torch, nn, p):
    """One process, all ranks' batches at once: the mean loss over the
    whole batch is the mean of the ranks' mean losses (equal batches)."""
    m = model(torch, nn)
    opt = torch.optim.SGD(m.parameters(), lr=LR)
    for s in range(STEPS):
        xs, ys = zip(*[batch(torch, r, s) for r in range(p)])
        opt.zero_grad()
        nn.functional.mse_loss(m(torch.cat(xs)), torch.cat(ys)).backward()
        opt.step()
    return flat(torch, m)


def close(torch, a, ref, what):
    d = (a - ref).abs().max().item() if a.shape == ref.shape else float("inf")
    check(d <= 1e-5, "%s: max |difference| from the one-process run %.3g (shape %s)" % (what, d, tuple(a.shape)))
    return d


def import_fsdp():
    """FSDP's class, and the error of the plain import where it failed:
    torch 1.13 predates Python 3.11, whose dataclasses refuse an instance
    of an unhashable class as a field's default, as torch's
    ShardedTensorMetadata has; the second import lets such a default
    through as a default_factory (this process only), to get as far as
    FSDP itself."""
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        return FSDP, None
    except ValueError as e:
        first = "ValueError: %s" % e
    import dataclasses
    for k in list(sys.modules):
        if k.startswith(("torch.distributed._shard", "torch.distributed.fsdp")):
            del sys.modules[k]
    orig = dataclasses._get_field

    def get_field(cls, name, type_, kw_only):
        try:
            return orig(cls, name, type_, kw_only)
        except ValueError:
            d = getattr(cls, name)
            setattr(cls, name, dataclasses.field(default_factory=lambda d=d: d))
            return orig(cls, name, type_, kw_only)
    dataclasses._get_field = get_field
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    finally:
        dataclasses._get_field = orig
    return FSDP, first


def fsdp(torch, nn, dist, rank, p, ref):
    first = None
    try:
        FSDP, first = import_fsdp()
        if first:
            check(FSDP_KNOWN[0] in first, "importing FSDP failed otherwise than known: %s" % first)
            if rank == 0:
                print("FSDP: the plain import raises %s" % first)
        m = FSDP(model(torch, nn))
        opt = torch.optim.SGD(m.parameters(), lr=LR)
        for s in range(STEPS):
            x, y = batch(torch, rank, s)
            opt.zero_grad()
            nn.functional.mse_loss(m(x), y).backward()
            opt.step()
        with FSDP.summon_full_params(m):
            a = flat(torch, m)
    except Exception as e:                      # noqa: BLE001 - what FSDP raises is the point
        msg = "%s: %s" % (type(e).__name__, e)
        tb = traceback.extract_tb(e.__traceback__)
        where = ["%s:%d %s" % (os.path.basename(f.filename), f.lineno, f.name) for f in tb
                 if "fsdp" in f.filename][-1:]
        known = any(k in str(e) for k in FSDP_KNOWN)
        if rank == 0 or not known:
            print("FSDP over coll does not run here: %s (%s)" % (msg, ", ".join(where) or "?"))
            if not known:
                traceback.print_exc()
        check(known, "FSDP failed otherwise than torch 1.13's known refusals on CPU: %s" % msg)
        return
    if rank == 0:
        print("FSDP over coll ran%s" % (" (the import patched)" if first else ""))
    close(torch, a, ref, "FSDP over coll")


def worker():
    import torch
    import torch.nn as nn
    import torch.distributed as dist
    import coll_torch  # noqa: F401
    sys.dont_write_bytecode = True          # no torch/__pycache__ in the tree
    sys.path.insert(0, HERE)
    from bench_torch_jobs import zero_job, ps_job

    torch.set_num_threads(1)
    dist.init_process_group("coll")
    rank, p = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    ref = reference(torch, nn, p)
    check(not torch.equal(ref, flat(torch, model(torch, nn))), "the one-process run moved the parameters")
    for name, job, group, extra in (("ZeRO-2 over coll (reduce_scatter_tensor)", zero_job, None, {}),
                                    ("ZeRO-2, gloo's form, over coll (all_reduce)", zero_job, None,
                                     {"gloo_style": True}),
                                    ("ZeRO-2, gloo's form, over gloo", zero_job, gloo, {"gloo_style": True}),
                                    ("parameter server over coll (broadcast, reduce)", ps_job, None, {})):
        try:
            step, final = job(torch, dist, model(torch, nn), p, rank, LR, group=group, **extra)
            for s in range(STEPS):
                x, y = batch(torch, rank, s)
                step((x,), y, nn.functional.mse_loss)
            d = close(torch, final(), ref, name)
            if rank == 0:
                print("%s: max |difference| %.3g" % (name, d))
        except Exception:                       # noqa: BLE001
            traceback.print_exc()
            check(False, name + " raised")
    fsdp(torch, nn, dist, rank, p, ref)
    dist.destroy_process_group()


def run(p):
    """Runs the worker on p ranks; each rank writes "passed failed" to a file
    of its own in a fresh folder (COLL_JOBS_RESULTS), because ranks that
    share one stdout pipe may print into each other's lines."""
    t0 = time.time()
    where = tempfile.mkdtemp(prefix="coll_jobs_")
    cmd = [sys.executable, "-m", "coll_torch.run", "--standalone", "--nproc-per-node", str(p),
           os.path.abspath(__file__), "worker"]
    env = dict(os.environ, COLL_JOBS_RESULTS=where)
    try:
        pr = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                            env=env)
        out, rc = pr.stdout, pr.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") + "\nKILLED after 120 s", -1
    a = b = 0
    ranks = set()
    for r in range(p):
        try:
            with open(os.path.join(where, str(r))) as f:
                x, y = f.read().split()
            a += int(x)
            b += int(y)
            ranks.add(r)
        except (OSError, ValueError):
            pass
    shutil.rmtree(where, ignore_errors=True)
    if rc != 0 or ranks != set(range(p)):
        b += 1
    print("jobs against one process: %d ranks %5.1f s  %d passed, %d failed" % (p, time.time() - t0, a, b))
    for line in out.splitlines():
        if b or line.startswith(("FSDP", "ZeRO", "parameter")):
            if not line.startswith("RESULT "):
                print("  " + line)
    sys.stdout.flush()
    return a, b


def main():
    tp = tf = 0
    for p in (2, 3):
        a, b = run(p)
        tp += a
        tf += b
    print("torch-jobs: %d passed, %d failed" % (tp, tf))
    sys.exit(1 if tf else 0)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        try:
            worker()
        except Exception:                       # noqa: BLE001
            traceback.print_exc()
            check(False, "the worker raised")
        print("RESULT %s %d %d" % (os.environ.get("RANK", "?"), passed, failed))
        sys.stdout.flush()
        if os.environ.get("COLL_JOBS_RESULTS"):
            with open(os.path.join(os.environ["COLL_JOBS_RESULTS"], os.environ.get("RANK", "x")), "w") as f:
                f.write("%d %d\n" % (passed, failed))
        sys.exit(1 if failed else 0)
    else:
        main()
