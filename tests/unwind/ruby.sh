#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Ruby frames (docs/ruby.md), judged on Debian's ruby3.1: kiln record of
# tests/unwind/workloads/rb_shares.rb, whose methods take CPU time 5:3:2
# and which prints what each really took (the truth).
#
#   shares     Shares#five, Shares#three and Shares.two carry their true
#              shares of the samples within 2 points, each directly under
#              its Ruby caller (Object#main), with the block of
#              Shares#spin and the C method it runs in (Integer#times'
#              native code) above them
#   short      the same for a script of 4 s, ended before kiln record's
#              first drain (10 s): its frames are named (method entries and
#              all) from its samples' stacks as they arrive, not at the
#              drain after it ended (bar 3 points: a third of the samples)
#   lines      pprof (go tool pprof -lines -traces) gives Shares#five its
#              file and the line of its call to spin
#   threads    one thread in Ruby (Object#rb_spin), one compressing with the
#              GVL released (Object#deflate_worker): each thread's samples under its
#              own method, the compressing ones on zlib's native code, no
#              stack holding both
#   fake / refuse  a program that pretends to be Ruby 3.1
#              (tests/workloads/ruby_fake.c) and then turns its frames into
#              garbage: kiln ends, its failures are counted, its native
#              frames kept, its memory bounded; one whose checks fail from
#              the start is refused, counted, logged
#   fallback   the same fake without ruby_current_ec: the GVL holder's
#              execution context, used for its own thread only; a second
#              thread in rb_vm_exec keeps its native frames, counted (all
#              but the samples before kiln's first read of the process)
#   off        --no-ruby: no Ruby frame, rb_vm_exec kept, nothing read
#
# Environment: KILN, WORKLOADS (build/workloads), RB_SECONDS (6: CPU seconds
# each workload runs), RB_HZ (499). Needs root.
set -u
. "$(dirname "$0")/../lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
SECONDS_CPU=${RB_SECONDS:-6}
HZ=${RB_HZ:-499}
SHARE_BAR=2
SCRIPT=$HERE/workloads/rb_shares.rb
RUBY=/usr/bin/ruby3.1
TMP=$(mktemp -d /tmp/kiln-ruby.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# record NAME [KILN OPTIONS] -- ARGS...: kiln record of ARGS into
# $TMP/NAME.{folded,json,out,err}.
record() {
	local name=$1
	shift
	local opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	timeout -s INT 300 "$KILN" record -q -F "$HZ" "${opts[@]}" --stats "$TMP/$name.json" \
		-o "$TMP/$name.folded" -- "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
}

have_ruby() {
	[ -x "$RUBY" ] && return 0
	fail "$1" "$RUBY missing (make test-deps installs ruby3.1)"
	return 1
}

# check_shares NAME [KILN OPTIONS]: the script's methods' shares and
# stacks under Object#main.
check_shares() {
	local name=$1 r worst n chained block
	shift
	have_ruby "$name" || return
	if ! record "$name" "$@" -- "$RUBY" "$SCRIPT" "$SECONDS_CPU"; then
		fail "$name" "kiln record failed: $(tail -1 "$TMP/$name.err")"
		return
	fi
	r=$(python3 "$HERE/interp_check.py" shares "$TMP/$name.folded" "$TMP/$name.out" \
		Object#main Shares#spin "block in Shares#spin")
	read -r worst n chained block _ <<<"$r"
	echo "   $name: $r"
	if [ "$n" -ge 300 ] && awk -v w="$worst" -v b="$SHARE_BAR" -v c="$chained" -v k="$block" \
		'BEGIN { exit !(w <= b && c >= 99 && k >= 10) }'; then
		pass "$name"
	else
		fail "$name" "$r (worst point difference, samples, % under main, % in the block, shares); detected $(stats_json "$TMP/$name.json" ruby detected), log: $(grep -m1 'ruby' "$TMP/$name.err")"
	fi
}

test_shares() { check_shares shares; }

test_short() { SECONDS_CPU=4 SHARE_BAR=3 check_shares short; }

# The unrolled walkers that kernels before 5.17 load (--no-bpf-loop).
test_unrolled() { check_shares unrolled --no-bpf-loop; }

test_lines() {
	local line
	have_ruby lines || return
	timeout 300 "$KILN" record -q -F "$HZ" -o "$TMP/lines.pb.gz" -- "$RUBY" "$SCRIPT" 2 \
		>/dev/null 2>&1
	# the line where five calls spin, read from the script
	line=$(grep -n 'spin(0.005' "$SCRIPT" | cut -d: -f1)
	if HOME=$TMP GOCACHE=$TMP/gocache go tool pprof -lines -traces "$TMP/lines.pb.gz" 2>/dev/null |
		grep -Eq "Shares#five $SCRIPT:$line\$"; then
		pass lines
	else
		fail lines "no 'Shares#five $SCRIPT:$line' in go tool pprof -lines -traces"
	fi
}

test_threads() {
	local r spin work native both
	have_ruby threads || return
	if ! record threads -- "$RUBY" "$SCRIPT" "$SECONDS_CPU" threads; then
		fail threads "kiln record failed: $(tail -1 "$TMP/threads.err")"
		return
	fi
	r=$(python3 "$HERE/interp_check.py" threads "$TMP/threads.folded" Object#rb_spin Object#deflate_worker \
		deflate longest_match fill_window compress_block libz)
	read -r spin work native both <<<"$r"
	echo "   threads: rb_spin $spin, deflate_worker $work (on zlib code $native), both $both"
	if [ "$spin" -ge 200 ] && [ "$work" -ge 200 ] && [ "$both" = 0 ] &&
		[ $((native * 100)) -ge $((work * 90)) ]; then
		pass threads
	else
		fail threads "rb_spin $spin, deflate_worker $work (zlib $native), both $both"
	fi
}

test_fake() {
	local errs rss total native
	if ! record fake -- "$WORKLOADS/ruby_fake" "$SECONDS_CPU"; then
		fail fake "kiln record failed: $(tail -1 "$TMP/fake.err")"
		return
	fi
	errs=0
	for k in frame_unreadable not_iseq frame_cap walk_budget; do
		errs=$((errs + $(stats_json "$TMP/fake.json" ruby walk_errors.$k)))
	done
	rss=$(stats_json "$TMP/fake.json" max_rss_kb)
	total=$(awk '{ n += $NF } END { print n + 0 }' "$TMP/fake.folded")
	native=$(awk '/;main;rb_vm_exec/ { n += $NF } END { print n + 0 }' "$TMP/fake.folded")
	echo "   fake: detected $(stats_json "$TMP/fake.json" ruby detected), walk errors $errs, $native of $total samples on native rb_vm_exec, max RSS $rss KiB"
	if [ "$(stats_json "$TMP/fake.json" ruby detected)" = 1 ] && [ "$errs" -ge 10 ] &&
		[ "$total" -ge 300 ] && [ "$native" -ge 10 ] && grep -q ";main;fake_method" "$TMP/fake.folded" &&
		[ "$rss" -lt 262144 ]; then
		pass fake
	else
		fail fake "detected, walk errors, native frames or memory not as expected"
	fi
}

test_refuse() {
	if record refuse -- "$WORKLOADS/ruby_fake" 2 refuse &&
		[ "$(stats_json "$TMP/refuse.json" ruby refused.offsets)" = 1 ] &&
		[ "$(stats_json "$TMP/refuse.json" ruby walks)" = 0 ] &&
		grep -q ";main;rb_vm_exec" "$TMP/refuse.folded" &&
		grep -q "ruby_fake.*offsets" "$TMP/refuse.err"; then
		pass refuse
	else
		fail refuse "no counted, logged refusal with native frames: refused.offsets $(stats_json "$TMP/refuse.json" ruby refused.offsets), walks $(stats_json "$TMP/refuse.json" ruby walks), log: $(grep -m1 'ruby' "$TMP/refuse.err")"
	fi
}

test_fallback() {
	local own other
	if ! record fallback -- "$WORKLOADS/ruby_fake" 3 gvl; then
		fail fallback "kiln record failed: $(tail -1 "$TMP/fallback.err")"
		return
	fi
	own=$(awk '/;main;fake_method/ { n += $NF } END { print n + 0 }' "$TMP/fallback.folded")
	other=$(awk '/;other_thread;rb_vm_exec/ && !/fake_method/ { n += $NF } END { print n + 0 }' \
		"$TMP/fallback.folded")
	# (the first samples of a process, walked by frame pointers before its
	# tables are in or before it is known as Ruby, have no Ruby walk, so no
	# not_gvl_holder either)
	echo "   fallback: main thread $own samples with Ruby frames, other thread $other native, not_gvl_holder $(stats_json "$TMP/fallback.json" ruby walk_errors.not_gvl_holder), by frame pointers $(stats_json "$TMP/fallback.json" walker frame_pointer_stacks)"
	if [ "$own" -ge 100 ] && [ "$other" -ge 100 ] &&
		! grep -q "other_thread.*fake_method" "$TMP/fallback.folded" &&
		[ $(($(stats_json "$TMP/fallback.json" ruby walk_errors.not_gvl_holder) * 10)) -ge $((other * 9)) ]; then
		pass fallback
	else
		fail fallback "the GVL holder's frames given to another thread, or none to its own"
	fi
}

test_off() {
	have_ruby off || return
	if record off --no-ruby -- "$RUBY" "$SCRIPT" 1 &&
		[ "$(stats_json "$TMP/off.json" ruby detected)" = 0 ] &&
		[ "$(stats_json "$TMP/off.json" ruby walks)" = 0 ] &&
		grep -q ";rb_vm_exec;" "$TMP/off.folded" && ! grep -q "five" "$TMP/off.folded"; then
		pass off
	else
		fail off "--no-ruby: Ruby frames or reads seen"
	fi
}

if [ "$(id -u)" != 0 ]; then
	skip_all "needs root" test_shares
	finish 1
	exit
fi
run_tests test_shares test_short test_lines test_threads test_fake test_refuse test_fallback test_off test_unrolled
finish 9
