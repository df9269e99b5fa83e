#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/summary.sh RESULTS SUITE...: one line per suite of `make test` (a
# suite that left no result did not run: a failure), then the total. Exit
# status 1 when anything failed.
set -u
results=$1
shift
tp=0 tf=0 ts=0
echo "== make test: every suite"
for name in "$@"; do
	if [ -r "$results/$name.result" ]; then
		read -r p f s <"$results/$name.result"
	else
		p=0 f=1 s=0
		echo "FAIL $name: did not run (its build or set-up failed; see above)"
	fi
	printf '%-4s %-16s %4d passed, %d failed, %d skipped\n' \
		"$([ "$f" = 0 ] && echo ok || echo FAIL)" "$name" "$p" "$f" "$s"
	tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + s))
done
echo "total: $tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ]
