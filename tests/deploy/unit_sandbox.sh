#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# unit_sandbox.sh UNIT DIR CMD [ARG...]: runs CMD in DIR as near as this
# test can to how systemd runs UNIT's ExecStart, without systemd as PID 1.
# In a mount namespace of its own: ProtectSystem=strict (every mount
# read-only but /proc, /sys and /dev) with DIR writable (ReadWritePaths=),
# ProtectControlGroups=, ProtectKernelModules= (/lib/modules hidden),
# PrivateDevices= (a /dev with null, zero, full, random, urandom, tty);
# then UMask=, NoNewPrivileges=, CapabilityBoundingSet= (setpriv) and the
# system call filter (seccomp_exec.py). Not applied: PrivateTmp= (DIR and
# the binary live in /tmp here), MemoryMax=, namespaces of other kinds.
# Needs root.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" != --inside ]; then
	exec unshare --mount --propagation private -- "$HERE/unit_sandbox.sh" --inside "$@"
fi
shift
unit=$(realpath "$1") dir=$(realpath "$2")
shift 2
value() { sed -n "s/^$1=//p" "$unit" | tail -1; }

mount --bind "$dir" "$dir"
if [ "$(value ProtectSystem)" = strict ]; then
	# deepest first does not matter for remounts; /proc, /dev and /sys stay
	awk '{ print $5 }' /proc/self/mountinfo | sort -u | while read -r mp; do
		case $mp in
		"$dir" | /proc | /proc/* | /dev | /dev/* | /sys) continue ;;
		/sys/fs/cgroup*) ;;
		/sys/*) continue ;;
		esac
		mount -o remount,bind,ro "$mp" 2>/dev/null || true
	done
fi
if [ "$(value ProtectKernelModules)" = yes ]; then
	for m in /usr/lib/modules /lib/modules; do
		[ -d "$m" ] && mount -t tmpfs -o ro,mode=000 none "$m"
	done
fi
if [ "$(value ProtectControlGroups)" = yes ]; then
	mount -o remount,bind,ro /sys/fs/cgroup 2>/dev/null || true
fi
if [ "$(value PrivateDevices)" = yes ]; then
	mount -t tmpfs -o mode=755,nosuid none /dev
	mknod -m 666 /dev/null c 1 3
	mknod -m 666 /dev/zero c 1 5
	mknod -m 666 /dev/full c 1 7
	mknod -m 666 /dev/random c 1 8
	mknod -m 666 /dev/urandom c 1 9
	mknod -m 666 /dev/tty c 5 0
	mount -o remount,ro,nosuid /dev
fi
umask "$(value UMask)"
cd "$dir"
caps=$(value CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
nnp=
[ "$(value NoNewPrivileges)" = yes ] && nnp=--no-new-privs
exec setpriv $nnp --inh-caps -all --bounding-set "-all,$caps" -- \
	/usr/bin/python3 "$HERE/seccomp_exec.py" "$unit" "$@"
