#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# When kiln record spends its CPU: its threads' run time (schedstat,
# nanoseconds, user and system alike) second by second, under make
# bench's load or on an idle host. make bench gives each profiler's
# CPU for the whole run and its steady state; this shows which seconds
# hold it (start-up, the first drain and its one-time loads, the
# periodic drains, the seconds between them). BPF time is not in it:
# the sampler runs in the interrupted task's context (--stats gives it).
#
#   tests/bench/timeline.sh KILN [SECONDS (32)] [load|idle (load)]
#
# The watcher forks nothing once started (bash builtins, a FIFO as its
# clock; a second's reading is the run time since the last), so kiln
# sees no new process of the instrument's own; the load is
# side_load.sh's. Needs root, make workloads, clang (spin_counter).
# A report: it never fails on a number.
set -u
cd "$(dirname "$0")/../.." || exit 2

K=${1:?usage: timeline.sh KILN [SECONDS] [load|idle]}
S=${2:-32}
MODE=${3:-load}
WORKLOADS=${WORKLOADS:-build/workloads}
TMP=$(mktemp -d /tmp/kiln-timeline.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

. tests/bench/side_load.sh
load_prepare timeline.sh
[ "$MODE" = idle ] || load_start $((S + 4))
mkfifo "$TMP/clock"
exec {clock}<>"$TMP/clock"

# run_ns PID: RUN_NS, the run time of all of PID's threads (0 once it
# ended). (A variable, not output: a command substitution forks.)
run_ns() {
	local f t rest
	RUN_NS=0
	for f in /proc/"$1"/task/*/schedstat; do
		read -r t rest <"$f" 2>/dev/null && RUN_NS=$((RUN_NS + t))
	done
}

"$K" record -q -d "$S" -o "$TMP/k.pb.gz" --stats "$TMP/k.json" 2>"$TMP/err" &
pid=$!
cpu=()
last=0
for ((i = 1; i < S; i++)); do
	read -r -t 1 -u "$clock" _
	run_ns "$pid"
	[ "$RUN_NS" -gt 0 ] || break
	cpu+=($((RUN_NS - last)))
	last=$RUN_NS
done
wait "$pid" || { echo "timeline.sh: kiln record failed: $(tail -1 "$TMP/err")" >&2; exit 2; }
[ "$MODE" = idle ] || load_stop
echo "kiln record's CPU each second, in tenths of a ms (second:cpu), $MODE:"
line=""
first=0
steady=0
for ((j = 0; j < ${#cpu[@]}; j++)); do
	line+="$((j + 1)):$((cpu[j] / 100000)) "
	# past start-up and the first drain (at 2 s): seconds 6 on
	if [ "$j" -lt 5 ]; then first=$((first + cpu[j])); else steady=$((steady + cpu[j])); fi
done
echo "$line"
[ "${#cpu[@]}" -gt 5 ] &&
	echo "first 5 s: $((first / 1000000)) ms; seconds 6 to ${#cpu[@]}:" \
		"$((steady / (${#cpu[@]} - 5) / 1000)) us a second"
exit 0
