# tools/make_help.awk - `make help`: the `## name: what` lines of Makefile
# and mk/*.mk, grouped by what a user wants to do.
#
# A line may name its group first: `## name: [group] what it does`. The
# groups shown, in this order: run, test, bench, firmware, docs, then any
# other group a fragment names, then "other". Without a tag a target is
# in "test" when it is `test`, `test-*` or `*-test`, in "bench" when it
# is `bench*`, else in "other". [internal] marks the steps of other targets:
# shown only with ALL=1 (awk -v all=1).
/^## [^ :]+:/ {
    t = $2; sub(/:$/, "", t)
    d = $0; sub(/^## [^ :]+: */, "", d)
    g = ""
    if (match(d, /^\[[a-z][a-z0-9-]*\] */)) {
        g = substr(d, 2, index(d, "]") - 2); d = substr(d, RLENGTH + 1)
    }
    if (g == "") {
        if (t == "test" || t ~ /^test-/ || t ~ /-test$/) g = "test"
        else if (t ~ /^bench/) g = "bench"
        else g = "other"
    }
    if (g == "internal" && all == "") { hidden++; next }
    if (!(g in lines)) order[++n] = g
    lines[g] = lines[g] sprintf("  make %-24s %s\n", t, d)
}
END {
    title["run"]      = "Run and build: the demo, examples and seeds; install"
    title["test"]     = "Test: each suite ends with \"N passed, N failed\""
    title["bench"]    = "Benchmarks and measurements"
    title["firmware"] = "Firmware: cross builds, QEMU, flash and stack"
    title["docs"]     = "Docs and learning: traces, diagrams, tables"
    title["other"]    = "Other"
    title["internal"] = "Internal: steps of the targets above"
    k = split("run test bench firmware docs", first, " ")
    for (i = 1; i <= k; i++) { show(first[i]); done[first[i]] = 1 }
    done["other"] = done["internal"] = 1
    for (i = 1; i <= n; i++) if (!(order[i] in done)) show(order[i])
    show("other"); show("internal")
    if (hidden) printf "\n%d internal targets not shown: make help ALL=1\n", hidden
}
function show(g) {
    if (!(g in lines)) return
    printf "%s%s\n%s", shown++ ? "\n" : "", (g in title) ? title[g] : g, lines[g]
}
