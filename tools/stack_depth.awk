# stack_depth.awk - worst-case stack of each public function from GCC's
# -fcallgraph-info=su output (a .ci file: VCG nodes with each function's own
# frame, edges for its calls).
#
# worst(f) = frame(f) + the largest worst(g) over f's callees g.
# Calls through a pointer go to "__indirect_call". Inside coll.h the
# targets are the static functions no one calls directly, in kinds
# told apart by name, and what a pointer can reach depends on who calls:
#   kernel    coll__<type>_<op>_3      from coll__reduce, coll__scale
#   cost      coll__cost_*             from coll__pick, coll__choose
#   subport   coll__sub_*, coll__pieces_*, from the port calls (coll__wait,
#             coll__obs_*
#                                      coll__exchange_blocking,
#                                      coll__step_pipelined, coll__irecv_fold,
#                                      coll__broke, coll__progress)
#   source    coll__*_source           from coll__progress (q->source)
#   watch     coll__*_watch            from coll__absorb, coll__send_source
#   hook      a row's begin or finish  from coll__begin, coll__finish,
#             (coll__*_begin, _finish, coll__close, coll__agreed and the
#             _block, _block_a2a,      sources (should they be inlined
#             _in_place)               there)
#   schedule  every other one          from the sources, coll_describe
#   (coll__fold is called by a port, never by coll.h)
# coll__copy, coll__sub_*, coll__pieces_* and coll__obs_* call only your callbacks (memops,
# the parent's port), coll__told only the observer and coll__record_start
# and coll__record_end only the recorder's clock: 0 here. Any other caller
# through a pointer may reach them all.
# A schedule never runs inside itself: a candidate already on the chain is
# skipped. A sub-communicator's port is counted one level deep; each level
# of nesting adds one coll__sub_* frame. The callbacks' own frames (port,
# user op, memops) are the caller's to add. Functions without stack
# information (the compiler's arithmetic helpers) count as 0. A "dynamic"
# frame (alloca, VLA) or a cycle in the graph makes the figure a lower
# bound, marked "+".
#
# Output: one line per public function: name, bytes, flag ("" or "+").
# With -v chain=NAME: NAME's worst chain instead, one frame per line.
function strip(s) { sub(/^[^:]*:/, "", s); return s }
function base(f) { sub(/\..*$/, "", f); return f }   # coll__pick.isra.0 -> coll__pick
function kind(g) {
    if (g ~ /^coll__[a-z0-9]+_[a-z]+_3$/) return "kernel"
    if (g ~ /^coll__cost_/) return "cost"
    if (g ~ /^coll__(sub|pieces|obs|inner)_/) return "subport"
    if (g ~ /_source$/) return "source"
    if (g ~ /_watch$/) return "watch"
    if (g == "coll__fold") return "fold"
    if (g ~ /_(begin|finish|block|block_a2a|in_place)$/) return "hook"
    return "schedule"
}
# The kinds a call through a pointer in f can reach, as " kind kind ".
function reach(f,    b) {
    b = base(f)
    if (b == "coll__reduce" || b == "coll__scale") return " kernel "
    if (b == "coll__copy" || b == "coll__told" || b ~ /^coll__(sub|pieces|obs|inner)_/) return " "
    if (b == "coll__record_start" || b == "coll__record_end") return " "
    if (b == "coll__pick" || b == "coll__choose") return " cost "
    if (b == "coll__transfer" || b == "coll__wait" || b == "coll__broke") return " subport "
    if (b == "coll__exchange_blocking" || b == "coll__step_pipelined" || b == "coll__irecv_fold") return " subport "
    if (b == "coll__progress") return " source subport "
    if (b == "coll__absorb" || b == "coll__send_source") return " watch "
    if (b ~ /_source$/ || b == "coll__agreed") return " schedule hook "
    if (b == "coll__begin" || b == "coll__finish" || b == "coll__close") return " hook "
    if (b == "coll_describe") return " schedule "
    return " kernel cost subport schedule hook "
}
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
        if (g == "__indirect_call") { w = indirect(f); g = via[f] }
        else { w = worst(g); if (g in inexact) inexact[f] = 1 }
        if (w > best) { best = w; next_of[f] = g }
    }
    delete busy[f]
    memo[f] = frame[f] + best
    return memo[f]
}
function indirect(f,    g, w, best, r) {
    r = reach(f)
    best = 0
    for (g in frame)
        if (g !~ /^coll_[a-z]/ && !(g in called) && g != "__indirect_call" && !(g in busy) &&
            index(r, " " kind(g) " ")) {
            w = worst(g)
            if (w > best) { best = w; via[f] = g }
            if (g in inexact) inexact[f] = 1
        }
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
    if (chain != "") {                 # -v chain=f: f's worst chain, frame by frame
        worst(chain)
        for (f = chain; f != ""; f = next_of[f]) print f, frame[f]
        exit
    }
    for (f in frame)
        if (f ~ /^coll_[a-z]/) {
            w = worst(f)
            print f, w, (f in inexact) ? "+" : ""
        }
}
