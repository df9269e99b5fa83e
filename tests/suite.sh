#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/suite.sh RESULTS NAME COMMAND...: runs one suite of `make test` and
# records its counts in RESULTS/NAME.result ("passed failed skipped"), read
# from the suite's closing line "N passed, N failed, N skipped". A suite
# with no closing line, or one that exits non-zero with no failure counted,
# counts one failure more. With KILN_SAN_DIR set (SANITIZE=1), any ASan or
# LeakSanitizer report written there during the suite is shown and counted
# as a failure. Exits with the suite's verdict; tests/summary.sh reads the
# results of them all.
set -u
results=$1 name=$2
shift 2
mkdir -p "$results"
log=$results/$name.log
san=${KILN_SAN_DIR:-}
[ -z "$san" ] || { rm -rf "$san" && mkdir -p "$san"; }

"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

counts=$(grep -E '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -1 |
	sed -E 's/^[A-Za-z-]+: //; s/ passed, / /; s/ failed(, )?/ /; s/ skipped//')
read -r passed failed skipped <<<"$counts"
passed=${passed:-0} failed=${failed:-0} skipped=${skipped:-0}
if [ -z "$counts" ]; then
	echo "FAIL $name: no closing 'N passed, N failed' line (exit status $status)"
	failed=$((failed + 1))
elif [ "$status" != 0 ] && [ "$failed" = 0 ]; then
	echo "FAIL $name: exit status $status with no failure counted"
	failed=$((failed + 1))
fi
if [ -n "$san" ] && ls "$san"/* >/dev/null 2>&1; then
	cat "$san"/*
	echo "FAIL $name: sanitizer reports in $san/"
	failed=$((failed + 1))
fi
echo "$passed $failed $skipped" >"$results/$name.result"
[ "$failed" = 0 ]
