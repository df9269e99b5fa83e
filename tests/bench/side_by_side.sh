#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Two kiln builds' BPF time a sample, side by side: both `kiln record`
# at once, ROUNDS times, under make bench's load (cpu_ratio, spin_counter,
# churn of short-lived processes). Run one after another, two runs of the
# same build differed by up to 1.7x on the test machine (the host's speed
# drifts); at once, both see the same host, and the ratio of their BPF
# nanoseconds a sample is what the change did. Each round prints both
# figures and B/A; the last line the median ratio. A report: it never
# fails on a number.
#
#   tests/bench/side_by_side.sh KILN_A KILN_B [ROUNDS (8)] [SECONDS (10)]
#
# Needs root, make workloads, clang (spin_counter). The two programs'
# timers are not in phase, so one may find lines the other warmed: a
# single round swings by 10-30 % (the same build against itself: 0.99,
# 1.11, 1.00), and the median of 8 moved by 0.1 between two runs an hour
# apart: a change below ~10 % needs several runs.
set -u
cd "$(dirname "$0")/../.."

A=${1:?usage: side_by_side.sh KILN_A KILN_B [ROUNDS] [SECONDS]}
B=${2:?usage: side_by_side.sh KILN_A KILN_B [ROUNDS] [SECONDS]}
ROUNDS=${3:-8}
S=${4:-10}
WORKLOADS=${WORKLOADS:-build/workloads}
TMP=$(mktemp -d /tmp/kiln-sbs.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

. tests/bench/side_load.sh
load_prepare side_by_side.sh

ratios=()
for r in $(seq 1 "$ROUNDS"); do
	load_start "$S"
	"$A" record -q -d "$S" -o "$TMP/a.pb.gz" --stats "$TMP/a.json" 2>/dev/null &
	pa=$!
	"$B" record -q -d "$S" -o "$TMP/b.pb.gz" --stats "$TMP/b.json" 2>/dev/null &
	pb=$!
	wait "$pa" "$pb"
	load_stop
	ratio=$(python3 - "$TMP/a.json" "$TMP/b.json" "$r" <<'EOF'
import json, sys
ns = []
for f in sys.argv[1:3]:
    s = json.load(open(f))
    ns.append(s["bpf_run_ns"] / max(s["bpf_run_cnt"], 1))
print(f"round {sys.argv[3]}: A {ns[0]:.0f} ns a sample, B {ns[1]:.0f}, B/A {ns[1] / ns[0]:.3f}",
      file=sys.stderr)
print(f"{ns[1] / ns[0]:.3f}")
EOF
	) || exit 2
	ratios+=("$ratio")
done
printf '%s\n' "${ratios[@]}" | median "B/A, BPF ns a sample"
