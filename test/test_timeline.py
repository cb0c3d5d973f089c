#!/usr/bin/env python3
"""test/test_timeline.py RUN TOOL OUTDIR - make test-timeline.

RUN is test/timeline_run.c's program, TOOL tools/timeline.c's. Checks:

  - real runs (allreduce/ring p = 4 over the threads, shm and TCP ports;
    allgather/bruck p = 3 and reduce_scatter/recursive_halving p = 4 over
    threads; broadcast/binomial p = 5 over shm): the JSON parses and holds
    exactly p x calls "X" events, each named collective/algorithm, one
    thread per rank, times non-decreasing and calls not overlapping on a
    rank; every event equals the record it came from, read here from the
    rank files on its own (call number, bytes, step, result, start and
    duration against the earliest start);
  - a rank that skips its last call (p = 4, a 300 ms deadline, over
    threads and TCP): p x calls - 1 events, the others' last call failed
    (args.failed, cname "terrible", result < 0), a "never started" mark
    on the silent rank; the page has as many boxes, the failed ones red,
    and its tables name the failure and the silent rank;
  - the page is one file that loads nothing from outside; in headless
    Chromium it loads without a console error, its script counts every
    call box drawn and the schedule's diagram; a screenshot is not blank
    (distinct colours) and shows the failure's red;
  - the MPI drop-in's files (coll-mpi[R] blocks: two communicators, one
    dumped twice) and coll_torch's ('#' headers), listed in reverse: the
    rank and communicator from the headers, each call once; a snapshot
    with a call still running (result 1, end 0) marked in progress;
  - malformed input (each a copy of a good file with one line broken):
    the tool exits 1 naming the file and the line; 150 randomly damaged
    files: exit 0 or 1 with the tool's own message, never a signal;
  - bad names (collective, algorithm, port) are refused with the good
    ones listed.
Without Chromium the page checks are skipped loudly, a failure under
CI=true. Ends with "timeline: N passed, N failed"."""
import json
import os
import re
import shutil
import subprocess
import sys

from pycheck import Tally, png_colours

run, tool, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
T = Tally()
check = T.check
CALL = re.compile(r"^call (\d+) (\w+) (\w+) dtype (\d+) op (\d+) root (-?\d+) bytes (\d+) start (\d+) end (\d+) "
                  r"step (-?\d+) peer (-?\d+) result (-?\d+) ?(.*)$")


def records(d, p):
    """Every rank's records as read here: {rank: [dict, ...]}."""
    out = {}
    for r in range(p):
        path = os.path.join(d, "rank%d.txt" % r)
        rows = []
        if os.path.exists(path):
            for line in open(path):
                m = CALL.match(line.rstrip("\n"))
                if m:
                    g = m.groups()
                    rows.append({"call": int(g[0]), "name": g[1] + "/" + g[2], "bytes": int(g[6]), "start": int(g[7]),
                                 "end": int(g[8]), "step": int(g[9]), "peer": int(g[10]), "result": int(g[11])})
        out[r] = rows
    return out


def timeline(name, coll, algo, p, port, calls, n=1000, fail=None):
    """Runs RUN and TOOL into OUTDIR/name; checks the JSON against the rank
    files. Returns (directory, events) or (directory, None)."""
    d = os.path.join(outdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    args = [run, "coll=" + coll, "algo=" + algo, "p=%d" % p, "port=" + port, "n=%d" % n, "calls=%d" % calls, "out=" + d]
    if fail is not None:
        args += ["fail=%d" % fail, "deadline=300"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "%s: %s exited %d: %s" % (name, " ".join(args), r.returncode, r.stderr[-500:]))
    files = [os.path.join(d, "rank%d.txt" % i) for i in range(p)]
    t = subprocess.run([tool, "-o", d] + files, capture_output=True, text=True, timeout=60)
    if not check(t.returncode == 0 and "index.html" in t.stdout, "%s: the tool exited %d: %s" % (name, t.returncode, t.stderr)):
        return d, None
    try:
        doc = json.load(open(os.path.join(d, "trace.json")))
    except ValueError as e:
        check(False, "%s: trace.json does not parse: %s" % (name, e))
        return d, None
    check(True, "parses")
    evs = [e for e in doc.get("traceEvents", []) if e.get("ph") == "X" and e.get("cat") == "coll"]
    want = p * calls - (1 if fail is not None else 0)
    check(len(evs) == want, "%s: %d X events, %d wanted (p %d x %d calls%s)" % (name, len(evs), want, p, calls,
                                                                                " - 1" if fail is not None else ""))
    check(all(e["name"] == coll + "/" + algo for e in evs), "%s: names %s" % (name, sorted({e["name"] for e in evs})))
    check(sorted({e["tid"] for e in evs}) == list(range(p)), "%s: tids %s" % (name, sorted({e["tid"] for e in evs})))
    check(all(e["pid"] == 1 for e in evs), "%s: pids %s" % (name, sorted({e["pid"] for e in evs})))
    rec = records(d, p)
    t0 = min(x["start"] for rows in rec.values() for x in rows)
    mism = 0
    for r in range(p):
        mine = [e for e in evs if e["tid"] == r]
        ts = [e["ts"] for e in mine]
        check(ts == sorted(ts), "%s: rank %d's times go back: %s" % (name, r, ts))
        check(all(mine[i]["ts"] + mine[i]["dur"] <= mine[i + 1]["ts"] + 0.002 for i in range(len(mine) - 1)),
              "%s: rank %d's calls overlap" % (name, r))
        rows = sorted(rec[r], key=lambda x: x["start"])
        check(len(rows) == len(mine), "%s: rank %d: %d records, %d events" % (name, r, len(rows), len(mine)))
        for e, x in zip(mine, rows):
            a = e["args"]
            if (a["call"] != x["call"] or a["bytes"] != x["bytes"] or a["step"] != x["step"] or a["result"] != x["result"]
                    or a["peer"] != x["peer"] or abs(e["ts"] - (x["start"] - t0) / 1000.0) > 0.002
                    or abs(e["dur"] - (x["end"] - x["start"]) / 1000.0) > 0.002 or a["failed"] != (x["result"] < 0)
                    or (e.get("cname") == "terrible") != (x["result"] < 0)):
                mism += 1
                print("  %s rank %d: event %s against record %s" % (name, r, e, x))
    check(mism == 0, "%s: %d events differ from their records" % (name, mism))
    messages(name, d, doc, p, evs, rec)
    return d, evs


SCHED = re.compile(r"^step (\d+) send_to (-?\d+) send_bytes (\d+) recv_from (-?\d+) recv_bytes (\d+)$")


def schedule(d, r):
    """coll_describe's steps on rank r, as the runner wrote them: {step: (send_to, send_bytes, recv_from, recv_bytes)}."""
    out = {}
    for line in open(os.path.join(d, "rank%d.schedule" % r)):
        m = SCHED.match(line.strip())
        if m:
            out[int(m.group(1))] = tuple(int(x) for x in m.groups()[1:])
    return out


def messages(name, d, doc, p, calls_ev, rec):
    """The observer's steps and messages in the trace against coll_describe's
    schedule (the runner's rank<r>.schedule): per rank and call, the steps
    that send or receive, and in each the messages' peers, count and bytes;
    every send matched to a receive on its peer (and a flow arrow from one
    to the other); message within step within call."""
    tev = doc.get("traceEvents", [])
    steps = [e for e in tev if e.get("ph") == "X" and e.get("cat") == "step"]
    msgs = [e for e in tev if e.get("ph") == "X" and e.get("cat") == "msg"]
    check(doc["otherData"].get("event_files") == p, "%s: %s event files read, %d wanted" % (name, doc["otherData"].get("event_files"), p))
    check(len(msgs) == doc["otherData"].get("messages") and len(steps) == doc["otherData"].get("steps"),
          "%s: %d messages, %d steps; otherData %s" % (name, len(msgs), len(steps), doc["otherData"]))
    bad_sched = bad_nest = bad_open = 0
    for r in range(p):
        want = schedule(d, r)
        check(len(want) > 0, "%s: rank %d: no schedule" % (name, r))
        busy = {k for k, x in want.items() if x[0] >= 0 or x[2] >= 0}
        for c in [e for e in calls_ev if e["tid"] == r]:
            n = c["args"]["call"]
            ok = c["args"]["result"] == 0
            mine = [s_ for s_ in steps if s_["tid"] == r and s_["args"]["call"] == n]
            ks = sorted(s_["args"]["step"] for s_ in mine)
            # every slice inside its call; every message inside its step
            for s_ in mine:
                if not (c["ts"] - 0.002 <= s_["ts"] and s_["ts"] + s_["dur"] <= c["ts"] + c["dur"] + 0.002):
                    bad_nest += 1
                    print("  %s rank %d call %d: step %s outside its call %s" % (name, r, n, s_, c))
                ms = [m for m in msgs if m["args"]["rank"] == r and m["args"]["call"] == n and m["args"]["step"] == s_["args"]["step"]]
                for m in ms:
                    if not (s_["ts"] - 0.002 <= m["ts"] and m["ts"] + m["dur"] <= s_["ts"] + s_["dur"] + 0.002):
                        bad_nest += 1
                        print("  %s rank %d call %d: message %s outside its step %s" % (name, r, n, m, s_))
                a = s_["args"]
                if (a["sends"] != len([m for m in ms if m["args"]["send"]]) or a["recvs"] != len([m for m in ms if not m["args"]["send"]])
                        or a["send_bytes"] != sum(m["args"]["bytes"] for m in ms if m["args"]["send"])
                        or a["recv_bytes"] != sum(m["args"]["bytes"] for m in ms if not m["args"]["send"])):
                    bad_sched += 1
                    print("  %s rank %d call %d: step %s against its messages" % (name, r, n, a))
            for i in range(len(mine) - 1):
                a_, b_ = sorted(mine, key=lambda x: x["ts"])[i:i + 2]
                if a_["ts"] + a_["dur"] > b_["ts"] + 0.002:
                    bad_nest += 1
                    print("  %s rank %d call %d: steps overlap: %s, %s" % (name, r, n, a_["args"], b_["args"]))
            if not ok:                   # a failed call: what it left open is open, inside it
                for m in msgs:
                    if m["args"]["rank"] == r and m["args"]["call"] == n and m["args"]["open"] and m.get("cname") != "bad":
                        bad_open += 1
                continue
            if ks[:1] != [0] or set(ks[1:]) != busy:
                bad_sched += 1
                print("  %s rank %d call %d: steps %s, the schedule's busy ones %s (and the call check, 0)" % (name, r, n, ks, sorted(busy)))
            for k, (st, sb, rf, rb) in want.items():
                ms = [m for m in msgs if m["args"]["rank"] == r and m["args"]["call"] == n and m["args"]["step"] == k]
                snd = [m for m in ms if m["args"]["send"]]
                rcv = [m for m in ms if not m["args"]["send"]]
                if (len(snd) != (st >= 0) or len(rcv) != (rf >= 0) or sum(m["args"]["bytes"] for m in snd) != sb
                        or sum(m["args"]["bytes"] for m in rcv) != rb or any(m["args"]["peer"] != st for m in snd)
                        or any(m["args"]["peer"] != rf for m in rcv) or any(m["args"]["open"] for m in ms)):
                    bad_sched += 1
                    print("  %s rank %d call %d step %d: sends %s, receives %s; describe: to %d %d B, from %d %d B" % (
                        name, r, n, k, [(m["args"]["peer"], m["args"]["bytes"]) for m in snd],
                        [(m["args"]["peer"], m["args"]["bytes"]) for m in rcv], st, sb, rf, rb))
    check(bad_sched == 0, "%s: %d steps differ from coll_describe's schedule" % (name, bad_sched))
    check(bad_nest == 0, "%s: %d slices not nested (message in step in call, steps apart)" % (name, bad_nest))
    check(bad_open == 0, "%s: %d open messages of failed calls not marked" % (name, bad_open))
    # every send has its receive on the peer, and one arrow from it to it
    flows = {}
    for e in tev:
        if e.get("ph") in ("s", "f") and e.get("cat") == "msg":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    unmatched = bad_flow = 0
    sends = 0
    for i, m in enumerate(msgs):
        a = m["args"]
        if not a["send"]:
            continue
        ok_call = any(c["tid"] == a["rank"] and c["args"]["call"] == a["call"] and c["args"]["result"] == 0 for c in calls_ev)
        j = a["match"]
        if j < 0 or j >= len(msgs):
            unmatched += ok_call
            if ok_call:
                print("  %s: send without its receive: %s" % (name, m))
            continue
        sends += 1
        q = msgs[j]["args"]
        if (q["send"] or q["rank"] != a["peer"] or q["peer"] != a["rank"] or q["call"] != a["call"] or q["bytes"] != a["bytes"]
                or q["match"] != i):
            unmatched += 1
            print("  %s: send %s matched to %s" % (name, a, q))
        fl = flows.get(a["flow"], {})
        if ("s" not in fl or "f" not in fl or fl["s"]["tid"] != m["tid"] or abs(fl["s"]["ts"] - m["ts"]) > 0.002
                or fl["f"]["tid"] != msgs[j]["tid"] or fl["f"].get("bp") != "e"
                or not (msgs[j]["ts"] - 0.002 <= fl["f"]["ts"] <= msgs[j]["ts"] + msgs[j]["dur"] + 0.002)
                or abs(fl["f"]["ts"] - (msgs[j]["ts"] + msgs[j]["dur"])) > 0.0025):
            bad_flow += 1
            print("  %s: send %s: arrow %s" % (name, a, fl))
    check(unmatched == 0, "%s: %d sends of good calls without their receive on the peer" % (name, unmatched))
    check(bad_flow == 0 and len(flows) == sends, "%s: %d arrows wrong, %d arrows for %d matched sends" % (name, bad_flow, len(flows), sends))
    check(len(msgs) > 0 and sends > 0, "%s: no messages" % name)


os.makedirs(outdir, exist_ok=True)

# ---- real runs over each port -------------------------------------------------
for port in ("threads", "shm", "tcp"):
    timeline("allreduce-ring-" + port, "allreduce", "ring", 4, port, 5)
timeline("allgather-bruck-threads", "allgather", "bruck", 3, "threads", 3, n=100)
timeline("reduce_scatter-recursive_halving-threads", "reduce_scatter", "recursive_halving", 4, "threads", 3, n=64)
timeline("broadcast-binomial-shm", "broadcast", "binomial", 5, "shm", 3, n=500)

# ---- a rank that skips its last call ------------------------------------------
page = None
for port in ("threads", "tcp"):
    d, evs = timeline("fail-" + port, "allreduce", "ring", 4, port, 4, fail=2)
    if evs is None:
        continue
    bad = [e for e in evs if e["args"]["failed"]]
    check(sorted(e["tid"] for e in bad) == [0, 1, 3] and all(e["args"]["call"] == 4 and e["args"]["result"] < 0 and
                                                            e.get("cname") == "terrible" for e in bad),
          "fail-%s: failed events %s (ranks 0, 1, 3, call 4 wanted)" % (port, [(e["tid"], e["args"]["call"]) for e in bad]))
    check(len([e for e in evs if e["tid"] == 2]) == 3, "fail-%s: rank 2 has not 3 calls" % port)
    doc = json.load(open(os.path.join(d, "trace.json")))
    marks = [e for e in doc["traceEvents"] if e.get("ph") == "i"]
    check(len(marks) == 1 and marks[0]["tid"] == 2 and marks[0]["args"]["call"] == 4 and "never started" in marks[0]["name"],
          "fail-%s: the never-started mark: %s" % (port, marks))
    html = open(os.path.join(d, "index.html")).read()
    lanes = html[html.find('id="lanes"'):html.find("</svg>", html.find('id="lanes"'))]
    check(lanes.count('<rect class="call') == 15, "fail-%s: %d boxes on the page, 15 wanted" % (port, lanes.count('<rect class="call')))
    check(lanes.count('<rect class="call failed"') == 3 and len(re.findall(r'class="call failed"[^>]*fill="#d62728"', lanes)) == 3,
          "fail-%s: %d failed boxes, 3 red wanted" % (port, lanes.count('<rect class="call failed"')))
    check(lanes.count('class="missing" data-rank="2" data-call="4"') == 1, "fail-%s: no never-started box for rank 2" % port)
    check(re.search(r'<table id="failures">.*<td>3</td><td>4</td><td>allreduce/ring</td>', html, re.S) is not None and
          re.search(r'<table id="missing">.*<td>2</td><td>4</td>', html, re.S) is not None,
          "fail-%s: the tables do not name the failure and rank 2" % port)
    check(re.search(r'<figure class="schedule" data-diagram="allreduce-ring-p4">\s*<svg [^>]*data-diagram="allreduce-ring-p4"', html)
          is not None, "fail-%s: no schedule diagram" % port)
    check(not re.search(r'<(script|link|img|iframe)[^>]* (src|href)=', html), "fail-%s: the page loads something from outside" % port)
    page = page or os.path.join(d, "index.html")
good = os.path.join(outdir, "allreduce-ring-threads", "index.html")

# ---- the MPI drop-in's and coll_torch's files (their headers, as docs/mpi.md
# and docs/torch.md show them), made from the threads run's records ----------------
base = os.path.join(outdir, "allreduce-ring-threads")
calls_of = {r: [l for l in open(os.path.join(base, "rank%d.txt" % r)) if l.startswith("call ")] for r in range(4)}
fmt = os.path.join(outdir, "formats")
shutil.rmtree(fmt, ignore_errors=True)
os.makedirs(fmt)
mpi_files, torch_files = [], []
for r in range(4):
    path = os.path.join(fmt, "mpi-%d.txt" % r)        # a failure's block, then the same calls at MPI_Finalize,
    with open(path, "w") as f:                        # then a second communicator's calls (its call numbers 1, 2)
        f.write("coll-mpi[%d]: communicator 1: MPI_COMM_WORLD, 4 ranks, a call failed\n" % r + "".join(calls_of[r][:3]))
        f.write("coll-mpi[%d]: communicator 1: MPI_COMM_WORLD, 4 ranks, at MPI_Finalize\n" % r + "".join(calls_of[r]))
        f.write("coll-mpi[%d]: communicator 2: (unnamed), 4 ranks, freed\n" % r +
                "".join(re.sub(r"^call \d+", "call %d" % (k + 1), l) for k, l in enumerate(calls_of[r][:2])))
    mpi_files.append(path)
    path = os.path.join(fmt, "torch-%d.txt" % r)
    with open(path, "w") as f:
        f.write("# coll_torch: rank %d of 4, threads port, pid 1, at 5 ns\n" % r +
                "# coll: allreduce failed on rank 3 of 4 (shm port): port failed: rank 1, call 4, step 0\n"
                "# world communicator: rank %d of 4; start, end: CLOCK_MONOTONIC ns; peer: this communicator's rank\n" % r +
                "".join(calls_of[r]))
    torch_files.append(path)
for what, files, want, pids in (("mpi", mpi_files, 4 * 5 + 4 * 2, {1: 20, 2: 8}), ("torch", torch_files, 4 * 5, {1: 20})):
    files = files[::-1]                                # the rank is the header's, not the place on the line
    r = subprocess.run([tool, "-o", fmt] + files, capture_output=True, text=True, timeout=30)
    if not check(r.returncode == 0, "%s files: exit %d, %s" % (what, r.returncode, r.stderr.strip())):
        continue
    doc = json.load(open(os.path.join(fmt, "trace.json")))
    evs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    got = {p: len([e for e in evs if e["pid"] == p]) for p in sorted({e["pid"] for e in evs})}
    check(len(evs) == want and got == pids, "%s files: %d events by pid %s, %d (%s) wanted" % (what, len(evs), got, want, pids))
    t0 = min(int(l.split()[13]) for r_ in range(4) for l in calls_of[r_])
    first = {e["tid"]: e for e in evs if e["pid"] == 1 and e["args"]["call"] == 1}
    check(all(abs(first[r_]["ts"] - (int(calls_of[r_][0].split()[13]) - t0) / 1000.0) < 0.002 for r_ in range(4)),
          "%s files: call 1 is not at each rank's own time" % what)
    names = [e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"]
    check(names == (["communicator 1: MPI_COMM_WORLD", "communicator 2: (unnamed)"] if what == "mpi" else ["world"]),
          "%s files: processes %s" % (what, names))

# a snapshot taken while a call ran (pg.record()): result 1, end 0
snap = os.path.join(fmt, "snapshot-0.txt")
last = calls_of[0][-1].split()
last[15], last[21] = "0", "1"
open(snap, "w").write("".join(calls_of[0][:-1]) + " ".join(last[:22]) + " in progress: call coll_progress again\n")
r = subprocess.run([tool, "-o", fmt, snap], capture_output=True, text=True, timeout=30)
if check(r.returncode == 0, "a snapshot: exit %d, %s" % (r.returncode, r.stderr.strip())):
    evs = [e for e in json.load(open(os.path.join(fmt, "trace.json")))["traceEvents"] if e.get("ph") == "X"]
    check(len(evs) == 5 and evs[-1]["args"]["in_progress"] and not evs[-1]["args"]["failed"] and evs[-1]["dur"] == 0 and
          not any(e["args"]["in_progress"] for e in evs[:-1]), "a snapshot: %s" % evs[-1:])

# ---- malformed input: the file and line named, exit 1 ---------------------------
src = os.path.join(outdir, "allreduce-ring-threads", "rank0.txt")
lines = open(src).read().split("\n")
breaks = {
    "word": lambda l: l.replace(" bytes ", " bites "),
    "number": lambda l: l.replace(" step ", " step x"),
    "short": lambda l: l[:l.find(" start ")],
    "algo": lambda l: l.replace(" ring ", " rung "),
    "backwards": lambda l: re.sub(r"end (\d+)", "end 1", l),
    "junk": lambda l: "hello world",
    "huge": lambda l: l.replace(" bytes ", " bytes 99999999999999999999999"),
}
for what, f in breaks.items():
    bad_path = os.path.join(outdir, "bad-%s.txt" % what)
    mod = list(lines)
    mod[2] = f(mod[2])                              # line 3: a call line
    open(bad_path, "w").write("\n".join(mod))
    r = subprocess.run([tool, "-o", outdir, bad_path], capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and ("%s:3:" % bad_path) in r.stderr,
          "malformed (%s): exit %d, '%s' (the file and line 3 wanted)" % (what, r.returncode, r.stderr.strip()))
r = subprocess.run([tool, "-o", outdir, src, src], capture_output=True, text=True, timeout=30)
check(r.returncode == 1 and "both rank 0" in r.stderr, "one file twice: exit %d, %s" % (r.returncode, r.stderr.strip()))
r = subprocess.run([tool, "-o", outdir, os.path.join(outdir, "nothing-here.txt")], capture_output=True, text=True, timeout=30)
check(r.returncode == 1 and "cannot read" in r.stderr, "a missing file: exit %d, %s" % (r.returncode, r.stderr.strip()))

# 150 randomly damaged files (bytes changed, cut, inserted): exit 0 or 1 with
# a message, never a signal
rnd = __import__("random").Random(42)
seeds = [open(src, "rb").read(), open(mpi_files[0], "rb").read(), open(torch_files[0], "rb").read()]
crashes = 0
for i in range(150):
    b = bytearray(rnd.choice(seeds))
    for _ in range(rnd.randint(1, 6)):
        k = rnd.randrange(len(b))
        op = rnd.random()
        if op < 0.4:
            b[k] = rnd.randrange(256)
        elif op < 0.7:
            del b[k:k + rnd.randint(1, 20)]
        else:
            b[k:k] = rnd.choice([b" ", b"-", b"9" * 25, b"\n", b"#", b"\0", b"call 1 ", b"rank 99999 of ", b"x" * 1100])
    path = os.path.join(outdir, "fuzz.txt")
    open(path, "wb").write(bytes(b))
    r = subprocess.run([tool, "-o", outdir, path], capture_output=True, timeout=30)
    if r.returncode not in (0, 1) or (r.returncode == 1 and b"timeline: " not in r.stderr):
        crashes += 1
        shutil.copy(path, os.path.join(outdir, "fuzz-crash-%d.txt" % i))
check(crashes == 0, "%d of 150 damaged files ended the tool without its own answer (kept as fuzz-crash-*.txt)" % crashes)

# ---- bad names ------------------------------------------------------------------
for arg, good_one in (("coll=allreduse", "allreduce"), ("algo=rung", "ring"), ("port=infiniband", "threads shm tcp")):
    r = subprocess.run([run, arg, "out=" + outdir], capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and good_one in r.stderr, "%s: exit %d, '%s'" % (arg, r.returncode, r.stderr.strip()))

# ---- the page in headless Chromium ----------------------------------------------
browser = shutil.which("chromium") or shutil.which("chromium-browser")
if not browser:
    if os.environ.get("CI") == "true":
        check(False, "chromium not found (CI)")
    else:
        print("*** SKIPPED the page in Chromium: chromium not found (apt-get install chromium) ***")
elif page:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    url = "file://" + os.path.abspath(page)
    log = os.path.join(outdir, "chromium.log")
    with open(log, "w") as lf:
        dom = subprocess.run([browser] + flags + ["--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", url],
                             stdout=subprocess.PIPE, stderr=lf, text=True, timeout=120).stdout
    st = re.search(r'<p id="status"[^>]*>', dom)
    st = dict(re.findall(r'(data-[a-z-]+)="(\d+)"', st.group(0))) if st else {}
    check(st.get("data-drawn") == "15" and st.get("data-drawn-failed") == "3" and st.get("data-diagrams") == "1",
          "in Chromium the page drew %s" % st)
    errs = [l for l in open(log) if re.search(r"CONSOLE|ERR_FILE|Failed to load", l)]
    check(not errs, "console errors: %s" % errs[:3])
    shot = os.path.join(outdir, "timeline.png")
    if os.path.exists(shot):
        os.remove(shot)
    subprocess.run([browser] + flags + ["--screenshot=" + shot, "--window-size=1800,1000", url],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    seen = (png_colours(shot, 3) if os.path.exists(shot) else None) or set()
    check(len(seen) > 12, "screenshot %s has %d distinct colours (more than 12 wanted)" % (shot, len(seen)))
    check(bytes((0xd6, 0x27, 0x28)) in seen, "screenshot %s shows no failure red (#d62728)" % shot)
    print("screenshot: %s, %d colours" % (shot, len(seen)))

sys.exit(T.summary("timeline"))
