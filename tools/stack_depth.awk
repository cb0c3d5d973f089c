# stack_depth.awk - worst-case stack of each public function from GCC's
# -fcallgraph-info=su output (a .ci file: VCG nodes with each function's own
# frame, edges for its calls).
#
# worst(f) = frame(f) + the largest worst(g) over f's callees g.
# Calls through a pointer go to "__indirect_call". Inside coll.h those are
# the reduction kernels (picked from a table) and your callbacks: the port
# and a user op. The kernels are the static functions no one calls directly,
# so an indirect call counts as the deepest of those; the callbacks' own
# frames are the caller's to add. Functions without stack information (the
# compiler's arithmetic helpers) count as 0. A "dynamic" frame (alloca, VLA)
# or a cycle in the graph makes the figure a lower bound, marked "+".
#
# Output: one line per public function: name, bytes, flag ("" or "+").
function strip(s) { sub(/^[^:]*:/, "", s); return s }
# inexact[f]: f's figure is a lower bound (it, or something below it, has a
# dynamic frame or takes part in recursion).
function worst(f,    list, n, i, g, w, best) {
    if (f in memo) return memo[f]
    if (f in busy) { inexact[f] = 1; return 0 }        # recursion
    busy[f] = 1
    best = 0
    if (dyn[f]) inexact[f] = 1
    n = split(adj[f], list, " ")
    for (i = 1; i <= n; i++) {
        g = list[i]
        if (g == "__indirect_call") { w = indirect(); if (ind_inexact) inexact[f] = 1 }
        else { w = worst(g); if (g in inexact) inexact[f] = 1 }
        if (w > best) best = w
    }
    delete busy[f]
    memo[f] = frame[f] + best
    return memo[f]
}
function indirect(    g, w, best) {
    if (ind_done) return ind_best
    ind_done = 1; ind_best = 0          # a kernel calling through a pointer
    best = 0
    for (g in frame)
        if (g !~ /^coll_[a-z]/ && !(g in called) && g != "__indirect_call") {
            w = worst(g)
            if (w > best) best = w
            if (g in inexact) ind_inexact = 1
        }
    ind_best = best
    return best
}
/^node:/ {
    match($0, /title: "[^"]*"/)
    name = strip(substr($0, RSTART + 8, RLENGTH - 9))
    if (match($0, /\\n[0-9]+ bytes \([a-z,]+\)/)) {
        s = substr($0, RSTART + 2, RLENGTH - 2)
        split(s, p, " ")
        frame[name] = p[1] + 0
        if (s ~ /dynamic/) dyn[name] = 1
    }
}
/^edge:/ {
    match($0, /sourcename: "[^"]*"/); src = strip(substr($0, RSTART + 13, RLENGTH - 14))
    match($0, /targetname: "[^"]*"/); dst = strip(substr($0, RSTART + 13, RLENGTH - 14))
    adj[src] = adj[src] " " dst
    called[dst] = 1
}
END {
    for (f in frame)
        if (f ~ /^coll_[a-z]/) {
            w = worst(f)
            print f, w, (f in inexact) ? "+" : ""
        }
}
