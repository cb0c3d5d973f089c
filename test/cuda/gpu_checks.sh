#!/bin/sh
# test/cuda/gpu_checks.sh - every check that needs a GPU, in one go, each
# step under its own time limit, logs in $OUT (or build/cuda/logs):
#   the CUDA tests (make test-cuda), the same under compute-sanitizer
#   memcheck and initcheck (make test-cuda-sanitize), and the CUDA bench
#   (make bench-cuda). Build first (make build/cuda/test_cuda
#   build/cuda/bench_cuda); the binaries are run as they are.
#   Usage: sh test/cuda/gpu_checks.sh [quick]
O=${OUT:-build/cuda/logs}
mkdir -p "$O"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
BQ=--quick; [ "${1:-}" = full ] && BQ=
nvidia-smi -L > "$O/gpu.txt" 2>&1; cat "$O/gpu.txt"
step() { # name limit command...
    n=$1; t=$2; shift 2; s=$(date +%s)
    timeout "$t" "$@" > "$O/$n.log" 2>&1; rc=$?
    echo "== $n: rc $rc, $(( $(date +%s) - s )) s"; tail -n 6 "$O/$n.log"
}
step test 170 build/cuda/test_cuda
step bench 60 build/cuda/bench_cuda $BQ
export COLL_TEST_QUICK=1 COLL_TEST_SANITIZER=1
step memcheck 130 "$CS" --tool memcheck --error-exitcode 9 build/cuda/test_cuda
step initcheck 100 "$CS" --tool initcheck --error-exitcode 9 build/cuda/test_cuda
grep -h "^FAIL\|ERROR SUMMARY\|=== " "$O"/*.log | sort | uniq -c | sort -rn | head -40
