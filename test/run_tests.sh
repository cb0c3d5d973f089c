#!/bin/sh
# Runs each make target given, keeps its output, adds up the "N passed,
# N failed" lines the suites print, and ends with the total. A target that
# fails without printing such a line counts as one failure.
log_dir=build/testlogs
mkdir -p "$log_dir"
total_p=0; total_f=0; bad=""
for t in "$@"; do
    printf '=== %s\n' "$t"
    log="$log_dir/$t.log"
    if make --no-print-directory "$t" >"$log" 2>&1; then rc=0; else rc=1; fi
    cat "$log"
    p=$(grep -E '^([A-Za-z_-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | sed -E 's/^([A-Za-z_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/' | awk '{s+=$1} END {print s+0}')
    f=$(grep -E '^([A-Za-z_-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | sed -E 's/^([A-Za-z_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/' | awk '{s+=$1} END {print s+0}')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    [ "$rc" -ne 0 ] && bad="$bad $t"
    total_p=$((total_p + p)); total_f=$((total_f + f))
done
[ -n "$bad" ] && echo "failing targets:$bad"
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ] && [ -z "$bad" ]
