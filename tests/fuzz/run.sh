#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The fuzz targets of tests/fuzz/, two ways:
#
#   run.sh replay OUT TARGET...          OUT/fuzz-replay/TARGET on every file of
#                                        tests/fuzz/corpus/TARGET/ (make test)
#   run.sh fuzz OUT SECONDS TARGET...    OUT/fuzz/TARGET (libFuzzer) for SECONDS
#                                        each (make fuzz)
#
# Fuzzing starts from the committed seeds and from OUT/corpus/TARGET/, where
# libFuzzer keeps what it found (so a second run goes on from there); the
# committed corpus is never written. A crash, leak, timeout or failed check
# leaves its input in OUT/artifacts/TARGET/ and fails the run; the summary
# prints one row per target: executions, seconds, corpus, coverage, result.
set -u
cd "$(dirname "$0")/../.."

mode=${1:?usage: run.sh replay OUT TARGET... | fuzz OUT SECONDS TARGET...}
out=${2:?OUT}
shift 2
seconds=0
if [ "$mode" = fuzz ]; then
	seconds=${1:?SECONDS}
	shift
fi
[ $# -gt 0 ] || { echo "run.sh: no targets" >&2; exit 2; }

# Per target: libFuzzer's -max_len (default: the largest seed, at least 4096).
max_len() {
	case $1 in
	elf_symtab) echo 65536 ;;
	perf_map) echo 81920 ;;  # past the reader's 64 KiB buffer: a line longer than it
	pprof_read) echo 32768 ;;
	kube_watch|pods) echo 16384 ;;
	*) echo 8192 ;;
	esac
}

failed=0
case $mode in
replay)
	mkdir -p "$out/fuzz-replay"
	for t in "$@"; do
		log=$out/fuzz-replay/$t.log
		n=$(find "tests/fuzz/corpus/$t" -type f 2>/dev/null | wc -l)
		if [ "$n" = 0 ]; then
			# a replay of nothing proves nothing
			printf 'FAIL fuzz replay %-12s no input in tests/fuzz/corpus/%s/\n' "$t" "$t"
			failed=$((failed + 1))
		elif "$out/fuzz-replay/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
			printf 'PASS fuzz replay %-12s %s\n' "$t" "$(tail -1 "$log")"
		else
			printf 'FAIL fuzz replay %-12s (exit %d); the input and the report:\n' "$t" $?
			grep -v '^tests/fuzz/corpus/' "$log" | tail -40
			grep '^tests/fuzz/corpus/' "$log" | tail -1
			failed=$((failed + 1))
		fi
	done
	echo "$(($# - failed)) passed, $failed failed, 0 skipped"
	;;
fuzz)
	printf '%-12s %12s %8s %9s %8s %7s  %s\n' target execs seconds exec/s corpus cov result
	for t in "$@"; do
		work=$out/corpus/$t art=$out/artifacts/$t/ log=$out/fuzz-$t.log
		mkdir -p "$work" "$art"
		dict=()
		[ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
		start=$(date +%s)
		"$out/fuzz/$t" "$work" "tests/fuzz/corpus/$t" "${dict[@]}" \
			-max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 \
			-rss_limit_mb=2048 -close_fd_mask=2 -print_final_stats=1 \
			-artifact_prefix="$art" >"$log" 2>&1
		rc=$?
		took=$(($(date +%s) - start))
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
		cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
		corp=$(find "$work" -type f | wc -l)
		if [ $rc -eq 0 ]; then
			result=ok
		else
			result="FAILED: $(grep -m1 -oE 'ERROR: [A-Za-z]+: [^ ]+( [^ ]+)?|check failed: .*|deadly signal|Timeout|out-of-memory' "$log" | head -1); $(ls -t "$art" 2>/dev/null | head -1)"
			failed=$((failed + 1))
		fi
		printf '%-12s %12s %8s %9s %8s %7s  %s\n' "$t" "${execs:-?}" "$took" "${rate:-?}" \
			"$corp" "${cov:-?}" "$result"
	done
	[ $failed -eq 0 ] || echo "crash inputs and reports: $out/artifacts/, $out/fuzz-<target>.log"
	;;
*)
	echo "run.sh: unknown mode '$mode'" >&2
	exit 2
	;;
esac
[ $failed -eq 0 ]
