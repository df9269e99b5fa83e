#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Browser tests: kiln's HTML pages opened in headless Chromium (Debian's
# chromium package), driven over the DevTools protocol by check.py (Python
# standard library only, no npm). Screenshots go to OUT_DIR. Prints one
# line per test and "N passed, N failed" last.
set -u

KILN=${KILN:-build/kiln}
KILN=$(realpath "$KILN")
HERE=$(cd "$(dirname "$0")" && pwd)
OUT_DIR=$(realpath -m "${OUT_DIR:-build/browser}")
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
TMP=$(mktemp -d /tmp/kiln-browser.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$CHROMIUM" ]; then
	echo "FAIL chromium: $CHROMIUM not found (apt-get install -y chromium, or make deps)"
	echo "0 passed, 1 failed"
	exit 1
fi
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/*.png
cd "$TMP" || exit 1

cat >small.folded <<'X'
app;main;work;hot 60
app;main;work;cold 20
app;main;parse 15
app;main;work;hot;memcpy_[k] 5
bash;main 10
X
cat >base.folded <<'X'
app;main;work;hot 40
app;main;work;cold 40
app;main;parse 20
X
cat >new.folded <<'X'
app;main;work;hot 300
app;main;work;cold 60
app;main;parse 40
X
: >empty.folded
# two pods of one namespace: the labels as folded prefix frames, turned
# into pprof sample labels by kiln view, and the page made from that pprof
cat >pods.folded <<'X'
{namespace=shop,pod=web-a};app;main;work;hot 60
{namespace=shop,pod=web-a};app;main;parse 15
{namespace=shop,pod=web-b};app;main;work;cold 20
{namespace=shop,pod=web-b};app;main;work;hot 5
X
"$KILN" view pods.folded -o pods.pb.gz 2>/dev/null && "$KILN" view -t "kiln browser test: pods" pods.pb.gz -o pods.html 2>/dev/null ||
	{ echo "FAIL setup: kiln view pods.folded"; echo "0 passed, 1 failed"; exit 1; }
for f in small empty; do
	"$KILN" view -t "kiln browser test: $f" $f.folded -o $f.html 2>/dev/null ||
		{ echo "FAIL setup: kiln view $f.folded"; echo "0 passed, 1 failed"; exit 1; }
done
"$KILN" diff base.folded new.folded -o diff.html && "$KILN" diff base.folded new.folded >diff.txt ||
	{ echo "FAIL setup: kiln diff"; echo "0 passed, 1 failed"; exit 1; }
sized=()
for n in 25000 50000 100000 200000; do
	python3 "$HERE/bigtree.py" $n >big$n.folded && "$KILN" view big$n.folded -o big$n.html ||
		{ echo "FAIL setup: a tree of $n nodes"; echo "0 passed, 1 failed"; exit 1; }
	sized+=("$TMP/big$n.html")
done

python3 -B "$HERE/check.py" "$OUT_DIR" diff.txt small.html diff.html empty.html pods.html big100000.html "${sized[@]}"
