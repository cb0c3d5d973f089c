"""coll_torch.run - start the ranks of a torch.distributed job, as torchrun does.

    python3 -m coll_torch.run --nproc-per-node 2 train.py --lr 0.1
    python3 -m coll_torch.run --nnodes 2 --node-rank 0 --master-addr host0 \\
        --master-port 29500 --nproc-per-node 4 train.py          # on each host

A torchrun command line with `torchrun` (or `python -m torch.distributed.run`)
replaced by `python3 -m coll_torch.run`: the same options for a static job
(both spellings, --nproc-per-node and --nproc_per_node), the same
environment in every rank (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME,
MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS,
TORCHELASTIC_RUN_ID), so init_process_group(init_method="env://") works as
under torchrun. Debian's torchrun (torch 1.13 on Python 3.11) fails before
it starts anything; this one has no elastic agent to fail.

What it does beyond starting processes:
  - SIGINT, SIGTERM and SIGHUP to the launcher go to every rank (each rank
    is a session of its own, so a terminal's Ctrl-C reaches it once, through
    here); ranks still running --grace seconds later are killed. It exits
    128 + the signal's number.
  - A rank that exits non-zero or dies of a signal fails the job: the
    launcher says which rank, its exit code or signal, ends the others the
    same way and exits with that rank's code (128 + signal for a signal).
  - A launcher killed outright (SIGKILL) takes its ranks with it (Linux:
    PR_SET_PDEATHSIG), so no rank is left waiting on a dead job.

Not here: elastic membership (--nnodes MIN:MAX, --max-restarts > 0, rdzv
backends other than a fixed master), which need torch's elastic agent.
"""
import argparse
import ctypes
import os
import signal
import socket
import sys
import time

ME = "coll_torch.run"


def parse(argv):
    a = argparse.ArgumentParser(
        prog="python3 -m coll_torch.run",
        description="Starts the ranks of a torch.distributed job with torchrun's environment.")
    a.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="ranks on this node: a number, or 'cpu' (one per core); default 1")
    a.add_argument("--nnodes", default="1", help="nodes in the job (a fixed number); default 1")
    a.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's index, 0..nnodes-1")
    a.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="the host of rank 0 (node 0), where torch's store listens; default 127.0.0.1")
    a.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="the port of torch's store on that host; default 29500")
    a.add_argument("--standalone", action="store_true",
                   help="one node, on a free port of 127.0.0.1 (overrides the master options)")
    a.add_argument("--rdzv-id", "--rdzv_id", "--run-id", "--run_id", default="none",
                   help="the job's id, TORCHELASTIC_RUN_ID in every rank")
    a.add_argument("--max-restarts", "--max_restarts", type=int, default=0, help="0 only: ranks are not restarted")
    a.add_argument("--grace", type=float, default=5.0,
                   help="seconds ranks get to end after the launcher passes on a signal or a failure, "
                        "before SIGKILL; default 5")
    a.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    a.add_argument("--no-python", "--no_python", action="store_true",
                   help="run the script as a program of its own, not with this Python")
    a.add_argument("script", help="the program each rank runs")
    a.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    o = a.parse_args(argv)

    def bad(why):
        a.error(why)

    if o.nproc_per_node == "cpu":
        o.nproc_per_node = os.cpu_count() or 1
    elif o.nproc_per_node in ("gpu", "auto"):
        bad("--nproc-per-node %s: this launcher does not count GPUs; give a number" % o.nproc_per_node)
    try:
        o.nproc_per_node = int(o.nproc_per_node)
    except ValueError:
        bad("--nproc-per-node %r is not a number" % o.nproc_per_node)
    if ":" in o.nnodes:
        bad("--nnodes %s: an elastic range needs torch's elastic agent; give one number" % o.nnodes)
    try:
        o.nnodes = int(o.nnodes)
    except ValueError:
        bad("--nnodes %r is not a number" % o.nnodes)
    if o.nproc_per_node < 1:
        bad("--nproc-per-node must be at least 1")
    if o.nnodes < 1:
        bad("--nnodes must be at least 1")
    if not 0 <= o.node_rank < o.nnodes:
        bad("--node-rank %d is not in 0..%d" % (o.node_rank, o.nnodes - 1))
    if not 0 < o.master_port < 65536:
        bad("--master-port %d is not a TCP port" % o.master_port)
    if o.max_restarts != 0:
        bad("--max-restarts %d: ranks are not restarted here (torch's elastic agent does that)" % o.max_restarts)
    if o.grace < 0:
        bad("--grace must not be negative")
    if o.module and o.no_python:
        bad("--module and --no-python exclude each other")
    if o.standalone:
        if o.nnodes != 1:
            bad("--standalone is one node (--nnodes 1)")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        o.master_addr, o.master_port = "127.0.0.1", s.getsockname()[1]
        s.close()
    if o.args and o.args[0] == "--":
        o.args = o.args[1:]
    return o


def rank_env(o, local):
    """torchrun's environment for local rank `local` of this node."""
    n = o.nproc_per_node
    world = n * o.nnodes
    rank = o.node_rank * n + local
    e = dict(os.environ)
    e.update({
        "RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(n),
        "GROUP_RANK": str(o.node_rank), "GROUP_WORLD_SIZE": str(o.nnodes),
        "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world), "ROLE_NAME": "default",
        "MASTER_ADDR": o.master_addr, "MASTER_PORT": str(o.master_port),
        "TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": o.rdzv_id,
    })
    # torchrun's default, so that n ranks do not each start a thread per core
    if n > 1 and "OMP_NUM_THREADS" not in os.environ:
        e["OMP_NUM_THREADS"] = "1"
    # the ranks find this package where the launcher found it
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = [p for p in e.get("PYTHONPATH", "").split(os.pathsep) if p]
    if here not in path:
        e["PYTHONPATH"] = os.pathsep.join(path + [here])
    return e


def rank_cmd(o):
    if o.no_python:
        return [o.script] + o.args
    if o.module:
        return [sys.executable, "-u", "-m", o.script] + o.args
    return [sys.executable, "-u", o.script] + o.args


def die_with_parent():
    """In the child before exec: SIGKILL when the launcher dies (Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def how(code):
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "signal %d" % -code
        return "was killed by %s (%d)" % (name, -code)
    return "exited with code %d" % code


def say(msg):
    sys.stderr.write("%s: %s\n" % (ME, msg))
    sys.stderr.flush()


class Job:
    def __init__(self, o):
        import subprocess
        self.o = o
        self.procs = []              # (global rank, local rank, Popen)
        self.signum = 0

        def on_signal(sig, _frame):
            if not self.signum:
                self.signum = sig
        # before the first rank starts: a signal from now on reaches them all
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, on_signal)
        cmd = rank_cmd(o)
        for local in range(o.nproc_per_node):
            rank = o.node_rank * o.nproc_per_node + local
            try:
                p = subprocess.Popen(cmd, env=rank_env(o, local), start_new_session=True,
                                     preexec_fn=die_with_parent)
            except OSError as e:
                say("cannot start rank %d (%s): %s" % (rank, cmd[0], e))
                self.end(signal.SIGTERM)
                sys.exit(1)
            self.procs.append((rank, local, p))

    def live(self):
        return [x for x in self.procs if x[2].poll() is None]

    def signal_all(self, sig):
        for _, _, p in self.live():
            try:
                os.killpg(p.pid, sig)    # the rank and whatever it started
            except (ProcessLookupError, PermissionError):
                pass

    def end(self, sig):
        """Passes `sig` to every rank still running; SIGKILL after the grace."""
        self.signal_all(sig)
        deadline = time.monotonic() + self.o.grace
        while self.live() and time.monotonic() < deadline:
            time.sleep(0.02)
        left = self.live()
        if left:
            say("rank%s %s still running %.3g s after %s: killing" %
                ("s" if len(left) > 1 else "", ", ".join(str(r) for r, _, _ in left), self.o.grace,
                 signal.Signals(sig).name))
            self.signal_all(signal.SIGKILL)
        for _, _, p in self.procs:
            p.wait()
        # a rank's own children in its session, left behind
        for _, _, p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def run(self):
        while True:
            if self.signum:
                say("got %s: passing it to the ranks" % signal.Signals(self.signum).name)
                self.end(self.signum)
                return 128 + self.signum
            failed = [(r, l, p) for r, l, p in self.procs if p.poll() not in (None, 0)]
            if failed:
                for r, l, p in failed:
                    say("rank %d (local rank %d on node %d, pid %d) %s" % (r, l, self.o.node_rank, p.pid,
                                                                           how(p.returncode)))
                if self.live():
                    say("ending the other ranks")
                self.end(signal.SIGTERM)
                code = failed[0][2].returncode
                return code if code > 0 else 128 - code
            if not self.live():
                return 0
            time.sleep(0.05)


def main(argv=None):
    return Job(parse(sys.argv[1:] if argv is None else argv)).run()


if __name__ == "__main__":
    sys.exit(main())
