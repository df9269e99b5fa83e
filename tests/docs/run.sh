#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The docs are true: docs/options.md is exactly what `kiln help-markdown`
# writes from the option tables (make options-doc regenerates it) and names
# every flag and variable each command's --help shows; every link resolves. No root needed. Prints one line per test and
# "N passed, N failed, N skipped" last (tests/lib.sh).
set -u
. "$(dirname "$0")/../lib.sh"

KILN=${KILN:-build/kiln}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DOC=$ROOT/docs/options.md
TMP=$(mktemp -d /tmp/kiln-docs.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

test_options_current() {
	if ! "$KILN" help-markdown >"$TMP/options.md"; then
		fail options_current "kiln help-markdown failed"
	elif ! diff -u "$DOC" "$TMP/options.md" >"$TMP/diff"; then
		fail options_current "docs/options.md is stale (run make options-doc): $(head -12 "$TMP/diff")"
	else
		pass "options_current: docs/options.md is what kiln help-markdown writes"
	fi
}

test_options_complete() {
	local cmd missing=
	for cmd in agent record view diff; do
		missing+=$("$KILN" $cmd --help | grep -oE '(--[a-z-]+|KILN_[A-Z_]+)' | sort -u |
			while read -r name; do
				grep -qE -- "$name([^a-zA-Z_-]|$)" "$DOC" || echo " $cmd:$name"
			done)
	done
	if [ -n "$missing" ]; then
		fail options_complete "docs/options.md lacks:$missing"
	else
		pass "options_complete: every flag and variable of every --help is in docs/options.md"
	fi
}

# check_links.py prints a line per file and its own closing line; here it
# is one test.
test_links() {
	if python3 "$ROOT/tests/docs/check_links.py" >"$TMP/links" 2>&1; then
		pass "links: $(tail -1 "$TMP/links") (every relative link and #anchor resolves; README under 12 KiB)"
	else
		fail links "$(grep '^FAIL' "$TMP/links" | head -5)"
	fi
}

run_tests test_options_current test_options_complete test_links
finish 3
