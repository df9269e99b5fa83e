#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# How truthful kiln's user stacks are on software we did not write (issue
# 14's bars), judged against perf record --call-graph dwarf of the same run:
# kiln record runs perf record, which runs the workload, so both sample the
# same process from its first instruction to its exit.
#
# For each of Debian's python3.11, ruby3.1, perl, xz -9 and gzip -9 on a
# CPU-bound script or input (tests/unwind/workloads/):
#   reference  perf itself reaches the thread's root in >= 99 % of its
#              samples, with >= 300 samples: the judge is fair
#   root       >= 99 % of kiln's samples reach the thread's root
#   shares     the top functions' inclusive and self shares within 2 points
#              of perf's (tests/unwind/compare.py defines both)
# and for truth_shares, a program built with gcc -O2 -fomit-frame-pointer
# that spends 60/30/10 % of its time in three functions of an FP-less
# library (libtruth.so), each under its own chain of callers:
#   reference  perf within 2 points of the truth, every caller recovered
#   root, shares  as above
#   known      kiln's shares within 2 points of 60/30/10
#   callers    >= 99 % of each function's samples with the exact chain of
#              callers below main
# and "evict" (test_evict below): truth_shares walked after other programs'
# tables were evicted under a small --unwind-memory; "expire"
# (test_expire below): after clang's tables expired and their rows' chunks
# went back to the kernel;
# "swap" (test_swap below): a plugin unloaded and another loaded over its
# range while the program runs;
# and for gotruth, a Go program of the same 60/30/10 design (two chains in
# crypto assembly), built stripped and not (run_go below: no perf there).
#
# Environment: KILN (build/kiln), UNWIND_BIN (build/unwind: truth_shares, gotruth),
# UNWIND_HZ (999: both samplers, per CPU), UNWIND_SECONDS (20: CPU seconds
# each workload runs; ~20 000 samples a tool, so two independent samplings
# of one share differ by 0.5 point at one sigma, 2 points being 4 sigma), UNWIND_PERF_STACK (65528: bytes of user stack perf
# copies per sample; perf's default 8192 cuts ruby's deep stacks),
# UNWIND_ONLY ("python ruby": a subset), UNWIND_KEEP (a directory: keep the
# profiles and reports there), UNWIND_SUBJECT (kiln; "perf" judges perf
# --call-graph dwarf on a second run of the workload instead of kiln: the
# harness checking itself).
# Needs root. Prints each program's report, one PASS/FAIL line per check,
# a summary table, and "N passed, N failed, N skipped" last (tests/lib.sh).
set -u
. "$(dirname "$0")/../lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
KILN=${KILN:-build/kiln}
UNWIND_BIN=${UNWIND_BIN:-build/unwind}
HZ=${UNWIND_HZ:-999}
CPU_SECONDS=${UNWIND_SECONDS:-20}
STACK=${UNWIND_PERF_STACK:-65528}
SUBJECT=${UNWIND_SUBJECT:-kiln}
ONLY=${UNWIND_ONLY:-python ruby perl xz gzip truth evict expire swap go}
ROOT_BAR=99       # % of samples whose user stack reaches the thread's root
SHARE_BAR=2       # points between shares (kiln vs perf, or vs the truth)
CALLER_BAR=99     # % of a truth function's samples with its exact callers
MIN_SAMPLES=300   # per tool and program, or the comparison says nothing
GO_NAMED_BAR=99.9 # % of a Go program's user frames with a name
TMP=$(mktemp -d /tmp/kiln-unwind.XXXXXX)
export HOME=$TMP KILN
trap 'rm -rf "$TMP"' EXIT
SUMMARY=$TMP/summary

# ge A B: A >= B, as decimal numbers.
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
val() { json "$TMP/$1.json" "${@:2}"; }
fmt1() { printf '%.1f' "$1"; }

# profile NAME COMM [--feed] COMMAND...: runs COMMAND under perf (the
# reference) under the subject, writes $TMP/NAME.json (compare.py) and
# prints the report; extra compare.py options in TRUTH_ARGS. With --feed,
# workloads/feed.py starts perf and feeds COMMAND text on its standard input
# for CPU_SECONDS. perf records COMMAND alone: perf 6.1's DWARF unwinder
# loses libc frames of one process when another process of the same
# recording maps libc elsewhere (docs/testing.md). Status 1 (with the
# reason in $TMP/NAME.why) when a profiler failed.
profile() {
	local name=$1 comm=$2 subj rc feed=()
	shift 2
	if [ "$1" = --feed ]; then
		feed=(/usr/bin/python3 "$HERE/workloads/feed.py" "$CPU_SECONDS" "$comm")
		shift
	fi
	# perf_cmd DATA: PERF_CMD, the workload under perf writing DATA
	perf_cmd() {
		PERF_CMD=("${feed[@]}" perf record -q -m 4096 -e cpu-clock -F "$HZ" --call-graph "dwarf,$STACK"
			-o "$1" --)
	}
	perf_cmd "$TMP/$name.ref.data"
	local ref=("${PERF_CMD[@]}")
	local guard=$((CPU_SECONDS * 30 + 300))   # only against a hang
	echo "-- $name: $* ($CPU_SECONDS CPU seconds at $HZ Hz)"
	case $SUBJECT in
	kiln)
		subj=$TMP/$name.kiln.folded
		timeout -s INT "$guard" "$KILN" record -q --no-python --no-ruby -F "$HZ" -o "$subj" -- "${ref[@]}" "$@" \
			>"$TMP/$name.out" 2>"$TMP/$name.subject.err"
		rc=$?
		grep -E '^kiln: (dropped|frames)' "$TMP/$name.subject.err" | sed 's/^/   /'
		;;
	perf)
		# a second perf, on a second run of the same workload (perf around
		# perf would record two processes mapping libc)
		perf_cmd "$TMP/$name.subject.data"
		local second=("${PERF_CMD[@]}")
		subj=$TMP/$name.subject.txt
		timeout -s INT "$guard" "${ref[@]}" "$@" >"$TMP/$name.out" 2>"$TMP/$name.subject.err" &&
			timeout -s INT "$guard" "${second[@]}" "$@" >>"$TMP/$name.out" 2>>"$TMP/$name.subject.err"
		rc=$?
		[ $rc -ne 0 ] || perf script -i "$TMP/$name.subject.data" -F comm,pid,tid,time,ip,sym,dso \
			--no-inline --max-stack 1024 >"$subj" 2>>"$TMP/$name.subject.err" || rc=$?
		rm -f "$TMP/$name.subject.data"
		;;
	*) echo "UNWIND_SUBJECT=$SUBJECT: kiln or perf" >"$TMP/$name.why"; return 1 ;;
	esac
	if [ $rc -ne 0 ]; then
		echo "$SUBJECT exited $rc: $(tail -2 "$TMP/$name.subject.err" | tr '\n' ' ')" >"$TMP/$name.why"
		return 1
	fi
	if ! perf script -i "$TMP/$name.ref.data" -F comm,pid,tid,time,ip,sym,dso --no-inline --max-stack 1024 \
		>"$TMP/$name.ref.txt" 2>"$TMP/$name.ref.err"; then
		echo "perf script failed: $(tail -1 "$TMP/$name.ref.err")" >"$TMP/$name.why"
		return 1
	fi
	grep -h -E 'lost [0-9]+ chunks' "$TMP/$name.ref.err" | sed 's/^/   perf (reference): /'
	[ "$SUBJECT" != perf ] || grep -h -E 'lost [0-9]+ chunks' "$TMP/$name.subject.err" | sed 's/^/   perf (subject): /'
	rm -f "$TMP/$name.ref.data"
	if ! /usr/bin/python3 "$HERE/compare.py" --subject "$subj" --reference "$TMP/$name.ref.txt" \
		--comm "$comm" --label "$name" --json "$TMP/$name.json" "${TRUTH_ARGS[@]}" 2>"$TMP/$name.cmp.err"; then
		cat "$TMP/$name.cmp.err"
		echo "compare.py failed: $(tail -1 "$TMP/$name.cmp.err")" >"$TMP/$name.why"
		return 1
	fi
	if [ -n "${UNWIND_KEEP:-}" ]; then
		mkdir -p "$UNWIND_KEEP" && cp "$subj" "$TMP/$name.ref.txt" "$TMP/$name.json" "$UNWIND_KEEP/"
	fi
	echo "$name $(val "$name" subject samples) $(fmt1 "$(val "$name" subject root_pct)")" \
		"$(fmt1 "$(val "$name" subject mean_depth)") $(val "$name" reference samples)" \
		"$(fmt1 "$(val "$name" reference root_pct)") $(fmt1 "$(val "$name" reference mean_depth)")" \
		"$(fmt1 "$(val "$name" max_diff)")" >>"$SUMMARY"
}

# verdict NAME OK TEXT: pass "NAME: TEXT" when OK is 1, else fail.
verdict() { if [ "$2" = 1 ]; then pass "$1: $3"; else fail "$1" "$3"; fi; }

# The checks every program gets: the reference is usable, the subject
# reaches the root, the shares match.
check_reference() {
	local n=$1 rs rr
	rs=$(val "$n" reference samples) rr=$(val "$n" reference root_pct)
	if [ "$rs" -ge "$MIN_SAMPLES" ] && ge "$rr" "$ROOT_BAR"; then
		pass "$n reference: perf dwarf reaches the root in $(fmt1 "$rr") % of $rs samples (bar $ROOT_BAR %, >= $MIN_SAMPLES samples)"
	else
		fail "$n reference" "perf dwarf reaches the root in $(fmt1 "$rr") % of $rs samples (bar $ROOT_BAR %, >= $MIN_SAMPLES samples): the judge is not fair; outermost frames $(val "$n" reference outermost)"
	fi
}

check_root() {
	local n=$1 ss sr
	ss=$(val "$n" subject samples) sr=$(val "$n" subject root_pct)
	if [ "$ss" -ge "$MIN_SAMPLES" ] && ge "$sr" "$ROOT_BAR"; then
		pass "$n root: $SUBJECT reaches the root in $(fmt1 "$sr") % of $ss samples (bar $ROOT_BAR %), mean user depth $(fmt1 "$(val "$n" subject mean_depth)") (perf $(fmt1 "$(val "$n" reference mean_depth)"))"
	else
		fail "$n root" "$SUBJECT reaches the root in $(fmt1 "$sr") % of $ss samples (bar $ROOT_BAR %, >= $MIN_SAMPLES samples; perf $(fmt1 "$(val "$n" reference root_pct)") %), mean user depth $(fmt1 "$(val "$n" subject mean_depth)") (perf $(fmt1 "$(val "$n" reference mean_depth)")); outermost frames $(val "$n" subject outermost)"
	fi
}

check_shares() {
	local n=$1 d msg
	d=$(val "$n" max_diff)
	msg="largest difference from perf $(fmt1 "$d") points (bar $SHARE_BAR): inclusive $(fmt1 "$(val "$n" max_diff_inclusive)") ($(val "$n" max_diff_inclusive_function)), self $(fmt1 "$(val "$n" max_diff_self)") ($(val "$n" max_diff_self_function)); sampling noise (2 sigma) up to $(fmt1 "$(val "$n" max_noise)")"
	if ge "$SHARE_BAR" "$d"; then pass "$n shares: $msg"; else fail "$n shares" "$msg"; fi
}

run_program() {
	local name=$1 comm=$2
	shift 2
	TRUTH_ARGS=()
	if ! profile "$name" "$comm" "$@"; then
		local t
		for t in reference root shares; do fail "$name $t" "$(cat "$TMP/$name.why")"; done
		return
	fi
	check_reference "$name"
	check_root "$name"
	check_shares "$name"
}

W=$HERE/workloads
test_python() { run_program python python3.11 /usr/bin/python3.11 "$W/cpu.py" "$CPU_SECONDS"; }
test_ruby() { run_program ruby ruby /usr/bin/ruby "$W/cpu.rb" "$CPU_SECONDS"; }
test_perl() { run_program perl perl /usr/bin/perl "$W/cpu.pl" "$CPU_SECONDS"; }
test_xz() { run_program xz xz --feed /usr/bin/xz -9 -c; }
test_gzip() { run_program gzip gzip --feed /bin/gzip -9 -c; }

# truth_shares: FUNCTION=PERCENT:CALLERS (outermost first) below main.
TRUTH=(truth_alpha=60:main,alpha_outer,alpha_inner
	truth_beta=30:main,beta_only
	truth_gamma=10:main,gamma_outer,gamma_middle,gamma_inner)
TRUTH_OPTS=()    # the same, as compare.py options
for t in "${TRUTH[@]}"; do TRUTH_OPTS+=(--truth "$t"); done

# truth_figures NAME SIDE: whether every function is within SHARE_BAR of
# its truth and has its exact callers in >= CALLER_BAR % of its samples
# (1 or 0, each), then the figures.
truth_figures() {
	/usr/bin/python3 - "$TMP/$1.json" "$2" "$SHARE_BAR" "$CALLER_BAR" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["truth"][sys.argv[2]]
share_bar, caller_bar = float(sys.argv[3]), float(sys.argv[4])
shares = all(abs(t["inclusive_pct"] - t["truth_pct"]) <= share_bar for t in d)
callers = all(t["callers_exact_pct"] >= caller_bar for t in d)
print(int(shares), int(callers),
      ", ".join("%s %.1f %% (truth %.0f)" % (t["function"], t["inclusive_pct"], t["truth_pct"]) for t in d),
      "|", ", ".join("%s %.1f %%" % (t["function"], t["callers_exact_pct"]) for t in d))
EOF
}

test_truth() {
	local t shares callers figs ok_s ok_c
	TRUTH_ARGS=("${TRUTH_OPTS[@]}")
	if [ ! -x "$UNWIND_BIN/truth_shares" ]; then
		for t in reference root shares known callers; do
			fail "truth $t" "$UNWIND_BIN/truth_shares not built (make test-unwind builds it)"
		done
		return
	fi
	if ! profile truth truth_shares "$UNWIND_BIN/truth_shares" "$CPU_SECONDS"; then
		for t in reference root shares known callers; do fail "truth $t" "$(cat "$TMP/truth.why")"; done
		return
	fi
	# the reference: perf's root share, and perf against the truth
	read -r ok_s ok_c figs <<<"$(truth_figures truth reference)"
	shares=${figs%%|*} callers=${figs#*|}
	if [ "$(val truth reference samples)" -ge "$MIN_SAMPLES" ] && ge "$(val truth reference root_pct)" "$ROOT_BAR" &&
		[ "$ok_s" = 1 ] && [ "$ok_c" = 1 ]; then
		pass "truth reference: perf dwarf reaches the root in $(fmt1 "$(val truth reference root_pct)") %; shares ${shares% } (bar $SHARE_BAR points); exact callers in$callers (bar $CALLER_BAR %)"
	else
		fail "truth reference" "perf dwarf: root $(fmt1 "$(val truth reference root_pct)") % of $(val truth reference samples); shares ${shares% }; exact callers in$callers: the program or the judge is wrong"
	fi
	check_root truth
	check_shares truth
	read -r ok_s ok_c figs <<<"$(truth_figures truth subject)"
	shares=${figs%%|*} callers=${figs#*|}
	verdict "truth known" "$ok_s" "$SUBJECT ${shares% } (bar $SHARE_BAR points)"
	verdict "truth callers" "$ok_c" "$SUBJECT's samples with every caller, in order:$callers (bar $CALLER_BAR %)"
}

# truth_record NAME CHECK SHELL_COMMAND RECORD_ARGS...: one kiln record
# (RECORD_ARGS) of /bin/sh -c SHELL_COMMAND, which ends in truth_shares,
# and compare.py's verdict on it into $TMP/NAME.json; 1 after failing
# NAME's CHECK, root and known when either failed.
truth_record() {
	local name=$1 check=$2 cmd=$3 t
	shift 3
	TRUTH_ARGS=("${TRUTH_OPTS[@]}")
	if ! timeout -s INT 300 "$KILN" record -q -F "$HZ" "$@" -o "$TMP/$name.folded" \
		--stats "$TMP/$name.stats.json" -- /bin/sh -c "$cmd" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		! /usr/bin/python3 "$HERE/compare.py" --subject "$TMP/$name.folded" --comm truth_shares \
			--label "$name" --json "$TMP/$name.json" "${TRUTH_ARGS[@]}" 2>>"$TMP/$name.err"; then
		for t in "$check" root known; do fail "$name $t" "$(tail -1 "$TMP/$name.err")"; done
		return 1
	fi
}

# truth_root_known NAME: truth_shares in NAME's run reaches the root
# (root) and keeps its shares and callers (known).
truth_root_known() {
	local ok_s ok_c figs sr ss
	ss=$(val "$1" subject samples) sr=$(val "$1" subject root_pct)
	if [ "$ss" -ge "$MIN_SAMPLES" ] && ge "$sr" "$ROOT_BAR"; then
		pass "$1 root: truth_shares reaches the root in $(fmt1 "$sr") % of $ss samples (bar $ROOT_BAR %)"
	else
		fail "$1 root" "truth_shares reaches the root in $(fmt1 "$sr") % of $ss samples (bar $ROOT_BAR %, >= $MIN_SAMPLES samples); outermost frames $(val "$1" subject outermost)"
	fi
	read -r ok_s ok_c figs <<<"$(truth_figures "$1" subject)"
	verdict "$1 known" "$((ok_s && ok_c))" "${figs%%|*}(bar $SHARE_BAR points); exact callers in${figs#*|} (bar $CALLER_BAR %)"
}

# Tables evicted while the walkers remember rows of them (each CPU's row
# memo, forgotten at every eviction; its process and mapping memos, which
# hold the evicted tables' slots): under --unwind-memory 384K, Debian's
# python3, ruby and perl run a CPU second each, one after the other, each
# one's tables taking the rows and slots of the one before (which exited),
# then truth_shares takes theirs. kiln only (no perf reference: the
# program's construction is the truth).
#   tables  tables were evicted, and rows, processes and mappings
#           remembered
#   root    >= 99 % of truth_shares' samples reach the root
#   known   its shares within 2 points of 60/30/10 and >= 99 % of each
#           function's samples with its exact callers
test_evict() {
	local t ev memo pmemo mmemo
	if [ ! -x "$UNWIND_BIN/truth_shares" ]; then
		for t in tables root known; do fail "evict $t" "$UNWIND_BIN/truth_shares not built (make test-unwind builds it)"; done
		return
	fi
	echo "-- evict: python3, ruby and perl, then truth_shares, under --unwind-memory 384K at $HZ Hz"
	truth_record evict tables \
		"/usr/bin/python3 '$W/cpu.py' 1 && ruby '$W/cpu.rb' 1 && perl '$W/cpu.pl' 1 && exec '$UNWIND_BIN/truth_shares' 5" \
		--no-python --no-ruby --unwind-memory 384K || return
	ev=$(json "$TMP/evict.stats.json" unwinder evictions) memo=$(json "$TMP/evict.stats.json" walker row_memo_hits)
	pmemo=$(json "$TMP/evict.stats.json" walker process_memo_hits) mmemo=$(json "$TMP/evict.stats.json" walker map_memo_hits)
	if [ "$ev" -gt 0 ] && [ "$memo" -gt 0 ] && [ "$pmemo" -gt 0 ] && [ "$mmemo" -gt 0 ]; then
		pass "evict tables: $ev tables evicted; remembered $memo rows, $pmemo processes, $mmemo mappings"
	else
		fail "evict tables" "$ev tables evicted; remembered $memo rows, $pmemo processes, $mmemo mappings: the test proves nothing"
	fi
	truth_root_known evict
}

# Tables expired and rows given back (--unwind-table-ttl 1s): Debian's
# clang compiles a generated file for a few seconds (libLLVM's and
# libclang-cpp's tables: ~1.8 M rows, 7 of the 1 MiB chunks), exits, and
# 2 s later, their tables unmapped past the TTL, truth_shares runs 5 s
# in the rows left. kiln only.
#   freed   clang's tables expired and at least one chunk went back
#   root    >= 99 % of truth_shares' samples reach the root
#   known   as for evict
test_expire() {
	local t ex ch
	if [ ! -x "$UNWIND_BIN/truth_shares" ] || ! command -v clang >/dev/null; then
		for t in freed root known; do fail "expire $t" "needs $UNWIND_BIN/truth_shares (make test-unwind) and clang (make test-deps)"; done
		return
	fi
	python3 -c '
for i in range(3000):
    print(f"int f{i}(int *a, int n) {{ int s = {i}; for (int j = 0; j < n; j++) s += a[j] * (j ^ {i}); return s; }}")' >"$TMP/big.c"
	echo "-- expire: clang -O2 (libLLVM, libclang-cpp), then truth_shares, --unwind-table-ttl 1s at $HZ Hz"
	truth_record expire freed \
		"clang -O2 -c '$TMP/big.c' -o '$TMP/big.o' && sleep 3 && exec '$UNWIND_BIN/truth_shares' 5" \
		--unwind-table-ttl 1s || return
	ex=$(json "$TMP/expire.stats.json" unwinder expired) ch=$(json "$TMP/expire.stats.json" unwinder chunks_dropped)
	if [ "$ex" -ge 2 ] && [ "$ch" -ge 1 ]; then
		pass "expire freed: $ex tables expired, $ch chunks of rows given back; BPF maps at the end $(($(json "$TMP/expire.stats.json" bpf_maps_bytes) >> 20)) MiB"
	else
		fail "expire freed" "$ex tables expired (want >= 2: libLLVM, libclang-cpp), $ch chunks given back (want >= 1)"
	fi
	truth_root_known expire
}

# A library replaced in place (swap_plugins, libplugin.c): the program spends
# 2 CPU seconds in libplugin_a.so, unloads it and spends 3 in
# libplugin_b.so, which the dynamic loader maps over the same range. The
# process was read long before (its young re-reads end at 1 s), and no pc
# of B falls outside the mappings kiln knows, so only the side-band's
# record of B's mapping tells kiln to read it again; the samples taken
# before that are named with A's mappings all the same. kiln only (the
# program's construction is the truth).
#   replaced  kiln saw a mapping replaced and read the process again
#   known     both leaves' shares, of the samples not cut short, within
#             2 points of 40/60; of each leaf's samples, >= 99 % of those
#             not cut short with their exact callers, and at most
#             SWAP_CUT_MS of samples cut short
# Cut short: a leaf with no caller (or the one [unknown] of a frame-pointer
# walk). B's first samples, until kiln reads the side-band, are walked with
# A's table and named with A's mappings (the same range): the walk stops
# at the first caller outside every mapping, never emitting it, so they
# show as A's leaf alone. The side-band does not wake kiln (a wakeup per
# mapping of every process would cost more than the rest of record), so
# kiln reads it at its next wakeup: a walk's miss, an event, or the 100 ms
# poll of `kiln record -- CMD` (pipeline.c, POLL_FAST_MS): 5-26 samples at
# 999 Hz when something wakes it, about 110 in most runs when nothing does.
# So do A's first samples before its table is loaded, and B's before its
# own is. Those leaves may be B's: the shares leave them out. A wrong
# caller is never excused.
SWAP_TRUTH=(--truth plugin_a_spin=40:main,spend,run_plugin,plugin_run,plugin_a_outer
	--truth plugin_b_spin=60:main,spend,run_plugin,plugin_run,plugin_b_outer,plugin_b_middle)
SWAP_CUT_MS=150
test_swap() {
	local t rep figs
	if [ ! -x "$UNWIND_BIN/swap_plugins" ]; then
		for t in replaced known; do fail "swap $t" "$UNWIND_BIN/swap_plugins not built (make test-unwind builds it)"; done
		return
	fi
	echo "-- swap: swap_plugins, libplugin_a.so replaced by libplugin_b.so at the same address, at $HZ Hz"
	if ! timeout -s INT 300 "$KILN" record -q --no-python --no-ruby -F "$HZ" -o "$TMP/swap.folded" \
		--stats "$TMP/swap.stats.json" -- "$UNWIND_BIN/swap_plugins" "$UNWIND_BIN" 2 3 \
		>"$TMP/swap.out" 2>"$TMP/swap.err" ||
		! /usr/bin/python3 "$HERE/compare.py" --subject "$TMP/swap.folded" --comm swap_plugins --label swap \
			--json "$TMP/swap.json" "${SWAP_TRUTH[@]}" 2>>"$TMP/swap.err"; then
		for t in replaced known; do fail "swap $t" "$(tail -1 "$TMP/swap.err")"; done
		return
	fi
	rep=$(json "$TMP/swap.stats.json" mappings_replaced)
	verdict "swap replaced" "$([ "${rep:-0}" -ge 1 ] && echo 1)" \
		"$rep mappings replaced in place seen, the process read again ($(cat "$TMP/swap.out"))"
	figs=$(/usr/bin/python3 - "$TMP/swap.json" "$SHARE_BAR" "$CALLER_BAR" "$SWAP_CUT_MS" "$HZ" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1]))["truth"]["subject"]
share_bar, caller_bar, cut_ms, hz = (float(x) for x in sys.argv[2:6])
total = a["samples"] * 100 / a["inclusive_pct"]
uncut = total - a["callers_cut"] - b["callers_cut"]
for t in (a, b):
    t["uncut_pct"] = 100 * (t["samples"] - t["callers_cut"]) / uncut
ok = all(abs(t["uncut_pct"] - t["truth_pct"]) <= share_bar
         and t["callers_exact_of_uncut_pct"] >= caller_bar and t["callers_cut"] <= cut_ms / 1000 * hz
         for t in (a, b))
print(int(ok), "; ".join("%s %.1f %% of the samples not cut short (truth %.0f; %.1f %% of all), %d samples:"
                         " exact callers in %.1f %% (%.1f %% of those not cut short), %d cut short"
                         % (t["function"], t["uncut_pct"], t["truth_pct"], t["inclusive_pct"], t["samples"],
                            t["callers_exact_pct"], t["callers_exact_of_uncut_pct"], t["callers_cut"])
                         for t in (a, b)))
PY
)
	verdict "swap known" "${figs%% *}" "${figs#* } (bars: $SHARE_BAR points; callers $CALLER_BAR % of those not cut short, at most $SWAP_CUT_MS ms of samples cut short)"
}

# gotruth: FUNCTION=PERCENT:CALLERS (outermost first), for go_check.py.
GO_TRUTH=(main.alphaInner=60:runtime.goexit,runtime.main,main.main,main.alphaOuter
	main.betaSpin=30:runtime.goexit,runtime.main,main.main,main.betaOnly
	main.gammaInner=10:runtime.goexit,runtime.main,main.main,main.gammaOuter,main.gammaMiddle)

# go_figure NAME EXPR: a figure of $TMP/NAME.go.json (python, d = the object).
go_figure() { /usr/bin/python3 -c "import json; d = json.load(open('$TMP/$1.go.json')); print($2)"; }

# Go, stripped (-s -w: no symbols, no CFI, how Go services ship) and not:
# the names and the unwind rows come from Go's own function table. No perf
# reference (perf names nothing in a stripped Go binary and has no CFI to
# unwind it by); the program's construction is the truth.
#   named    >= 99.9 % of user frames named (the first sample, walked by
#            frame pointers before the tables load, may end in [unknown])
#   root     >= 99 % of stacks reach where Go starts the goroutine/thread
#   known    shares within 2 points of 60/30/10
#   callers  >= 99 % of each function's samples with its exact callers
#   lines    in the pprof (go tool pprof -raw), every line of the three
#            functions and their callers in main.go inside the function
# and "go lookup" (go_lookup below).
run_go() {
	local name=$1 bin=$2 t ok_s=1 ok_c=1 shares="" callers="" lines
	if [ ! -x "$bin" ]; then
		for t in named root known callers lines; do fail "$name $t" "$bin not built (make test-unwind builds it)"; done
		return
	fi
	echo "-- $name: $bin ($CPU_SECONDS CPU seconds at $HZ Hz)"
	if ! timeout -s INT $((CPU_SECONDS * 30 + 300)) "$KILN" record -q -F "$HZ" -o "$TMP/$name.pb.gz" \
		-- "$bin" "$CPU_SECONDS" >"$TMP/$name.out" 2>"$TMP/$name.err" ||
		! "$KILN" view -o "$TMP/$name.folded" "$TMP/$name.pb.gz" 2>>"$TMP/$name.err" ||
		! /usr/bin/python3 "$HERE/go_check.py" "$TMP/$name.folded" "$(basename "$bin" | cut -c1-15)" \
			"${GO_TRUTH[@]}" \
			>"$TMP/$name.go.json"; then
		for t in named root known callers lines; do fail "$name $t" "kiln record failed: $(tail -1 "$TMP/$name.err")"; done
		return
	fi
	if HOME=$TMP GOCACHE=$TMP/gocache go tool pprof -raw "$TMP/$name.pb.gz" >"$TMP/$name.raw" 2>&1 &&
		lines=$(/usr/bin/python3 "$HERE/go_lines.py" "$TMP/$name.raw" "$HERE/workloads/gotruth/main.go" \
			main.alphaInner main.betaSpin main.gammaInner main.alphaOuter main.betaOnly \
			main.gammaMiddle main.gammaOuter main.main); then
		pass "$name lines: every pprof line of main.go's functions inside the function: $(echo $lines)"
	else
		fail "$name lines" "$(echo $lines) $(tail -1 "$TMP/$name.raw")"
	fi
	grep -E '^kiln: (frames|user stacks)' "$TMP/$name.err" | sed 's/^/   /'
	[ -z "${UNWIND_KEEP:-}" ] || { mkdir -p "$UNWIND_KEEP" && cp "$TMP/$name.folded" "$UNWIND_KEEP/"; }
	local samples named root
	samples=$(go_figure "$name" 'd["samples"]') named=$(go_figure "$name" '"%.2f" % d["named_pct"]')
	root=$(go_figure "$name" '"%.1f" % d["root_pct"]')
	if [ "$samples" -ge "$MIN_SAMPLES" ] && ge "$named" "$GO_NAMED_BAR"; then
		pass "$name named: $named % of the user frames of $samples samples named (bar $GO_NAMED_BAR %)"
	else
		fail "$name named" "$named % of user frames named in $samples samples (bar $GO_NAMED_BAR %, >= $MIN_SAMPLES samples)"
	fi
	if ge "$root" "$ROOT_BAR"; then
		pass "$name root: $root % of stacks reach runtime.goexit/mstart (bar $ROOT_BAR %)"
	else
		fail "$name root" "$root % of stacks reach runtime.goexit/mstart (bar $ROOT_BAR %)"
	fi
	for t in 0 1 2; do
		local f inc exact want
		f=$(go_figure "$name" "d['truth'][$t]['function']")
		inc=$(go_figure "$name" "'%.1f' % d['truth'][$t]['inclusive_pct']")
		exact=$(go_figure "$name" "'%.1f' % d['truth'][$t]['callers_exact_pct']")
		want=$(go_figure "$name" "'%.0f' % d['truth'][$t]['truth_pct']")
		shares="$shares $f $inc % (truth $want),"
		callers="$callers $f $exact %,"
		ge "$SHARE_BAR" "$(awk -v a="$inc" -v b="$want" 'BEGIN { d = a - b; print d < 0 ? -d : d }')" || ok_s=0
		ge "$exact" "$CALLER_BAR" || ok_c=0
	done
	shares=${shares%,}
	verdict "$name known" "$ok_s" "${shares# } (bar $SHARE_BAR points)"
	verdict "$name callers" "$ok_c" "samples with every caller, in order:${callers%,} (bar $CALLER_BAR %)"
	echo "$name $samples $root - - - - -" >>"$SUMMARY"
}

# The table without its section header: found by the runtime.pclntab
# symbol (gotruth-symbols), or by searching the segments (gotruth).
go_lookup() {
	local bin out want found=""
	for bin in "$UNWIND_BIN/gotruth" "$UNWIND_BIN/gotruth-symbols"; do
		/usr/bin/python3 -c 'import sys
d = bytearray(open(sys.argv[1], "rb").read()); i = d.find(b".gopclntab\0")
d[i:i + 10] = b".xopclntab"; open(sys.argv[2], "wb").write(d)' "$bin" "$TMP/renamed" || return 1
		out=$("$KILN" unwind-table "$TMP/renamed" 2>&1 | sed -n 's/^# Go function table (\([a-z]*\)): \([0-9]*\) functions/\1 \2/p')
		want=$("$KILN" unwind-table "$(realpath "$bin")" 2>&1 | sed -n 's/^# Go function table (section): \([0-9]*\) functions/\1/p')
		found="$found ${bin##*/}: ${out:-none} (with the section: $want);"
		case "$bin:$out" in
		*symbols:"symbol $want" | *gotruth:"scan $want") ;;
		*) echo "${found% ;}"; return 1 ;;
		esac
	done
	echo "${found%;}"
}

test_go() {
	local found
	run_go go "$UNWIND_BIN/gotruth"
	run_go go_symbols "$UNWIND_BIN/gotruth-symbols"
	if found=$(go_lookup); then
		pass "go lookup: the table found without its section header:$found"
	else
		fail "go lookup" "$found"
	fi
}

summary_table() {
	[ -s "$SUMMARY" ] || return 0
	echo "== unwind: $SUBJECT vs perf --call-graph dwarf,$STACK at $HZ Hz (bars: root >= $ROOT_BAR %, shares within $SHARE_BAR points)"
	printf '   %-8s %8s %8s %8s   %8s %8s %8s   %9s\n' program "$SUBJECT" root depth perf root depth "max diff"
	while read -r n ss sr sd rs rr rd d; do
		printf '   %-8s %8s %7s%% %8s   %8s %7s%% %8s   %9s\n' "$n" "$ss" "$sr" "$sd" "$rs" "$rr" "$rd" "$d"
	done <"$SUMMARY"
}

TESTS=""
for p in $ONLY; do TESTS="$TESTS test_$p"; done
count=0
for p in $ONLY; do
	case $p in truth) count=$((count + 5)) ;; go) count=$((count + 11)) ;; swap) count=$((count + 2)) ;; *) count=$((count + 3)) ;; esac
done
if [ "$(id -u)" -ne 0 ]; then
	for p in $ONLY; do
		if [ "$p" = truth ]; then
			skip_all "loading BPF programs and perf need root" "truth reference" "truth root" \
				"truth shares" "truth known" "truth callers"
		elif [ "$p" = evict ]; then
			skip_all "loading BPF programs needs root" "evict tables" "evict root" "evict known"
		elif [ "$p" = expire ]; then
			skip_all "loading BPF programs needs root" "expire freed" "expire root" "expire known"
		elif [ "$p" = swap ]; then
			skip_all "loading BPF programs needs root" "swap replaced" "swap known"
		elif [ "$p" = go ]; then
			for n in go go_symbols; do
				skip_all "loading BPF programs needs root" "$n named" "$n root" "$n known" \
					"$n callers" "$n lines"
			done
			skip_all "reading the workloads needs root" "go lookup"
		else
			skip_all "loading BPF programs and perf need root" "$p reference" "$p root" "$p shares"
		fi
	done
elif ! command -v perf >/dev/null; then
	for p in $ONLY; do fail "$p" "perf is not installed (make test-deps installs linux-perf)"; done
	count=$(wc -w <<<"$ONLY")
else
	run_tests $TESTS
fi
summary_table
finish "$count"
