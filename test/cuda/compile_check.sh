#!/bin/sh
# Compile checks of the CUDA side, run by `make test-cuda-compile` (which
# passes the tools and flags in the environment). Each compile or link is
# one check; the last line is "cuda-compile: N passed, N failed".
#
# Without nvcc the checks that need it are skipped loudly - or, with
# CI=true, counted as one failure. The plain C / C++ checks run anyway.

: "${OUT:=build/cuda/check}"
: "${CC:=cc}" "${CXX:=c++}" "${CUDA_HOME:=/usr/local/cuda}"
: "${WARN:=-Wall -Wextra -Wpedantic -Werror}"
mkdir -p "$OUT"
pass=0
fail=0

# check NAME command...: run it, keep its output in $OUT/NAME.log
check() {
    name=$1; shift
    if "$@" >"$OUT/$name.log" 2>&1; then
        pass=$((pass + 1)); echo "ok    $name"
    else
        fail=$((fail + 1)); echo "FAIL  $name: $*"; sed 's/^/      /' "$OUT/$name.log" | head -40
    fi
}
# refuse NAME WHY command...: the command must fail, saying WHY (a compile
# that must not work, for the intended reason)
refuse() {
    name=$1; why=$2; shift 2
    if "$@" >"$OUT/$name.log" 2>&1; then
        fail=$((fail + 1)); echo "FAIL  $name: compiled, but must not: $*"
    elif ! grep -q "$why" "$OUT/$name.log"; then
        fail=$((fail + 1)); echo "FAIL  $name: failed, but without \"$why\""
        sed 's/^/      /' "$OUT/$name.log" | head -20
    else
        pass=$((pass + 1)); echo "ok    $name (refused, as it must be)"
    fi
}

# 1. The headers as a plain C99 and C++11 compiler sees them: no CUDA
#    header on the include path, full warnings.
check plain-c99   $CC -std=c99 $WARN -I. -c test/cuda/plain_c.c -o "$OUT/plain_c.o"
check plain-cxx11 $CXX -std=c++11 $WARN -x c++ -I. -c test/cuda/plain_c.c -o "$OUT/plain_cxx.o"
refuse plain-c-no-kernels "compile this file with nvcc" $CC -std=c99 -DCOLL_CUDA_IMPLEMENTATION -I. -c test/cuda/plain_c.c -o "$OUT/never.o"
check coll-impl-c99 $CC -std=c99 $CFLAGS $WARN -I. -c test/cuda/coll_impl.c -o "$OUT/coll_impl.o"

if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
    if [ "$CI" = true ]; then
        echo "FAIL  nvcc not found (PATH, $CUDA_HOME/bin): required under CI"
        fail=$((fail + 1))
    else
        echo ""
        echo "*** cuda: nvcc not found (PATH, $CUDA_HOME/bin): the nvcc checks were SKIPPED ***"
        echo ""
    fi
    echo "cuda-compile: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
fi

# 2. The port's implementation as C99 against the CUDA runtime headers
#    (system headers: their own pedantic warnings are not ours).
check port-c99 $CC -std=c99 $CFLAGS $WARN -I. -isystem "$CUDA_HOME/include" \
    -c test/cuda/port_c.c -o "$OUT/port_c.o"

# 3. Everything through nvcc, warnings as errors, sm_80 + sm_90.
for u in test/cuda/coll_cuda_impl.cu test/cuda/test_cuda.cu bench/bench_cuda.cu; do
    b=$(basename "$u" .cu)
    check "nvcc-$b" $NVCC $NVCCFLAGS $CUDA_WARN $CUDA_ARCH -I. -Itest/cuda -c "$u" -o "$OUT/$b.o"
done
# both implementations in one .cu, as a user would: warnings as errors,
# for each architecture alone (sm_90 included)
for a in sm_80 sm_90; do
    check "nvcc-both-impl-$a" $NVCC $NVCCFLAGS $CUDA_WARN -arch=$a -I. -c test/cuda/both_impl.cu -o "$OUT/both_$a.o"
done
check link-test_cuda  $NVCC $CUDA_ARCH -o "$OUT/test_cuda" "$OUT/test_cuda.o" \
    "$OUT/coll_cuda_impl.o" "$OUT/coll_impl.o" $LDLIBS_THREADS
check link-bench_cuda $NVCC $CUDA_ARCH -o "$OUT/bench_cuda" "$OUT/bench_cuda.o" \
    "$OUT/coll_cuda_impl.o" "$OUT/coll_impl.o" $LDLIBS_THREADS
# a C program against the nvcc-built objects: every entry point has C linkage
check link-plain-c $NVCC -o "$OUT/plain_c" "$OUT/plain_c.o" "$OUT/coll_cuda_impl.o" \
    "$OUT/coll_impl.o" $LDLIBS_THREADS

# 4. The vector path is really vectorised: every kernel of coll_cuda.h must
#    contain a 128-bit global load (ld.global.v4.*, or v2 of 64-bit lanes).
#    Struct copies of __half2 lanes would quietly fall back to 32-bit loads.
vec_check() {
    $NVCC -std=c++17 -O2 -arch=sm_90 -ptx -I. test/cuda/coll_cuda_impl.cu -o "$OUT/kernels.ptx" || return 1
    awk '/^\.visible \.entry/ { n++; name = $3 }
         /ld\.global(\.nc)?\.v4\.|ld\.global(\.nc)?\.v2\.(u64|f64|b64)/ { if (!(name in seen)) { seen[name] = 1; v++ } }
         END { printf "%d kernels, %d with 128-bit loads\n", n, v; exit !(n >= 68 && v == n) }' "$OUT/kernels.ptx"
}
check ptx-128bit-loads vec_check
sed 's/^/      /' "$OUT/ptx-128bit-loads.log"

echo "cuda-compile: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
