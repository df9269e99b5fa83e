#!/bin/bash
# tests/unit/run.sh UNIT_TESTS [CRITERION ARGS...]: the Criterion binary,
# then its JSON report read back: each skipped test shown with its reason,
# and the closing line of tests/lib.sh (a skip as root fails the run there).
set -u
. "$(dirname "$0")/../lib.sh"
bin=$1
shift
# Criterion reports the tests a --filter left out as skipped: narrowed on
# purpose.
[ $# = 0 ] || export KILN_TEST_ALLOW_SKIP=1 KILN_TEST_ALLOW_SKIP_BY_FILTER=1
report=$(mktemp /tmp/kiln-unit.XXXXXX)
trap 'rm -f "$report" "$report.txt"' EXIT
"$bin" --jobs=2 --json="$report" "$@"
status=$?
if ! python3 - "$report" >"$report.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in d["test_suites"]:
    for t in s["tests"]:
        if t["status"] == "SKIPPED":
            print("SKIP %s/%s: %s" % (s["name"], t["name"], " ".join(t.get("messages", []))))
print("counts", d["passed"], d["failed"] + d["errored"], d["skipped"])
PY
then
	fail criterion "no readable JSON report (exit status $status)"
	finish 1
	exit
fi
[ -n "${KILN_TEST_ALLOW_SKIP_BY_FILTER:-}" ] || grep '^SKIP' "$report.txt"
read -r _ passed failed skipped < <(grep '^counts' "$report.txt")
[ "$status" = 0 ] || [ "$failed" != 0 ] || fail criterion "exit status $status with no failed test"
finish $((passed + failed + skipped))
