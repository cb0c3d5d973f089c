#!/bin/sh
# bench/checks.sh - what coll.h's call checks cost: AUTO all-reduce on the
# threads and shm ports, 2 and 4 ranks, 8 B / 64 KiB / 8 MiB, with the
# checks off (-C 0), on (the default, -C 1) and on with CRC-32C (-C 3).
# The three settings take turns, three rounds, and each cell is the median
# of the three rounds (each round's row is itself the median of three
# timed runs). Prints a markdown table: time at 8 B, busbw above, and the
# cost of the checks against "off".
# Then the tcp port the same way, with two more settings: the port's keyed
# mode (COLL_TCP_MAC=1, a SipHash-2-4 tag on every message) with the
# checks on, and with the checks and the CRC on; a second table.
# CHECKS_TCP=0 leaves the tcp table out.
B=${B:-build}
bin=$B/bench/bench_coll
[ -x $bin ] || { echo "checks.sh: $bin not built (make bench-bins)" >&2; exit 1; }
tmp=$(mktemp)
tcp=$(mktemp)
trap 'rm -f "$tmp" "$tcp"' EXIT
for round in 1 2 3; do
    for C in 0 1 3; do
        $bin -p threads,shm -n 2,4 -c allreduce -s 8,64K,8M -T 20 -C $C >>"$tmp" || exit 1
    done
done
# What both tables share: the median of a cell's rounds, and a cell as
# time (8 B, us with `dig` decimals) or busbw.
lib='
function med(k,    i, j, m, t, a) {
    m = n[k]; if (!m) return -1
    for (i = 1; i <= m; i++) a[i] = v[k, i]
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return a[int((m + 1) / 2)]
}
function cell(t, p, b) {
    if (t < 0) return "-"
    if (b <= 8) return sprintf("%." dig "f µs", t)
    return sprintf("%.2f GB/s", b / (t * 1e3) * 2 * (p - 1) / p)
}'
awk -F'\t' -v dig=2 "$lib"'
{
    impl = $1; mode = "on"
    if (impl ~ /-c0$/) { mode = "off"; sub(/-c0$/, "", impl) }
    else if (impl ~ /-crc$/) { mode = "crc"; sub(/-crc$/, "", impl) }
    k = impl SUBSEP $4 SUBSEP $5 SUBSEP mode
    n[k]++; v[k, n[k]] = $6 + 0
    if ($9 != "ok") bad = 1
    rows[impl SUBSEP $4 SUBSEP $5] = 1
}
END {
    print "| port | ranks | bytes | checks off (-C 0) | on (default) | on + CRC (-C 3) | on / off | CRC / off |"
    print "|---|---|---|---|---|---|---|---|"
    split("coll-threads coll-shm", im, " "); split("8 65536 8388608", bs, " ")
    for (i = 1; i <= 2; i++) for (p = 2; p <= 4; p += 2) for (j = 1; j <= 3; j++) {
        b = bs[j]; k = im[i] SUBSEP p SUBSEP b
        if (!(k in rows)) continue
        o = med(k SUBSEP "off"); c = med(k SUBSEP "on"); r = med(k SUBSEP "crc")
        printf "| %s | %d | %s | %s | %s | %s | %s | %s |\n", im[i], p,
            b == 8 ? "8 B" : b == 65536 ? "64 KiB" : "8 MiB", cell(o, p, b), cell(c, p, b), cell(r, p, b),
            (o > 0 && c > 0) ? sprintf("%.2f", c / o) : "-", (o > 0 && r > 0) ? sprintf("%.2f", r / o) : "-"
    }
    print ""
    print "(ratios are of times: above 1 the checks cost that much)"
    if (bad) print "WARNING: a row failed its check"
}' "$tmp"

[ "${CHECKS_TCP:-1}" = 0 ] && exit 0
for round in 1 2 3; do
    for C in 0 1 3 1m 3m; do
        case $C in
        *m) mac=1 ;;
        *) mac=0 ;;
        esac
        COLL_TCP_MAC=$mac $bin -p tcp -n 2,4 -c allreduce -s 8,64K,8M -T 20 -C ${C%m} >>"$tcp" || exit 1
    done
done
echo
awk -F'\t' -v dig=1 "$lib"'
{
    impl = $1; mode = "on"
    if (impl ~ /-c0$/) mode = "off"
    else if (impl ~ /-crc-mac$/) mode = "crcmac"
    else if (impl ~ /-crc$/) mode = "crc"
    else if (impl ~ /-mac$/) mode = "mac"
    k = $4 SUBSEP $5 SUBSEP mode
    n[k]++; v[k, n[k]] = $6 + 0
    if ($9 != "ok") bad = 1
    rows[$4 SUBSEP $5] = 1
}
function ratio(a, o) { return (o > 0 && a > 0) ? sprintf("%.2f", a / o) : "-" }
END {
    print "| port | ranks | bytes | checks off (-C 0) | on (default) | on + CRC (-C 3) | on + MAC | on + CRC + MAC | CRC / off | MAC / off | CRC + MAC / off |"
    print "|---|---|---|---|---|---|---|---|---|---|---|"
    split("8 65536 8388608", bs, " ")
    for (p = 2; p <= 4; p += 2) for (j = 1; j <= 3; j++) {
        b = bs[j]; k = p SUBSEP b
        if (!(k in rows)) continue
        o = med(k SUBSEP "off"); c = med(k SUBSEP "on"); r = med(k SUBSEP "crc")
        m = med(k SUBSEP "mac"); rm = med(k SUBSEP "crcmac")
        printf "| coll-tcp | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p,
            b == 8 ? "8 B" : b == 65536 ? "64 KiB" : "8 MiB", cell(o, p, b), cell(c, p, b), cell(r, p, b),
            cell(m, p, b), cell(rm, p, b), ratio(r, o), ratio(m, o), ratio(rm, o)
    }
    print ""
    print "(MAC: the tcp port'"'"'s keyed mode, COLL_TCP_MAC=1; ratios are of times)"
    if (bad) print "WARNING: a row failed its check"
}' "$tcp"
