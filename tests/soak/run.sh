#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Soak: `kiln agent` pushing to the local receiver for SOAK_SECONDS (default
# 3600, at least 300) while short-lived processes churn (a burst every
# second, each a new pid and a new program image), through a token rotation
# and an outage of the receiver:
#   - the receiver demands a bearer token, which the agent reads from
#     --bearer-token-file. At 1/3 of the run the server wants a new token;
#     the file gets it ROTATION_LAG_S (15 s, more than one 10 s interval)
#     later, so at least one push is refused (401) and the agent has to
#     re-read the file after a 401 to recover.
#   - at 1/2 of the run the receiver is killed (SIGKILL) and, after
#     max(60 s, SOAK_SECONDS/12), started again on the same port, appending
#     to the same log; the agent queues meanwhile.
# The agent's RSS, symbol cache and process table are logged every 10 s to
# rss.txt. Then tests/soak/check.py judges: flat memory, no lost profile,
# no warn/error logged but the outage's and the rotation's, the rotation
# and the outage really happened and were got over. One PASS/FAIL line per
# check, "N passed, N failed", exit 1 on failure. Everything stays in
# SOAK_OUT (default a new /tmp/kiln-soak.XXXXXX). SOAK_AGENT_ARGS adds
# agent flags (e.g. a tiny --queue-max-bytes, to watch the checks fail).
# Needs root.
set -u

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
SECONDS_TOTAL=${SOAK_SECONDS:-3600}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
OUT=${SOAK_OUT:-$(mktemp -d /tmp/kiln-soak.XXXXXX)}
ROTATION_LAG_S=15

if [ "$SECONDS_TOTAL" -lt 300 ]; then
	echo "SOAK_SECONDS=$SECONDS_TOTAL: at least 300, for a rotation and an outage apart"; exit 2
fi
mkdir -p "$OUT"
chmod 700 "$OUT"                        # the tokens live here
rotate_at=$((SECONDS_TOTAL / 3))
outage_at=$((SECONDS_TOTAL / 2))
outage_len=$((SECONDS_TOTAL / 12 > 60 ? SECONDS_TOTAL / 12 : 60))
early=$((SECONDS_TOTAL / 12 < 300 ? SECONDS_TOTAL / 12 : 300))

event() { echo "$(date +%s.%3N) $*" >>"$OUT/events.txt"; }

# make_token N: a fresh secret in token.N
make_token() { echo "soak-$1-$RANDOM$RANDOM$RANDOM" >"$OUT/token.$1"; }
# install_token N: token.N becomes the agent's file (renamed into place, as
# a mounted secret is updated)
install_token() {
	cp "$OUT/token.$1" "$OUT/token.tmp"
	mv "$OUT/token.tmp" "$OUT/token"
}

# start_receiver PORT TOKEN: (re)starts it on PORT (0: any), appending to
# receiver.jsonl; sets recv and rport, or fails when it does not listen
start_receiver() {
	rm -f "$OUT/port"
	TMPDIR=$OUT $PY "$HERE/../receiver/receiver.py" --port "$1" --port-file "$OUT/port" \
		--log "$OUT/receiver.jsonl" --max-stacks 0 --max-function-names 0 \
		--require-auth "Bearer $2" >>"$OUT/receiver.out" 2>&1 &
	recv=$!
	for _ in $(seq 100); do [ -s "$OUT/port" ] && break; sleep 0.1; done
	rport=$(cat "$OUT/port" 2>/dev/null)
	[ -n "$rport" ]
}

echo "soak: ${SECONDS_TOTAL}s, token rotation at ${rotate_at}s, receiver down from ${outage_at}s for ${outage_len}s; output in $OUT"
: >"$OUT/events.txt"
make_token 1
install_token 1
start_receiver 0 "$(cat "$OUT/token.1")" || { echo "the receiver did not start ($OUT/receiver.out)"; exit 1; }
# shellcheck disable=SC2086 # SOAK_AGENT_ARGS: words on purpose
"$KILN" agent --server "http://127.0.0.1:$rport" --bearer-token-file "$OUT/token" --allow-insecure-credentials \
	--metrics-addr 127.0.0.1:0 --shutdown-timeout 30 ${SOAK_AGENT_ARGS:-} 2>"$OUT/agent.err" &
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

# RSS, and the bounded caches that may legitimately grow towards their
# bounds, every 10 s; the rotation and the outage when their time comes
echo "seconds rss_kib symbol_cache_bytes processes_tracked" >"$OUT/rss.txt"
start=$(date +%s)
event start
event early "$early"
next_rss=10
phase=0
while :; do
	now=$(($(date +%s) - start))
	[ "$now" -ge "$SECONDS_TOTAL" ] && break
	if [ $phase = 0 ] && [ "$now" -ge "$rotate_at" ]; then
		# events open their windows before the action, and close them after
		make_token 2
		event rotate_server
		curl -s -o /dev/null -X POST "http://127.0.0.1:$rport/_control" \
			--data "{\"require_auth\":{\"bearer\":\"$(cat "$OUT/token.2")\"}}"
		phase=1
	elif [ $phase = 1 ] && [ "$now" -ge $((rotate_at + ROTATION_LAG_S)) ]; then
		install_token 2
		event rotate_file
		phase=2
	elif [ $phase = 2 ] && [ "$now" -ge "$outage_at" ]; then
		event outage_start
		kill -KILL "$recv"
		wait "$recv" 2>/dev/null
		phase=3
	elif [ $phase = 3 ] && [ "$now" -ge $((outage_at + outage_len)) ]; then
		start_receiver "$rport" "$(cat "$OUT/token.2")" ||
			echo "the receiver did not start again on port $rport ($OUT/receiver.out)"
		event outage_end
		phase=4
	fi
	if [ "$now" -ge "$next_rss" ]; then
		echo "$now $(awk '/^VmRSS/ { print $2 }' /proc/$agent/status)" \
			"$(metric kiln_symbol_cache_bytes) $(metric kiln_processes_tracked)" >>"$OUT/rss.txt"
		next_rss=$((next_rss + 10))
	fi
	sleep 1
done
kill $churn
kill -TERM $agent
wait $agent
event agent_exit $?
event stop
kill $recv
wait $recv 2>/dev/null

$PY "$HERE/check.py" "$OUT"
