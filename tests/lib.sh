# SPDX-License-Identifier: BSD-2-Clause
# The counting every test script shares. Source it, report each check with
# pass, fail or skip, run the tests with run_tests, and end with finish:
#
#   . "$(dirname "$0")/../lib.sh"
#   run_tests test_a test_b
#   finish 2        # the number of results this script must report
#
# The closing line is "N passed, N failed, N skipped"; the exit status is 1
# when a check failed, when a test reported nothing, when the number of
# results is not the expected one, or on an unexpected skip.

passed=0
failed=0
skipped=0

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# A skip is counted and shown; as root, where make test has installed all it
# needs, it fails the run unless KILN_TEST_ALLOW_SKIP=1 says it was meant.
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }

# run_tests FN...: runs each test function; one that reports no result
# (a check that vanished: an early return, a chain with no || fail) fails.
run_tests() {
	local t before
	for t in "$@"; do
		before=$((passed + failed + skipped))
		"$t"
		[ $((passed + failed + skipped)) -gt "$before" ] || fail "$t" "reported no result"
	done
}

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds; status 1
# once SECONDS have passed. The deadline only guards against a hang: tests
# wait for a condition, never for a time.
wait_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# skip_all REASON TEST...: the whole script cannot run here.
skip_all() {
	local reason=$1 t
	shift
	for t in "$@"; do skip "$t" "$reason"; done
}

finish() {
	local expected=$1
	if [ $((passed + failed + skipped)) != "$expected" ]; then
		fail results "$((passed + failed + skipped)) results reported, $expected expected"
	fi
	if [ "$skipped" != 0 ] && [ "$(id -u)" = 0 ] && [ "${KILN_TEST_ALLOW_SKIP:-0}" != 1 ]; then
		fail skips "$skipped skipped as root, where nothing should be (KILN_TEST_ALLOW_SKIP=1 allows it)"
	fi
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" = 0 ]
}

# pprof_samples FILE: the samples in a pprof file, as go tool pprof reads it
# (its first sample type, summed).
pprof_samples() {
	go tool pprof -raw "$1" 2>/dev/null |
		awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 }
			on && /^ *[0-9]+ +[0-9]+:/ { s += $1 } END { print s + 0 }'
}

# json FILE KEY... : a value of a JSON file (record --stats), keys nested.
json() {
	python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d=d[k]
print(d)' "$@"
}

# folded_count FILE REGEX: the samples of the folded lines matching REGEX.
folded_count() {
	grep -E "$2" "$1" | awk '{ s += $NF } END { print s + 0 }'
}

# stats_json FILE KEY...: a value of kiln record's --stats.
stats_json() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d = d[k]
print(d)' "$@"
}
