#!/bin/sh
# test/readme_blocks.sh README OUTDIR - writes each ```c block of the
# README's "## Quick start" section (up to the next "## " heading) to
# OUTDIR/quickstart_N.c, N = 1, 2, ..., and prints the paths, one a line.
awk -v out="$2" '
/^## /                 { inqs = ($0 ~ /^## Quick start/) }
inqs && /^```c[ \t]*$/ { n++; f = sprintf("%s/quickstart_%d.c", out, n); printf "" > f
                         code = 1; print f; next }
code && /^```/         { code = 0; close(f); next }
code                   { print > f }
' "$1"
