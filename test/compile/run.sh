#!/bin/sh
# test/compile/run.sh [OUT_DIR] - builds coll.h and ports/coll_threads.h in
# every language mode and with every compiler we support, all warnings as
# errors, then runs what it built. One check per build-and-run; the last
# line is "compile: N passed, N failed".
#   C99, C11 (gcc, clang)       full.c: both implementations in one file
#   C++11, C++17 (g++, clang++) full.c compiled as C++
#   two static copies           static_tu.c twice + static_main.c, C and C++
#   COLL_LAYOUT_MAX_DIMS        layout_dims.c: the setting works (gcc, clang)
#   COLL_NO_ARGCHECK            full.c with argument checks as assertions
#   C89                         declarations only (decl_c89.c), linked with
#                               lib.c built as C99: the implementation
#                               itself needs C99 (restrict, long long,
#                               declarations mixed with code)
# Under CI=true a missing compiler is a failure; otherwise a loud skip.
out=${1:-build/core/compile}
src=$(dirname "$0")
mkdir -p "$out"
W="-Wall -Wextra -Wpedantic -Werror"
POSIX="-D_POSIX_C_SOURCE=200809L"
LIBS=-lpthread
pass=0; fail=0

need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$CI" = true ]; then
        echo "compile: $1 not found (required under CI)"; fail=$((fail + 1))
    else
        echo "compile: *** $1 not found: SKIPPING its builds ***"
    fi
    return 1
}

# check NAME COMMAND...: one check; the log is kept in $out/NAME.log
check() {
    name=$1; shift
    if sh -c "$*" >"$out/$name.log" 2>&1; then
        pass=$((pass + 1)); echo "ok   $name"
    else
        fail=$((fail + 1)); echo "FAIL $name: $*"; sed 's/^/    /' "$out/$name.log" | cut -c1-200 | head -20
    fi
}

for cc in gcc clang; do
    need $cc || continue
    for std in c99 c11; do
        check "$cc-$std" "$cc -std=$std $POSIX -O2 $W $src/full.c -o $out/full-$cc-$std $LIBS && $out/full-$cc-$std"
    done
    # argument checks as assertions (COLL_DEBUG: they fire if a call is bad)
    check "$cc-no-argcheck" "$cc -std=c99 $POSIX -O2 $W -DCOLL_NO_ARGCHECK -DCOLL_DEBUG $src/full.c -o $out/noarg-$cc $LIBS && $out/noarg-$cc"
    check "$cc-static-twice" "$cc -std=c99 $POSIX -O2 $W -DTU_NAME=static_a -c $src/static_tu.c -o $out/sa-$cc.o && \
        $cc -std=c99 $POSIX -O2 $W -DTU_NAME=static_b -c $src/static_tu.c -o $out/sb-$cc.o && \
        $cc -std=c99 -O2 $W $src/static_main.c $out/sa-$cc.o $out/sb-$cc.o -o $out/static-$cc $LIBS && $out/static-$cc"
    check "$cc-layout-max-dims" "$cc -std=c99 -O2 $W $src/layout_dims.c -o $out/dims-$cc && $out/dims-$cc"
    check "$cc-c89-declarations" "$cc -std=c89 -O2 $W -c $src/decl_c89.c -o $out/decl89-$cc.o && \
        $cc -std=c99 $POSIX -O2 $W -c $src/lib.c -o $out/lib-$cc.o && \
        $cc $out/decl89-$cc.o $out/lib-$cc.o -o $out/decl89-$cc $LIBS && $out/decl89-$cc"
done

for cxx in g++ clang++; do
    need $cxx || continue
    for std in c++11 c++17; do
        check "$cxx-$std" "$cxx -x c++ -std=$std -O2 $W $src/full.c -o $out/full-$cxx-$std $LIBS && $out/full-$cxx-$std"
    done
    check "$cxx-static-twice" "$cxx -x c++ -std=c++11 -O2 $W -DTU_NAME=static_a -c $src/static_tu.c -o $out/sa-$cxx.o && \
        $cxx -x c++ -std=c++11 -O2 $W -DTU_NAME=static_b -c $src/static_tu.c -o $out/sb-$cxx.o && \
        $cxx -x c++ -std=c++11 -O2 $W $src/static_main.c -x none $out/sa-$cxx.o $out/sb-$cxx.o -o $out/static-$cxx $LIBS && $out/static-$cxx"
done

echo "compile: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
