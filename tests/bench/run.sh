#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# kiln benchmark: kiln record and kiln agent vs perf record (+ perf script),
# frame pointers and DWARF, vs bpftrace.
#
# BENCH_ROUNDS rounds (default 3). Each round runs these phases one after
# another, each for BENCH_SECONDS (default 30) under the same load, in an
# order rotated by one phase per round (so no tool always runs first, or
# right after the same neighbour): baseline (no profiler), kiln record, kiln
# agent (file exporter, stopped with SIGTERM), the agent again with frame
# pointers only (--unwind-memory 0), the agent again with Debian's python3
# and ruby added to the load, perf record -g + perf script,
# perf record --call-graph dwarf + perf script, bpftrace profile:hz:97. After
# the last round a second baseline (noise estimate; BENCH_REPEAT_BASELINE=0
# skips it). The report shows the median of each figure over the rounds and
# the median of each round's ratios.
# Load in every phase: cpu_ratio (one burning thread per CPU, hot_three:hot_one
# = 3:1) for the accuracy check, spin_counter (one thread per CPU, counts
# loop iterations) for throughput, and churn (CHURN_RATE short-lived
# processes a second, each burning CHURN_MS of CPU in short_lived_work).
# Per profiler: CPU s (user+sys of its process tree, /usr/bin/time), peak RSS,
# BPF run time of its programs (BPF stats on for the run, bench_probe, read just
# before it exits), spin_counter throughput vs baseline, time from start to
# first sample, the error of the hot_three share vs the 75% truth, the share
# of frames symbolized, and the short-lived processes' samples against the
# CPU time they used (coverage) and how many of them are fully symbolized.
# A report only: it judges the targets but never fails on a number.
# Prints a markdown table; writes tests/bench/results/<date>.json.
#
# Usage (root): KILN=build/kiln WORKLOADS=build/workloads tests/bench/run.sh
# BENCH_KEEP=1 keeps the work directory (raw profiles, stderr) for a look.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
KILN=$(realpath "${KILN:-build/kiln}")
WORKLOADS=$(realpath "${WORKLOADS:-build/workloads}")
S=${BENCH_SECONDS:-30}
ROUNDS=${BENCH_ROUNDS:-3}
IDLE_WAIT=${BENCH_IDLE_WAIT:-300}
SCRIPT_TIMEOUT=${BENCH_SCRIPT_TIMEOUT:-600}
REPEAT_BASELINE=${BENCH_REPEAT_BASELINE:-1}
PY=/usr/bin/python3
ANALYZE="$PY $HERE/analyze.py"
NCPU=$(nproc)
BPF_HZ=97
CHURN_RATE=${BENCH_CHURN_RATE:-20}
CHURN_MS=${BENCH_CHURN_MS:-20}
# The steady-state window, seconds after the profiler's start: past its
# start-up, and whole 10 s intervals (kiln's drains) when the run is long
# enough; else its middle half.
if [ "$S" -ge 16 ]; then
	STEADY="5 $((5 + (S - 6) / 10 * 10))"
else
	STEADY="$($PY -c "print($S / 4, $S - 1)")"
fi

TMP=""
RD=""  # the current round's directory, $TMP/round<N>
STAMP=""
LOAD_PIDS=""
INTERP_PIDS=""
SPIN_PID=""
CHURN_PID=""
PROBE_PID=""
OLD_BPF_STATS=""
STATS_HOLDER=""
BPF_STATS_HOW=""

log() { echo "bench: $*" >&2; }

cleanup() {
	local p
	for p in $PROBE_PID $CHURN_PID $SPIN_PID $LOAD_PIDS $INTERP_PIDS $STATS_HOLDER; do
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

# The processes taking 10 % of a CPU or more (their average since they
# started), busiest first: "qemu-system-x86 73.2%, ...".
busy_processes() {
	ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 >= 10 { printf "%s%s %s%%", sep, $2, $1; sep = ", " }' |
		head -c 300
}

# Waits up to IDLE_WAIT s for the host to be quiet (the 1-minute load
# average under half the CPUs) before the first phase: the noisiest runs
# began with a load average of 5 and of 24 (a build, or a kernel-matrix
# guest left spinning, docs/kernels.md). Past that it runs anyway, and
# BUSY_START (in the report) names what was busy.
wait_for_idle() {
	local waited=0 load
	BUSY_START=
	while :; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		awk -v l="$load" -v n="$NCPU" 'BEGIN { exit !(l < n / 2) }' && return 0
		[ "$waited" -ge "$IDLE_WAIT" ] && break
		[ "$waited" = 0 ] && log "load average $load: waiting up to $IDLE_WAIT s for a quiet host (busy: $(busy_processes))"
		sleep 10
		waited=$((waited + 10))
	done
	BUSY_START="load average $load after $IDLE_WAIT s; busy: $(busy_processes)"
	log "$BUSY_START: running anyway"
}

setup() {
	if [ "$(id -u)" -ne 0 ]; then
		log "needs root (BPF, perf -a, sysctl): run it with sudo"
		exit 2
	fi
	for tool in "$PY" /usr/bin/time clang bpftool ruby; do
		command -v "$tool" >/dev/null || { log "missing $tool"; exit 2; }
	done

	TMP=$(mktemp -d /tmp/kiln-bench.XXXXXX)
	chmod 755 "$TMP"
	# Private copies: a rebuild of build/ during the run must not change
	# the binaries the profilers symbolize.
	for w in cpu_ratio churn short_lived; do
		[ -x "$WORKLOADS/$w" ] || { log "no $WORKLOADS/$w: make workloads"; exit 2; }
		cp "$WORKLOADS/$w" "$TMP/$w"
	done
	mkdir -p "$(dirname "$WORKLOADS")/bench"
	for tool in spin_counter stamp_exec vm_exit bench_probe; do
		clang -O2 -g -Wall -fno-omit-frame-pointer -pthread \
			-o "$(dirname "$WORKLOADS")/bench/$tool" "$HERE/$tool.c" ||
			{ log "cannot build $tool"; exit 2; }
		cp "$(dirname "$WORKLOADS")/bench/$tool" "$TMP/$tool"
	done
	STAMP="$TMP/stamp_exec"
	VM_EXIT_US=$("$TMP/vm_exit")

	enable_bpf_stats
	wait_for_idle

	local foreign
	foreign=$(bpftool prog show -j 2>/dev/null | $PY -c \
		'import json,sys; print(sum(p.get("type")=="perf_event" for p in json.load(sys.stdin)))')
	cat >"$TMP/meta.json" <<-EOF
	{"date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "kernel": "$(uname -r)",
	 "cpus": $NCPU, "seconds": $S, "hz": $BPF_HZ, "rounds": $ROUNDS,
	 "churn_per_second": $CHURN_RATE, "churn_cpu_ms": $CHURN_MS,
	 "kiln": "$("$KILN" version 2>&1 | head -1)",
	 "perf": "$(perf --version 2>&1 | head -1)",
	 "bpftrace": "$(bpftrace --version 2>&1 | head -1)",
	 "loadavg_start": "$(cut -d' ' -f1-3 /proc/loadavg)",
	 "busy_start": "$BUSY_START",
	 "bpf_stats": "$BPF_STATS_HOW",
	 "vm_exit_us": ${VM_EXIT_US:-null},
	 "foreign_perf_event_progs": ${foreign:-0}}
	EOF
}

# ------------------------------------------------------------------ load

# cpu_ratio starts one thread per CPU itself; it runs well past the phase so
# it is alive when bpftrace symbolizes at exit, and is killed after. With
# LOAD_INTERP=1 (the agent_interp phase), so do Debian's python3 and ruby
# running the unwind suite's CPU-bound scripts: a node's interpreters, whose
# frames kiln reads. Not in the other phases: bpftrace 0.17 cannot print a
# map once its stack map had a collision (thousands of distinct interpreter
# stacks), and fails the run.
start_load() {
	"$TMP/cpu_ratio" $((S + 60)) &
	LOAD_PIDS="$!"
	if [ "${LOAD_INTERP:-0}" = 1 ]; then
		"$PY" "$HERE/../unwind/workloads/cpu.py" 100000 >/dev/null &
		INTERP_PIDS="$!"
		ruby "$HERE/../unwind/workloads/cpu.rb" 100000 >/dev/null &
		INTERP_PIDS="$INTERP_PIDS $!"
	fi
	sleep 1
}

stop_load() {
	local p
	for p in $LOAD_PIDS $INTERP_PIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	LOAD_PIDS="" INTERP_PIDS=""
}

# spin_counter and churn run exactly S seconds from the profiler's start; in
# the background, as does bench_probe ($1: phase dir, $2: profiler comm,
# $3 = watch for BPF profilers), which takes the phase's readings while the
# profiler runs: its first sample ($3), its CPU and BPF time at the two
# steady-state instants, and its BPF programs' stats every 0.25 s from 2 s
# before its end until it has closed them (at most 4 s; each one's last
# reading kept: the agent and bpftrace are killed at S s exactly, and a
# stopping agent closes kiln_sample first). One small C process started
# before the profiler: readers started during the window (Python, bpftool)
# were processes the profiler had to discover, walk and name. It runs in
# every phase, so that its own small CPU cost is the same everywhere.
# Busy CPU ticks of the host (all but idle and iowait) and of cpu_ratio: their
# deltas over the window tell how much CPU other processes on this host took.
# host_busy prints "busy steal" (busy: user nice system irq softirq).
host_busy() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8, $9; exit }' /proc/stat; }
pid_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

start_measuring() {
	echo "$(host_busy) $(pid_ticks "$LOAD_PIDS")" >"$1/ticks0"
	"$TMP/spin_counter" "$S" "$NCPU" >"$1/spin.txt" &
	SPIN_PID=$!
	"$TMP/churn" "$S" "$CHURN_RATE" "$CHURN_MS" "$1/churn.log" >"$1/churn.txt" &
	CHURN_PID=$!
	"$TMP/bench_probe" "$1" $$ "$2" "$S" $STEADY "$([ "${3:-}" = watch ] && echo 1 || echo 0)" &
	PROBE_PID=$!
}

stop_measuring() { # $1: phase dir
	wait "$SPIN_PID" 2>/dev/null
	echo "$(host_busy) $(pid_ticks "$LOAD_PIDS") $(getconf CLK_TCK)" >"$1/ticks1"
	wait "$CHURN_PID" "$PROBE_PID" 2>/dev/null
	SPIN_PID="" CHURN_PID="" PROBE_PID=""
}

fail() { echo "$2" >"$1/failed"; log "$(basename "$1"): failed: $2"; }

# Last meaningful stderr line of a failed tool, for the table.
why() { grep -v '^\s*$' "$1" 2>/dev/null | tail -1 | cut -c1-120; }

# ------------------------------------------------------------------ phases

phase_baseline() { # $1: phase name
	local d="$RD/$1"
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
	start_measuring "$d" kiln watch
	/usr/bin/time -o "$d/time.txt" -f '%U %S %M' "$@" 2>"$d/stderr"
	rc=$?
	stop_measuring "$d"
	stop_load
	if [ $rc -ne 0 ] || ! find "$d" -name "$out" -size +0 | grep -q .; then
		fail "$d" "kiln exited $rc: $(why "$d/stderr")"
	fi
}

phase_kiln() {
	local d="$RD/kiln"
	mkdir -p "$d"
	log "kiln: ${S}s, kiln record"
	run_kiln_phase "$d" kiln.pb.gz \
		"$STAMP" "$d/stamp" "$KILN" record -d "$S" -o "$d/kiln.pb.gz" --stats "$d/kiln.json" -q
}

# The continuous agent with the file exporter. timeout runs under
# /usr/bin/time (a SIGTERM to time would lose its figures) and passes on the
# agent's status, 0 after SIGTERM; the agent then writes its last partial
# interval. A SIGKILL 20 s later if it hangs.
# $1: phase name; the rest: more agent flags.
phase_agent() {
	local name=$1 d="$RD/$1"
	shift
	mkdir -p "$d"
	log "$name: ${S}s, kiln agent --output-dir (files) $*, SIGTERM at the end"
	run_kiln_phase "$d" '*.pb.gz' \
		timeout --preserve-status -s TERM -k 20 "$S" \
		"$STAMP" "$d/stamp" "$KILN" agent --output-dir "$d/profiles" --metrics-addr off --interval 10 "$@"
}

# perf record then perf script. $1: phase name (perf, perf_dwarf); the rest:
# perf record's call-graph options (-g: frame pointers; --call-graph dwarf:
# 8 KiB of user stack copied per sample, unwound by perf script).
# --no-bpf-event: perf 6.1's script failed on the KSYMBOL record of a BPF
# program another process loaded meanwhile ("failed to process type: 17
# [Bad address]", 2 of 6 perf runs on a busy host).
phase_perf() {
	local name=$1 d="$RD/$1" rc
	shift
	mkdir -p "$d"
	log "$name: ${S}s, perf record -F $BPF_HZ -a $* -k CLOCK_MONOTONIC, then perf script"
	command -v perf >/dev/null || { fail "$d" "perf not installed"; return; }
	start_load
	start_measuring "$d" perf
	/usr/bin/time -o "$d/time.txt" -f '%U %S %M' \
		"$STAMP" "$d/stamp" perf record -F "$BPF_HZ" -a "$@" -k CLOCK_MONOTONIC --no-bpf-event \
		-o "$d/perf.data" -- sleep "$S" \
		>/dev/null 2>"$d/stderr"
	rc=$?
	stop_measuring "$d"
	stop_load
	if [ $rc -ne 0 ] || [ ! -s "$d/perf.data" ]; then
		fail "$d" "perf record exited $rc: $(why "$d/stderr")"
		return
	fi
	# --no-inline: perf 6.1 looks inline frames up through an addr2line
	# pipe, which deadlocks on some binaries (seen on every dwarf run of
	# this host); kiln names no inline frames either. timeout: a hang is
	# a failed row, not a stuck bench.
	/usr/bin/time -o "$d/script_time.txt" -f '%U %S %M' \
		timeout -k 10 "$SCRIPT_TIMEOUT" perf script --no-inline -i "$d/perf.data" \
		>"$d/perf.txt" 2>"$d/script_stderr"
	rc=$?
	[ $rc -eq 0 ] || fail "$d" "perf script exited $rc: $(why "$d/script_stderr")"
	rm -f "$d/perf.data" # tens of MB with dwarf; perf.txt is what the report reads
}

phase_bpftrace() {
	local d="$RD/bpftrace" rc
	mkdir -p "$d"
	log "bpftrace: ${S}s, profile:hz:$BPF_HZ { @[kstack, ustack, comm] = count(); }"
	command -v bpftrace >/dev/null || { fail "$d" "bpftrace not installed"; return; }
	start_load
	start_measuring "$d" bpftrace watch
	# timeout sends SIGINT so bpftrace prints its map; its status is 124.
	/usr/bin/time -o "$d/time.txt" -f '%U %S %M' \
		timeout -s INT "$S" "$STAMP" "$d/stamp" bpftrace \
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

run_phase() {
	case $1 in
	baseline) phase_baseline baseline ;;
	kiln) phase_kiln ;;
	agent) phase_agent agent ;;
	agent_fp) phase_agent agent_fp --unwind-memory 0 ;;
	agent_interp) LOAD_INTERP=1 phase_agent agent_interp ;;
	perf) phase_perf perf -g ;;
	perf_dwarf) phase_perf perf_dwarf --call-graph dwarf ;;
	bpftrace) phase_bpftrace ;;
	esac
}

PHASES=(baseline kiln agent agent_fp agent_interp perf perf_dwarf bpftrace)

setup
log "work dir $TMP, $ROUNDS round(s), ${S}s per phase, $NCPU CPUs"
for ((r = 1; r <= ROUNDS; r++)); do
	RD="$TMP/round$r"
	mkdir -p "$RD"
	k=$(((r - 1) % ${#PHASES[@]}))
	order=("${PHASES[@]:k}" "${PHASES[@]:0:k}")
	echo "${order[*]}" >"$RD/order"
	log "round $r of $ROUNDS: ${order[*]}"
	for p in "${order[@]}"; do run_phase "$p"; done
done
[ "$REPEAT_BASELINE" = 1 ] && phase_baseline baseline2

mkdir -p "$HERE/results"
$ANALYZE report "$TMP" "$S" "$HERE/results/$(date +%Y-%m-%d-%H%M%S).json"
