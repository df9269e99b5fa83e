#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# make valgrind: `kiln record` of the whole host for VALGRIND_SECONDS
# (default 30) under valgrind memcheck. Fails unless kiln exits 0, writes
# its profile, valgrind reports no error (invalid reads and writes, uses of
# uninitialised values, bad frees, ...) and "definitely lost: 0 bytes".
#
# BPF works under valgrind: the program loads, the perf events fire and the
# maps drain. What valgrind cannot follow is documented in
# tests/valgrind/bpf.supp: its model of bpf(2) checks attr fields past the
# size libbpf passes (false positives, suppressed there), and it does not
# know the batch commands (LOOKUP_AND_DELETE_BATCH: "unhandled eBPF command
# 25"), so it cannot mark the keys and values the kernel writes as defined;
# kiln's batch buffers come from calloc, so values the kernel did not
# write would read as zeros, not as errors. --trace-children=no: record
# of the whole host starts no child.
set -u
cd "$(dirname "$0")/../.."

KILN=${KILN:-build/kiln}
SECS=${VALGRIND_SECONDS:-30}
OUT_DIR=${OUT_DIR:-build/valgrind}
mkdir -p "$OUT_DIR"
log=$OUT_DIR/memcheck.log

[ "$(id -u)" -eq 0 ] || { echo "valgrind: needs root (kiln record loads BPF)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind: not installed (make valgrind installs it)" >&2; exit 2; }

rm -f "$OUT_DIR/host.pb.gz"
start=$(date +%s)
valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite --track-origins=yes --trace-children=no \
	--suppressions=tests/valgrind/bpf.supp --log-file="$log" \
	"$KILN" record -q -d "$SECS" -o "$OUT_DIR/host.pb.gz" 2>"$OUT_DIR/kiln.err"
rc=$?
took=$(($(date +%s) - start))

errors_of() {   # the report's error paragraphs (not its header and summaries)
	awk '/^==[0-9]+== $/ {
		if (b != "" && b !~ /Memcheck, a memory|HEAP SUMMARY|LEAK SUMMARY|ERROR SUMMARY|All heap blocks|For lists of|Use --track/)
			printf "%s", b
		b = ""; next
	} { b = b $0 "\n" }' "$1"
}
field() {       # field LABEL: the byte count of a LEAK SUMMARY line, 0 when absent
	local v
	v=$(sed -n "s/.*$1: *\([0-9,]*\) bytes.*/\1/p" "$log" | tail -1 | tr -d ,)
	echo "${v:-0}"
}
definite=$(field "definitely lost")
indirect=$(field "indirectly lost")
possible=$(field "possibly lost")
reachable=$(field "still reachable")
errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*suppressed: \([0-9,]*\).*/\1/p' "$log" | tail -1 | tr -d ,)
suppressed=$(sed -n 's/.*ERROR SUMMARY: .*suppressed: \([0-9,]*\) from.*/\1/p' "$log" | tail -1 | tr -d ,)
heap=$(sed -n 's/.*total heap usage: \(.*\)$/\1/p' "$log" | tail -1)
samples=$(sed -n 's/^kiln: .* \([0-9]*\) samples, \([0-9]*\) processes$/\1 samples, \2 processes/p' \
	"$OUT_DIR/kiln.err" | head -1)

echo "valgrind memcheck: kiln record -d $SECS of the whole host ($took s under valgrind)"
echo "  kiln: exit $rc, ${samples:-no summary}"
echo "  heap: $heap"
echo "  definitely lost: $definite bytes"
echo "  indirectly lost: $indirect bytes, possibly lost: $possible bytes, still reachable: $reachable bytes"
echo "  errors: ${errors:-?} (suppressed bpf(2) model false positives: ${suppressed:-?})"
echo "  full report: $log"

ok=1
[ "$rc" -eq 0 ] || { echo "FAIL valgrind: kiln exited $rc: $(tail -1 "$OUT_DIR/kiln.err")"; ok=0; }
[ -s "$OUT_DIR/host.pb.gz" ] || { echo "FAIL valgrind: no profile written"; ok=0; }
[ "$definite" = 0 ] || { echo "FAIL valgrind: definitely lost: $definite bytes"; ok=0; }
[ "${errors:-1}" = 0 ] || { echo "FAIL valgrind: ${errors:-?} memcheck errors"; errors_of "$log" | head -80; ok=0; }
[ $ok -eq 1 ] && echo "PASS valgrind: definitely lost: 0 bytes, no memcheck errors"
[ $ok -eq 1 ]
