#!/bin/sh
# test/make_checks.sh OUTDIR - `make help` and `make -n`.
#
# 1. Every target named by a rule in Makefile or mk/*.mk has a line
#    `## name: what` (so `make help ALL=1` lists it; plain `make help` all
#    but those tagged `## name: [internal] what`), and every such line
#    names a target that exists.
# 2. `make -n TARGET`, for every target in that list, prints commands and
#    runs none. The programs a recipe could start (compilers, QEMU, the MPI
#    launchers, nvcc, timeout, sh, make itself...) are replaced on PATH by
#    stand-ins that leave a mark; build output goes to a fresh B folder.
#    Afterwards there must be no mark and no B folder.
# Ends with "make: N passed, N failed".
out=$1
p=0; f=0
here=$(pwd)
case $out in /*) ;; *) out=$here/$out ;; esac
rm -rf "$out"; mkdir -p "$out/bin" "$out/marks"
files="Makefile $(ls mk/*.mk | sort)"
make=$(command -v make)          # the real one: the stand-ins come first on PATH

# rule targets: "name other-name: ..." at the start of a line, not an
# assignment, not a special target, not a path or variable
sed -n 's/^\([A-Za-z][A-Za-z0-9_.%-]*\( [A-Za-z][A-Za-z0-9_.%-]*\)*\):\([^=].*\)\{0,1\}$/\1/p' $files |
    tr ' ' '\n' | sort -u > "$out/rules"
sed -n 's/^## \([^ :]*\):.*/\1/p' $files | sort -u > "$out/documented"
for t in $(comm -23 "$out/rules" "$out/documented"); do
    echo "  FAIL  target $t has no '## $t: what it does' line"; f=$((f + 1))
done
for t in $(comm -13 "$out/rules" "$out/documented"); do
    echo "  FAIL  '## $t:' documents no target"; f=$((f + 1))
done
n=$(wc -l < "$out/rules")
if [ "$f" -eq 0 ]; then echo "  ok    all $n targets documented"; p=$((p + 1)); fi

# `make help ALL=1` lists every target; plain `make help` all but the
# ones tagged [internal]
"$make" --no-print-directory help ALL=1 > "$out/help-all.txt" 2>&1
"$make" --no-print-directory help > "$out/help.txt" 2>&1
sed -n 's/^## \([^ :]*\): \[internal\] .*/\1/p' $files | sort -u > "$out/internal"
missing=0
for t in $(cat "$out/rules"); do
    grep -qE "^  make $t( |\$)" "$out/help-all.txt" || { echo "  FAIL  make help ALL=1 does not list $t"; missing=1; }
    if grep -qxF "$t" "$out/internal"; then
        ! grep -qE "^  make $t( |\$)" "$out/help.txt" || { echo "  FAIL  make help shows internal $t"; missing=1; }
    else
        grep -qE "^  make $t( |\$)" "$out/help.txt" || { echo "  FAIL  make help does not list $t"; missing=1; }
    fi
done
if [ $missing -eq 0 ]; then
    echo "  ok    make help lists all $n ($(wc -l < "$out/internal") internal only with ALL=1)"; p=$((p + 1))
else f=$((f + 1)); fi

# stand-ins for everything a recipe here can start
for prog in cc gcc clang c++ g++ clang++ cpp ld as sh bash dash make timeout env \
            arm-none-eabi-gcc riscv64-unknown-elf-gcc arm-linux-gnueabihf-gcc powerpc-linux-gnu-gcc \
            qemu-system-arm qemu-system-riscv32 qemu-arm qemu-ppc nvcc compute-sanitizer \
            mpicc mpicc.openmpi mpicc.mpich mpirun mpirun.openmpi mpirun.mpich \
            valgrind gnuplot python3 pkg-config install ip unshare sudo; do
    printf '#!/bin/sh\necho "$0 $*" >> "%s/marks/%s"\nexit 0\n' "$out" "$prog" > "$out/bin/$prog"
    chmod +x "$out/bin/$prog"
done

for t in $(grep -v '%' "$out/rules"); do
    rm -rf "$out/b"
    if PATH="$out/bin:$PATH" "$make" --no-print-directory -n "$t" B="$out/b" \
            > "$out/n-$t.log" 2>&1 && [ -s "$out/n-$t.log" ] &&
       [ -z "$(ls "$out/marks")" ] && [ ! -e "$out/b" ]; then
        p=$((p + 1))
    else
        f=$((f + 1)); echo "  FAIL  make -n $t"
        sed 's/^/        /' "$out/n-$t.log" | head -10
        for m in "$out"/marks/*; do [ -f "$m" ] && sed 's/^/        ran: /' "$m"; done
        [ -e "$out/b" ] && echo "        created $out/b"
        rm -f "$out"/marks/*
    fi
done
echo "  make -n of $(grep -vc '%' "$out/rules") targets checked"

echo "make: $p passed, $f failed"
[ "$f" -eq 0 ]
