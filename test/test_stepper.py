#!/usr/bin/env python3
"""test/test_stepper.py PAGE BROWSER OUTDIR - the stepper page (make stepper)
in headless Chromium. Each view is opened by its address (#k=..&a=..&p=..
&s=..; press= presses the page's own buttons once it has loaded) and read
back from the DOM Chromium dumps:

  - the page is one file under 5 MB that loads nothing from outside
    (test/test_stepper.sh);
  - the page loads without a console error and shows the case asked for;
  - forward and back change the step shown and the cells' values;
  - a rank filter leaves that rank's lane alone, and only its messages;
  - compare shows two panels and two rows of bytes, rounds and model time;
  - at the last step every rank's result equals a plain reference computed
    here from the inputs the page shows at the start (sums for all-reduce
    and reduce-scatter, concatenation for all-gather, the root's vector for
    broadcast), on every rank;
  - the summary at p = 64 has one row per step of the schedule;
  - a screenshot of each view is not blank (counts its distinct colours).

Ends with "stepper: N passed, N failed"."""
import concurrent.futures
import html.parser
import os
import subprocess
import sys

from pycheck import Tally, png_colours

page, browser, outdir = sys.argv[1], sys.argv[2], sys.argv[3]
url = "file://" + os.path.abspath(page)
flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
T = Tally()
check = T.check


class Dom(html.parser.HTMLParser):
    """The parts of the page the checks read: the state line, the panels,
    their lanes and cells, the timeline, compare and summary rows."""

    def __init__(self):
        super().__init__()
        self.state, self.panels, self.cmp, self.srows, self.tl = {}, [], 0, [], []
        self.stack, self.cell, self.text, self.row = [], None, "", None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if a.get("id") == "state":
            self.state = a
        if tag == "div" and "panel" in cls:
            self.panels.append({"attrs": a, "lanes": {}})
        if tag == "tr" and "lane" in cls:
            self.row = int(a["data-rank"])
            self.panels[-1]["lanes"][self.row] = {}
        if tag == "tr" and "cmprow" in cls:
            self.cmp += 1
        if tag == "tr" and "srow" in cls:
            self.srows.append(a)
        if tag == "tr" and "tlrow" in cls:
            self.tl.append([])
        if tag == "td" and self.tl and len(self.stack) and self.stack[-1] == "tlrow":
            pass
        if tag == "span" and "cell" in cls:
            self.cell = (a["data-seg"], int(a["data-i"]))
            self.text = ""
        self.stack.append("tlrow" if tag == "tr" and "tlrow" in cls else tag)

    def handle_endtag(self, tag):
        if tag == "span" and self.cell:
            seg, i = self.cell
            lane = self.panels[-1]["lanes"][self.row]
            lane.setdefault(seg, {})[i] = None if self.text == "·" else float(self.text)
            self.cell = None
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.cell:
            self.text += data.strip()
        elif self.tl and "tlrow" in self.stack:
            self.tl[-1].append(data.strip())


def load(hash_):
    try:
        return subprocess.run([browser] + flags + ["--enable-logging=stderr", "--v=0", "--dump-dom",
                              url + "#" + hash_], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None


def shoot(name, hash_):
    png = os.path.join(outdir, "stepper-%s.png" % name)
    if os.path.exists(png):
        os.remove(png)
    try:
        subprocess.run([browser] + flags + ["--screenshot=" + png, "--window-size=1400,1000", url + "#" + hash_],
                       capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        pass
    return png


# Every view the checks read, loaded three browsers at a time (each start
# takes seconds; the checks below then read the dumps in order).
REF = [("allreduce", "ring", 5, 0), ("allreduce", "rabenseifner", 8, 1), ("allgather", "bruck", 5, 1),
       ("broadcast", "binomial", 5, 1)]
VIEWS = {"lanes": "k=allreduce&a=ring&p=4&c=0&s=3", "filter": "k=alltoall&a=bruck&p=8&c=1&s=4&r=2",
         "compare": "k=allreduce&a=ring&p=8&c=1&s=5&vs=rabenseifner", "summary": "k=allreduce&a=rabenseifner&p=256&s=3"}
HASHES = ["k=allreduce&a=ring&p=4&c=0&s=2", "k=allreduce&a=ring&p=4&c=0&s=2&press=next",
          "k=allreduce&a=ring&p=4&c=0&s=2&press=next,next,prev", "k=allreduce&a=ring&p=8&c=0&s=4&r=3",
          "k=allreduce&a=ring&p=8&c=0&s=4&only=1", "k=allreduce&a=ring&p=8&c=1&s=3&vs=recursive_doubling",
          "k=allreduce&a=ring&p=64&s=5", "k=allreduce&a=ring&p=256&s=5&only=1"]
for k, a, p, cnt in REF:
    HASHES += ["k=%s&a=%s&p=%d&c=%d&s=0" % (k, a, p, cnt), "k=%s&a=%s&p=%d&c=%d&s=last" % (k, a, p, cnt)]
with concurrent.futures.ThreadPoolExecutor(3) as pool:
    dumps = dict(zip(HASHES, pool.map(load, HASHES)))
    shots = dict(zip(VIEWS, pool.map(lambda v: shoot(v, VIEWS[v]), VIEWS)))


def dom(hash_):
    r = dumps.get(hash_) or load(hash_)
    if r is None:
        check(False, "#%s: the browser timed out" % hash_)
        return Dom()
    errs = [l for l in r.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    check(not errs, "#%s loads without a console error %s" % (hash_, errs[:2]))
    d = Dom()
    d.feed(r.stdout)
    check(d.state.get("data-ready") == "1", "#%s: the page's script ran" % hash_)
    return d


def vec(lane, seg):
    s = lane.get(seg, {})
    return [s[i] for i in sorted(s)]


# ---- stepping -----------------------------------------------------------------
a1 = dom("k=allreduce&a=ring&p=4&c=0&s=2")
a2 = dom("k=allreduce&a=ring&p=4&c=0&s=2&press=next")
a3 = dom("k=allreduce&a=ring&p=4&c=0&s=2&press=next,next,prev")
check(a1.state.get("data-key") == "allreduce/ring/4/0", "the case asked for is shown (%s)" % a1.state.get("data-key"))
check(a1.state.get("data-step") == "2" and a2.state.get("data-step") == "3", "forward moves one step (%s -> %s)"
      % (a1.state.get("data-step"), a2.state.get("data-step")))
check(a3.state.get("data-step") == "3", "forward, forward, back ends one step on (%s)" % a3.state.get("data-step"))
l1 = a1.panels[0]["lanes"] if a1.panels else {}
l2 = a2.panels[0]["lanes"] if a2.panels else {}
check(len(l1) == 4 and len(l2) == 4, "four lanes at p = 4 (%d, %d)" % (len(l1), len(l2)))
check(any(vec(l1.get(r, {}), "dst") != vec(l2.get(r, {}), "dst") for r in range(4)),
      "a step forward changes the values shown")
check(a3.panels and a2.panels and a3.panels[0]["lanes"] == a2.panels[0]["lanes"], "back again shows the same values")

# ---- rank filter and step filter ------------------------------------------------
f = dom("k=allreduce&a=ring&p=8&c=0&s=4&r=3")
lanes = f.panels[0]["lanes"] if f.panels else {}
check(list(lanes) == [3], "the rank filter leaves only rank 3's lane (%s)" % list(lanes))
check(f.panels and f.panels[0]["attrs"].get("data-lanes") == "1", "the panel counts one lane")
check(f.tl and all("r3" in row[1:3] for row in f.tl), "the timeline keeps only rank 3's messages (%d rows)" % len(f.tl))
g = dom("k=allreduce&a=ring&p=8&c=0&s=4&only=1")
steps = set(row[0] for row in g.tl)
check(len(g.tl) == 8 and steps == {"2"}, "the step filter keeps step 2's eight messages (%d rows, steps %s)"
      % (len(g.tl), sorted(steps)))

# ---- compare --------------------------------------------------------------------
c = dom("k=allreduce&a=ring&p=8&c=1&s=3&vs=recursive_doubling")
check(len(c.panels) == 2, "compare shows two panels (%d)" % len(c.panels))
check(c.cmp == 2, "compare has two rows of figures (%d)" % c.cmp)
check(len(c.panels) == 2 and c.panels[1]["attrs"].get("data-case") == "allreduce/recursive_doubling/8",
      "the second panel is the algorithm asked for")

# ---- the last step against a plain reference ------------------------------------
def reference(k, a, p, cnt, root=0):
    first = dom("k=%s&a=%s&p=%d&c=%d&s=0" % (k, a, p, cnt))
    last = dom("k=%s&a=%s&p=%d&c=%d&s=last" % (k, a, p, cnt))
    if not first.panels or not last.panels:
        check(False, "%s/%s p=%d: no panel" % (k, a, p))
        return
    L0, L1 = first.panels[0]["lanes"], last.panels[0]["lanes"]
    check(len(L0) == p and len(L1) == p, "%s/%s p=%d: every rank shown" % (k, a, p))
    seg_in = "src" if "src" in L0.get(0, {}) else "buf"
    seg_out = "dst" if "dst" in L1.get(0, {}) else "buf"
    ins = [vec(L0[r], seg_in) for r in range(p)]
    check(all(v is not None for x in ins for v in x) or k == "broadcast", "%s/%s p=%d: inputs shown" % (k, a, p))
    if k == "allreduce":
        want = [[sum(ins[q][i] for q in range(p)) for i in range(len(ins[0]))] for r in range(p)]
    elif k == "reduce_scatter":
        n = len(ins[0]) // p
        want = [[sum(ins[q][r * n + i] for q in range(p)) for i in range(n)] for r in range(p)]
    elif k == "allgather":
        want = [[v for q in range(p) for v in ins[q]] for r in range(p)]
    elif k == "broadcast":
        want = [ins[root] for r in range(p)]
    got = [vec(L1[r], seg_out) for r in range(p)]
    bad = [r for r in range(p) if got[r] != want[r]]
    check(not bad and all(len(w) > 0 for w in want), "%s/%s p=%d: the last step equals the plain reference on every rank "
          "(wrong on %s)" % (k, a, p, bad))


for k, a, p, cnt in REF:
    reference(k, a, p, cnt)

# ---- the summary at many ranks ----------------------------------------------------
s = dom("k=allreduce&a=ring&p=64&s=5")
check(len(s.srows) == 2 * 63, "ring all-reduce at p = 64: one summary row per step (%d, 126 expected)" % len(s.srows))
check(s.panels and "lanes" in s.panels[0] and not s.panels[0]["lanes"], "no per-rank lanes at p = 64")
cur = [r for r in s.srows if "cur" in (r.get("class") or "")]
check(len(cur) == 1 and cur[0].get("data-step") == "5", "the current step is marked in the summary")
s1 = dom("k=allreduce&a=ring&p=256&s=5&only=1")
check(len(s1.srows) == 1, "the step filter leaves one summary row at p = 256 (%d)" % len(s1.srows))


# ---- screenshots ------------------------------------------------------------------
for name, png in shots.items():
    c = png_colours(png, 2) if os.path.exists(png) else None
    n = len(c) if c else 0
    check(n > 12, "screenshot %s has %d distinct colours (more than 12 wanted)" % (png, n))
    print("screenshot: %s, %d colours" % (png, n))

sys.exit(T.summary("stepper"))
