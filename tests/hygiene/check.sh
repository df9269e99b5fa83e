#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Hygiene of the tree (`make test-hygiene`): every source file kiln owns
# names its license on its first line (the second after a shebang) with an
# SPDX identifier whose text is in LICENSES/, and each BPF program's
# license string is one the kernel counts as GPL-compatible; no BPF code
# compares a helper's answer with a negative errno in 64 bits. Prints one
# line per check and "N passed, N failed, N skipped" last (tests/lib.sh).
#
# Sources: C, headers, BPF, shell, Python, Go, .proto, Makefiles,
# JS/CSS/HTML, and any other file that starts with a shebang; tracked or
# new (untracked, not ignored). Not kiln's, not checked: vmlinux/*/vmlinux.h
# (bpftool's output), tests/fuzz/corpus/ (inputs), build outputs.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(cd "$HERE/../.." && pwd)}
TMP=$(mktemp -d /tmp/kiln-hygiene.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
. "$HERE/../lib.sh"

# sources DIR: the source files under DIR, one path (relative) a line.
sources() {
	local dir=$1 f
	{
		if git -C "$dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
			git -C "$dir" ls-files --cached --others --exclude-standard
		else
			(cd "$dir" && find . -type f ! -path './.git/*' | sed 's|^\./||')
		fi
	} | sort -u | while IFS= read -r f; do
		[ -f "$dir/$f" ] || continue
		case $f in
		vmlinux/*/vmlinux.h | tests/fuzz/corpus/* | build/* | build-*/*) continue ;;
		*.c | *.h | *.sh | *.py | *.go | *.proto | *.js | *.css | *.html | Makefile | */Makefile | *.mk)
			echo "$f" ;;
		*) [ "$(head -c 2 "$dir/$f")" = '#!' ] && echo "$f" ;;
		esac
	done
}

# spdx_line FILE: the line that must carry the SPDX identifier.
spdx_line() {
	if [ "$(head -c 2 "$1")" = '#!' ]; then sed -n 2p "$1"; else head -n 1 "$1"; fi
}

# spdx_expr FILE: the license expression of that line, comment closers off.
spdx_expr() {
	spdx_line "$1" | sed -n 's/.*SPDX-License-Identifier: *//p' |
		sed -E 's@ *(\*/|-->) *$@@; s/ +$//'
}

# missing DIR: the sources under DIR without the SPDX line where it belongs.
missing() {
	local f
	sources "$1" | while IFS= read -r f; do
		spdx_line "$1/$f" | grep -q 'SPDX-License-Identifier: [A-Za-z0-9(]' || echo "$f"
	done
}

test_spdx_everywhere() {
	local bad n
	n=$(sources "$ROOT" | wc -l)
	bad=$(missing "$ROOT")
	if [ "$n" -lt 50 ]; then
		fail spdx_everywhere "only $n source files found under $ROOT"
	elif [ -n "$bad" ]; then
		fail spdx_everywhere "$(echo "$bad" | wc -l) of $n source files lack an SPDX line (first line; second after a shebang): $(echo $bad)"
	else
		pass "spdx_everywhere: $n source files"
	fi
}

# The check itself can fail: a planted tree with a file lacking the line,
# one with it on the wrong line, and files it must pass or ignore.
test_spdx_check_catches() {
	local t=$TMP/planted got
	mkdir -p "$t/vmlinux/x86" "$t/tests/fuzz/corpus/x" "$t/user" "$t/tests"
	printf '/* no license */\nint x;\n' >"$t/user/bare.c"
	printf '#!/bin/bash\necho hi\n# SPDX-License-Identifier: BSD-2-Clause\n' >"$t/tests/late.sh"
	printf '#!/usr/bin/python3\n# SPDX-License-Identifier: BSD-2-Clause\n' >"$t/tests/ok.py"
	printf '/* SPDX-License-Identifier: BSD-2-Clause */\n' >"$t/user/ok.h"
	printf '#!/bin/sh\nexit 0\n' >"$t/tests/noext"
	printf 'all:\n' >"$t/Makefile"
	printf 'struct x;\n' >"$t/vmlinux/x86/vmlinux.h"
	printf 'int y;\n' >"$t/tests/fuzz/corpus/x/seed.c"
	got=$(missing "$t" | tr '\n' ' ')
	if [ "$got" = "Makefile tests/late.sh tests/noext user/bare.c " ]; then
		pass spdx_check_catches
	else
		fail spdx_check_catches "planted tree: reported '$got', expected 'Makefile tests/late.sh tests/noext user/bare.c '"
	fi
}

# Every identifier of every expression has its text in LICENSES/.
test_spdx_known() {
	local f id bad=
	while IFS= read -r f; do
		for id in $(spdx_expr "$ROOT/$f" | tr -d '()' | sed -E 's/ (OR|AND|WITH) / /g'); do
			[ -f "$ROOT/LICENSES/$id.txt" ] || bad="$bad $f($id)"
		done
	done < <(sources "$ROOT")
	if [ -z "$bad" ]; then
		pass spdx_known
	else
		fail spdx_known "no text in LICENSES/ for:$bad"
	fi
}

# The kernel's license_is_gpl_compatible() list: GPL-only helpers need one.
test_bpf_license() {
	local f s bad= n=0
	for f in "$ROOT"/bpf/*.bpf.c; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		s=$(sed -n 's/^char LICENSE\[\] SEC("license") = "\(.*\)";$/\1/p' "$f")
		case $s in
		"GPL" | "GPL v2" | "GPL and additional rights" | "Dual BSD/GPL" | "Dual MIT/GPL" | "Dual MPL/GPL") ;;
		*) bad="$bad ${f#$ROOT/}: license string '$s' is not GPL-compatible;" ;;
		esac
		spdx_expr "$f" | grep -qw 'GPL-2.0-only' ||
			bad="$bad ${f#$ROOT/}: SPDX '$(spdx_expr "$f")' lacks GPL-2.0-only;"
	done
	if [ "$n" = 0 ]; then
		fail bpf_license "no bpf/*.bpf.c under $ROOT"
	elif [ -n "$bad" ]; then
		fail bpf_license "$bad"
	else
		pass "bpf_license: $n program(s)"
	fi
}

# bpf_errno_compares FILE...: lines comparing a helper's answer with -E...
# as it comes: some kernels (6.1's map updates) hand an int error back
# zero-extended, which never equals the 64-bit -E...; (int) first.
bpf_errno_compares() {
	grep -nE '\bbpf_[a-z_]+\([^;]*\)[[:space:]]*[!=]=[[:space:]]*-E[A-Z0-9]+' "$@" |
		grep -vE '\(int\)[[:space:]]*bpf_[a-z_]+\('
}

test_bpf_errno_32() {
	local t=$TMP/errno.bpf.c bad got
	printf 'if (bpf_map_update_elem(&m, &k, &v, 0) == -E2BIG)\nif ((int)bpf_map_update_elem(&m, &k, &v, 0) == -E2BIG)\nif (bpf_ringbuf_output(&r, p, n, 0))\n' >"$t"
	got=$(bpf_errno_compares "$t" | cut -d: -f1 | tr '\n' ' ')
	bad=$(bpf_errno_compares "$ROOT"/bpf/*.bpf.c)
	if [ "$got" != "1 " ]; then
		fail bpf_errno_32 "planted file: flagged lines '$got', expected '1 '"
	elif [ -n "$bad" ]; then
		fail bpf_errno_32 "a helper's answer compared with -E... in 64 bits (cast it to int): $bad"
	else
		pass "bpf_errno_32: no helper's answer compared with a negative errno in 64 bits"
	fi
}

test_license_files() {
	if [ -s "$ROOT/LICENSE" ] && [ -s "$ROOT/LICENSES/BSD-2-Clause.txt" ] &&
		[ -s "$ROOT/LICENSES/GPL-2.0-only.txt" ]; then
		pass license_files
	else
		fail license_files "LICENSE, LICENSES/BSD-2-Clause.txt or LICENSES/GPL-2.0-only.txt missing or empty"
	fi
}

run_tests test_license_files test_spdx_everywhere test_spdx_check_catches test_spdx_known test_bpf_license \
	test_bpf_errno_32
finish 6
