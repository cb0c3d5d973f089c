#!/bin/sh
# test/readme.sh OUTDIR CC - the README's Quick start, as written.
#
# Every ```c block of the Quick start section compiles under
# -std=c99 -Wall -Wextra -pedantic -Werror with CC and with clang (when
# installed) against this tree (-I.); a block with main() is linked, run,
# must exit 0 and print the line the README shows for it. Then the rule of
# ports/coll_threads.h under strict ISO C: as the first include it needs no
# feature-test macro (C99 and C11); after another header it stops the build
# with its own #error message; gnu99 needs nothing either way.
# Ends with "readme: N passed, N failed".
out=$1; cc=${2:-cc}
STRICT="-std=c99 -Wall -Wextra -pedantic -Werror"
p=0; f=0
rm -rf "$out"; mkdir -p "$out"

check() {       # check NAME COMMAND...: counts, and shows the log on failure
    what=$1; shift
    if "$@" >"$out/$what.log" 2>&1; then p=$((p + 1)); echo "  ok    $what"
    else f=$((f + 1)); echo "  FAIL  $what"; sed 's/^/        /' "$out/$what.log" | head -30; fi
}

compilers=$cc
if command -v clang >/dev/null 2>&1 && [ "$cc" != clang ]; then compilers="$cc clang"; fi

blocks=$(sh test/readme_blocks.sh README.md "$out")
if [ -z "$blocks" ]; then echo "  FAIL  no \`\`\`c block in the README's Quick start"; f=$((f + 1)); fi

for src in $blocks; do
    b=$(basename "$src" .c)
    for c in $compilers; do
        cn=$(basename "$c")
        if grep -q '^int main' "$src"; then
            check "$b-$cn-build" $c $STRICT -I. "$src" -o "$out/$b-$cn" -pthread
            # its output, and that output shown in the README
            check "$b-$cn-run" sh -c "'$out/$b-$cn' > '$out/$b-$cn.out' &&
                line=\$(tail -n 1 '$out/$b-$cn.out') && echo \"\$line\" &&
                grep -qF \"\$line\" README.md"
        else
            check "$b-$cn-compile" $c $STRICT -I. -c "$src" -o "$out/$b-$cn.o"
        fi
    done
done

# ports/coll_threads.h first, no feature-test macro
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
    coll_threads_destroy(&w);
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
