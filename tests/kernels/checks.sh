#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The BPF-side checks of the kernel matrix: the same script runs on the
# host (tests/kernels/run.sh, kernel "host") and inside each qemu guest
# (busybox sh: POSIX sh, busybox applets, no python, no go).
#
# Every check prints one line: "PASS name: figures" or "FAIL name: reason".
# The first word of the figures is what run.sh shows in a kernel's summary.
#
# Environment: KILN, WORKLOADS (built test workloads), CHECK_TMP (scratch
# folder, made here), CHECK_HZ (sampling frequency, default 199),
# CHECK_GUARD (hang guard per check, seconds, default 240).
# Every kiln run profiles only its own workload (-p PID or -- COMMAND), so
# other processes and other kiln instances on the host do not disturb it.
# Durations are hang guards only: nothing asserts on wall-clock time. A
# record of a COMMAND runs until it exits (no -d): on a slow guest, loading
# kiln takes seconds, and COMMAND starts only once sampling has.
set -u

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
T=${CHECK_TMP:-/tmp/kiln-kchecks.$$}
HZ=${CHECK_HZ:-199}
mkdir -p "$T" || exit 1

pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; }

# Sum of the sample counts of the folded lines matching an extended regex.
folded_count() {
	grep -E "$2" "$1" 2>/dev/null | awk '{ s += $NF } END { print s + 0 }'
}

# Last line of a file, for failure reasons.
last() { tail -n 1 "$1" 2>/dev/null | tr -d '\r'; }

# Hang guard: every check runs in the background, and one still running
# after CHECK_GUARD s (default 240; under TCG a check takes 5-30 s) fails
# with what its processes wait in, and is killed. A hang then names its
# check and the kernel's state, where the guest's hang guard (run.sh) could
# only say that the guest did not finish.
GUARD=${CHECK_GUARD:-240}

# tree PID: PID and every process below it, from /proc/*/stat
tree() {
	cat /proc/[0-9]*/stat 2>/dev/null | sed -n 's/^\([0-9]*\) (.*) [A-Z] \([0-9]*\) .*/\1 \2/p' |
		awk -v root="$1" '{ parent[$1] = $2 }
		END {
			in_tree[root] = 1
			for (more = 1; more; ) {
				more = 0
				for (p in parent)
					if (!(p in in_tree) && (parent[p] in in_tree)) { in_tree[p] = 1; more = 1 }
			}
			for (p in in_tree) print p
		}'
}

# hang_report PID: each process of the tree with its state, the kernel
# function it waits in and its kernel stack's top; the kernel log's end
hang_report() {
	for p in $(tree "$1"); do
		st=$(sed 's/^[0-9]* (\(.*\)) \([A-Z]\) .*/\1 \2/' "/proc/$p/stat" 2>/dev/null)
		[ -n "$st" ] || continue
		stack=$(awk '{ print $2 }' "/proc/$p/stack" 2>/dev/null | head -n 4 | paste -sd, -)
		printf '%s(%s) %s in %s [%s]; ' "${st% *}" "$p" "${st##* }" "$(cat "/proc/$p/wchan" 2>/dev/null)" "$stack"
	done
	printf 'kernel log: %s' "$(dmesg 2>/dev/null | tail -n 3 | tr '\n' '|')"
}

# guarded NAME CHECK ARGS...: runs CHECK ARGS under the hang guard.
guarded() {
	name=$1
	shift
	"$@" &
	check=$!
	ticks=0
	while kill -0 $check 2>/dev/null; do
		if [ $ticks -ge $((GUARD * 5)) ]; then
			fail "$name" "still running after $GUARD s (hang guard): $(hang_report $check)"
			kill -KILL $(tree $check) 2>/dev/null
			break
		fi
		sleep 0.2
		ticks=$((ticks + 1))
	done
	wait $check 2>/dev/null
}

# user frames, the syscall entry (arm64: el0_sync before 5.13), the read
# syscall, then /dev/zero's read
# (on arm64 the leaf __arch_clear_user has no frame record, so its caller,
# read_iter_zero, is not on the stack)
case $(uname -m) in
x86_64) SYSCALL_READ='entry_SYSCALL_64[^;]*_\[k\];.*(ksys_read|__x64_sys_read)_\[k\];.*read_(zero|iter_zero)' ;;
aarch64) SYSCALL_READ='(el0t_64_sync|el0_sync)[^;]*_\[k\];.*(ksys_read|__arm64_sys_read)_\[k\];.*(read_(zero|iter_zero)|clear_user)' ;;
*) SYSCALL_READ='_\[k\];.*ksys_read_\[k\];.*read_(zero|iter_zero)' ;;
esac
# nofp_chain's whole chain under _start (libc's static __libc_start_call_main
# has no name in an arm64 guest, which has no debug file for libc: its
# frame must be there)
CHAIN='^nofp_chain;_start;__libc_start_main[^;]*;(__libc_start_call_main|libc\.so\.6\+0x[0-9a-f]+);main;level_one;level_two;level_three;spin_nofp( |;)'

# (a) Shares: cpu_ratio burns 3:1 in hot_three/hot_one on every CPU. At
# 199 Hz x 2 CPUs x 3 s (~1200 samples) the share's standard error is
# ~1.3 points, so 5 points is ~4 sigma; fewer than 400 samples fail.
check_ratio() {
	out=$T/ratio.folded
	if ! "$KILN" record -q -F "$HZ" -o "$out" --stats "$T/ratio.json" --unwind-cache "$T/tables" \
		-- "$WORKLOADS/cpu_ratio" 3 2>"$T/ratio.err"; then
		fail ratio "kiln record failed: $(last "$T/ratio.err")"; return
	fi
	# loaded with the kernel's types cut from this kernel's BTF (made now
	# or by an earlier start of this boot), not fallen back to the whole
	types=$(tr -d ' \n' <"$T/ratio.json" |
		sed -n 's/.*"kernel_types":{"cached":\([0-9]*\),"cut":\([0-9]*\),"whole":\([0-9]*\),"refused":[0-9]*,"fallbacks":\([0-9]*\),"types":\([0-9]*\)}.*/\1 \2 \3 \4 \5/p')
	case "$types" in
	"1 0 0 0 "* | "0 1 0 0 "*) ;;
	*) fail ratio "the kernel's types (cached cut whole fallbacks types): '$types', want a cut used: $(grep -m2 -E 'warn|error' "$T/ratio.err" | tr '\n' ' ')"; return ;;
	esac
	three=$(folded_count "$out" '^cpu_ratio;.*;hot_three;')
	one=$(folded_count "$out" '^cpu_ratio;.*;hot_one;')
	n=$((three + one))
	if [ "$n" -lt 400 ]; then
		fail ratio "only $n samples in hot_three/hot_one (need 400 for a 5-point test)"; return
	fi
	share=$(awk -v t="$three" -v n="$n" 'BEGIN { printf "%.1f", 100 * t / n }')
	if awk -v s="$share" 'BEGIN { exit !(s >= 70 && s <= 80) }'; then
		pass ratio "$share% hot_three of $n samples (3:1 within 5 points; ${types##* } kernel types cut)"
	else
		fail ratio "hot_three $share% of $n samples, want 75 +- 5"
	fi
}

# (b) Kernel frames under user frames: syscall_read spends its time in
# read(2) of /dev/zero.
check_kernel_frames() {
	out=$T/syscall.folded
	if ! "$KILN" record -q -F "$HZ" -o "$out" -- "$WORKLOADS/syscall_read" 2 2>"$T/syscall.err"; then
		fail kernel_frames "kiln record failed: $(last "$T/syscall.err")"; return
	fi
	all=$(folded_count "$out" '^syscall_read;')
	n=$(folded_count "$out" "^syscall_read;.*main;.*read[^;]*;$SYSCALL_READ")
	# a quarter of the process's samples at least: it reads /dev/zero all the time
	if [ "$n" -ge 50 ] && [ $((n * 4)) -ge "$all" ]; then
		pass kernel_frames "$n/$all samples user->syscall->read_zero"
	else
		fail kernel_frames "$n of $all samples with user->syscall->read_zero stacks; top: $(sort -t' ' -k2 -n "$out" | tail -n 1)"
	fi
}

# A guest emulated by TCG spends from 10 to 440 ms of a process's CPU in
# its exec and the loader's start-up (from 1 % to 47 % of short_lived's
# CPU below), more from run to run, and at times delivers fewer samples
# than HZ x CPU time (gone below: 57 samples in one run of 6.1-rt for at
# least 400 ms of CPU, 90 in the next). So the checks below judge a
# short_lived process's samples against the CPU time it reports it took
# in all (its second argument): at least a quarter of HZ x that time
# (kiln did not lose the process's samples wholesale), and of those at
# least 3/4 of the work's share of that time under main;short_lived_work
# (kiln walked and named them). fair_share WORK TOTAL FILE N: exit 0 when
# N processes of 400 ms of work wrote their CPU times to FILE and both
# hold; prints the samples HZ x their CPU time gives and the work's share.
fair_share() {
	cat "$3" 2>/dev/null | awk -v w="$1" -v t="$2" -v want="$4" -v hz="$HZ" '
	{ cus += $1; n++ }
	END {
		if (n != want || cus <= 0) { printf "%d of %d processes reported their CPU time", n, want; exit 1 }
		wus = n * 400000
		printf "%d at HZ, %d%% of the CPU in the work", hz * cus / 1e6, 100 * wus / cus
		exit !(t * 4 * 1e6 >= hz * cus && w * cus * 4 >= t * wus * 3)
	}'
}

# (c) Short-lived processes: 10 processes of 400 ms CPU each, started by a
# shell kiln follows (fork tracking), each exec'd and gone before the end.
check_short_lived() {
	out=$T/burst.folded
	rm -f "$T/burst.cpu"
	if ! "$KILN" record -q -F "$HZ" -o "$out" -- sh -c \
		"for i in 1 2 3 4 5 6 7 8 9 10; do $WORKLOADS/short_lived 400 $T/burst.cpu & done; wait" \
		2>"$T/burst.err"; then
		fail short_lived "kiln record failed: $(last "$T/burst.err")"; return
	fi
	total=$(folded_count "$out" '^short_lived;')
	# in the workload's own code, named
	work=$(folded_count "$out" '^short_lived;([^;]*;)*main;short_lived_work( |;)')
	# leaf frame named, shown (under TCG the dynamic loader's start-up
	# takes a visible share, and an arm64 guest has no debug file for it)
	named=$(grep '^short_lived;' "$out" | awk '{ n = split($1, f, ";"); if (f[n] !~ /\+0x/) s += $NF }
		END { print s + 0 }')
	procs=$(sed -n 's/.* samples, \([0-9]*\) processes$/\1/p' "$T/burst.err")
	if share=$(fair_share "$work" "$total" "$T/burst.cpu" 10) && [ "${procs:-0}" -ge 10 ]; then
		pass short_lived "$work/$total samples in main;short_lived_work ($share; $named with a named leaf), $procs processes"
	else
		fail short_lived "$named of $total samples named, $work in short_lived_work ($share), ${procs:-?} processes seen (want 10); others: $(grep '^short_lived;' "$out" | grep -vE ';main;short_lived_work( |;)' | sort -t' ' -k2 -n | tail -n 3 | tr '\n' '|')"
	fi
}

# Why kiln takes no early walks on this kernel (empty when it does):
# x86-64 only, bpf_loop (5.17), kprobes.
no_early_walks() {
	release=$(uname -r)
	major=${release%%.*}
	minor=${release#*.}
	minor=${minor%%.*}
	if [ "$(uname -m)" != x86_64 ]; then
		echo "off x86-64"
	elif [ "$major" -lt 5 ] || { [ "$major" -eq 5 ] && [ "$minor" -lt 17 ]; }; then
		echo "before 5.17 (no bpf_loop)"
	elif [ ! -e /sys/bus/event_source/devices/kprobe ] &&
		[ ! -e /sys/kernel/tracing/kprobe_events ] &&
		[ ! -e /sys/kernel/debug/tracing/kprobe_events ]; then
		echo "without kprobes"
	fi
}

# (c2) Gone before kiln read them: the command stops kiln, runs
# short_lived to its end, then lets kiln go on. Its mappings come from the
# kernel's side-band mmap records (kiln's --stats counts the snapshot):
# its samples' frames lie in known files (no [unknown]), and its 400 ms
# of work are found under main;short_lived_work (fair_share above).
check_gone() {
	out=$T/gone.folded
	rm -f "$T/gone.cpu"
	if ! "$KILN" record -q -F "$HZ" -o "$out" --stats "$T/gone.json" -- sh -c \
		"kill -STOP \$PPID; $WORKLOADS/short_lived 400 $T/gone.cpu; kill -CONT \$PPID; sleep 1" \
		2>"$T/gone.err"; then
		fail gone "kiln record failed: $(last "$T/gone.err")"; return
	fi
	total=$(folded_count "$out" '^short_lived;')
	known=$(grep '^short_lived;' "$out" | grep -v '\[unknown\]' | awk '{ s += $NF } END { print s + 0 }')
	work=$(folded_count "$out" '^short_lived;([^;]*;)*main;short_lived_work( |;)')
	side=$(tr -d ' \n' <"$T/gone.json" | sed -n 's/.*"snapshots_from_sideband":\([0-9]*\).*/\1/p')
	if share=$(fair_share "$work" "$total" "$T/gone.cpu" 1) && [ "${side:-0}" -ge 1 ] &&
		[ "$total" -ge 20 ] && [ $((known * 10)) -ge $((total * 9)) ]; then
		pass gone "$known/$total samples in known files ($work in short_lived_work; $share), snapshots from the side-band $side"
	else
		fail gone "$known/$total in known files, $work in short_lived_work ($share), snapshots from the side-band ${side:-?}: $(sort -t' ' -k2 -n "$out" | tail -n 3 | tr '\n' '|')"
	fi
}

# (d) cgroup identity: the shell moves itself into a child cgroup v2 named
# like a systemd service, then execs the workload; its samples must carry
# systemd_unit=<that name> (and service_name=<name without .service>).
check_cgroup() {
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$v2" ] || { fail cgroup "no cgroup v2 mount"; return; }
	unit=kiln-kcheck-$$.service
	cg=$v2/$unit
	mkdir "$cg" || { fail cgroup "cannot create $cg"; return; }
	out=$T/cg.folded
	"$KILN" record -q -F "$HZ" --group-by systemd_unit -o "$out" -- sh -c \
		"echo \$\$ > $cg/cgroup.procs && exec $WORKLOADS/short_lived 1000" 2>"$T/cg.err"
	rc=$?
	rmdir "$cg" 2>/dev/null
	[ $rc -eq 0 ] || { fail cgroup "kiln record failed: $(last "$T/cg.err")"; return; }
	f=$T/cg.$unit.folded
	n=$(folded_count "$f" '^short_lived;')
	if [ "$n" -ge $((HZ / 2)) ] && grep -q "service_name=${unit%.service} .*systemd_unit=$unit" "$T/cg.err"; then
		pass cgroup "$n samples labelled systemd_unit=$unit"
	else
		fail cgroup "$n samples in $f; labels seen: $(grep -c 'samples ' "$T/cg.err") sets"
	fi
}

# (e) The agent: two intervals of files, then a clean exit on SIGTERM.
check_agent() {
	d=$T/agent
	rm -rf "$d"; mkdir -p "$d"
	"$KILN" agent --output-dir "$d" --interval 2 --metrics-addr off >"$T/agent.log" 2>&1 &
	pid=$!
	"$WORKLOADS/cpu_ratio" 8 >/dev/null 2>&1 &
	load=$!
	i=0
	# hang guard: 60 s (TCG is slow); normally two intervals take ~4 s
	while [ "$(ls "$d" 2>/dev/null | grep -c -- '-all\.folded$')" -lt 2 ] && [ $i -lt 600 ]; do
		kill -0 $pid 2>/dev/null || break
		sleep 0.1; i=$((i + 1))
	done
	kill -TERM $pid 2>/dev/null
	wait $pid; rc=$?
	kill $load 2>/dev/null; wait $load 2>/dev/null
	n=$(ls "$d" | grep -c -- '-all\.folded$')
	pb=$(ls "$d" | grep -c -- '\.pb\.gz$')
	if [ "$n" -ge 2 ] && [ "$pb" -ge 2 ] && [ $rc -eq 0 ]; then
		pass agent "$n intervals ($pb pprof files), exit 0 on SIGTERM"
	else
		fail agent "$n folded / $pb pprof files, exit status $rc: $(last "$T/agent.log")"
	fi
}

# (f) Sample window: a spinner pinned to one CPU can be sampled at most
# once per period of that CPU's timer, so a D s record at F Hz holds at most
# D x F + 1 of its samples (samples from before the start or after the end
# of the window would break it).
# cpu_ticks PID: user + system CPU time of PID, in clock ticks (USER_HZ,
# 100 on every Linux architecture); uptime_ticks: the time since boot in
# the same unit.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
uptime_ticks() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }

check_window() {
	taskset -c 0 "$WORKLOADS/short_lived" 60000 >/dev/null 2>&1 &
	spin=$!
	out=$T/window.folded
	t0=$(cpu_ticks $spin) u0=$(uptime_ticks)
	"$KILN" record -q -F 97 -d 2 -p $spin -o "$out" --stats "$T/window.json" 2>"$T/window.err"
	rc=$?
	t1=$(cpu_ticks $spin) u1=$(uptime_ticks)
	kill $spin 2>/dev/null; wait $spin 2>/dev/null
	[ $rc -eq 0 ] || { fail window "kiln record failed: $(last "$T/window.err")"; return; }
	n=$(folded_count "$out" '^short_lived;')
	max=$((2 * 97 + 1))
	# at least half the samples of its share of a CPU over the run (a
	# loaded host gives it less) in the 2 s window, and a share of 10 % at
	# least
	min=$(( (t1 - t0) * 97 / (u1 - u0 > 0 ? u1 - u0 : 1) ))
	secs=$(sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$T/window.json")
	if [ "$n" -le $max ] && [ "$n" -ge "$min" ] && [ "$min" -ge 9 ]; then
		pass window "$min<=$n<=$max samples of one pinned thread in 2 s at 97 Hz ($((t1 - t0)) of $((u1 - u0)) ticks on a CPU; kiln's window $secs s)"
	else
		fail window "$n samples of one pinned thread in 2 s at 97 Hz (at most $max, at least $min for its $((t1 - t0)) of $((u1 - u0)) ticks on a CPU, a share that must be 10 % or more; kiln's window $secs s)"
	fi
}

# (h) Stacks without frame pointers: nofp_chain (gcc -O2, no frame
# pointers) spends its time in main -> level_one -> level_two ->
# level_three -> spin_nofp; the BPF walker unwinds it from .eh_frame to
# _start (on arm64 too: there the return address of the leaf is still in
# x30, which the walker takes from the sampled registers).
# $1: the check's name, then kiln's options: unwind_unrolled loads the
# walker that kernels before 5.17 (no bpf_loop) get, on every kernel.
check_unwind() {
	name=$1
	shift
	out=$T/$name.folded
	# -v: the run's log and summary (tables loaded, walks by kind) go to
	# the console when the check fails
	if ! "$KILN" record -q -v -F "$HZ" "$@" -o "$out" -- "$WORKLOADS/nofp_chain" 3 2>"$T/$name.err"; then
		sed "s/^/$name log: /" "$T/$name.err"
		fail "$name" "kiln record failed: $(last "$T/$name.err")"; return
	fi
	all=$(folded_count "$out" '^nofp_chain;')
	chain=$(folded_count "$out" "$CHAIN")
	# the first ~100 ms of a new process are walked by frame pointers
	if [ "$all" -ge "$HZ" ] && [ $((chain * 10)) -ge $((all * 7)) ]; then
		pass "$name" "$chain/$all samples main;level_one;level_two;level_three;spin_nofp under _start"
	else
		sed "s/^/$name log: /" "$T/$name.err"
		fail "$name" "$chain of $all samples with the whole chain; top: $(sort -t' ' -k2 -n "$out" | tail -n 1)"
	fi
}

# (c5) Early walks: processes of nofp_chain (no frame pointers), 50 ms of
# CPU each, one after another, recorded system-wide (a COMMAND or -p would
# have kiln read each process at its first sample). Their samples before
# kiln reads them are walked with their files' tables all the same: their
# mappings from the kprobe on perf_event_mmap (kiln_mmap), the tables
# from earlier processes of the same files. Kernels without bpf_loop
# (before 5.17) or kprobes, and arm64 (not proven yet), walk those
# samples by frame pointers: the check then says so and passes. The loops
# run before, during and after kiln's 6 s (started first, stopped after);
# only nofp_chain's samples with user frames are counted (a sample in
# execve before the new image is mapped, or in exit_group after it is
# gone, has none), and ld.so's _dl_start_user (where constructors run) is
# a root as _start is. Without early walks their frame-pointer walks stop
# at spin_nofp: in Debian 12's 6.1 under TCG, 63 % of the samples reached
# _start with --no-bpf-loop (no early walks), 83 % with them (before
# kiln's first reads stopped waiting for its kernel symbols).
check_early() {
	out=$T/early.folded
	# the files' tables built and kept on disk first: under TCG a build
	# takes seconds, as long as the record below
	"$KILN" record -q -F "$HZ" --unwind-cache "$T/tables" -o "$T/warm.folded" -- \
		"$WORKLOADS/nofp_chain" 0.2 2>"$T/warm.err"
	# with the two loops, more processes than early walks have room for
	# at once (32, a quarter of --unwind-processes 128): only their exits
	# make room for the later ones
	sh -c "n=0; while :; do $WORKLOADS/nofp_chain 0.05; n=\$((n + 1)); echo \$n >'$T/chains'; done" &
	loop=$!
	sh -c "n=0; while :; do $WORKLOADS/short_lived 0; n=\$((n + 1)); echo \$n >'$T/execs'; done" &
	execs=$!
	"$KILN" record -q -F "$HZ" -d 6 --unwind-cache "$T/tables" --unwind-processes 128 -o "$out" \
		--stats "$T/early.json" \
		2>"$T/early.err"
	rc=$?
	kill $loop $execs
	wait $loop $execs 2>/dev/null
	if [ $rc -ne 0 ]; then
		fail early "kiln record failed: $(last "$T/early.err")"; return
	fi
	all=$(($(folded_count "$out" '^nofp_chain;') - $(folded_count "$out" '^nofp_chain;[^;]*_\[k\]( |;)')))
	root=$(folded_count "$out" '^nofp_chain;(_start|_dl_start_user);')
	early=$(tr -d ' \n' <"$T/early.json" | sed -n 's/.*"early":\([0-9]*\).*/\1/p')
	no_room=$(tr -d ' \n' <"$T/early.json" | sed -n 's/.*"early_left_out.processes_full":\([0-9]*\).*/\1/p')
	# (a loop killed between its file's truncation and its write leaves it empty)
	execs=$(cat "$T/execs" 2>/dev/null)
	chains=$(cat "$T/chains" 2>/dev/null)
	execs=$((${execs:-0} + ${chains:-0}))
	why=$(no_early_walks)
	if [ -n "$why" ]; then
		pass early "n/a $why: $root/$all samples with user frames under _start"
	elif [ "$all" -ge "$HZ" ] && [ "${early:-0}" -gt 0 ] && [ $((root * 20)) -ge $((all * 17)) ] &&
		[ "$execs" -gt 32 ] && [ "$no_room" = 0 ]; then
		pass early "$root/$all samples with user frames under _start (or ld.so's _dl_start_user), ${early} of all stacks walked before kiln read their process, $execs processes run, none left out of early walks"
	else
		fail early "$root of $all samples with user frames under _start (or _dl_start_user), ${early:-?} early walks, $execs processes run (want > 32), ${no_room:-?} mappings left out for want of room (want 0); top: $(sort -t' ' -k2 -n "$out" | tail -n 1)"
	fi
}

# (f2) Interpreter walkers, loaded only once a process of their language
# shows up (sampler__load_walker): python_fake and ruby_fake pass kiln's
# checks of an interpreter, then spin; the walks of their language's
# walker prove it loaded and ran on this kernel.
check_interp() {
	if [ "$(uname -m)" != x86_64 ]; then
		pass interp "n/a off x86-64 (interpreter frames are walked on x86-64 only)"; return
	fi
	walks=""
	for lang in python ruby; do
		if ! "$KILN" record -q -F "$HZ" -o "$T/$lang.folded" --stats "$T/$lang.json" -- \
			"$WORKLOADS/${lang}_fake" 2 2>"$T/$lang.err"; then
			fail interp "kiln record of ${lang}_fake failed: $(last "$T/$lang.err")"; return
		fi
		n=$(tr -d ' \n' <"$T/$lang.json" | sed -n "s/.*\"$lang\":{\"walks\":\([0-9]*\).*/\1/p")
		if [ "${n:-0}" -lt 10 ]; then
			fail interp "${lang}_fake: ${n:-no} walks by the $lang walker (want 10 or more): $(grep -m1 -E 'walker|warn' "$T/$lang.err")"; return
		fi
		walks="$walks${walks:+/}$n"
	done
	pass interp "$walks walks by the python/ruby walkers"
}

# (f3) Restarts under mapping churn: kiln starts and stops 8 times while
# two map_churn processes map, split and unmap memory and their own code as
# fast as they can, so its probes are armed and disarmed while the other
# CPU runs the paths they hook; each record's command, another map_churn,
# lists the kernel's kprobes meanwhile. Every run must end well, the guest
# must not crash (run.sh catches an oops), and where kiln takes early walks
# its kprobe must be there and on an ftrace site ("[FTRACE]" in the
# kprobes list), a patched call, not an int3 trap at every call. Under
# qemu's threaded TCG, 6.1 crashed within the first 1-2 restarts (see
# run.sh's boot).
check_restarts() {
	list=/sys/kernel/debug/kprobes/list
	cat "$list" >"$T/kprobes.before" 2>/dev/null
	"$WORKLOADS/map_churn" 900 >/dev/null &
	c1=$!
	"$WORKLOADS/map_churn" 900 >/dev/null &
	c2=$!
	i=0 failed=0
	: >"$T/kprobes.kiln"
	while [ $i -lt 8 ]; do
		"$KILN" record -q -F "$HZ" -o "$T/restart.folded" -- sh -c \
			"cat $list >'$T/kprobes.during' 2>/dev/null; exec $WORKLOADS/map_churn 0.2 >/dev/null" \
			2>"$T/restart.err" || { failed=$((failed + 1)); cp "$T/restart.err" "$T/restart.failed"; }
		# kiln's: the lines that were not there before it
		awk -v before="$T/kprobes.before" 'FILENAME == before { seen[$0]; next } !($0 in seen)' \
			"$T/kprobes.before" "$T/kprobes.during" >>"$T/kprobes.kiln" 2>/dev/null
		i=$((i + 1))
	done
	kill $c1 $c2
	wait $c1 $c2 2>/dev/null
	probes=$(sort -u "$T/kprobes.kiln" | awk '{ print $3 ($4 ? " " $4 : "") }' | paste -sd, -)
	int3=$(grep -vc '\[FTRACE\]' "$T/kprobes.kiln")
	why=$(no_early_walks)
	if [ $failed -gt 0 ]; then
		fail restarts "$failed of $i kiln records failed: $(last "$T/restart.failed")"
	elif [ "$int3" -gt 0 ]; then
		fail restarts "kiln's kprobes not all on an ftrace site (an int3 trap at every call): $probes"
	elif [ -z "$why" ] && [ -r "$list" ] && [ -z "$probes" ]; then
		fail restarts "kiln attached no kprobe (its early walks' probe) in $i runs: $(grep -m1 kprobe "$T/restart.err")"
	else
		pass restarts "$i starts and stops under mapping churn, kiln's kprobes: ${probes:-none${why:+ ($why)}}"
	fi
}

# (g) Refusal: with /sys/kernel/btf/vmlinux hidden (an empty file bound
# over it, in a mount namespace of its own so nothing else on the host sees
# it), kiln says so in one line, exits non-zero and writes nothing.
check_no_btf() {
	: >"$T/empty"
	out=$T/nobtf.folded
	unshare -m sh -c "mount --bind '$T/empty' /sys/kernel/btf/vmlinux &&
		exec '$KILN' record -q -d 1 -o '$out' -- true" >"$T/nobtf.out" 2>"$T/nobtf.err"
	rc=$?
	lines=$(cat "$T/nobtf.out" "$T/nobtf.err" | wc -l)
	if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && [ ! -e "$out" ] &&
		grep -q 'no BTF.*Linux 5\.4.*needs Linux 5\.10' "$T/nobtf.err"; then
		pass no_btf "exit=$rc with one line: $(cat "$T/nobtf.err")"
	else
		fail no_btf "exit $rc, $lines lines, output $([ -e "$out" ] && echo written || echo absent): $(head -n 2 "$T/nobtf.err" | tr '\n' '|')"
	fi
}

guarded ratio check_ratio
guarded unwind check_unwind unwind
guarded unwind_unrolled check_unwind unwind_unrolled --no-bpf-loop
guarded kernel_frames check_kernel_frames
guarded short_lived check_short_lived
guarded early check_early
guarded gone check_gone
guarded cgroup check_cgroup
guarded agent check_agent
guarded window check_window
guarded interp check_interp
guarded restarts check_restarts
guarded no_btf check_no_btf
rm -rf "$T"
