#!/bin/sh
# test/teach_diagrams.sh DIR - opens DIR/index.html (make diagrams) in
# headless Chromium: the page must load without a console error, every
# diagram it lists must render (the page counts the images whose pictures
# decoded and writes the count into #status), and there must be as many as
# SVG files written. Leaves a screenshot in build/testlogs/diagrams.png.
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
timeout 120 "$browser" $flags --screenshot="$out/diagrams.png" --window-size=1400,2400 "$page" \
    >/dev/null 2>&1
[ -s "$out/diagrams.png" ] && { ok; echo "screenshot: $out/diagrams.png"; } || bad "no screenshot"
echo "diagrams: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
