#!/bin/sh
# test/readme.sh OUTDIR CC [BUILD] - the README and docs/*.md, as written.
#
# The code blocks of README.md and docs/*.md, by their info string:
#   ```c        compiles under -std=c99 -Wall -Wextra -pedantic -Werror with
#               CC and with clang (when installed) against this tree (-I.);
#               a block with main() is linked and run, must exit 0, and its
#               last line of output must appear in the same page (the
#               "prints:" line shown for it). A block that includes <mpi.h>
#               is compiled (not linked) with mpicc instead.
#   ```c excerpt  lines that go inside coll.h (design.md's new algorithm):
#               not compiled; listed, and counted as neither.
#   ```sh (```bash, ```shell)
#               every `make TARGET` in it names a target that exists (a
#               `## TARGET:` line in Makefile or mk/*.mk); nothing is run.
#   ```python   parses (python3's ast); nothing is run.
#   other kinds (```cpp, output, plain ```) are not checked.
# Links: every relative link of those pages names a file that exists.
# Tables: the parts of docs/firmware.md that `make size` and `make
# size-macros` write equal BUILD/baremetal/size.md and macros.md when those
# are newer than coll.h (tools/docs_tables.sh).
# Then the rule of ports/coll_threads.h under strict ISO C: as the first
# include it needs no feature-test macro (C99 and C11); after another
# header it stops the build with its own #error message; gnu99 needs
# nothing either way.
# Ends with "readme: N passed, N failed".
out=$1; cc=${2:-cc}; build=${3:-build}
STRICT="-std=c99 -Wall -Wextra -pedantic -Werror"
DOCS="README.md $(ls docs/*.md 2>/dev/null | sort)"
p=0; f=0
rm -rf "$out"; mkdir -p "$out"

check() {       # check NAME COMMAND...: counts, and shows the log on failure
    what=$1; shift
    if "$@" >"$out/$what.log" 2>&1; then p=$((p + 1)); echo "  ok    $what"
    else f=$((f + 1)); echo "  FAIL  $what"; sed 's/^/        /' "$out/$what.log" | head -30; fi
}
need() {        # need TOOL WHAT: 0 if TOOL is here; else a skip, or under CI a failure
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$CI" = true ]; then echo "  FAIL  $2: $1 not found (required under CI)"; f=$((f + 1))
    else echo "  skip  $2: $1 not found"; fi
    return 1
}

compilers=$cc
if command -v clang >/dev/null 2>&1 && [ "$cc" != clang ]; then compilers="$cc clang"; fi
mpicc=$(command -v mpicc.openmpi || command -v mpicc || echo mpicc)

# ---- ```c blocks
sh test/readme_blocks.sh c "$out" $DOCS > "$out/c.list"
grep -q '^[^ ]* README.md ' "$out/c.list" || { echo "  FAIL  no \`\`\`c block in README.md"; f=$((f + 1)); }
while read -r src doc line; do
    b=$(basename "$src" .c)
    if grep -q '^#include <mpi.h>' "$src"; then
        need "$mpicc" "$doc:$line (mpi.h)" &&
            check "$b-mpicc-compile" "$mpicc" $STRICT -I. -c "$src" -o "$out/$b-mpi.o"
        continue
    fi
    for c in $compilers; do
        cn=$(basename "$c")
        if grep -q '^int main' "$src"; then
            check "$b-$cn-build" $c $STRICT -I. "$src" -o "$out/$b-$cn" -pthread
            # its output, and that output shown in its page
            check "$b-$cn-run" sh -c "'$out/$b-$cn' > '$out/$b-$cn.out' &&
                line=\$(tail -n 1 '$out/$b-$cn.out') && echo \"\$line\" &&
                grep -qF -- \"\$line\" '$doc'"
        else
            check "$b-$cn-compile" $c $STRICT -I. -c "$src" -o "$out/$b-$cn.o"
        fi
    done
done < "$out/c.list"
for doc in $DOCS; do
    grep -n '^```c excerpt' "$doc" | while IFS=: read -r line rest; do
        echo "  note  $doc:$line: a \`\`\`c excerpt (lines for inside coll.h), not compiled"
    done
done

# ---- ```sh blocks: the make targets they name
has_target() {  # has_target NAME WHERE
    grep -qxF "$1" "$out/targets" && return 0
    echo "$2: make $1: no such target (no '## $1:' line in Makefile or mk/*.mk)"; return 1
}
sed -n 's/^## \([^ :]*\):.*/\1/p' Makefile mk/*.mk | sort -u > "$out/targets"
for k in sh bash shell; do sh test/readme_blocks.sh $k "$out" $DOCS; done > "$out/sh.list"
while read -r src doc line; do
    # "make NAME" where a command starts: line start, or after ; & | ( $(
    sed -e 's/#.*//' "$src" | tr ';&|(' '\n\n\n\n' |
        sed -n 's/^[ \t]*make[ \t]\{1,\}\([A-Za-z][A-Za-z0-9_.-]*\).*/\1/p' > "$out/sh.make"
    while read -r t; do
        check "$(basename "$src")-make-$t" has_target "$t" "$doc:$line"
    done < "$out/sh.make"
done < "$out/sh.list"

# ---- ```python blocks: they parse
sh test/readme_blocks.sh python "$out" $DOCS > "$out/py.list"
if [ -s "$out/py.list" ] && need python3 "python blocks"; then
    while read -r src doc line; do
        check "$(basename "$src")-parses" python3 -c \
            'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$src"
    done < "$out/py.list"
fi

# ---- relative links name files that exist
for doc in $DOCS; do
    dir=$(dirname "$doc")
    grep -o '](\([^)#]*\)[)#]' "$doc" | sed 's/^](//; s/[)#]$//' | sort -u |
    while read -r l; do
        case $l in http*|mailto:*|"") continue ;; esac
        echo "$l"
    done > "$out/links"
    bad=""
    while read -r l; do [ -e "$dir/$l" ] || bad="$bad $l"; done < "$out/links"
    check "links-$(echo "$doc" | tr '/.' '__')" sh -c "[ -z '$bad' ] || { echo 'missing:$bad'; exit 1; }"
done

# ---- a link's #anchor names a heading of its page (GitHub's slugs)
slugs() {       # slugs PAGE: one anchor per heading
    sed -n 's/^#\{1,6\} \{1,\}//p' "$1" | tr '[:upper:]' '[:lower:]' |
        sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
for doc in $DOCS; do
    dir=$(dirname "$doc"); bad=""
    for l in $(grep -o '](\([^) ]*\)#\([^) ]*\))' "$doc" | sed 's/^](//; s/)$//' | sort -u); do
        page=${l%%#*}; anchor=${l#*#}
        case $page in http*) continue ;; esac
        if [ -z "$page" ]; then page=$doc; else page=$dir/$page; fi
        case $page in *.md) ;; *) continue ;; esac
        [ -f "$page" ] && slugs "$page" | grep -qxF "$anchor" || bad="$bad $l"
    done
    check "anchors-$(echo "$doc" | tr '/.' '__')" sh -c "[ -z '$bad' ] || { echo 'no such heading:$bad'; exit 1; }"
done

# ---- the tables make size and make size-macros write
if [ -f docs/firmware.md ]; then
    sh tools/docs_tables.sh check docs/firmware.md size="$build/baremetal/size.md" \
        size-macros="$build/baremetal/macros.md" > "$out/tables.log" 2>&1
    cat "$out/tables.log"
    p=$((p + $(grep -c '^  ok ' "$out/tables.log")))
    f=$((f + $(grep -c '^  FAIL ' "$out/tables.log")))
fi

# ---- ports/coll_threads.h first, no feature-test macro
cat > "$out/threads_first.c" <<'C'
#define COLL_IMPLEMENTATION
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"
#include <stdio.h>
static coll_threads w;
static int body(int rank, void *arg) { (void)arg; return coll_threads_port(&w, rank).send ? 0 : 1; }
int main(void)
{
    int rc = coll_threads_init(&w, 2, 0);
    if (rc == COLL_OK) rc = coll_threads_run(&w, body, NULL);
    coll_threads_close(&w);
    printf("%s\n", rc == COLL_OK ? "ok" : coll_result_str(rc));
    return rc != COLL_OK;
}
C
# ... and after coll.h
sed -e 's|#include "ports/coll_threads.h"|#include "coll.h"\n#include "ports/coll_threads.h"|' \
    "$out/threads_first.c" > "$out/threads_second.c"
for c in $compilers; do
    cn=$(basename "$c")
    for std in c99 c11; do
        check "threads-first-$cn-$std" sh -c "$c -std=$std -Wall -Wextra -pedantic -Werror -I. \
            '$out/threads_first.c' -o '$out/tf-$cn-$std' -pthread && '$out/tf-$cn-$std'"
    done
    check "threads-late-$cn-c99-says-why" sh -c "! $c $STRICT -I. -c '$out/threads_second.c' \
        -o '$out/ts-$cn.o' > '$out/ts-$cn.err' 2>&1 && grep -q 'needs POSIX.1-2008' '$out/ts-$cn.err'"
    check "threads-late-$cn-gnu99" $c -std=gnu99 -Wall -Wextra -Werror -I. -c "$out/threads_second.c" \
        -o "$out/tg-$cn.o"
done

echo "readme: $p passed, $f failed"
[ "$f" -eq 0 ]
