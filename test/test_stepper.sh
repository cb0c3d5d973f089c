#!/bin/sh
# test/test_stepper.sh PAGE - the stepper page (make stepper) in headless
# Chromium; the checks are test/test_stepper.py's. Screenshots are left in
# build/testlogs/stepper-*.png. Without Chromium or python3: skipped
# loudly, or a failure under CI=true.
page=${1:-build/stepper/index.html}
out=build/testlogs
mkdir -p "$out"
browser=$(command -v chromium || command -v chromium-browser)
py=$(command -v python3)
if [ -z "$browser" ] || [ -z "$py" ]; then
    if [ "$CI" = true ]; then echo "chromium or python3 not found (CI): failing"; echo "stepper: 0 passed, 1 failed"; exit 1; fi
    echo "*** SKIPPED test-stepper: chromium or python3 not found (apt-get install chromium python3) ***"
    echo "stepper: 0 passed, 0 failed"; exit 0
fi
if [ ! -s "$page" ]; then echo "FAIL: no page at $page"; echo "stepper: 0 passed, 1 failed"; exit 1; fi
size=$(wc -c < "$page")
echo "stepper: $page is $size bytes"
if [ "$size" -gt 5000000 ]; then echo "FAIL: the page is over 5 MB"; echo "stepper: 0 passed, 1 failed"; exit 1; fi
if grep -Eq '<(script|link|img)[^>]* (src|href)=' "$page"; then
    echo "FAIL: the page loads something from outside itself"; echo "stepper: 0 passed, 1 failed"; exit 1
fi
exec timeout 120 "$py" test/test_stepper.py "$page" "$browser" "$out"
