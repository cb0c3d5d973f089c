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
  - the same runs' observer events (rank<r>.events): per rank and call,
    a "call check" step and one step slice for each step of the
    schedule in which the rank sends or receives, as coll_describe says
    (the runner's rank<r>.schedule); in each, one send to describe's
    send_to and one receive from its recv_from, their bytes describe's;
    each step's args equal its messages; message within step within
    call, steps apart; every send of a good call matched to a receive
    on its peer (same call, bytes) and one flow arrow from the send's
    post to the receive's done; a failed call's open messages marked;
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
  - malformed events files (an unknown kind, a word, a number, a field
    out of range, a direction, time going back, an unknown collective,
    trailing words, a short line, a huge number, a done never posted, a
    handle posted twice, a done of the other direction, another rank's
    header, a NUL): exit 1 naming the file and line; a post never done
    drawn open to its call's end, a file cut short, "lost N", comments;
    no events file: the calls alone, as before; 150 randomly damaged
    events files: exit 0 or 1 with the tool's message, never a signal;
  - bad names (collective, algorithm, port) are refused with the good
    ones listed;
  - the page's steps, messages (their tooltips naming peer and bytes)
    and the close view's arrows, counted in Chromium against the trace.
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

# ---- the observer's events: malformed, open, lost, absent --------------------------
evsrc = os.path.join(outdir, "allreduce-ring-threads", "rank0.events")
evlines = open(evsrc).read().split("\n")
first = {k: next(i for i, l in enumerate(evlines) if l.startswith(k + " ")) for k in ("call", "post", "done", "end")}
second_post = next(i for i, l in enumerate(evlines) if l.startswith("post ") and i > first["post"])
done_of_first = next(i for i, l in enumerate(evlines) if i > first["post"] and l.startswith("done ") and
                     " handle %s " % evlines[first["post"]].split()[13] in l)


def events_case(what, lines_, ok=False):
    """rank0.txt with these events beside it: (exit, stderr, trace or None)."""
    dd = os.path.join(outdir, "events-" + what)
    shutil.rmtree(dd, ignore_errors=True)
    os.makedirs(dd)
    shutil.copy(src, os.path.join(dd, "rank0.txt"))
    if lines_ is not None:
        open(os.path.join(dd, "rank0.events"), "w").write("\n".join(lines_))
    r = subprocess.run([tool, "-o", dd, os.path.join(dd, "rank0.txt")], capture_output=True, text=True, timeout=30)
    doc = json.load(open(os.path.join(dd, "trace.json"))) if r.returncode == 0 else None
    return r.returncode, r.stderr, doc, os.path.join(dd, "rank0.events")


def edit(i, f):
    mod = list(evlines)
    mod[i] = f(mod[i])
    return mod


ev_breaks = {   # what, the line broken (0-based), the lines, a word of the message wanted
    "kind": (first["post"], edit(first["post"], lambda l: l.replace("post ", "poke ", 1)), "not an event line"),
    "word": (first["post"], edit(first["post"], lambda l: l.replace(" peer ", " pier ")), "'peer' belongs"),
    "number": (first["done"], edit(first["done"], lambda l: l.replace(" handle ", " handle x")), "not followed by a number"),
    "range": (first["post"], edit(first["post"], lambda l: re.sub(r"peer \d+", "peer 99999", l)), "out of range"),
    "direction": (first["post"], edit(first["post"], lambda l: l.replace(" send ", " sned ").replace(" recv ", " rceiv ")), "'send' or 'recv'"),
    "backwards": (second_post, edit(second_post, lambda l: re.sub(r"^post t \d+", "post t 1", l)), "out of order"),
    "collective": (first["call"], edit(first["call"], lambda l: l.replace(" allreduce ", " allreduse ")), "no collective"),
    "trailing": (first["post"], edit(first["post"], lambda l: l + " extra"), "past the line's last field"),
    "trailing-call": (first["call"], edit(first["call"], lambda l: l + " 7"), "past the line's last field"),
    "short": (first["done"], edit(first["done"], lambda l: l[:l.find(" result ")]), "'result' belongs"),
    "huge": (first["end"], edit(first["end"], lambda l: l.replace(" t ", " t 99999999999999999999999")), "not followed by a number"),
    "done-unposted": (done_of_first - 1, evlines[:first["post"]] + evlines[first["post"] + 1:], "no open post holds"),
    "posted-twice": (first["post"] + 1, evlines[:first["post"] + 1] + evlines[first["post"]:], "posted again"),
    "done-mismatch": (done_of_first, edit(done_of_first, lambda l: re.sub(r"(send|recv) peer \d+",
                      lambda m: ("recv" if m.group(1) == "send" else "send") + " peer " + m.group(0).split()[-1], l)),
                      "posted as a"),
    "rank": (0, edit(0, lambda l: l.replace("rank 0 of 4", "rank 3 of 4")), "rank 3's events beside rank 0's"),
    "nul": (first["post"], edit(first["post"], lambda l: l[:10] + "\0" + l[10:]), "NUL"),
}
for what, (i, mod, word_) in ev_breaks.items():
    rc_, err, _, path_ = events_case(what, mod)
    check(rc_ == 1 and ("%s:%d:" % (path_, i + 1)) in err and word_ in err,
          "malformed events (%s): exit %d, '%s' (the file, line %d and '%s' wanted)" % (what, rc_, err.strip(), i + 1, word_))

# a post never done: drawn open, to its call's end
last_done = max(i for i in range(first["end"]) if evlines[i].startswith("done "))   # call 1's last: no handle reused after it
rc_, err, doc, _ = events_case("open", evlines[:last_done] + evlines[last_done + 1:])
if check(rc_ == 0 and doc is not None, "events with a post never done: exit %d, %s" % (rc_, err.strip())):
    ms = [e for e in doc["traceEvents"] if e.get("cat") == "msg" and e.get("ph") == "X"]
    op = [e for e in ms if e["args"]["open"]]
    call1 = [e for e in doc["traceEvents"] if e.get("cat") == "coll" and e["args"]["call"] == 1][0]
    st = [e for e in doc["traceEvents"] if e.get("cat") == "step" and e["args"]["call"] == 1 and e["args"]["step"] == op[0]["args"]["step"]] if op else []
    check(len(op) == 1 and op[0].get("cname") == "bad" and op[0]["args"]["call"] == 1 and
          abs(op[0]["ts"] + op[0]["dur"] - (call1["ts"] + call1["dur"])) < 0.002 and doc["otherData"]["open_messages"] == 1 and
          len(st) == 1 and st[0]["args"]["open"], "a post never done: open %s, step %s" % (op, st))
# a call that never ended either (the file cut short): open to the file's last time
cut = evlines[:done_of_first]
rc_, err, doc, _ = events_case("cut", cut)
check(rc_ == 0 and doc is not None and doc["otherData"]["open_messages"] >= 1,
      "events cut short: exit %d, %s" % (rc_, err.strip()))
# lost events: a warning, the rest drawn
rc_, err, doc, _ = events_case("lost", evlines + ["lost 7"])
check(rc_ == 0 and "7 events lost" in err and doc["otherData"]["lost_events"] == 7, "lost events: exit %d, %s" % (rc_, err.strip()))
# unknown trailing junk after an empty line and comments: fine
rc_, err, doc, _ = events_case("comments", ["# a comment", ""] + evlines)
check(rc_ == 0 and doc["otherData"]["messages"] > 0, "comments and empty lines: exit %d, %s" % (rc_, err.strip()))
# no events file: the old input, calls only
rc_, err, doc, _ = events_case("none", None)
if check(rc_ == 0 and doc is not None, "no events file: exit %d, %s" % (rc_, err.strip())):
    html = open(os.path.join(outdir, "events-none", "index.html")).read()
    check(doc["otherData"]["event_files"] == 0 and not [e for e in doc["traceEvents"] if e.get("cat") in ("step", "msg")] and
          len([e for e in doc["traceEvents"] if e.get("cat") == "coll"]) == 5 and "No observer events" in html and
          'class="step' not in html and 'class="msg' not in html, "no events file: %s" % doc["otherData"])

# 150 randomly damaged events files: exit 0 or 1 with a message, never a signal
evseed = open(evsrc, "rb").read()
ev_crashes = 0
rnd0 = __import__("random").Random(7)
for i in range(150):
    b = bytearray(evseed)
    for _ in range(rnd0.randint(1, 6)):
        k = rnd0.randrange(len(b))
        op = rnd0.random()
        if op < 0.4:
            b[k] = rnd0.randrange(256)
        elif op < 0.7:
            del b[k:k + rnd0.randint(1, 40)]
        else:
            b[k:k] = rnd0.choice([b" ", b"-", b"9" * 25, b"\n", b"#", b"\0", b"post t 5 ", b"done ", b"handle -1 ", b"x" * 1100])
    dd = os.path.join(outdir, "events-fuzz")
    shutil.rmtree(dd, ignore_errors=True)
    os.makedirs(dd)
    shutil.copy(src, os.path.join(dd, "rank0.txt"))
    open(os.path.join(dd, "rank0.events"), "wb").write(bytes(b))
    r = subprocess.run([tool, "-o", dd, os.path.join(dd, "rank0.txt")], capture_output=True, timeout=30)
    if r.returncode not in (0, 1) or (r.returncode == 1 and b"timeline: " not in r.stderr):
        ev_crashes += 1
        shutil.copy(os.path.join(dd, "rank0.events"), os.path.join(outdir, "events-crash-%d.events" % i))
check(ev_crashes == 0, "%d of 150 damaged events files ended the tool without its own answer (kept as events-crash-*)" % ev_crashes)

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
    pdoc = json.load(open(os.path.join(os.path.dirname(page), "trace.json")))
    nst = len([e for e in pdoc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "step"])
    pm = [e for e in pdoc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "msg"]
    zc = re.search(r"Call (\d+), closer", dom)
    nfl = len([e for e in pm if zc and e["args"]["send"] and e["args"]["match"] >= 0 and e["args"]["call"] == int(zc.group(1))])
    check(nst > 0 and st.get("data-drawn-steps") == str(nst) and st.get("data-drawn-msgs") == str(len(pm)) and
          zc is not None and nfl > 0 and st.get("data-drawn-flows") == str(nfl),
          "in Chromium the page drew steps %s, messages %s, arrows %s (%d, %d, %d wanted)" % (
              st.get("data-drawn-steps"), st.get("data-drawn-msgs"), st.get("data-drawn-flows"), nst, len(pm), nfl))
    tips = re.findall(r'<rect class="msg (send|recv)[^"]*" data-rank="(\d+)"[^>]*data-peer="(\d+)" data-bytes="(\d+)"[^>]*><title>([^<]*)</title>', dom)
    check(len(tips) == len(pm) and all(("rank %s, %s bytes" % (t[2], t[3])) in t[4] for t in tips),
          "the message boxes' tooltips name the peer and bytes: %d of %d, e.g. %s" % (len(tips), len(pm), tips[:1]))
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
