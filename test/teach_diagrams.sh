#!/bin/sh
# test/teach_diagrams.sh DIR - opens DIR/index.html (make diagrams) in
# headless Chromium: the page must load without a console error, every
# diagram it lists must render (the page counts the images whose pictures
# decoded and writes the count into #status), and there must be as many as
# SVG files written; AUTO's bar on the model chart only uses colours of
# curves drawn, the chart's title fits, no two arrow labels overlap, and
# the hierarchical forms are there, with host boxes and arrows inside and
# between hosts.
# Leaves a screenshot in build/testlogs/diagrams.png.
# Without Chromium: skipped loudly, or a failure under CI=true.
dir=${1:-build/diagrams}
out=build/testlogs
mkdir -p "$out"
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
    if [ "$CI" = true ]; then echo "chromium not found (CI): failing"; echo "diagrams: 0 passed, 1 failed"; exit 1; fi
    echo "*** SKIPPED test-diagrams: chromium not found (apt-get install chromium) ***"
    echo "diagrams: 0 passed, 0 failed"; exit 0
fi
page="file://$(cd "$dir" && pwd)/index.html"
flags="--headless --no-sandbox --disable-gpu --hide-scrollbars"
dom=$(timeout 120 "$browser" $flags --enable-logging=stderr --v=0 --dump-dom "$page" 2>"$out/diagrams-chromium.log")
[ -n "$dom" ] && ok || bad "no DOM from $page"
files=$(ls "$dir"/svg/*.svg 2>/dev/null | wc -l)
listed=$(printf '%s' "$dom" | grep -o 'class="diagram"' | wc -l)
rendered=$(printf '%s' "$dom" | sed -n 's/.*data-rendered="\([0-9]*\)".*/\1/p' | head -1)
total=$(printf '%s' "$dom" | sed -n 's/.*data-total="\([0-9]*\)".*/\1/p' | head -1)
echo "diagrams: $files SVG files, $listed on the page, ${rendered:-?} of ${total:-?} rendered"
[ "$files" -gt 40 ] && ok || bad "only $files SVG files"
[ "$listed" -eq "$files" ] && ok || bad "the page shows $listed diagrams, $files were written"
[ "${total:-0}" -eq "$listed" ] && ok || bad "the page's script saw ${total:-no} images"
[ "${rendered:--1}" -eq "$listed" ] && ok || bad "${rendered:-no} of $listed diagrams rendered"
if grep -E 'CONSOLE|ERR_FILE|Failed to load' "$out/diagrams-chromium.log" >/dev/null; then
    bad "load errors:"; grep -E 'CONSOLE|ERR_FILE|Failed to load' "$out/diagrams-chromium.log" | head -5
else ok; fi
# every SVG on its own, too: a picture that does not parse has no size
for f in "$dir"/svg/*.svg; do
    grep -q '^</svg>' "$f" && ok || bad "$f is not a complete SVG"
done
# the model chart: every algorithm AUTO picks on its bar has a curve and a
# legend entry of its own colour (the bar says "coloured as the curves")
model="$dir/svg/allreduce-model-p8.svg"
grep -o 'fill="#[0-9a-f]*"[^>]*><title>[a-z_]*</title></rect>' "$model" | sed 's/fill="\([^"]*\)".*<title>\(.*\)<\/title>.*/\1 \2/' |
    sort -u > "$out/diagrams-auto.txt"
[ -s "$out/diagrams-auto.txt" ] && ok || bad "no AUTO bar on the model chart"
while read -r col pick; do
    grep -q "fill=\"$col\">$pick</text>" "$model" && ok || bad "AUTO's $pick is drawn $col, not the colour of a legend entry $pick"
    grep -q "polyline fill=\"none\" stroke=\"$col\"" "$model" && ok || bad "AUTO's $pick ($col) has no curve"
done < "$out/diagrams-auto.txt"
# the chart's title fits its width: no text starts within 300 px of the right edge
w=$(sed -n 's/^<svg[^>]* width="\([0-9]*\)".*/\1/p' "$model" | head -1)
long=$(grep -o '<text x="[0-9.]*" y="[0-9.]*" font-size="1[3-9]"[^>]*>[^<]*' "$model" | sed 's/<text x="\([0-9.]*\)".*>\(.*\)/\1 \2/' |
       awk -v w="$w" '{ x = $1; $1 = ""; if (x + 7.5 * length($0) > w) print }')
[ -z "$long" ] && ok || bad "the chart's title runs past its width ($w): $long"
# no arrow label over another (boxes as the labels are drawn: 10 px text,
# about 6.2 px a character)
if command -v python3 >/dev/null; then
    over=$(python3 - "$dir" <<'PY'
import glob, re, sys
n = 0
for f in sorted(glob.glob(sys.argv[1] + "/svg/*.svg")):
    b = []
    for m in re.finditer(r'<text x="([\d.]+)" y="([\d.]+)" font-size="10" fill="#[0-9a-f]+" stroke="#fff"[^>]*>([^<]*)</text>', open(f).read()):
        x, y, t = float(m.group(1)), float(m.group(2)), m.group(3)
        b.append((x, x + 6.2 * len(t), y - 9, y + 2))
    for i in range(len(b)):
        for j in range(i):
            if min(b[i][1], b[j][1]) - max(b[i][0], b[j][0]) > 1 and min(b[i][3], b[j][3]) - max(b[i][2], b[j][2]) > 1:
                n += 1
                print("%s: labels at %.0f,%.0f and %.0f,%.0f overlap" % (f, b[i][0], b[i][3], b[j][0], b[j][3]), file=sys.stderr)
print(n)
PY
)
    [ "$over" = 0 ] && ok || bad "$over pairs of arrow labels overlap"
fi
# the hierarchical forms (tools/hier_trace.c --svg): one per collective at
# 2x3 and all-reduce at 4x2, on the page, hosts drawn as boxes and the
# messages between hosts dashed
hier=$(ls "$dir"/svg/hier-*.svg 2>/dev/null | wc -l)
[ "$hier" -eq 10 ] && ok || bad "$hier hierarchical SVGs, 10 wanted"
for c in allreduce-2x3 allreduce-4x2 reduce_scatter-2x3 allgather-2x3 broadcast-2x3 reduce-2x3 gather-2x3 scatter-2x3 alltoall-2x3 barrier-2x3; do
    f="$dir/svg/hier-$c.svg"
    printf '%s' "$dom" | grep -q "svg/hier-$c.svg" && ok || bad "the page does not show hier-$c.svg"
    grep -q 'font-weight="bold" fill="#3b5f8a">host 1</text>' "$f" && ok || bad "hier-$c.svg draws no host box"
    grep -q '<line [^>]*stroke-width="2.4" stroke-dasharray="7,3" marker-end' "$f" && ok || bad "hier-$c.svg has no arrow between hosts"
    grep -q '<line [^>]*stroke-width="1.6" marker-end' "$f" && ok || bad "hier-$c.svg has no arrow inside a host"
done
timeout 120 "$browser" $flags --screenshot="$out/diagrams.png" --window-size=1400,2400 "$page" \
    >/dev/null 2>&1
[ -s "$out/diagrams.png" ] && { ok; echo "screenshot: $out/diagrams.png"; } || bad "no screenshot"
echo "diagrams: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
