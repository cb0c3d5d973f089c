#!/bin/sh
# bench/goals.sh TABLE... - the team's performance goals, as ratios read
# from one or more bench tables (several runs: the median time of each row
# across them is used). All-reduce throughout; busbw is derived from the
# median time, so ratios of busbw are inverse ratios of time.
#
#   1  8 MiB, 2 ranks: best coll port (AUTO) busbw / Open MPI    >= 1.0 (aim 2)
#   2  8 B, 2 ranks: coll-threads and coll-shm time / Open MPI     <= 1.0
#   3  coll-tcp vs the best Gloo algorithm: busbw ratio >= 2 at >= 1 MiB,
#      time ratio <= 0.3 at 8 B (2 and 4 ranks)
#   4  coll-mpi busbw / Open MPI's MPI_Allreduce at >= 1 MiB      >= 1.0
#   5  4 ranks on 2 cores: every coll port, every size: time / Open MPI <= 2
#
# Prints: goal, case, value, target, met (yes/no); rows missing from the
# tables are said as such.
[ $# -ge 1 ] || { echo "usage: bench/goals.sh table.tsv..." >&2; exit 2; }
awk -F'\t' '
FNR == 1 { next }
$2 == "allreduce" && $9 == "ok" {
    k = $1 SUBSEP $3 SUBSEP $4 SUBSEP $5
    n[k]++; v[k, n[k]] = $6 + 0; seen[k] = 1
}
$2 == "allreduce" && $9 != "ok" { bad[$1 SUBSEP $3 SUBSEP $4 SUBSEP $5] = 1 }
function med(k,    i, j, m, t, a) {
    m = n[k]; if (m == 0) return -1
    for (i = 1; i <= m; i++) a[i] = v[k, i]
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function t(impl, algo, p, b) { return med(impl SUBSEP algo SUBSEP p SUBSEP b) }
function gloo(p, b,    best, x, i, al) {
    split("ring ring_chunked halving_doubling", al, " ")
    best = -1
    for (i = 1; i <= 3; i++) { x = t("gloo", al[i], p, b); if (x > 0 && (best < 0 || x < best)) best = x }
    return best
}
function row(goal, what, val, target, ok) {
    if (val < 0) printf "%s\t%s\tmissing\t%s\t-\n", goal, what, target
    else printf "%s\t%s\t%.2f\t%s\t%s\n", goal, what, val, target, ok ? "yes" : "no"
}
function ratio(a, b) { return (a > 0 && b > 0) ? a / b : -1 }
END {
    printf "goal\tcase\tvalue\ttarget\tmet\n"
    # 1
    o = t("ompi", "default", 2, 8388608); best = -1; who = ""
    split("coll-threads coll-shm coll-tcp coll-mpi", ports, " ")
    for (i = 1; i <= 4; i++) { x = t(ports[i], "auto", 2, 8388608); if (x > 0 && (best < 0 || x < best)) { best = x; who = ports[i] } }
    r = ratio(o, best)
    row(1, "8 MiB p=2 busbw " who " / ompi", r, ">= 1.0 (aim 2)", r >= 1)
    # 2
    for (i = 1; i <= 2; i++) {
        r = ratio(t(ports[i], "auto", 2, 8), t("ompi", "default", 2, 8))
        row(2, "8 B p=2 time " ports[i] " / ompi", r, "<= 1.0", r >= 0 && r <= 1)
    }
    # 3
    for (p = 2; p <= 4; p += 2) {
        r = ratio(t("coll-tcp", "auto", p, 8), gloo(p, 8))
        row(3, "8 B p=" p " time coll-tcp / best gloo", r, "<= 0.3", r >= 0 && r <= 0.3)
        for (k in seen) {
            split(k, f, SUBSEP)
            if (f[1] == "coll-tcp" && f[2] == "auto" && f[3] == p && f[4] >= 1048576) sizes[p, f[4]] = 1
        }
        for (b = 1048576; b <= 268435456; b *= 2) if ((p, b) in sizes) {
            r = ratio(gloo(p, b), t("coll-tcp", "auto", p, b))
            row(3, b " B p=" p " busbw coll-tcp / best gloo", r, ">= 2", r >= 2)
        }
    }
    # 4
    for (p = 2; p <= 4; p += 2)
        for (b = 1048576; b <= 268435456; b *= 2) {
            x = t("coll-mpi", "auto", p, b); o = t("ompi", "default", p, b)
            if (x > 0 || o > 0) { r = ratio(o, x); row(4, b " B p=" p " busbw coll-mpi / ompi", r, ">= 1.0", r >= 1) }
        }
    # 5
    for (i = 1; i <= 4; i++) {
        worst = -1; wb = ""
        for (k in seen) {
            split(k, f, SUBSEP)
            if (f[1] != ports[i] || f[2] != "auto" || f[3] != 4) continue
            r = ratio(t(ports[i], "auto", 4, f[4]), t("ompi", "default", 4, f[4]))
            if (r > worst) { worst = r; wb = f[4] }
        }
        row(5, "p=4 worst time " ports[i] " / ompi (at " wb " B)", worst, "<= 2", worst >= 0 && worst <= 2)
    }
    for (k in bad) { split(k, f, SUBSEP); printf "check\t%s %s p=%s %s B\tFAIL\tok\tno\n", f[1], f[2], f[3], f[4] }
}' "$@"
