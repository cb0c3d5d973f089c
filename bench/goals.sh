#!/bin/sh
# bench/goals.sh TABLE... - the team's performance goals, as ratios read
# from one or more bench tables (several runs: the median time of each row
# across them is used; within one table each row is already the median of
# three timed runs). All-reduce throughout; busbw is derived from the
# median time, so ratios of busbw are inverse ratios of time.
#
#   1  8 MiB, 2 ranks: best coll port (AUTO) busbw / Open MPI    >= 1.0 (aim 2)
#   2  8 B, 2 ranks: coll-threads and coll-shm time / Open MPI     <= 0.8
#   3  coll-tcp vs the best Gloo algorithm: busbw ratio >= 2 at every
#      size >= 1 MiB, time ratio <= 0.3 at 8 B (2 and 4 ranks)
#   4  coll-mpi busbw / Open MPI's MPI_Allreduce at >= 1 MiB      >= 1.0
#   5  4 ranks on 2 cores, worst size, time / Open MPI: coll-shm, coll-threads
#      and coll-mpi <= 2, coll-tcp <= 5
#   6  coll-threads busbw at 64 MiB, 2 ranks / the 2-thread memcpy rate
#      (membw's memcpy algbw, the plots' dashed line)            >= 0.7
#   7  AUTO / the fastest forced algorithm, every (collective, ranks, size)
#      row of every coll port that has forced rows (bench/auto.sh)  <= 1.10
#   -  coll.h's own cost: ns per 8 B all-reduce over the null port (no target)
#
# The goals are printed for the call checks in their default state (rows
# named coll-<port>), then again for the rows measured with the checks off
# (coll-<port>-c0, bench_coll -C 0) where the table has them.
#
# Prints: checks, goal, case, value, target, met (yes/no); a row missing
# from the tables is said as such.
[ $# -ge 1 ] || { echo "usage: bench/goals.sh table.tsv..." >&2; exit 2; }
awk -F'\t' '
FNR == 1 { next }
$9 == "ok" {
    k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
    n[k]++; v[k, n[k]] = $6 + 0; seen[k] = 1; impls[$1] = 1
    if ($1 == "membw") membw[$2, $4] = $7 + 0
}
$9 != "ok" { bad[$1 " " $2 " " $3 " p=" $4 " " $5 " B"] = 1 }
function med(k,    i, j, m, t, a) {
    m = n[k]; if (m == 0) return -1
    for (i = 1; i <= m; i++) a[i] = v[k, i]
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function tc(impl, coll, algo, p, b) { return med(impl SUBSEP coll SUBSEP algo SUBSEP p SUBSEP b) }
function t(impl, algo, p, b) { return tc(impl, "allreduce", algo, p, b) }
function gloo(p, b,    best, x, i, al) {
    split("ring ring_chunked halving_doubling", al, " ")
    best = -1
    for (i = 1; i <= 3; i++) { x = t("gloo", al[i], p, b); if (x > 0 && (best < 0 || x < best)) best = x }
    return best
}
function row(goal, what, val, target, ok) {
    if (val < 0) printf "%s\t%s\t%s\tmissing\t%s\t-\n", CH, goal, what, target
    else printf "%s\t%s\t%s\t%.2f\t%s\t%s\n", CH, goal, what, val, target, ok ? "yes" : "no"
}
function ratio(a, b) { return (a > 0 && b > 0) ? a / b : -1 }
function goals(S,    i, p, b, k, f, x, o, r, best, who, worst, wb, lim, ports, sizes, na, al, total, over, ta, wrow, algo, rowk, nrow) {
    split("coll-threads coll-shm coll-tcp coll-mpi", ports, " ")
    # 1
    o = t("ompi", "default", 2, 8388608); best = -1; who = ""
    for (i = 1; i <= 4; i++) { x = t(ports[i] S, "auto", 2, 8388608); if (x > 0 && (best < 0 || x < best)) { best = x; who = ports[i] S } }
    r = ratio(o, best)
    row(1, "8 MiB p=2 busbw " who " / ompi", r, ">= 1.0 (aim 2)", r >= 1)
    # 2
    for (i = 1; i <= 2; i++) {
        r = ratio(t(ports[i] S, "auto", 2, 8), t("ompi", "default", 2, 8))
        row(2, "8 B p=2 time " ports[i] S " / ompi", r, "<= 0.8", r >= 0 && r <= 0.8)
    }
    # 3
    for (p = 2; p <= 4; p += 2) {
        r = ratio(t("coll-tcp" S, "auto", p, 8), gloo(p, 8))
        row(3, "8 B p=" p " time coll-tcp" S " / best gloo", r, "<= 0.3", r >= 0 && r <= 0.3)
        delete sizes
        for (k in seen) {
            split(k, f, SUBSEP)
            if (f[1] == "coll-tcp" S && f[2] == "allreduce" && f[3] == "auto" && f[4] == p && f[5] >= 1048576) sizes[f[5]] = 1
        }
        for (b = 1048576; b <= 268435456; b *= 2) if (b in sizes) {
            r = ratio(gloo(p, b), t("coll-tcp" S, "auto", p, b))
            row(3, b " B p=" p " busbw coll-tcp" S " / best gloo", r, ">= 2", r >= 2)
        }
    }
    # 4 (coll-mpi has no -C: default checks only)
    if (S == "")
        for (p = 2; p <= 4; p += 2)
            for (b = 1048576; b <= 268435456; b *= 2) {
                x = t("coll-mpi", "auto", p, b); o = t("ompi", "default", p, b)
                if (x > 0 || o > 0) { r = ratio(o, x); row(4, b " B p=" p " busbw coll-mpi / ompi", r, ">= 1.0", r >= 1) }
            }
    # 5
    for (i = 1; i <= 4; i++) {
        if (i == 4 && S != "") continue
        lim = ports[i] == "coll-tcp" ? 5 : 2
        worst = -1; wb = ""
        for (k in seen) {
            split(k, f, SUBSEP)
            if (f[1] != ports[i] S || f[2] != "allreduce" || f[3] != "auto" || f[4] != 4) continue
            r = ratio(t(ports[i] S, "auto", 4, f[5]), t("ompi", "default", 4, f[5]))
            if (r > worst) { worst = r; wb = f[5] }
        }
        row(5, "p=4 worst time " ports[i] S " / ompi (at " wb " B)", worst, "<= " lim, worst >= 0 && worst <= lim)
    }
    # 6
    x = t("coll-threads" S, "auto", 2, 67108864)
    r = (x > 0 && ((("memcpy", 2) in membw))) ? (67108864 / x / 1e3) / membw["memcpy", 2] : -1
    row(6, "64 MiB p=2 busbw coll-threads" S " / membw memcpy 2 threads", r, ">= 0.7", r >= 0.7)
    # 7
    total = 0; over = 0; worst = -1; wrow = ""
    for (k in seen) {
        split(k, f, SUBSEP)
        if (f[3] != "auto" || substr(f[1], 1, 5) != "coll-" || f[1] == "coll-null" S) continue
        if (S == "" && f[1] ~ /-(c0|crc)$/) continue
        if (S != "" && substr(f[1], length(f[1]) - length(S) + 1) != S) continue
        best = -1; who = ""
        for (rowk in seen) {
            split(rowk, al, SUBSEP)
            if (al[1] != f[1] || al[2] != f[2] || al[4] != f[4] || al[5] != f[5] || al[3] == "auto") continue
            x = med(rowk)
            if (best < 0 || x < best) { best = x; who = al[3] }
        }
        if (best < 0) continue
        ta = med(k); r = ta / best; total++
        if (r > 1.10) over++
        if (r > worst) { worst = r; wrow = f[1] " " f[2] " p=" f[4] " " f[5] " B, fastest " who }
    }
    if (total) row(7, "AUTO / fastest forced, worst of " total " rows (" over " over 1.10): " wrow, worst, "<= 1.10", worst <= 1.10)
    else row(7, "AUTO / fastest forced (no forced rows: run make bench)", -1, "<= 1.10", 0)
    # null port
    x = t("coll-null" S, "auto", 2, 8)
    if (x > 0) printf "%s\t-\tns per 8 B all-reduce, null port, p=2 (coll-null%s)\t%.0f\t-\t-\n", CH, S, x * 1e3
}
END {
    printf "checks\tgoal\tcase\tvalue\ttarget\tmet\n"
    CH = "on"; goals("")
    if (("coll-threads-c0" in impls) || ("coll-shm-c0" in impls) || ("coll-tcp-c0" in impls)) {
        CH = "off"; goals("-c0")
    }
    x = t("coll-null-crc", "auto", 2, 8)
    if (x > 0) printf "crc\t-\tns per 8 B all-reduce, null port, p=2 (coll-null-crc)\t%.0f\t-\t-\n", x * 1e3
    for (k in bad) printf "-\tcheck\t%s\tFAIL\tok\tno\n", k
}' "$@"
