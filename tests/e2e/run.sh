#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# End-to-end tests: the real kiln binary loads the real BPF program and
# profiles real workloads (tests/workloads, built with frame pointers).
# Needs root. Prints one line per test and "N passed, N failed, N skipped"
# last (tests/lib.sh).
set -u
. "$(dirname "$0")/../lib.sh"

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
TMP=$(mktemp -d /tmp/kiln-e2e.XXXXXX)
export HOME=$TMP GOCACHE=$TMP/gocache   # go tool pprof as root in CI
trap 'rm -rf "$TMP"' EXIT

test_ratio() {
	local out=$TMP/ratio.pb.gz top three one
	if ! "$KILN" record -q -d 5 -o "$out" -- "$WORKLOADS/cpu_ratio" 5 2>"$TMP/ratio.err"; then
		fail ratio "kiln record failed: $(tail -1 "$TMP/ratio.err")"; return
	fi
	if ! go tool pprof -raw "$out" >"$TMP/ratio.raw" 2>&1; then
		fail ratio "go tool pprof -raw cannot read the profile: $(head -1 "$TMP/ratio.raw")"; return
	fi
	top=$(go tool pprof -top -cum -sample_index=samples "$out" 2>/dev/null)
	three=$(awk '$NF == "hot_three" { print $4 }' <<<"$top")
	one=$(awk '$NF == "hot_one" { print $4 }' <<<"$top")
	if [ -z "$three" ] || [ -z "$one" ]; then
		fail ratio "hot_three/hot_one missing from the profile"; return
	fi
	if python3 -c "import sys; t,o=$three,$one; s=100*t/(t+o); print('hot_three %.1f%% of %d samples' % (s, t+o)); sys.exit(0 if abs(s-75) <= 5 and t+o >= 200 else 1)"; then
		pass "ratio 3:1 within 5 points, pprof read by go tool pprof"
	else
		fail ratio "shares off: hot_three=$three hot_one=$one"
	fi
}

test_kernel_frames() {
	local out=$TMP/syscall.folded n
	"$KILN" record -q -d 3 -o "$out" -- "$WORKLOADS/syscall_read" 3 2>"$TMP/syscall.err" ||
		{ fail kernel_frames "kiln record failed: $(tail -1 "$TMP/syscall.err")"; return; }
	# user frames, then the syscall entry, then the syscall's own function
	n=$(folded_count "$out" '^syscall_read;.*main;read_zeros;read;entry_SYSCALL_64[^;]*_\[k\];.*(ksys_read|__x64_sys_read)_\[k\];.*read_(zero|iter_zero)')
	if [ "$n" -ge 50 ]; then
		pass "kernel frames under user frames ($n samples in read_zero via entry_SYSCALL_64)"
	else
		fail kernel_frames "only $n samples with user->syscall->read_zero stacks"
	fi
}

# A short-lived process's samples are named although it is gone before the
# drain: every frame inside a mapped file has its function's name (ld.so's
# start-up included: libc6-dbg), and the on-CPU user frame is never
# [unknown]. The one [unknown] allowed is the outermost user frame, where a
# frame-pointer walk through code built without frame pointers (ld.so,
# libc) left the mappings and kiln cut the stack.
test_short_lived() {
	local out=$TMP/burst.folded counts total named
	"$KILN" record -q -o "$out" -- sh -c "for i in \$(seq 20); do $WORKLOADS/cpu_ratio 0.3 & done; wait" \
		2>"$TMP/burst.err" || { fail short_lived "kiln record failed: $(tail -1 "$TMP/burst.err")"; return; }
	counts=$(awk '/^cpu_ratio;/ {
		n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); u = 1
		for (i = 2; i <= k; i++) if (f[i] !~ /_\[k\]$/) u = i
		ok = 1
		for (i = 2; i <= u; i++) {
			if (f[i] ~ /\+0x/) ok = 0
			if (f[i] == "[unknown]" && (i > 2 || i == u)) ok = 0
		}
		total += n; if (ok) named += n; else print "unnamed: " $0 > "/dev/stderr"
	} END { print total + 0, named + 0 }' "$out" 2>"$TMP/burst.unnamed")
	read -r total named <<<"$counts"
	if [ "$total" -ge 20 ] && [ $((named * 100)) -ge $((total * 95)) ]; then
		pass "20 processes of 300 ms: $named of $total samples named"
	else
		fail short_lived "$named of $total samples of the short-lived processes named: $(head -3 "$TMP/burst.unnamed")"
	fi
}

# Every sample accounted for, from the BPF program to the written file:
# program runs == outcomes; sampled == drained; drained == profiled + each
# named loss; profiled == the samples in the pprof, as go tool pprof reads it.
test_conservation() {
	local stats=$TMP/cons.json out=$TMP/cons.pb.gz load written
	"$WORKLOADS/cpu_ratio" 9 & load=$!
	"$KILN" record -q -d 7 -o "$out" --stats "$stats" 2>"$TMP/cons.err"
	local rc=$?
	wait $load
	[ $rc -eq 0 ] || { fail conservation "kiln record failed: $(tail -1 "$TMP/cons.err")"; return; }
	written=$(pprof_samples "$out")
	python3 - "$stats" "$written" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
written = int(sys.argv[2])
o = d["outcomes"]
total = sum(o.values())
losses = d["filtered"] + d["label_sets_full"] + d["add_failures"]
problems = []
if d["drains"] < 3: problems.append("only %d drains" % d["drains"])
if d["invariant_failures"]: problems.append("%d drains lost count" % d["invariant_failures"])
if d["drained"] != o["sampled"]: problems.append("drained %d != sampled %d" % (d["drained"], o["sampled"]))
if d["bpf_run_cnt"] != total:
    problems.append("program ran %d times, outcomes sum to %d" % (d["bpf_run_cnt"], total))
if d["profiled"] + losses != d["drained"]:
    problems.append("profiled %d + filtered/label sets full/out of memory %d != drained %d"
                    % (d["profiled"], losses, d["drained"]))
if written != d["profiled"]:
    problems.append("the pprof holds %d samples, %d were profiled" % (written, d["profiled"]))
if d["drained"] < 500: problems.append("too few samples: %d" % d["drained"])
print("; ".join(problems) if problems else
      "%d invocations == outcomes, %d sampled == drained == %d profiled + %d lost == %d in the pprof"
      % (total, d["drained"], d["profiled"], losses, written))
sys.exit(1 if problems else 0)
EOF
	if [ $? -eq 0 ]; then pass "conservation from the BPF program to the written profile"; else fail conservation "see above"; fi
}

test_pid_filter() {
	local out=$TMP/pid.folded wl others
	"$WORKLOADS/cpu_ratio" 4 & wl=$!
	"$KILN" record -q -d 2 -p $wl -o "$out" 2>"$TMP/pid.err" || { fail pid_filter "kiln record failed"; wait $wl; return; }
	wait $wl
	others=$(grep -vcE '^cpu_ratio;' "$out")
	if [ "$(folded_count "$out" '^cpu_ratio;')" -ge 100 ] && [ "$others" -eq 0 ]; then
		pass "-p profiles only that process"
	else
		fail pid_filter "$others lines of other processes, or too few samples"
	fi
}

# Stacks without frame pointers reach the thread's root: nofp_chain (gcc
# -O2, no frame pointers) is unwound from .eh_frame in BPF; only the first
# samples of the process, before its tables load, may come from frame
# pointers. A stack deeper than the walk's budget ends in [truncated],
# never in a made-up frame.
test_unwind_nofp() {
	local out=$TMP/nofp.folded deep=$TMP/deep.folded all chain n trunc bad
	"$KILN" record -q -o "$out" -- "$WORKLOADS/nofp_chain" 3 2>"$TMP/nofp.err" ||
		{ fail unwind_nofp "kiln record failed: $(tail -1 "$TMP/nofp.err")"; return; }
	all=$(folded_count "$out" '^nofp_chain;')
	chain=$(folded_count "$out" '^nofp_chain;_start;__libc_start_main[^;]*;__libc_start_call_main;main;level_one;level_two;level_three;spin_nofp( |;)')
	if [ "$all" -lt 100 ] || [ $((chain * 100)) -lt $((all * 80)) ]; then
		fail unwind_nofp "$chain of $all samples with the whole chain from _start: $(sort -t' ' -k2 -nr "$out" | head -2 | tr '\n' '|')"
		return
	fi
	"$KILN" record -q -o "$deep" -- "$WORKLOADS/nofp_chain" 2 300 2>"$TMP/deep.err" ||
		{ fail unwind_nofp "kiln record (deep) failed: $(tail -1 "$TMP/deep.err")"; return; }
	n=$(folded_count "$deep" '^nofp_chain;')
	trunc=$(folded_count "$deep" '^nofp_chain;\[truncated\];(recurse;)+')
	# a frame of no function of the program's own, under the truncation mark
	bad=$(grep '^nofp_chain;\[truncated\]' "$deep" | grep -cE ';(\[unknown\]|[^;]*\+0x)')
	if [ $((trunc * 100)) -ge $((n * 85)) ] && [ "$bad" -eq 0 ]; then
		pass "unwind without frame pointers: $chain/$all samples main..spin_nofp under _start; recursion 300 deep: $trunc/$n marked [truncated], no made-up frames"
	else
		fail unwind_nofp "deep recursion: $trunc of $n samples [truncated], $bad lines with unknown frames"
	fi
}

# kiln profiled by kiln (issue 14: its own stacks reach main): kiln view
# drawing a big folded file, three times. kiln is built with gcc -O2 and
# links Debian's libc, neither with frame pointers; main tail-calls the
# command's own main, so the chain under _start ends in view_main.
test_unwind_self() {
	local in=$TMP/self_in.folded out=$TMP/self.folded all rooted
	/usr/bin/python3 -c 'import sys
with open(sys.argv[1], "w") as f:
    for i in range(400000):
        f.write("p;a%d;b%d;c%d;d%d %d\n" % (i % 7, i % 101, i % 1009, i, 1 + i % 5))' "$in"
	"$KILN" record -q -o "$out" -- sh -c \
		"for i in 1 2 3; do '$KILN' view '$in' -o '$TMP/self.html' || exit 1; done" 2>"$TMP/self.err" ||
		{ fail unwind_self "kiln record failed: $(tail -1 "$TMP/self.err")"; return; }
	all=$(folded_count "$out" '^kiln;')
	rooted=$(folded_count "$out" '^kiln;_start;__libc_start_main[^;]*;__libc_start_call_main;(main;)?view_main(;| )')
	if [ "$all" -ge 100 ] && [ $((rooted * 100)) -ge $((all * 90)) ]; then
		pass "kiln's own stacks: $rooted/$all samples of kiln view from _start through view_main"
	else
		fail unwind_self "$rooted of $all kiln samples from _start through view_main (bar 90 %): $(sort -t' ' -k2 -nr "$out" | head -2 | tr '\n' '|')"
	fi
}

test_cli() {
	local out rc
	"$KILN" --help | grep -q '^Usage: kiln' && "$KILN" record --help | grep -q -- '--frequency' &&
		"$KILN" --version | grep -qE '^kiln [0-9]+\.[0-9]+' ||
		{ fail cli "--help / --version"; return; }
	out=$("$KILN" record -F 0 2>&1); rc=$?
	[ $rc -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q -- '--frequency' <<<"$out" ||
		{ fail cli "bad -F: rc=$rc '$out'"; return; }
	out=$("$KILN" record -o x.svg 2>&1); rc=$?
	[ $rc -eq 2 ] && grep -q 'format' <<<"$out" || { fail cli "bad extension: rc=$rc '$out'"; return; }
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$KILN" record -d 1 -o "$TMP/x.pb.gz" 2>&1); rc=$?
	[ $rc -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -q 'root' <<<"$out" ||
		{ fail cli "not root: rc=$rc '$out'"; return; }
	"$KILN" record -q -o "$TMP/exit.pb.gz" -- sh -c 'exit 3' 2>/dev/null; rc=$?
	[ $rc -eq 3 ] || { fail cli "COMMAND's exit status not returned: $rc"; return; }
	"$KILN" record -q -o "$TMP/nope.pb.gz" -- /nonexistent/cmd 2>"$TMP/nope.err"; rc=$?
	[ $rc -eq 127 ] && grep -q "cannot run '/nonexistent/cmd'" "$TMP/nope.err" ||
		{ fail cli "missing COMMAND: rc=$rc"; return; }
	pass "help, version, bad values, not root, COMMAND exit status"
}

test_html() {
	local out=$TMP/ratio.html
	"$KILN" record -q -d 2 -o "$out" -- "$WORKLOADS/cpu_ratio" 2 2>"$TMP/html.err" ||
		{ fail html "kiln record failed: $(tail -1 "$TMP/html.err")"; return; }
	grep -q 'id="kiln-data"' "$out" && grep -q '"hot_three"' "$out" && grep -q '"cpu_ratio"' "$out" &&
		grep -q 'wrote .*ratio.html (html, ' "$TMP/html.err" ||
		{ fail html "the page lacks the profile"; return; }
	pass "record -o FILE.html writes the flame graph page"
}

TESTS="test_cli test_ratio test_kernel_frames test_short_lived test_pid_filter test_conservation
	test_html test_unwind_nofp test_unwind_self"
if [ "$(id -u)" -ne 0 ]; then
	skip_all "loading BPF programs needs root (sudo make test)" $TESTS
else
	run_tests $TESTS
fi
finish "$(wc -w <<<"$TESTS")"
