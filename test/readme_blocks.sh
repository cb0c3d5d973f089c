#!/bin/sh
# test/readme_blocks.sh KIND OUTDIR DOC... - the code blocks of the docs.
#
# Writes each block of DOC whose info string is exactly KIND (```c, ```sh,
# ```python; "```c excerpt" is another kind) to OUTDIR/<doc>_<N>.<KIND>,
# N counting that doc's blocks of the kind from 1, and prints one line per
# block: "FILE DOC LINE" (LINE: where the block opens in DOC). <doc> is
# DOC's path with / and . made _, so README.md gives README_md_1.c and
# docs/api.md docs_api_md_1.c.
kind=$1; out=$2; shift 2
for doc in "$@"; do
    stem=$(echo "$doc" | tr '/.' '__')
    awk -v out="$out" -v stem="$stem" -v kind="$kind" -v doc="$doc" '
    code == 0 && /^```/ { info = substr($0, 4); sub(/[ \t]+$/, "", info)
                          if (info == kind) { n++; f = sprintf("%s/%s_%d.%s", out, stem, n, kind)
                                              printf "" > f; print f, doc, NR; code = 1 }
                          else code = 2
                          next }
    code && /^```[ \t]*$/ { if (code == 1) close(f); code = 0; next }
    code == 1           { print > f }
    ' "$doc"
done
