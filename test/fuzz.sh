#!/bin/sh
# Runs the libFuzzer target for a bounded time over a corpus that starts
# from test/fuzz_corpus (kept under build/ between runs), then prints the
# closing line. A crash, leak, sanitizer report or time-out fails it.
bin=$1; secs=${2:-60}
dir=$(dirname "$bin")/fuzz_corpus
mkdir -p "$dir"
cp test/fuzz_corpus/* "$dir"/ 2>/dev/null
out=$(dirname "$bin")/fuzz.log
if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$(dirname "$bin")/" \
        "$dir" >"$out" 2>&1; then
    runs=$(grep -o 'Done [0-9]* runs' "$out" | grep -o '[0-9]*')
    echo "fuzz: ${runs:-0} inputs in ${secs} s, no crash"
    echo "fuzz: 1 passed, 0 failed"
else
    tail -40 "$out"
    echo "fuzz: 0 passed, 1 failed"
    exit 1
fi
