#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The kernel matrix: runs tests/kernels/checks.sh on every kernel of
# tests/kernels/kernels.list. "host" runs it here; every other line is a
# Debian kernel package, fetched with apt-get download into $CACHE (never
# installed, never /boot), unpacked with dpkg-deb -x and booted under qemu
# (KVM when /dev/kvm works, TCG otherwise) with a small initramfs: busybox
# (busybox-static), the freshly built kiln and its shared libraries, the
# test workloads and the check script. The guest's init mounts what kiln
# needs, runs the checks and powers off; its PASS/FAIL lines come back over
# the serial console.
#
# Prints one line per kernel and "N passed, N failed, N skipped" last; exits
# non-zero when a kernel fails. A kernel that cannot be fetched or booted
# fails. KERNELS="host 6.1-cloud-amd64" narrows the list on purpose: the
# kernels left out are counted as skipped.
#
# Environment: KERNELS (names, default all), CACHE (default build/kernels),
# BUILD_amd64 / BUILD_arm64 (kiln build folders, default build and
# build-arm64), BOOT_TIMEOUT (hang guard per guest, seconds, default 900),
# KVM_DEADLINE (seconds a KVM guest has to begin its checks before it is
# stopped and the kernel booted under TCG instead, as are all the guests
# after it, default 60; a KVM
# internal error stops it at once).
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIST=$ROOT/tests/kernels/kernels.list
CHECKS=$ROOT/tests/kernels/checks.sh
CACHE=${CACHE:-$ROOT/build/kernels}
KERNELS=${KERNELS:-}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
KVM_DEADLINE=${KVM_DEADLINE:-60}
BUILD_amd64=${BUILD_amd64:-$ROOT/build}
BUILD_arm64=${BUILD_arm64:-$ROOT/build-arm64}
HOST_ARCH=$(dpkg --print-architecture)
# the checks the script runs: a kernel reporting fewer (one crashed) fails
EXPECTED=$(grep -cE '^guarded [a-z_]+ check_[a-z_]+( [a-z_-]+)*$' "$CHECKS")
passed=0 failed=0 skipped=0
kvm_failed=     # the guest whose KVM boot failed: the rest boot under TCG

# Kernel options kiln and the guest's init need, all built in (=y): the
# initramfs carries no modules.
NEEDED_CONFIG="BPF_SYSCALL BPF_EVENTS DEBUG_INFO_BTF PERF_EVENTS CGROUPS CGROUP_BPF
	DEBUG_FS BLK_DEV_INITRD RD_GZIP DEVTMPFS TMPFS KALLSYMS"

mkdir -p "$CACHE/debs" "$CACHE/logs" || exit 1

log() { echo "$*" >&2; }

# selected NAME: is this kernel in $KERNELS (or is $KERNELS empty)?
selected() {
	[ -z "$KERNELS" ] && return 0
	case " $KERNELS " in *" $1 "*) return 0 ;; esac
	return 1
}

# apt_suite SUITE: sets apt_opts to apt-get options that fetch from
# Debian's SUITE (and its -security) through apt state of its own under
# $CACHE, updated here; the host's sources and lists stay as they are.
apt_suite() {
	local suite=$1 st=$CACHE/apt-$1
	apt_opts=(-o Dir::Etc::SourceList="$st/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$st/lists" -o Dir::Cache="$st/cache")
	mkdir -p "$st/lists/partial" "$st/cache/archives/partial" || return 1
	printf 'deb [arch=amd64,arm64] http://deb.debian.org/debian %s main\ndeb [arch=amd64,arm64] http://deb.debian.org/debian-security %s-security main\n' \
		"$suite" "$suite" >"$st/sources.list"
	apt-get -q "${apt_opts[@]}" update >"$CACHE/logs/apt-$suite.update" 2>&1 ||
		{ log "apt-get update for $suite: $(tail -n 1 "$CACHE/logs/apt-$suite.update")"; return 1; }
}

# fetch PACKAGE ARCH [SUITE]: the unpacked package's folder, on stdout.
fetch() {
	local pkg=$1 arch=$2 suite=${3:--} deb dir apt_opts=()
	dir=$CACHE/$pkg
	if [ ! -e "$dir/.unpacked" ]; then
		deb=$(ls "$CACHE"/debs/"${pkg}"_*_"$arch".deb 2>/dev/null | tail -n 1)
		if [ -z "$deb" ]; then
			if [ "$suite" != - ]; then
				apt_suite "$suite" || return 1
			fi
			# apt-get download writes into the current folder
			(cd "$CACHE/debs" && apt-get download -q "${apt_opts[@]}" "$pkg:$arch") >"$CACHE/logs/$pkg.fetch" 2>&1 ||
				{ log "apt-get download $pkg:$arch: $(tail -n 1 "$CACHE/logs/$pkg.fetch")"; return 1; }
			deb=$(ls "$CACHE"/debs/"${pkg}"_*_"$arch".deb | tail -n 1)
		fi
		rm -rf "$dir" "$dir.tmp" && mkdir -p "$dir"
		dpkg-deb -x "$deb" "$dir.tmp" || return 1
		# keep the kernel and its config, or busybox: no modules (config_ok),
		# and no *.d folders for the Makefile's dependency scan of build/
		[ -d "$dir.tmp/boot" ] && mv "$dir.tmp/boot" "$dir/"
		[ -x "$dir.tmp/bin/busybox" ] && mv "$dir.tmp/bin" "$dir/"
		rm -rf "$dir.tmp"
		touch "$dir/.unpacked"
	fi
	echo "$dir"
}

# config_ok CONFIG: every NEEDED_CONFIG option built in, or says which not.
config_ok() {
	local opt missing=
	for opt in $NEEDED_CONFIG; do
		grep -q "^CONFIG_$opt=y" "$1" || missing="$missing $opt"
	done
	[ -z "$missing" ] && return 0
	echo "not built in:$missing"
	return 1
}

# libs BINARY...: the shared libraries the binaries load (and the loader).
# ldd for this host's architecture; a cross build's NEEDED entries are
# looked up in the multiarch folders of the cross packages instead.
libs() {
	local arch=$1; shift
	if [ "$arch" = "$HOST_ARCH" ]; then
		ldd "$@" | awk '/=> \// { print $3 } /^\t\/[^ ]*ld-linux/ { print $1 }' | sort -u
		return
	fi
	local triplet=aarch64-linux-gnu todo=("$@") seen=" " f n p
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}; todo=("${todo[@]:1}")
		for n in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
			case $seen in *" $n "*) continue ;; esac
			seen="$seen$n "
			for p in /lib/$triplet/$n /usr/lib/$triplet/$n; do
				[ -e "$p" ] && { echo "$p"; todo+=("$p"); break; }
			done
		done
	done | sort -u
	echo /lib/ld-linux-aarch64.so.1
}

# initramfs ARCH OUT: busybox, kiln, libraries, workloads, checks, init.
initramfs() {
	local arch=$1 out=$2 build=BUILD_$1 st lib bb id dbg
	build=${!build}
	st=$CACHE/initramfs-$arch
	rm -rf "$st" && mkdir -p "$st"/{bin,kiln,proc,sys,dev,tmp,etc} || return 1
	if [ "$arch" = "$HOST_ARCH" ]; then
		bb=/bin/busybox
	else
		bb=$(fetch busybox-static "$arch")/bin/busybox || return 1
	fi
	[ -x "$bb" ] || { log "no busybox for $arch (busybox-static)"; return 1; }
	[ -x "$build/kiln" ] || { log "no $build/kiln: build it first"; return 1; }
	cp "$bb" "$st/bin/busybox"
	cp "$build/kiln" "$CHECKS" "$st/kiln/"
	cp -r "$build/workloads" "$st/kiln/workloads"
	for lib in $(libs "$arch" "$build/kiln" "$build"/workloads/*); do
		mkdir -p "$st$(dirname "$lib")"
		cp -L "$lib" "$st$lib"
		# its debug file by build id (libc6-dbg), so libc frames get names
		id=$(readelf -n "$lib" 2>/dev/null | awk '/Build ID/ { print $3 }')
		dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
		if [ -n "$id" ] && [ -f "$dbg" ]; then
			mkdir -p "$st${dbg%/*}" && cp "$dbg" "$st$dbg"
		fi
	done
	cat >"$st/init" <<'EOF'
#!/bin/busybox sh
# PID 1 of the test guest: mount what kiln needs, run the checks, power off.
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmp /tmp
hostname kiln-guest
echo "KCHECK-BEGIN $(uname -r) clock=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
KILN=/kiln/kiln WORKLOADS=/kiln/workloads CHECK_TMP=/tmp/checks sh /kiln/checks.sh
echo "KCHECK-END"
poweroff -f
EOF
	chmod +x "$st/init"
	(cd "$st" && find . | cpio -o -H newc --quiet | gzip -1) >"$out" || return 1
	rm -rf "$st"
}

# The first line of a kernel's report of a crash: an oops, a page fault it
# could not handle, a panic.
CRASH='(Oops: |BUG: unable to handle|BUG: kernel NULL pointer|general protection fault|Kernel panic)'

# crash_line LOG: that line in a guest's console; status 1 when none.
crash_line() {
	tr -d '\r' 2>/dev/null <"$1" | grep -m 1 -E "\] $CRASH"
}

# crash_summary LOG: that report in one line: its first line, the task and
# CPU it hit, where (RIP), and the innermost functions of its call trace.
crash_summary() {
	tr -d '\r' <"$1" | sed 's/^\[ *[0-9.]*\] //' | awk -v crash="^$CRASH" '
		$0 ~ crash && !n { out = $0; n = 1; next }
		n && /^CPU: / && !cpu { cpu = 1; out = out " | " $0; next }
		n && /^RIP: / && !rip { rip = 1; out = out " | " $0; next }
		n && /^Call Trace:/ { trace = 1; next }
		n && trace && /^ [a-z_]/ && frames < 4 { frames++; out = out " | " $1; next }
		n && trace && /<\/TASK>/ { trace = 0 }
		END { print out }'
}

# boot ACCEL FLAVOUR KERNEL INITRD LOG [DEADLINE]: runs the guest until it
# powers off, or its kernel crashed; with DEADLINE, stops it when its
# checks have not begun that many seconds after the start, or at once when
# KVM reports an internal error (a KVM that hangs instead of failing; KVM
# boots a guest in seconds).
boot() {
	local accel=$1 flavour=$2 kernel=$3 initrd=$4 logf=$5 deadline=${6:-} qemu console machine cpu=max accel_opts=$1 pid t
	case $flavour in
	pc) qemu=qemu-system-x86_64 console=ttyS0 machine=pc ;;
	virt) qemu=qemu-system-aarch64 console=ttyAMA0 machine=virt ;;
	*) log "unknown qemu flavour $flavour"; return 1 ;;
	esac
	[ "$accel" = kvm ] && cpu=host
	# TCG runs both vCPUs in one thread: with a thread each (qemu 7.2's
	# default), a kprobe armed and disarmed through tracefs alone, no kiln,
	# while the other vCPU maps memory sent 6.1 to RIP 0 within 10-20
	# rounds; in one thread, 60 rounds passed (docs/kernels.md)
	[ "$accel" = tcg ] && accel_opts=tcg,thread=single
	# loglevel=5: the kernel's errors (a hung task, an RCU stall) reach the
	# console, and so the log of a guest that did not finish; with the
	# default level's lines, so a crash report keeps its registers and code
	$qemu -machine "$machine" -accel "$accel_opts" -cpu $cpu \
		-smp 2 -m 1024 -no-reboot -display none -monitor none -serial stdio \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=$console panic=-1 quiet loglevel=5" </dev/null >"$logf" 2>&1 &
	pid=$!
	# Watched while it runs: a kernel that crashed is stopped a few
	# seconds after its report begins (the rest of the report), not left
	# to BOOT_TIMEOUT; with a deadline, a guest whose checks have not
	# begun by then (or whose KVM failed) is stopped.
	for ((t = 0; ; t++)); do
		kill -0 "$pid" 2>/dev/null || break
		if [ "$t" -ge "$BOOT_TIMEOUT" ]; then
			log "$accel: still running after $BOOT_TIMEOUT s: stopped"
			stop_guest "$pid"
			break
		fi
		if crash_line "$logf" >/dev/null; then
			sleep 5
			log "$accel: the kernel crashed: stopped"
			stop_guest "$pid"
			break
		fi
		if [ -n "$deadline" ] && ! grep -q '^KCHECK-BEGIN' "$logf" 2>/dev/null &&
			{ [ "$t" -ge "$deadline" ] || grep -q 'KVM internal error' "$logf" 2>/dev/null; }; then
			log "$accel: no checks $t s after the start: stopped"
			stop_guest "$pid"
			break
		fi
		sleep 1
	done
	wait "$pid"
}

# stop_guest PID: stops the qemu PID, and makes sure it is gone: KVM
# guests stopped by a SIGTERM were once found still running, orphaned,
# each spinning a CPU for the rest of make test (docs/kernels.md).
stop_guest() {
	local i
	kill "$1" 2>/dev/null
	for ((i = 0; i < 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 1
	done
	log "qemu $1 still running 10 s after SIGTERM: killed"
	kill -KILL "$1" 2>/dev/null
}

# report NAME RELEASE WHERE SECONDS CHECKLINES: the kernel's line.
report() {
	local name=$1 release=$2 where=$3 secs=$4 lines=$5 n nf figs
	n=$(grep -c '^PASS ' <<<"$lines")
	nf=$(grep -c '^FAIL ' <<<"$lines")
	# the first word of each check's figures
	figs=$(sed -n 's/^PASS \([a-z_]*\): \([^ ]*\).*/\1 \2/p' <<<"$lines" | paste -sd, - | sed 's/,/, /g')
	if [ "$nf" -eq 0 ] && [ "$n" -eq "$EXPECTED" ]; then
		echo "PASS kernel $release ($name, $where): $n checks ($figs) in $secs s"
		passed=$((passed + 1))
	else
		echo "FAIL kernel $release ($name, $where): $nf of $EXPECTED checks failed, $((EXPECTED - n - nf)) did not report, in $secs s"
		grep '^FAIL ' <<<"$lines" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
}

# kernel_fail NAME WHY: a kernel that could not be fetched or booted.
kernel_fail() {
	echo "FAIL kernel $1: $2"
	failed=$((failed + 1))
}

run_host() {
	local name=$1 arch=$2 build=BUILD_$2 t0=$SECONDS lines
	build=${!build}
	[ "$arch" = "$HOST_ARCH" ] || { kernel_fail "$name" "host is $HOST_ARCH, not $arch"; return; }
	lines=$(KILN=$build/kiln WORKLOADS=$build/workloads CHECK_TMP=$CACHE/host-checks \
		timeout -k 10 "$BOOT_TIMEOUT" sh "$CHECKS" 2>&1 | tee "$CACHE/logs/$name.log" | grep -E '^(PASS|FAIL) ')
	report "$name" "$(uname -r)" host $((SECONDS - t0)) "$lines"
}

run_guest() {
	local name=$1 pkg=$2 arch=$3 flavour=$4 suite=$5 t0=$SECONDS dir kernel release why
	local initrd=$CACHE/initramfs-$arch.cpio.gz logf=$CACHE/logs/$name.log lines where
	dir=$(fetch "$pkg" "$arch" "$suite") || { kernel_fail "$name" "cannot fetch $pkg:$arch"; return; }
	kernel=$(ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -n 1)
	[ -n "$kernel" ] || { kernel_fail "$name" "no /boot/vmlinuz-* in $pkg"; return; }
	release=${kernel##*/vmlinuz-}
	why=$(config_ok "$dir/boot/config-$release") || { kernel_fail "$release ($name)" "$why"; return; }
	# built once a run, from this run's kiln
	if [ -z "${built[$arch]:-}" ]; then
		initramfs "$arch" "$initrd" || { kernel_fail "$name" "cannot build the $arch initramfs"; return; }
		built[$arch]=1
	fi
	# KVM when the host offers it for this guest; where /dev/kvm exists but
	# does not work (nested virtualisation), qemu stops at once, or hangs
	# (a KVM internal error, a spinning vCPU): stopped then, or after
	# KVM_DEADLINE s without its checks begun. Then TCG, for this guest and
	# the ones after it: the host's KVM does not change within a run.
	local rc=1
	rm -f "$logf" "$logf.kvm-failed"
	if [ "$flavour" = pc ] && [ "$HOST_ARCH" = amd64 ] && [ -w /dev/kvm ] && [ -z "$kvm_failed" ]; then
		{ boot kvm "$flavour" "$kernel" "$initrd" "$logf" "$KVM_DEADLINE"; rc=$?; } 2>/dev/null
		grep -q '^KCHECK-BEGIN' "$logf" || { mv "$logf" "$logf.kvm-failed"; kvm_failed=$name; }
	fi
	if ! grep -qs '^KCHECK-BEGIN' "$logf"; then
		boot tcg "$flavour" "$kernel" "$initrd" "$logf"; rc=$?
	fi
	if crash_line "$logf" >/dev/null; then
		kernel_fail "$release ($name)" "the kernel crashed after $(tr -d '\r' <"$logf" |
			grep -E '^(PASS|FAIL) ' | tail -n 1 | cut -d: -f1 | grep . || echo 'no check'): $(crash_summary "$logf") [$logf]"
		return
	fi
	if ! grep -q '^KCHECK-END' "$logf"; then
		# the last check that reported, and the console's last lines (the
		# kernel's reports of a lockup, a stall or a panic among them)
		kernel_fail "$release ($name)" "the guest did not finish (qemu status $rc) after $(tr -d '\r' <"$logf" |
			grep -E '^(PASS|FAIL) ' | tail -n 1 | cut -d: -f1 | grep . || echo 'no check'); its console's end: $(tr -d '\r' <"$logf" |
			grep -v '^$' | tail -n 12 | paste -sd'|' -) [$logf]"
		return
	fi
	where=$(tr -d '\r' <"$logf" | sed -n 's/^KCHECK-BEGIN .* clock=\(.*\)/\1/p')
	case $where in kvm-clock) where=kvm ;; *) where="tcg, $flavour" ;; esac
	lines=$(tr -d '\r' <"$logf" | sed -n '/^KCHECK-BEGIN/,/^KCHECK-END/p' | grep -E '^(PASS|FAIL) ')
	report "$name" "$release" "$where" $((SECONDS - t0)) "$lines"
}

declare -A built
names=" "
t_all=$SECONDS
while read -r name pkg arch flavour suite _; do
	case $name in ''|'#'*) continue ;; esac
	names="$names$name "
	if ! selected "$name"; then
		skipped=$((skipped + 1)); continue
	fi
	if [ "$pkg" = host ]; then
		run_host "$name" "$arch"
	else
		run_guest "$name" "$pkg" "$arch" "$flavour" "${suite:--}"
	fi
done <"$LIST"
for k in $KERNELS; do
	case $names in *" $k "*) ;; *) kernel_fail "$k" "not in tests/kernels/kernels.list" ;; esac
done
echo "kernel matrix: $((SECONDS - t_all)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
