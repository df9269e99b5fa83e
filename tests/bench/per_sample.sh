#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# What one sample costs kiln in BPF, against its own frame-pointer path
# and against bpftrace on the same samples: all of these profile the host
# at once, at 97 Hz, ROUNDS times, under make bench's load:
#
#   kiln          kiln record (unwind tables, as shipped)
#   kiln_fp       kiln record --unwind-memory 0 (frame pointers only)
#   bt_count      bpftrace 'profile:hz:97 { @ = count(); }': the floor,
#                 a program that only counts
#   bt_ustack     bpftrace '... { @[ustack] = count(); }'
#   bt_stacks     bpftrace '... { @[kstack, ustack, comm] = count(); }',
#                 the program make bench's bpftrace phase runs
#
# Each runs its own perf events, so each CPU's timer interrupt runs five
# programs that share its caches: every figure is higher than the same
# tool's alone, but they meet the same host, which one after another
# they do not (two runs of one build differed by up to 1.7x). Each round
# prints the five nanosecond figures a sample; the last lines give the
# median of each and of kiln's ratio to each. A report: it never fails
# on a number.
#
#   tests/bench/per_sample.sh KILN [ROUNDS (8)] [SECONDS (10)] [JSON]
#
# JSON, if given, receives the rounds and the medians (make bench writes
# tests/bench/results/per-sample-<date>.json). Needs root, make
# workloads, clang (spin_counter), bpftrace, bpftool.
set -u
cd "$(dirname "$0")/../.."

K=${1:?usage: per_sample.sh KILN [ROUNDS] [SECONDS] [JSON]}
ROUNDS=${2:-8}
S=${3:-10}
JSON=${4:-}
WORKLOADS=${WORKLOADS:-build/workloads}
TMP=$(mktemp -d /tmp/kiln-per-sample.XXXXXX)
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"; rm -rf "$TMP"' EXIT

. tests/bench/side_load.sh
load_prepare per_sample.sh
for t in bpftrace bpftool; do
	command -v "$t" >/dev/null || { echo "per_sample.sh: no $t" >&2; exit 2; }
done
# (bpftrace's programs are counted only with the statistics on)
sysctl -qw kernel.bpf_stats_enabled=1

BT_NAMES=(bt_count bt_ustack bt_stacks)
BT_PROGS=('@ = count();' '@[ustack] = count();' '@[kstack, ustack, comm] = count();')

# bt_prog_id PID: the id of the BPF program bpftrace PID holds, once it
# has loaded it (bpftrace compiles first: up to 20 s under this load).
bt_prog_id() {
	local i id
	for i in $(seq 1 200); do
		id=$(grep -hs '^prog_id:' /proc/"$1"/fdinfo/* | awk '{ print $2; exit }')
		[ -n "$id" ] && { echo "$id"; return 0; }
		sleep 0.1
	done
	return 1
}

for r in $(seq 1 "$ROUNDS"); do
	load_start $((S + 25))
	bts=() ids=()
	for i in "${!BT_PROGS[@]}"; do
		bpftrace -e "profile:hz:97 { ${BT_PROGS[$i]} }" >/dev/null 2>"$TMP/${BT_NAMES[$i]}.err" &
		bts+=("$!")
	done
	for i in "${!bts[@]}"; do
		ids+=("$(bt_prog_id "${bts[$i]}")") ||
			{ echo "per_sample.sh: bpftrace loaded no program: $(tail -1 "$TMP/${BT_NAMES[$i]}.err")" >&2; exit 2; }
	done
	"$K" record -q -d "$S" -o "$TMP/kiln.pb.gz" --stats "$TMP/kiln.json" 2>/dev/null &
	pk=$!
	"$K" record -q -d "$S" --unwind-memory 0 -o "$TMP/kiln_fp.pb.gz" --stats "$TMP/kiln_fp.json" \
		2>/dev/null &
	pf=$!
	wait "$pk" "$pf"
	for i in "${!ids[@]}"; do
		bpftool prog show id "${ids[$i]}" -j >"$TMP/${BT_NAMES[$i]}.json"
	done
	kill -INT "${bts[@]}" 2>/dev/null
	wait "${bts[@]}" 2>/dev/null
	load_stop
	python3 - "$TMP" "$r" >>"$TMP/rounds.jsonl" <<'EOF' || exit 2
import json, sys
d, r = sys.argv[1], int(sys.argv[2])
ns = {}
for name, run, cnt in (("kiln", "bpf_kernel_run_ns", "bpf_run_cnt"),
                       ("kiln_fp", "bpf_kernel_run_ns", "bpf_run_cnt"),
                       ("bt_count", "run_time_ns", "run_cnt"),
                       ("bt_ustack", "run_time_ns", "run_cnt"),
                       ("bt_stacks", "run_time_ns", "run_cnt")):
    s = json.load(open(f"{d}/{name}.json"))
    ns[name] = round(s[run] / s[cnt]) if s.get(cnt) else None
print(f"round {r}: " + ", ".join(f"{k} {v} ns" for k, v in ns.items()), file=sys.stderr)
print(json.dumps({"round": r, "ns_per_sample": ns}))
EOF
done

python3 - "$TMP/rounds.jsonl" "$K" "$S" "$JSON" <<'EOF'
import json, statistics, subprocess, sys, time
rounds = [json.loads(l) for l in open(sys.argv[1])]
names = list(rounds[0]["ns_per_sample"])

def figures(f):
    v = [x for x in map(f, rounds) if x is not None]
    return {"median": round(statistics.median(v), 3), "min": round(min(v), 3),
            "max": round(max(v), 3)} if v else None

def ratio(a, b):
    return lambda r: (r["ns_per_sample"][a] / r["ns_per_sample"][b]
                      if r["ns_per_sample"][a] and r["ns_per_sample"][b] else None)

ns = {n: figures(lambda r, n=n: r["ns_per_sample"][n]) for n in names}
ratios = {f"kiln/{n}": figures(ratio("kiln", n)) for n in names if n != "kiln"}
for n, f in ns.items():
    print(f"{n:10} BPF ns a sample: median {f['median']:.0f} of {len(rounds)} rounds "
          f"({f['min']:.0f}-{f['max']:.0f})")
for n, f in ratios.items():
    print(f"{n:20} median {f['median']:.3f} ({f['min']:.3f}-{f['max']:.3f})")
if sys.argv[4]:
    version = subprocess.run([sys.argv[2], "version"], capture_output=True, text=True).stdout.strip()
    json.dump({"meta": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "kernel": subprocess.run(["uname", "-r"], capture_output=True,
                                                 text=True).stdout.strip(),
                        "kiln": version, "seconds": int(sys.argv[3]), "rounds": len(rounds)},
               "ns_per_sample": ns, "ratios": ratios, "rounds": rounds},
              open(sys.argv[4], "w"), indent=1)
    print(f"wrote {sys.argv[4]}")
EOF
