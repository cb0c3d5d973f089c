#!/bin/sh
# size_check.sh BUDGETS SIZE.TSV - each budget line "target metric limit"
# of BUDGETS against the figure `make size` wrote to SIZE.TSV. One check
# per budget: within it passes, over it (or missing, or a stack figure
# that is only a lower bound) fails. Prints a table and the closing line
# "size-check: N passed, N failed"; exits non-zero on any failure.
set -eu
budgets=$1; tsv=$2
[ -s "$tsv" ] || { echo "size-check: no figures in $tsv (run make size)"; exit 1; }
awk -v budgets="$budgets" '
    FNR == NR { v[$1, $2] = $3; fl[$1, $2] = $4; next }     # the figures (tab-separated)
    FNR == 1 && FNR != NR {
        print "size-check: figures of make size against " budgets
        print ""
        print "| target     | metric               | measured | budget | margin         |      |"
        print "|------------|----------------------|---------:|-------:|---------------:|------|"
    }
    /^[ \t]*(#|$)/ { next }
    {
        t = $1; m = $2; lim = $3 + 0; k = t SUBSEP m
        if (!(k in v) || v[k] == "-") {
            printf "| %-10s | %-20s | %8s | %6d | %14s | FAIL |\n", t, m, "missing", lim, ""
            f++; next
        }
        got = v[k] + 0; d = got - lim
        bad = d > 0 || fl[k] == "+"
        printf "| %-10s | %-20s | %7d%1s | %6d | %14s | %s |\n", t, m, got, fl[k], lim,
               (d > 0 ? sprintf("%d over", d) : sprintf("%d under", -d)), (bad ? "FAIL" : "ok  ")
        if (bad) f++; else p++
    }
    END {
        print ""
        print "size-check: " p + 0 " passed, " f + 0 " failed"
        exit f > 0
    }
' FS='\t' "$tsv" FS=' ' "$budgets"
