# SPDX-License-Identifier: BSD-2-Clause
# make bench's load for the scripts that run profilers at once
# (side_by_side.sh, per_sample.sh): cpu_ratio, spin_counter (one thread
# a CPU) and 20 short-lived processes a second. Sourced; needs TMP and
# WORKLOADS set, and root.

# load_prepare NAME: checks root and the workloads, builds spin_counter.
load_prepare() {
	[ "$(id -u)" -eq 0 ] || { echo "$1: needs root" >&2; exit 2; }
	for w in cpu_ratio churn short_lived; do
		[ -x "$WORKLOADS/$w" ] || { echo "$1: no $WORKLOADS/$w: make workloads" >&2; exit 2; }
	done
	clang -O2 -g -fno-omit-frame-pointer -pthread -o "$TMP/spin_counter" tests/bench/spin_counter.c ||
		exit 2
}

# load_start S: the load for at most S seconds (cpu_ratio a little
# longer, so it outlives the profilers started after this).
load_start() {
	"$WORKLOADS/cpu_ratio" $(($1 + 5)) >/dev/null &
	LOAD_CPU=$!
	sleep 1
	"$TMP/spin_counter" "$1" "$(nproc)" >/dev/null &
	LOAD_PIDS="$!"
	"$WORKLOADS/churn" "$1" 20 20 "$TMP/churn.log" >/dev/null &
	LOAD_PIDS="$LOAD_PIDS $!"
}

# load_stop: stops the load (once the profilers are done) and waits for it.
load_stop() {
	# shellcheck disable=SC2086
	kill $LOAD_PIDS "$LOAD_CPU" 2>/dev/null
	# shellcheck disable=SC2086
	wait $LOAD_PIDS "$LOAD_CPU" 2>/dev/null
}

# median WHAT: the median, least and most of the numbers on stdin, one
# line ("WHAT: median M of N rounds (LO-HI)").
median() {
	sort -n | awk -v what="$1" '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
		printf "%s: median %.3f of %d rounds (%.3f-%.3f)\n", what, m, NR, v[1], v[NR] }'
}
