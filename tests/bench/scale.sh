#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# make bench-scale: what kiln's cost grows with. `kiln record` profiles
# tests/workloads/scale_gen (N distinct call chains over M processes) for
# SCALE_SECONDS at SCALE_HZ, once per point of a grid: N = 1k, 10k, 100k
# with M = 10, and M = 10, 100, 1000 with N = 10k. The generator runs at
# nice 19: at equal priority M spinning processes would starve kiln of CPU
# (a drain then takes as long as the scheduler makes it wait), which hides
# what kiln itself costs. One row per point:
#   drain ms     mean and max wall time of one drain (record drains every
#                10 s: flip the generation, read the ring to its end, consume
#                process events, symbolize, add to profiles)
#   cpu ms/s     kiln's CPU time (user + system) per second recorded, start-up
#                (BTF, kallsyms) and the final write included
#   stacks       distinct stacks in the profile (folded lines; the chains
#                and their prefixes where a sample fell outside the leaf)
#   chains       distinct chains seen (of N)
#   rss MiB      kiln's peak resident memory
#   dropped      samples dropped in BPF (stack map collisions/full, counts
#                map full), and process events lost
# Needs root. Writes tests/bench/results/scale-<date>.json (SCALE_JSON=...).
#   SCALE_SECONDS=10 SCALE_HZ=1000 SCALE_GRID="N:M N:M ..." to change them.
set -u
cd "$(dirname "$0")/../.."

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
SECONDS_=${SCALE_SECONDS:-10}
HZ=${SCALE_HZ:-1000}
GRID=${SCALE_GRID:-"1000:10 10000:10 100000:10 10000:100 10000:1000"}
JSON=${SCALE_JSON:-tests/bench/results/scale-$(date +%Y-%m-%d-%H%M%S).json}
TMP=$(mktemp -d /tmp/kiln-scale.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "scale.sh: needs root (kiln record loads BPF)" >&2; exit 2; }
[ -x "$KILN" ] && [ -x "$WORKLOADS/scale_gen" ] ||
	{ echo "scale.sh: build first: make all workloads" >&2; exit 2; }

printf '%-7s %5s %8s %7s %9s %7s %8s %7s %7s %8s %8s %7s\n' N M samples drains drain_ms max_ms cpu_ms/s stacks chains rss_MiB dropped ev_lost
rows=()
for point in $GRID; do
	n=${point%%:*} m=${point##*:}
	out=$TMP/$n-$m.folded stats=$TMP/$n-$m.json
	if ! "$KILN" record -q -F "$HZ" -o "$out" --stats "$stats" -- \
		nice -n 19 "$WORKLOADS/scale_gen" "$n" "$m" "$SECONDS_" 2>"$TMP/err"; then
		echo "scale.sh: N=$n M=$m: kiln record failed: $(tail -1 "$TMP/err")" >&2
		exit 1
	fi
	row=$(python3 - "$stats" "$out" "$n" "$m" <<'PY'
import json, re, sys
stats, folded, n, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = json.load(open(stats))
stacks = chains = 0
seen = set()
depth = max(1, len(format(n - 1, 'b')) // 2 + len(format(n - 1, 'b')) % 2) if n > 1 else 1
# Only whole chains: a sample in a prologue loses a frame to the unwinder.
chain = re.compile(r';chain;((?:d[0-3];){%d}d[0-3]);leaf ' % (depth - 1))
for line in open(folded):
    if not line.startswith('scale_gen;'):
        continue
    stacks += 1
    mt = chain.search(line)
    if mt:
        seen.add(mt.group(1))
o = s['outcomes']
row = {
    'n': n, 'm': m, 'seconds': s['seconds'], 'frequency': s['frequency'], 'cpus': s['cpus'],
    'samples': s['drained'], 'drains': s['drains'],
    'drain_ms_mean': s['drain_ns_sum'] / max(s['drains'], 1) / 1e6,
    'drain_ms_max': s['drain_ns_max'] / 1e6,
    'stacks': stacks, 'chains_seen': len(seen),
    'rss_mib': s['max_rss_kb'] / 1024,
    'cpu_ms': s['cpu_user_ms'] + s['cpu_sys_ms'],
    'cpu_ms_per_s': (s['cpu_user_ms'] + s['cpu_sys_ms']) / s['seconds'],
    'dropped': o['stack_map_full'] + o['counts_map_full'],
    'dropped_by_reason': {k: o[k] for k in ('stack_map_full', 'counts_map_full')},
    'events_lost': s['events_dropped'], 'processes': s['processes'],
    'symbol_cache_bytes': s['symbol_cache_bytes'],
    'bpf_ns_per_run': s['bpf_run_ns'] / max(s['bpf_run_cnt'], 1),
}
print(json.dumps(row))
PY
	) || exit 1
	rows+=("$row")
	python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%-7d %5d %8d %7d %9.1f %7.1f %8.1f %7d %8d %7.1f %8d %7d" % (r["n"], r["m"], r["samples"], r["drains"], r["drain_ms_mean"], r["drain_ms_max"], r["cpu_ms_per_s"], r["stacks"], r["chains_seen"], r["rss_mib"], r["dropped"], r["events_lost"]))' "$row"
done

mkdir -p "$(dirname "$JSON")"
printf '%s\n' "${rows[@]}" | python3 -c '
import json, os, platform, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
meta = {"kernel": platform.release(), "cpus": os.cpu_count(),
        "kiln": sys.argv[1], "seconds": float(sys.argv[2]), "frequency": int(sys.argv[3]),
        "load": os.getloadavg()}
json.dump({"meta": meta, "rows": rows}, open(sys.argv[4], "w"), indent=1)
' "$("$KILN" version 2>/dev/null | head -1)" "$SECONDS_" "$HZ" "$JSON"
echo "wrote $JSON"
