#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/unit/run.sh UNIT_TESTS [CRITERION ARGS...]: the Criterion binary,
# then its TAP report read back (its JSON report is not valid JSON when an
# assertion message holds a quote): each skipped test shown with its
# reason, every planned test accounted for, and the closing line of
# tests/lib.sh (a skip as root fails the run there).
set -u
. "$(dirname "$0")/../lib.sh"
bin=$1
shift
# Criterion reports the tests a --filter left out as skipped: narrowed on
# purpose.
narrowed=
[ $# = 0 ] || { narrowed=1; export KILN_TEST_ALLOW_SKIP=1; }
report=$(mktemp /tmp/kiln-unit.XXXXXX)
trap 'rm -f "$report"' EXIT
"$bin" --jobs=2 --tap="$report" "$@"
status=$?
plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$report")
passed=$(grep -cE '^ok ' "$report")
skipped=$(grep -cE '^ok .* # SKIP' "$report")
passed=$((passed - skipped))
failed=$(grep -cE '^not ok ' "$report")
[ -n "$narrowed" ] || grep -E '^ok .* # SKIP' "$report" | sed -E 's/^ok - ([^ ]*) .*# SKIP /SKIP \1: /'
grep -E '^not ok ' "$report" | sed -E 's/^not ok - /FAIL /'
[ -n "$plan" ] || fail criterion "no TAP report (exit status $status)"
[ "$status" = 0 ] || [ "$failed" != 0 ] || fail criterion "exit status $status with no failed test"
finish "${plan:-1}"
