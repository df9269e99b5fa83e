# SPDX-License-Identifier: BSD-2-Clause
# Running `kiln agent` in a test, for the scripts that do (tests/e2e/agent.sh,
# tests/e2e/attacks.sh): the agent in the background with its metrics on a
# free port, tests/receiver/receiver.py as its push server, reading
# /metrics and the receiver's log. Source it after tests/lib.sh, with KILN
# and TMP (a scratch directory) set; it sets PY, GUARD, RECEIVER and
# LOGCHECK where the caller did not.
#
#   start_receiver NAME             receiver log in $TMP/NAME.jsonl; RPORT
#   start_agent NAME ARGS...        stderr in $TMP/NAME.err; MPORT, AGENT_PID
#   wait_metric REGEX / metric REGEX
#   await NAME EXPR                 until the receiver's log satisfies EXPR
#   stop_agent; exit_problem NAME   empty when the run was clean
#   start_workload CMD...; stop_workloads

AGENT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PY:-/usr/bin/python3}              # Debian's, with python3-protobuf
GUARD=${GUARD:-90}                      # seconds: a hang guard, never a measure
RECEIVER=${RECEIVER:-$AGENT_LIB_DIR/../receiver/receiver.py}
LOGCHECK=${LOGCHECK:-$AGENT_LIB_DIR/../receiver/logcheck.py}
RECV_PID=
AGENT_PID=
AGENT_STATUS=
WL_PIDS=

free_port() {
	$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_receiver NAME [PORT] [ARGS...]: receiver on PORT (default: free),
# log in $TMP/NAME.jsonl; sets RPORT and RECV_PID.
start_receiver() {
	local name=$1 port=${2:-0}
	shift 2 2>/dev/null || shift
	rm -f "$TMP/$name.port"
	$PY "$RECEIVER" --port "$port" --port-file "$TMP/$name.port" --log "$TMP/$name.jsonl" \
		"$@" >"$TMP/$name.recv.out" 2>&1 &
	RECV_PID=$!
	wait_until 10 test -s "$TMP/$name.port"
	RPORT=$(cat "$TMP/$name.port" 2>/dev/null)
}

stop_receiver() {
	[ -n "$RECV_PID" ] && kill "$RECV_PID" 2>/dev/null && wait "$RECV_PID" 2>/dev/null
	RECV_PID=
}

# start_agent NAME ARGS...: agent in the background, stderr in $TMP/NAME.err;
# started through the command of the array AGENT_WRAP when it is set (one
# that ends by exec'ing its arguments, so that AGENT_PID is the agent's).
start_agent() {
	local name=$1
	shift
	MPORT=$(free_port)
	${AGENT_WRAP[@]+"${AGENT_WRAP[@]}"} "$KILN" agent --metrics-addr "127.0.0.1:$MPORT" --log-level info "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	AGENT_PID=$!
}

# stop_agent: SIGTERM, wait; the exit status lands in AGENT_STATUS.
stop_agent() {
	kill -TERM "$AGENT_PID" 2>/dev/null
	wait "$AGENT_PID"
	AGENT_STATUS=$?
	AGENT_PID=
}

# exit_problem NAME: says why the agent's run was not clean (exit status
# not 0, or no "stopped" line accounting for its samples); empty when clean.
exit_problem() {
	if [ "$AGENT_STATUS" != 0 ]; then
		echo "agent exit status $AGENT_STATUS: $(grep -m1 'level=error' "$TMP/$1.err")"
	elif ! grep -q 'msg="agent: stopped"' "$TMP/$1.err"; then
		echo "no 'agent: stopped' line"
	fi
}

# http_code PORT PATH [SOURCE]: the status of a fresh GET (000: none).
http_code() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 10 ${3:+--interface "$3"} \
		"http://127.0.0.1:$1$2"
}
answers_200() { [ "$(http_code "$@")" = 200 ]; }

check() { $PY "$LOGCHECK" "$TMP/$1.jsonl" "$2" 2>>"$TMP/$1.check"; }
value() { $PY "$LOGCHECK" "$TMP/$1.jsonl" "$2" --print 2>/dev/null; }
# await NAME EXPR: until the receiver's log satisfies EXPR (logcheck names).
await() { wait_until "$GUARD" check "$1" "$2"; }

metric() {   # metric REGEX: the value of the first /metrics line matching
	curl -s "http://127.0.0.1:$MPORT/metrics" 2>/dev/null | grep -E "$1" | head -1 |
		awk '{ print $NF }'
}
has_metric() { curl -s "http://127.0.0.1:$MPORT/metrics" 2>/dev/null | grep -Eq "$1"; }
wait_metric() { wait_until "$GUARD" has_metric "$1"; }   # wait_metric REGEX

# The workloads this run started, by pid: a pattern (pkill -f) would also
# kill another test run's workloads on the same host. start_workload
# CMD...: CMD in the background, output discarded; its pid in WL_PID.
start_workload() {
	"$@" >/dev/null 2>&1 &
	WL_PID=$!
	WL_PIDS="$WL_PIDS $WL_PID"
}
stop_workloads() {
	[ -n "$WL_PIDS" ] && kill $WL_PIDS 2>/dev/null && wait $WL_PIDS 2>/dev/null
	WL_PIDS=
}
