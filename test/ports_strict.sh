#!/bin/sh
# test/ports_strict.sh [OUT_DIR] - every port under the README's strict flags
# (-std=c99 -Wall -Wextra -pedantic -Werror, no feature macro given), built
# from test/ports_strict.c with gcc and clang, and run. One check each:
#   first-PORT  the port included first: it asks for the feature macros it
#               needs itself; builds, links and runs (threads, shm, tcp,
#               mailbox, template; mpi with each mpicc found, built only)
#   late-PORT   <stdio.h> included before the port (glibc has read its
#               feature macros): the build must stop, and the first error
#               must be the port's own #error saying what to add
#   pc-PORT     the same late order with the Cflags its .pc file gives
#               (coll-threads.pc.in, coll-shm.pc.in; tcp has no .pc file:
#               with what its #error names): builds and runs
# Under CI=true a missing compiler is a failure; otherwise a loud skip.
# The last line is "ports-strict: N passed, N failed".
out=${1:-build/ports-strict}
src=$(dirname "$0")
root=$src/..
mkdir -p "$out"
STRICT="-std=c99 -Wall -Wextra -pedantic -Werror"
pass=0; fail=0

need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$CI" = true ]; then
        echo "ports-strict: $1 not found (required under CI)"; fail=$((fail + 1))
    else
        echo "ports-strict: *** $1 not found: SKIPPING its builds ***"
    fi
    return 1
}

ok()  { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; sed 's/^/    /' "$out/$1.log" | cut -c1-200 | head -12; }

# build NAME CC FLAGS...: build and run; the log is kept in $out/NAME.log
build() {
    name=$1; cc=$2; shift 2
    if $cc $STRICT "$@" -I"$root" "$src/ports_strict.c" -o "$out/$name" >"$out/$name.log" 2>&1 &&
       "$out/$name" >>"$out/$name.log" 2>&1; then ok "$name"; else bad "$name" "$cc $STRICT $*"; fi
}

# refuse NAME CC WANT FLAGS...: the build must fail, its first error
# being the port's #error that contains WANT
refuse() {
    name=$1; cc=$2; want=$3; shift 3
    if $cc $STRICT "$@" -I"$root" "$src/ports_strict.c" -o "$out/$name" >"$out/$name.log" 2>&1; then
        bad "$name" "built, but should stop with its #error"
    elif grep -m1 'error' "$out/$name.log" | grep -q "$want"; then ok "$name"
    else bad "$name" "the first error is not the port's own #error ($want)"
    fi
}

# Cflags of a .pc.in file, without the include path.
pc_cflags() { sed -n 's/^Cflags://p' "$root/$1" | sed 's/-I[^ ]*//g'; }

glibc=0
printf '#include <stdio.h>\n#ifndef __GLIBC__\n#error no\n#endif\nint main(void){return 0;}\n' > "$out/glibc.c"
cc -o "$out/glibc" "$out/glibc.c" >/dev/null 2>&1 && glibc=1

for cc in gcc clang; do
    need $cc || continue
    build "$cc-first-threads"  $cc -DSTRICT_THREADS  -lpthread
    build "$cc-first-shm"      $cc -DSTRICT_SHM      -lrt
    build "$cc-first-tcp"      $cc -DSTRICT_TCP
    build "$cc-first-mailbox"  $cc -DSTRICT_MAILBOX
    build "$cc-first-template" $cc -DSTRICT_TEMPLATE
    if [ $glibc = 1 ]; then
        refuse "$cc-late-threads" $cc "coll_threads.h needs" -DSTRICT_LATE -DSTRICT_THREADS -lpthread
        refuse "$cc-late-shm"     $cc "coll_shm.h needs"     -DSTRICT_LATE -DSTRICT_SHM -lrt
        refuse "$cc-late-tcp"     $cc "coll_tcp.h needs"     -DSTRICT_LATE -DSTRICT_TCP
    fi
    build "$cc-pc-threads" $cc $(pc_cflags coll-threads.pc.in) -DSTRICT_LATE -DSTRICT_THREADS -lpthread
    build "$cc-pc-shm"     $cc $(pc_cflags coll-shm.pc.in)     -DSTRICT_LATE -DSTRICT_SHM -lrt
    build "$cc-pc-tcp"     $cc -D_POSIX_C_SOURCE=200809L       -DSTRICT_LATE -DSTRICT_TCP
done

# MPI: built and linked with each MPI's compiler wrapper (running needs mpirun)
for mpicc in mpicc.openmpi mpicc.mpich; do
    need $mpicc || continue
    if $mpicc $STRICT -DSTRICT_MPI -I"$root" "$src/ports_strict.c" -o "$out/$mpicc-first-mpi" \
          >"$out/$mpicc-first-mpi.log" 2>&1; then ok "$mpicc-first-mpi"
    else bad "$mpicc-first-mpi" "$mpicc $STRICT -DSTRICT_MPI"; fi
done

echo "ports-strict: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
