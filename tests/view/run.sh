#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# kiln view and kiln diff from the command line: real files in, real files
# out, read back by go tool pprof where it applies; bad input gives one
# line and a clean exit. No root needed. Prints one line per test and
# "N passed, N failed, N skipped" last (tests/lib.sh).
set -u
. "$(dirname "$0")/../lib.sh"

KILN=${KILN:-build/kiln}
KILN=$(realpath "$KILN")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/kiln-view.XXXXXX)
export HOME=$TMP GOCACHE=$TMP/gocache GOFLAGS=
trap 'rm -rf "$TMP"' EXIT

cd "$TMP" || exit 1
cat >base.folded <<'X'
app;main;work;hot 40
app;main;work;cold 40
app;main;parse 20
X
cat >new.folded <<'X'
app;main;work;hot 300
app;main;work;cold 60
app;main;parse 40
app;main;work;hot;memcpy_[k] 0
X

test_html() {
	local rc
	"$KILN" view new.folded -o new.html 2>err; rc=$?
	[ $rc -eq 0 ] && [ ! -s err ] || { fail html "rc=$rc $(head -1 err)"; return; }
	grep -q '<script type="application/json" id="kiln-data">' new.html &&
		grep -q '"strings":\["","all","app","main","work","hot","cold","parse"' new.html ||
		{ fail html "the profile is not embedded"; return; }
	# self-contained: no URL to fetch, no external script or style
	if grep -Eq 'https?://|<script[^>]* src=|<link ' new.html; then
		fail html "the page refers to something outside itself"; return
	fi
	"$KILN" view new.folded >stdout.html 2>/dev/null && cmp -s new.html stdout.html ||
		{ fail html "standard output differs from -o"; return; }
	pass "view writes one self-contained page ($(wc -c <new.html) bytes), to a file or stdout"
}

test_convert() {
	local top
	"$KILN" view new.folded -o new.pb.gz 2>err || { fail convert "to pprof: $(head -1 err)"; return; }
	top=$(go tool pprof -top -sample_index=samples new.pb.gz 2>&1) ||
		{ fail convert "go tool pprof: $(head -1 <<<"$top")"; return; }
	grep -Eq '^ +300 +75(\.00)?% .* hot$' <<<"$top" || { fail convert "hot is not 300 of 400: $top"; return; }
	"$KILN" view new.pb.gz --format folded -o back.folded 2>err || { fail convert "back: $(head -1 err)"; return; }
	grep -v ' 0$' new.folded | sort | cmp -s - back.folded ||
		{ fail convert "folded -> pprof -> folded changed: $(diff <(sort new.folded) back.folded | head -3)"; return; }
	pass "folded -> pprof (go tool pprof reads it) -> folded is lossless"
}

test_merge() {
	local out
	out=$("$KILN" view base.folded new.folded --format folded 2>&1)
	[ "$out" = "$(printf 'app;main;parse 60\napp;main;work;cold 100\napp;main;work;hot 340')" ] ||
		{ fail merge "got: $out"; return; }
	pass "several inputs merge stack by stack"
}

test_go_pprof() {
	( cd "$ROOT/tests/fixtures/gocpu" &&
	  go test -count=1 -run TestBurn -o "$TMP/gocpu.test" -cpuprofile "$TMP/go.pprof" . ) >go.log 2>&1 ||
		{ fail go_pprof "go test -cpuprofile failed: $(tail -1 go.log)"; return; }
	"$KILN" view go.pprof -o go.html 2>err || { fail go_pprof "$(head -1 err)"; return; }
	"$KILN" view go.pprof --format folded -o go.folded 2>err || { fail go_pprof "$(head -1 err)"; return; }
	grep -q 'kilnfixture.hotLoop' go.html && grep -q 'kilnfixture.TestBurn;kilnfixture.hotLoop;kilnfixture.spin' go.folded ||
		{ fail go_pprof "Go's stacks are not in the output"; return; }
	pass "a pprof written by Go's runtime (go test -cpuprofile) renders and converts"
}

test_diff_text() {
	local out rc
	out=$("$KILN" diff base.folded new.folded 2>&1); rc=$?
	[ $rc -eq 0 ] || { fail diff_text "rc=$rc $out"; return; }
	# hot: 40% -> 75%, the biggest change, then cold 40% -> 15%
	grep -Eq '^ +40\.00% +75\.00% +\+35\.00 +40\.00% +75\.00% +\+35\.00  hot$' <<<"$(sed -n 3p <<<"$out")" &&
		grep -Eq '^ +40\.00% +15\.00% +-25\.00 .*  cold$' <<<"$(sed -n 4p <<<"$out")" ||
		{ fail diff_text "top changes are not hot +35, cold -25: $out"; return; }
	"$KILN" diff base.folded new.folded -o diff.txt && cmp -s diff.txt <(printf '%s\n' "$out") ||
		{ fail diff_text "-o diff.txt differs from stdout"; return; }
	pass "diff --format text: hot 40% -> 75% of the total first"
}

test_regression() {
	local rc err
	"$KILN" diff base.folded new.folded --fail-on-regression 20 >/dev/null 2>err; rc=$?
	[ $rc -eq 1 ] && grep -q '^kiln diff: regression: hot takes 75.00% of the total, 40.00% before (+35.00 points, more than 20.00)$' err &&
		[ "$(wc -l <err)" -eq 1 ] || { fail regression "20 points: rc=$rc $(cat err)"; return; }
	"$KILN" diff base.folded new.folded --fail-on-regression 35 >/dev/null 2>&1; rc=$?
	[ $rc -eq 0 ] || { fail regression "35 points is not more than 35: rc=$rc"; return; }
	"$KILN" diff base.folded new.folded --fail-on-regression '1:c*' >/dev/null 2>&1; rc=$?
	[ $rc -eq 0 ] || { fail regression "cold shrank, yet rc=$rc"; return; }
	"$KILN" diff base.folded new.folded --fail-on-regression '1:h?t' >/dev/null 2>&1; rc=$?
	[ $rc -eq 1 ] || { fail regression "glob h?t: rc=$rc"; return; }
	"$KILN" diff new.folded base.folded --fail-on-regression 5 >/dev/null 2>err; rc=$?
	[ $rc -eq 1 ] && grep -q 'regression: cold' err && grep -q 'regression: parse' err ||
		{ fail regression "reversed: rc=$rc $(cat err)"; return; }
	pass "--fail-on-regression: exit 1 past the threshold, 0 at it, globs select functions"
}

test_diff_html() {
	"$KILN" diff base.folded new.folded -o diff.html 2>err || { fail diff_html "$(head -1 err)"; return; }
	grep -q '"diff":true' diff.html && grep -q '"base":\[' diff.html ||
		{ fail diff_html "not a diff page"; return; }
	pass "diff -o diff.html writes the diff page"
}

test_folded_labels() {
	local tags out
	# the labels as prefix frames, one needing escapes; a stack without any
	cat >pods.folded <<'X'
app;main;idle 2
{namespace=shop,pod=web-a};app;main;work;hot 60
{namespace=shop,pod=web-a};app;main;parse 15
{namespace=shop,pod=web-b\x2c1};app;main;work;cold 20
{namespace=shop,pod=web-b\x2c1};app;main;work;hot 5
X
	"$KILN" view pods.folded -o pods.pb.gz 2>err || { fail folded_labels "to pprof: $(head -1 err)"; return; }
	tags=$(go tool pprof -tags pods.pb.gz 2>&1) || { fail folded_labels "go tool pprof -tags: $(head -1 <<<"$tags")"; return; }
	grep -Eq '^ +75(\.0)? \(75(\.00)?%\): web-a$' <<<"$tags" && grep -Eq '^ +25(\.0)? \(25(\.00)?%\): web-b,1$' <<<"$tags" ||
		{ fail folded_labels "pprof -tags lacks the pods: $tags"; return; }
	"$KILN" view pods.pb.gz --folded-labels -o back.folded 2>err &&
		sort pods.folded | cmp -s - back.folded ||
		{ fail folded_labels "folded -> pprof -> --folded-labels changed: $(diff <(sort pods.folded) back.folded | head -3)"; return; }
	out=$("$KILN" view back.folded --match pod=web-b,1 --format folded 2>/dev/null)
	[ "$out" = "$(printf 'app;main;work;cold 20\napp;main;work;hot 5')" ] ||
		{ fail folded_labels "--match pod=web-b,1 on the folded file: $out"; return; }
	"$KILN" view pods.pb.gz -o plain.folded 2>/dev/null && ! grep -q '{' plain.folded &&
		[ "$(wc -l <plain.folded)" -eq 4 ] ||
		{ fail folded_labels "the default folded output carries labels: $(cat plain.folded)"; return; }
	pass "folded labels: {k=v,...} prefix -> pprof sample labels (go tool pprof -tags) -> --folded-labels is lossless, --match reads it, off by default"
}

# expect NAME STATUS PATTERN COMMAND...: exit status STATUS, one line on
# stderr matching PATTERN, nothing on stdout, no output file left behind.
expect() {
	local name=$1 want=$2 pattern=$3 rc
	shift 3
	rm -f out.html
	"$@" >stdout 2>stderr; rc=$?
	if [ $rc -ne "$want" ]; then
		fail "$name" "exit status $rc, not $want: $(head -2 stderr)"; return 1
	fi
	if [ "$(wc -l <stderr)" -ne 1 ] || ! grep -Eq -- "$pattern" stderr; then
		fail "$name" "stderr is not one line matching '$pattern': $(cat stderr)"; return 1
	fi
	if [ -s stdout ] || [ -e out.html ]; then
		fail "$name" "wrote output anyway"; return 1
	fi
	return 0
}

test_bad_input() {
	local n=0
	gunzip -c new.pb.gz >new.pprof
	head -c $(($(wc -c <new.pb.gz) / 2)) new.pb.gz >cut.pb.gz
	head -c $(($(wc -c <new.pprof) - 5)) new.pprof >cut.pprof
	printf 'app;main 3\napp;main;x 2\n<html>not a profile</html>\n' >junk.folded
	printf '\x08\x96\x01\xff\xff\xff\xff\x0f' >garbage.bin
	: >empty.folded
	mkdir -p adir
	printf 'app;main 3\nnot a profile\n' >adir/b.folded
	python3 -c 'print("\n".join("p;f%d;g%d 1" % (i, i) for i in range(200)))' >wide.folded
	expect truncated_gzip 1 '^kiln view: cut\.pb\.gz: not a pprof or folded profile \(truncated gzip data\)$' \
		"$KILN" view cut.pb.gz -o out.html && n=$((n + 1))
	expect truncated_pprof 1 '^kiln view: cut\.pprof: not a pprof or folded profile \(truncated or invalid protobuf\)$' \
		"$KILN" view cut.pprof -o out.html && n=$((n + 1))
	expect junk_lines 1 '^kiln view: junk\.folded: not a pprof or folded profile \(line 3: no sample count at the end\)$' \
		"$KILN" view junk.folded -o out.html && n=$((n + 1))
	expect garbage 1 '^kiln view: garbage\.bin: not a pprof or folded profile \(.+\)$' \
		"$KILN" view garbage.bin -o out.html && n=$((n + 1))
	expect missing 1 '^kiln view: nope\.pb\.gz: cannot read: No such file or directory$' \
		"$KILN" view new.folded nope.pb.gz -o out.html && n=$((n + 1))
	expect directory 1 '^kiln view: adir/b\.folded: not a pprof or folded profile \(line 2: no sample count at the end\)$' \
		"$KILN" view adir -o out.html && n=$((n + 1))
	mkdir -p emptydir
	expect empty_dir 1 '^kiln view: emptydir: a directory without profile files \(\.pb\.gz, \.pprof, \.folded, \.txt\)$' \
		"$KILN" view emptydir -o out.html && n=$((n + 1))
	expect too_big 1 '^kiln view: wide\.folded: larger than 1024 bytes \(--max-input\)$' \
		"$KILN" view --max-input 1K wide.folded -o out.html && n=$((n + 1))
	expect too_many_nodes 1 '^kiln view: wide\.folded: more than 100 distinct stack nodes \(--max-nodes\)$' \
		"$KILN" view --max-nodes 100 wide.folded -o out.html && n=$((n + 1))
	expect diff_bad 2 '^kiln diff: junk\.folded: not a pprof or folded profile' \
		"$KILN" diff base.folded junk.folded && n=$((n + 1))
	expect diff_empty 2 '^kiln diff: empty\.folded: no samples to compare$' \
		"$KILN" diff empty.folded base.folded && n=$((n + 1))
	[ $n -eq 11 ] && pass "bad input: truncated pprof and gzip, junk lines, garbage, missing, a bad file in a directory, a directory without profiles, limits: one line each, no output"
}

test_empty() {
	local rc
	"$KILN" view empty.folded -o empty.html 2>err; rc=$?
	[ $rc -eq 0 ] && [ "$(cat err)" = "kiln view: the input holds no samples" ] &&
		grep -q '"depth":\[0\]' empty.html ||
		{ fail empty "rc=$rc $(cat err)"; return; }
	pass "an empty profile gives an honest empty page and a note"
}

test_usage() {
	local n=0
	expect no_inputs 2 '^kiln view: no input files' "$KILN" view && n=$((n + 1))
	expect bad_format 2 "^kiln view: invalid value 'svg' for --format" "$KILN" view --format svg new.folded && n=$((n + 1))
	expect bad_ext 2 "^kiln view: invalid value 'x.svg' for --output: cannot tell the format" \
		"$KILN" view new.folded -o x.svg && n=$((n + 1))
	expect one_profile 2 '^kiln diff: give two profiles' "$KILN" diff new.folded && n=$((n + 1))
	expect bad_points 2 "^kiln diff: invalid value 'lots' for --fail-on-regression" \
		"$KILN" diff --fail-on-regression lots base.folded new.folded && n=$((n + 1))
	expect bad_max 2 "^kiln view: invalid value '1' for --max-nodes" "$KILN" view --max-nodes 1 new.folded && n=$((n + 1))
	if "$KILN" view --help | grep -q '^Usage: kiln view' && "$KILN" diff --help | grep -q -- '--fail-on-regression' &&
		"$KILN" --help | grep -q '^  diff'; then
		n=$((n + 1))
	else
		fail usage_help "kiln view --help, kiln diff --help or kiln --help lacks its usage"
	fi
	[ $n -eq 7 ] && pass "usage errors exit 2 with one line; --help"
}

TESTS="test_html test_convert test_merge test_go_pprof test_diff_text test_regression
	test_diff_html test_folded_labels test_bad_input test_empty test_usage"
run_tests $TESTS
finish "$(wc -w <<<"$TESTS")"
