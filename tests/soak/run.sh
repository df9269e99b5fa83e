#!/bin/bash
# Soak: `kiln agent` pushing to the local receiver for SOAK_SECONDS (default
# 3600) while short-lived processes churn (a burst every second, each a new
# pid and a new program image). Records the agent's RSS every 10 s and
# checks that RSS at the end is within 10 % of RSS at 5 minutes (or at a
# twelfth of the run when it is shorter), that every profile built was
# delivered, and that no error was logged. Prints one line per check and
# "N passed, N failed". Needs root.
set -u

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
SECONDS_TOTAL=${SOAK_SECONDS:-3600}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
OUT=${SOAK_OUT:-$(mktemp -d /tmp/kiln-soak.XXXXXX)}
mkdir -p "$OUT"
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

$PY "$HERE/../receiver/receiver.py" --port 0 --port-file "$OUT/port" --log "$OUT/receiver.jsonl" \
	--max-stacks 0 >"$OUT/receiver.out" 2>&1 &
recv=$!
for _ in $(seq 100); do [ -s "$OUT/port" ] && break; sleep 0.1; done
"$KILN" agent --server "http://127.0.0.1:$(cat "$OUT/port")" --metrics-addr 127.0.0.1:0 \
	--shutdown-timeout 30 2>"$OUT/agent.err" &
agent=$!
trap 'kill $churn $agent $recv 2>/dev/null' EXIT

# churn: every second a handful of new short-lived processes
(
	while :; do
		for _ in 1 2 3 4 5; do
			sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done' &
		done
		"$WORKLOADS/cpu_ratio" 0.3 >/dev/null 2>&1 &
		sleep 1
	done
) &
churn=$!

# the metrics port the agent picked (port 0), for the bounded caches' sizes
for _ in $(seq 100); do
	mport=$(sed -n 's/.*msg="agent: serving.* port=\([0-9]*\).*/\1/p' "$OUT/agent.err" 2>/dev/null)
	[ -n "$mport" ] && break
	sleep 0.1
done
metric() { curl -s "http://127.0.0.1:$mport/metrics" | sed -n "s/^$1 //p"; }

# RSS, and the bounded caches that may legitimately grow towards their bounds
echo "seconds rss_kib symbol_cache_bytes processes_tracked" >"$OUT/rss.txt"
start=$(date +%s)
while [ $(($(date +%s) - start)) -lt "$SECONDS_TOTAL" ]; do
	sleep 10
	echo "$(($(date +%s) - start)) $(awk '/^VmRSS/ { print $2 }' /proc/$agent/status)" \
		"$(metric kiln_symbol_cache_bytes) $(metric kiln_processes_tracked)" >>"$OUT/rss.txt"
done
kill $churn
kill -TERM $agent
wait $agent
kill $recv

early=$((SECONDS_TOTAL / 12 < 300 ? SECONDS_TOTAL / 12 : 300))
read -r rss_early rss_end < <(awk -v e="$early" 'NR > 1 && $1 >= e && !a { a = $2 } NR > 1 { l = $2 } END { print a, l }' "$OUT/rss.txt")
if [ -n "$rss_early" ] && [ "$((rss_end * 100))" -le "$((rss_early * 110))" ]; then
	pass "flat memory: RSS $rss_early KiB at ${early}s, $rss_end KiB at ${SECONDS_TOTAL}s"
else
	fail rss "RSS $rss_early KiB at ${early}s grew to $rss_end KiB at the end; symbol cache $(awk -v e="$early" 'NR > 1 && $1 >= e && !a { a = $3 } NR > 1 { l = $3 } END { print a " -> " l }' "$OUT/rss.txt") bytes ($OUT/rss.txt)"
fi
line=$(grep 'msg="agent: stopped"' "$OUT/agent.err")
profiles=$(sed -n 's/.* profiles=\([0-9]*\).*/\1/p' <<<"$line")
sent=$(sed -n 's/.* sent=\([0-9]*\).*/\1/p' <<<"$line")
if [ -n "$sent" ] && [ "$sent" = "$profiles" ]; then
	pass "no profile lost: $sent of $profiles delivered"
else
	fail delivery "$line"
fi
if grep -q 'level=error' "$OUT/agent.err"; then
	fail errors "$(grep -m1 'level=error' "$OUT/agent.err")"
else
	pass "no error logged"
fi
echo "$passed passed, $failed failed (details in $OUT)"
[ "$failed" = 0 ]
