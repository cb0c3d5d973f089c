#!/bin/sh
# bench/auto.sh TABLE... - how good AUTO's choice is: for every coll row
# (impl, collective, ranks, bytes) that has both an `auto` row and rows of
# forced algorithms, AUTO's time against the fastest forced algorithm's.
# Several tables: the median time of each row across them is used.
#
# Prints one line per row: impl, collective, ranks, bytes, AUTO's time,
# AUTO's pick (where the tables have memtraffic -x's "pick" rows, as
# bench/goals.sh's run makes them; else "?"), the fastest algorithm and
# its time, the ratio auto/fastest (1.00 when AUTO's pick is the fastest,
# as timed; below 1 when the AUTO row happened to run faster than the same
# algorithm forced), and "ok" if the ratio is at most 1.10 (the goal) or
# "SLOW". Then a summary line: rows, the share within 1.10 (goal >= 95 %),
# the worst row (goal <= 1.5). Forced rows come from the full run (make
# bench: the threads port for every collective, the others for
# all-reduce, up to 64 MiB), make bench-goals (three passes: give its
# table alone for the medians of three) and make bench-auto-raw.
[ $# -ge 1 ] || { echo "usage: bench/auto.sh table.tsv..." >&2; exit 2; }
awk -F'\t' '
FNR == 1 { next }
$1 ~ /^coll-/ && $9 == "ok" && $6 > 0 {
    k = $1 SUBSEP $2 SUBSEP $4 SUBSEP $5
    a = $3
    n[k, a]++; v[k, a, n[k, a]] = $6 + 0
    if (!((k, a) in seenA)) { seenA[k, a] = 1; algos[k] = algos[k] " " a }
    rows[k] = 1
}
$1 == "pick" && $9 == "ok" { pick[$2, $4, $5] = $3 }
function med(k, a,    i, j, m, t, x) {
    m = n[k, a]
    for (i = 1; i <= m; i++) x[i] = v[k, a, i]
    for (i = 2; i <= m; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
    return m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
}
END {
    printf "impl\tcollective\tranks\tbytes\tauto_us\tauto_picks\tfastest\tfastest_us\tauto/fastest\tgoal<=1.10\n"
    for (k in rows) {
        if (!((k, "auto") in n)) continue
        na = split(algos[k], al, " ")
        best = -1; who = ""
        for (i = 1; i <= na; i++) {
            if (al[i] == "auto") continue
            t = med(k, al[i])
            if (best < 0 || t < best) { best = t; who = al[i] }
        }
        if (best < 0) continue
        ta = med(k, "auto"); r = ta / best
        split(k, f, SUBSEP)
        pk = ((f[2], f[3], f[4]) in pick) ? pick[f[2], f[3], f[4]] : "?"
        line[++nl] = sprintf("%s\t%s\t%d\t%d\t%.3f\t%s\t%s\t%.3f\t%.2f\t%s", f[1], f[2], f[3], f[4], ta, pk, who, best, r, r <= 1.10 ? "ok" : "SLOW")
        key[nl] = sprintf("%-16s%-16s%04d%016d", f[1], f[2], f[3], f[4])
        total++; if (r > 1.10) over++
        if (r > worst) { worst = r; wrow = f[1] " " f[2] " p=" f[3] " " f[4] " B (" who ")" }
    }
    # sort by impl, collective, ranks, bytes
    for (i = 2; i <= nl; i++) {
        t = line[i]; tk = key[i]
        for (j = i - 1; j >= 1 && key[j] > tk; j--) { line[j + 1] = line[j]; key[j + 1] = key[j] }
        line[j + 1] = t; key[j + 1] = tk
    }
    for (i = 1; i <= nl; i++) print line[i]
    if (total) printf "# %d rows, %d over 1.10: %.1f %% within 1.10 (goal >= 95 %%), worst %.2f (goal <= 1.5) at %s\n", total, over + 0, 100 * (total - over) / total, worst, wrow
    else print "# no row has both auto and forced algorithms (run make bench, the full table)"
}' "$@"
