#!/usr/bin/env bash
# kiln benchmark: kiln record and kiln agent vs perf record (+ perf script)
# vs bpftrace.
#
# One after another, each for BENCH_SECONDS (default 30) under the same load:
#   baseline (no profiler), kiln record, kiln agent (file exporter, stopped
#   with SIGTERM), perf record -g + perf script,
#   bpftrace profile:hz:97, and a second baseline (noise estimate;
#   BENCH_REPEAT_BASELINE=0 skips it).
# Load in every phase: cpu_ratio (one burning thread per CPU, hot_three:hot_one
# = 3:1) for the accuracy check, plus spin_counter (one thread per CPU, counts
# loop iterations) for throughput.
# Per profiler: CPU s (user+sys of its process tree, /usr/bin/time), peak RSS,
# BPF run time of its programs (BPF stats on for the run, bpftool, read just
# before it exits), spin_counter throughput vs baseline, and the error of the
# hot_three share vs the 75% truth. A report only: no thresholds.
# Prints a markdown table; writes tests/bench/results/<date>.json.
#
# Usage (root): KILN=build/kiln WORKLOADS=build/workloads tests/bench/run.sh
# BENCH_KEEP=1 keeps the work directory (raw profiles, stderr) for a look.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
KILN=$(realpath "${KILN:-build/kiln}")
WORKLOADS=$(realpath "${WORKLOADS:-build/workloads}")
S=${BENCH_SECONDS:-30}
REPEAT_BASELINE=${BENCH_REPEAT_BASELINE:-1}
PY=/usr/bin/python3
ANALYZE="$PY $HERE/analyze.py"
NCPU=$(nproc)
BPF_HZ=97

TMP=""
LOAD_PIDS=""
SPIN_PID=""
PROBE_PID=""
OLD_BPF_STATS=""
STATS_HOLDER=""
BPF_STATS_HOW=""

log() { echo "bench: $*" >&2; }

cleanup() {
	local p
	for p in $PROBE_PID $SPIN_PID $LOAD_PIDS $STATS_HOLDER; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "$OLD_BPF_STATS" ]; then
		sysctl -q -w kernel.bpf_stats_enabled="$OLD_BPF_STATS" >/dev/null
	fi
	if [ -n "$TMP" ]; then
		if [ "${BENCH_KEEP:-0}" = 1 ]; then log "kept $TMP"; else rm -rf "$TMP"; fi
	fi
}
trap cleanup EXIT
trap 'log interrupted; exit 130' INT TERM

# ------------------------------------------------------------------ setup

# BPF run-time stats for the whole run. Preferred: hold a BPF_ENABLE_STATS fd
# (analyze.py hold-stats): refcounted by the kernel, immune to other scripts
# (e.g. tests/e2e) flipping kernel.bpf_stats_enabled meanwhile, and gone when
# the holder dies. Fallback: the sysctl, restored on exit.
enable_bpf_stats() {
	local state
	coproc STATS { exec $ANALYZE hold-stats; }
	STATS_HOLDER=$STATS_PID
	read -r state <&"${STATS[0]}"
	if [ "$state" = on ]; then
		BPF_STATS_HOW="BPF_ENABLE_STATS fd"
		return
	fi
	log "BPF_ENABLE_STATS: ${state:-no answer}; using kernel.bpf_stats_enabled"
	OLD_BPF_STATS=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null
	BPF_STATS_HOW="sysctl kernel.bpf_stats_enabled=1"
}

setup() {
	if [ "$(id -u)" -ne 0 ]; then
		log "needs root (BPF, perf -a, sysctl): run it with sudo"
		exit 2
	fi
	for tool in "$PY" /usr/bin/time clang bpftool; do
		command -v "$tool" >/dev/null || { log "missing $tool"; exit 2; }
	done
	[ -x "$WORKLOADS/cpu_ratio" ] || { log "no $WORKLOADS/cpu_ratio: make workloads"; exit 2; }

	TMP=$(mktemp -d /tmp/kiln-bench.XXXXXX)
	chmod 755 "$TMP"
	# Private copies: a rebuild of build/ during the run must not change
	# the binaries the profilers symbolize.
	cp "$WORKLOADS/cpu_ratio" "$TMP/cpu_ratio"
	mkdir -p "$(dirname "$WORKLOADS")/bench"
	clang -O2 -g -Wall -fno-omit-frame-pointer -pthread \
		-o "$(dirname "$WORKLOADS")/bench/spin_counter" "$HERE/spin_counter.c" ||
		{ log "cannot build spin_counter"; exit 2; }
	cp "$(dirname "$WORKLOADS")/bench/spin_counter" "$TMP/spin_counter"

	enable_bpf_stats

	local foreign
	foreign=$(bpftool prog show -j 2>/dev/null | $PY -c \
		'import json,sys; print(sum(p.get("type")=="perf_event" for p in json.load(sys.stdin)))')
	cat >"$TMP/meta.json" <<-EOF
	{"date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "kernel": "$(uname -r)",
	 "cpus": $NCPU, "seconds": $S, "hz": $BPF_HZ,
	 "kiln": "$("$KILN" version 2>&1 | head -1)",
	 "perf": "$(perf --version 2>&1 | head -1)",
	 "bpftrace": "$(bpftrace --version 2>&1 | head -1)",
	 "loadavg_start": "$(cut -d' ' -f1-3 /proc/loadavg)",
	 "bpf_stats": "$BPF_STATS_HOW",
	 "foreign_perf_event_progs": ${foreign:-0}}
	EOF
}

# ------------------------------------------------------------------ load

# cpu_ratio starts one thread per CPU itself; it runs well past the phase so
# it is alive when bpftrace symbolizes at exit, and is killed after.
start_load() {
	"$TMP/cpu_ratio" $((S + 60)) &
	LOAD_PIDS="$!"
	sleep 1
}

stop_load() {
	local p
	for p in $LOAD_PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	LOAD_PIDS=""
}

# spin_counter runs exactly S seconds from the profiler's start; in the
# background, as is the BPF probe ($1: phase dir, $2: profiler comm), which
# reads the profiler's BPF program stats 0.5 s before its end. The probe runs
# in every phase (finding nothing without a BPF profiler) so that its own
# small CPU cost is the same everywhere.
# Busy CPU ticks of the host (all but idle and iowait) and of cpu_ratio: their
# deltas over the window tell how much CPU other processes on this host took.
# host_busy prints "busy steal" (busy: user nice system irq softirq).
host_busy() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8, $9; exit }' /proc/stat; }
pid_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

start_measuring() {
	echo "$(host_busy) $(pid_ticks "$LOAD_PIDS")" >"$1/ticks0"
	"$TMP/spin_counter" "$S" "$NCPU" >"$1/spin.txt" &
	SPIN_PID=$!
	(sleep "$($PY -c "print(max($S - 0.5, 0.5))")" &&
		$ANALYZE bpfstats $$ "$2" "$1/bpf.json") &
	PROBE_PID=$!
}

stop_measuring() { # $1: phase dir
	wait "$SPIN_PID" 2>/dev/null
	echo "$(host_busy) $(pid_ticks "$LOAD_PIDS") $(getconf CLK_TCK)" >"$1/ticks1"
	wait "$PROBE_PID" 2>/dev/null
	SPIN_PID="" PROBE_PID=""
}

fail() { echo "$2" >"$1/failed"; log "$(basename "$1"): failed: $2"; }

# Last meaningful stderr line of a failed tool, for the table.
why() { grep -v '^\s*$' "$1" 2>/dev/null | tail -1 | cut -c1-120; }

# ------------------------------------------------------------------ phases

phase_baseline() { # $1: phase name
	local d="$TMP/$1"
	mkdir -p "$d"
	log "$1: ${S}s, no profiler"
	start_load
	start_measuring "$d" none
	stop_measuring "$d"
	stop_load
}

# Runs one kiln command ($3...) for S s under /usr/bin/time, with the load and
# the probes. $1: phase dir; $2: name of the profile file(s) it must write
# there (a find -name pattern).
run_kiln_phase() {
	local d=$1 out=$2 rc
	shift 2
	[ -x "$KILN" ] || { fail "$d" "no kiln binary at $KILN"; return; }
	start_load
	start_measuring "$d" kiln
	/usr/bin/time -o "$d/time.txt" -f '%U %S %M' "$@" 2>"$d/stderr"
	rc=$?
	stop_measuring "$d"
	stop_load
	if [ $rc -ne 0 ] || ! find "$d" -name "$out" -size +0 | grep -q .; then
		fail "$d" "kiln exited $rc: $(why "$d/stderr")"
	fi
}

phase_kiln() {
	local d="$TMP/kiln"
	mkdir -p "$d"
	log "kiln: ${S}s, kiln record"
	run_kiln_phase "$d" kiln.pb.gz \
		"$KILN" record -d "$S" -o "$d/kiln.pb.gz" --stats "$d/kiln.json" -q
}

# The continuous agent with the file exporter. timeout runs under
# /usr/bin/time (a SIGTERM to time would lose its figures) and passes on the
# agent's status, 0 after SIGTERM; the agent then writes its last partial
# interval. A SIGKILL 20 s later if it hangs.
phase_agent() {
	local d="$TMP/agent"
	mkdir -p "$d"
	log "agent: ${S}s, kiln agent --output-dir (files), SIGTERM at the end"
	run_kiln_phase "$d" '*.pb.gz' \
		timeout --preserve-status -s TERM -k 20 "$S" \
		"$KILN" agent --output-dir "$d/profiles" --metrics-addr off --interval 10
}

phase_perf() {
	local d="$TMP/perf" rc
	mkdir -p "$d"
	log "perf: ${S}s, perf record -F $BPF_HZ -a -g, then perf script"
	command -v perf >/dev/null || { fail "$d" "perf not installed"; return; }
	start_load
	start_measuring "$d" perf
	/usr/bin/time -o "$d/time.txt" -f '%U %S %M' \
		perf record -F "$BPF_HZ" -a -g -o "$d/perf.data" -- sleep "$S" \
		>/dev/null 2>"$d/stderr"
	rc=$?
	stop_measuring "$d"
	stop_load
	if [ $rc -ne 0 ] || [ ! -s "$d/perf.data" ]; then
		fail "$d" "perf record exited $rc: $(why "$d/stderr")"
		return
	fi
	/usr/bin/time -o "$d/script_time.txt" -f '%U %S %M' \
		perf script -i "$d/perf.data" >"$d/perf.txt" 2>"$d/script_stderr"
	rc=$?
	[ $rc -eq 0 ] || fail "$d" "perf script exited $rc: $(why "$d/script_stderr")"
}

phase_bpftrace() {
	local d="$TMP/bpftrace" rc
	mkdir -p "$d"
	log "bpftrace: ${S}s, profile:hz:$BPF_HZ { @[kstack, ustack, comm] = count(); }"
	command -v bpftrace >/dev/null || { fail "$d" "bpftrace not installed"; return; }
	start_load
	start_measuring "$d" bpftrace
	# timeout sends SIGINT so bpftrace prints its map; its status is 124.
	/usr/bin/time -o "$d/time.txt" -f '%U %S %M' \
		timeout -s INT "$S" bpftrace \
		-e "profile:hz:$BPF_HZ { @[kstack, ustack, comm] = count(); }" \
		>"$d/bpftrace.txt" 2>"$d/stderr"
	rc=$?
	stop_measuring "$d"
	stop_load
	if ! grep -q '^@\[' "$d/bpftrace.txt" 2>/dev/null; then
		fail "$d" "bpftrace exited $rc, no map printed: $(why "$d/stderr")"
	fi
}

# ------------------------------------------------------------------ main

setup
log "work dir $TMP, ${S}s per phase, $NCPU CPUs"
phase_baseline baseline
phase_kiln
phase_agent
phase_perf
phase_bpftrace
[ "$REPEAT_BASELINE" = 1 ] && phase_baseline baseline2

mkdir -p "$HERE/results"
$ANALYZE report "$TMP" "$S" "$HERE/results/$(date +%Y-%m-%d-%H%M%S).json"
