#!/bin/sh
# test/install.sh OUTDIR CC "HDRS" "PORTS" "PCS" - make install / uninstall.
#
# Twice: into a staging DESTDIR (PREFIX=/usr/local, found through
# PKG_CONFIG_SYSROOT_DIR, as a package build does) and into a plain
# temporary PREFIX. Each time: exactly the expected files are installed;
# pkg-config (searching the temporary tree only) knows coll, coll-threads
# and coll-shm; every ```c block of README.md and docs/*.md builds from
# the installed headers alone, with the flags pkg-config gives, and each
# program runs (blocks that include <mpi.h> are test/readme.sh's alone);
# each port header compiles as its own first include; then uninstall
# leaves no coll file or folder and keeps a stranger's files.
# Ends with "install: N passed, N failed".
out=$1; cc=${2:-cc}; hdrs=$3; ports=$4; pcs=$5
STRICT="-std=c99 -Wall -Wextra -pedantic -Werror"
p=0; f=0
here=$(pwd)
case $out in /*) ;; *) out=$here/$out ;; esac

check() {       # check NAME COMMAND...: counts, and shows the log on failure
    what=$1; shift
    if "$@" >"$out/$what.log" 2>&1; then p=$((p + 1)); echo "  ok    $what"
    else f=$((f + 1)); echo "  FAIL  $what"; sed 's/^/        /' "$out/$what.log" | head -30; fi
}

if ! command -v pkg-config >/dev/null 2>&1; then
    if [ "$CI" = true ]; then echo "install: pkg-config not found (required under CI)"
        echo "install: 0 passed, 1 failed"; exit 1; fi
    echo "*** install: pkg-config not found: test-install SKIPPED ***"; exit 0
fi

rm -rf "$out"; mkdir -p "$out/src"
blocks=$(sh test/readme_blocks.sh c "$out/src" README.md $(ls docs/*.md 2>/dev/null | sort) |
         while read -r src doc line; do grep -q '^#include <mpi.h>' "$src" || echo "$src"; done)
[ -n "$blocks" ] || { echo "  FAIL  no \`\`\`c block in README.md or docs/"; f=$((f + 1)); }

# one port header as the first include of a file, with its implementation
port_src() {    # port_src NAME FILE: writes FILE
    up=$(echo "$1" | tr a-z A-Z)
    printf '#define COLL_IMPLEMENTATION\n#define COLL_%s_IMPLEMENTATION\n#include "ports/coll_%s.h"\n' \
        "$up" "$1" > "$2"
}

# run_case NAME DESTDIR PREFIX: one install, use, uninstall
run_case() {
    name=$1; dest=$2; prefix=$3
    root=$dest$prefix                       # where the files land
    inc=$root/include/coll; pcdir=$root/share/pkgconfig
    mkdir -p "$root/include" "$pcdir"
    echo 'stranger' > "$root/include/stranger.h"         # not ours: must stay
    echo 'stranger' > "$pcdir/stranger.pc"

    check "$name-install" make --no-print-directory install DESTDIR="$dest" PREFIX="$prefix"

    # exactly the expected files
    { for h in $hdrs; do echo "$inc/$h"; done
      for h in $ports; do echo "$inc/ports/$h"; done
      for c in $pcs; do echo "$pcdir/$c"; done
      echo "$root/include/stranger.h"; echo "$pcdir/stranger.pc"; } | sort > "$out/$name.want"
    check "$name-files" sh -c "find '$root' -type f | sort > '$out/$name.have' &&
        diff '$out/$name.want' '$out/$name.have'"

    # pkg-config sees the temporary tree only
    PKG_CONFIG_LIBDIR=$pcdir; PKG_CONFIG_PATH=; export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
    if [ -n "$dest" ]; then PKG_CONFIG_SYSROOT_DIR=$dest; export PKG_CONFIG_SYSROOT_DIR
    else unset PKG_CONFIG_SYSROOT_DIR; fi
    check "$name-pkg-config" sh -c "pkg-config --exists --print-errors $(echo $pcs | sed 's/\.pc//g') &&
        pkg-config --cflags coll | grep -qF -- '-I$inc' &&
        pkg-config --libs coll-threads | grep -q -- '-pthread' &&
        pkg-config --cflags coll-threads | grep -qF -- '-I$inc'"
    cflags=$(pkg-config --cflags coll-threads); libs=$(pkg-config --libs coll-threads)

    # the blocks from the installed headers alone: built in a folder with
    # no coll.h, with no -I but pkg-config's
    w=$out/use-$name; mkdir -p "$w"
    for src in $blocks; do
        b=$(basename "$src" .c)
        if grep -q '^int main' "$src"; then
            check "$name-$b-build" sh -c "cd '$w' && $cc $STRICT '$src' -o $b $cflags $libs"
            check "$name-$b-run" "$w/$b"
        else
            check "$name-$b-compile" sh -c "cd '$w' && $cc $STRICT -c '$src' -o $b.o $cflags"
        fi
    done
    # every port without outside dependencies, as the first include (the MPI
    # and CUDA ports need mpicc and nvcc; their compile checks live elsewhere)
    for port in threads:"" mailbox:"" tcp:-D_POSIX_C_SOURCE=200809L \
                template:-D_POSIX_C_SOURCE=200809L shm:-D_DEFAULT_SOURCE; do
        pn=${port%%:*}; pdef=${port#*:}
        port_src "$pn" "$w/port_$pn.c"
        check "$name-port-$pn" sh -c "cd '$w' && $cc $STRICT $pdef -c port_$pn.c \
            -o port_$pn.o $(pkg-config --cflags coll-threads coll-shm)"
    done

    check "$name-uninstall" make --no-print-directory uninstall DESTDIR="$dest" PREFIX="$prefix"
    check "$name-nothing-left" sh -c "rm '$root/include/stranger.h' '$pcdir/stranger.pc' &&
        test -z \"\$(find '$root' -type f)\" && ! test -e '$inc'"
    unset PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
}

run_case destdir "$out/stage" /usr/local
run_case prefix "" "$out/prefix"

echo "install: $p passed, $f failed"
[ "$f" -eq 0 ]
