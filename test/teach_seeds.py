"""test/teach_seeds.py - the seeds' own programs beside coll's, on the same inputs.

Runs the torch seed's naive and ring all-reduce (examples/seeds_py/
torch_all_reduce.py: torch.distributed, gloo, 4 processes on 127.0.0.1) and
coll's examples/seed_torch.c on the same tensors, and the numpy ring
simulation (examples/seeds_py/ring_reduce_chunk.py) beside
examples/seed_ring_sim.c, and checks that they print the same numbers (and
that these are the plain-loop answer). Where a seed cannot do a case (a
length not divisible by 4) it says so and checks that coll can.

    python3 test/teach_seeds.py build/tcp/seed_torch build/ports-mpi-shm/seed_ring_sim
Ends with "seeds-py: N passed, N failed".
"""
import os
import re
import subprocess
import sys

from pycheck import Tally

T = Tally()
check = T.check


def run(cmd, env=None, timeout=180):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=e,
                       timeout=timeout, text=True)
    return p.returncode, p.stdout


def tensors(text):
    """Every tensor([...]) printed, as lists of ints (ranks print in any order)."""
    return [[int(v) for v in m.split(",")] for m in re.findall(r"tensor\(\[([^\]]*)\]\)", text)]


torch_seed, ring_sim = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
seed_py = os.path.join(here, "..", "examples", "seeds_py")
port = 29700 + os.getpid() % 200

# ---- torch: naive and ring, the seed's input and two ramps ------------------
for n, fill in ((4, "rank"), (8, "ramp"), (10, "ramp"), (6, "ramp")):
    want = [sum(r if fill == "rank" else r * 10 + i for r in range(4)) for i in range(n)]
    rc, out = run([torch_seed, str(n), fill])
    got = {"naive": [], "ring": []}
    for line in out.splitlines():
        m = re.match(r"(naive|ring)\s+\d+ tensor\(\[([^\]]*)\]\)", line)
        if m:
            got[m.group(1)].append([int(v) for v in m.group(2).split(",")])
    for algo in ("naive", "ring"):
        check(rc == 0 and got[algo] == [want] * 4, "coll %s n=%d: every rank prints the sum" % (algo, n))
        port += 1
        prc, pout = run([sys.executable, os.path.join(seed_py, "torch_all_reduce.py"), algo, str(n), fill],
                        env={"MASTER_PORT": str(port)})
        t = tensors(pout)
        if prc == 0 and len(t) == 4:
            same = t == got[algo] and t == [want] * 4
            print("n=%-2d %-5s torch seed %s | coll %s  %s" % (n, algo, t[0], got[algo][0] if got[algo] else "-",
                                                              "same" if same else "DIFFERENT"))
            check(same, "torch seed %s n=%d prints what coll prints" % (algo, n))
        else:
            err = [l for l in pout.splitlines() if "IndexError" in l] or [l for l in pout.splitlines() if "Error" in l]
            print("n=%-2d %-5s torch seed cannot do this length (%d is not a multiple of 4): %s; coll prints %s"
                  % (n, algo, n, err[-1].strip() if err else "exit %d" % prc, got[algo][0] if got[algo] else "-"))
            check(n % 4 != 0, "torch seed %s n=%d runs (a multiple of 4)" % (algo, n))

# ---- numpy: the chunked ring simulation --------------------------------------
rc, out = run([ring_sim])
m = re.search(r"host 0: \[([^\]]*)\]", out)
coll0 = [float(v) for v in m.group(1).split()] if m else []
check(rc == 0 and len(coll0) == 4, "seed_ring_sim prints host 0's 4 values")
for dims in (4, 10):
    prc, pout = run([sys.executable, "-c",
                     "import numpy, runpy; numpy.set_printoptions(precision=17, linewidth=400); "
                     "runpy.run_path(%r, run_name='__main__')" % os.path.join(seed_py, "ring_reduce_chunk.py")],
                    env={"SEED_DIMS": str(dims)})
    lines = pout.strip().splitlines()
    vals = [float(v) for v in lines[0].strip("[] ").split()] if prc == 0 and lines else []
    data = [[1.1, 1.2, 1.3, 1.4], [2.01, 2.02, 2.03, 2.04], [3.001, 3.002, 3.003, 3.004],
            [4.0001, 4.0002, 4.0003, 4.0004]] if dims == 4 else \
        [[(r + 1) + (i + 1) / 100 for i in range(dims)] for r in range(4)]
    mean = [sum(data[r][i] for r in range(4)) / 4 for i in range(dims)]
    close = len(vals) == dims and all(abs(a - b) <= 1e-12 * abs(b) for a, b in zip(vals, mean))
    if dims == 4:
        print("numpy seed host 0: %s (%s)" % (vals, " ".join(lines[1:])))
        print("coll  seed host 0: %s" % coll0)
        check(close, "numpy seed, 4 values: the mean")
        check(len(coll0) == 4 and all(abs(a - b) <= 1e-12 * abs(b) for a, b in zip(coll0, vals)),
              "numpy seed and seed_ring_sim print the same 4 values")
    else:
        bad = [i for i in range(dims) if i >= len(vals) or abs(vals[i] - mean[i]) > 1e-12]
        print("numpy seed cannot do %d values on 4 hosts (chunks of %d//4): elements %s come out %s, "
              "not the mean; seed_ring_sim checks all %d (its own \"10 values\" checks)"
              % (dims, dims, bad, [vals[i] for i in bad if i < len(vals)], dims))
        check(len(bad) > 0, "numpy seed, 10 values: the seed's limit shows")
        check(rc == 0 and "10 values: every host finished" not in out.replace("FAIL", ""), "coll does 10 values")
sys.exit(T.summary("seeds-py"))
