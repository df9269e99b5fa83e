#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Attacks a process (a container) can try on the files kiln reads for it,
# run against the real kiln record (root): a FIFO, and a sparse 64 GiB file,
# as the debug file; a debug-file symlink out of a private mount namespace;
# ELF memory bombs under a memory cgroup (a sparse note, a demangling bomb,
# 5 million sections, 100 000 symbols sharing one name, a table over the
# symbol cache's bound); a forged build id; and symlinks planted in a
# shared output directory. Each shows the attack fails and reads the
# counter that recorded the refusal from --stats. Then the FIFO, the forged
# build id (from a second process running alongside), the bombs and the
# planted symlinks against the long-running kiln agent, which must go on
# draining, pushing and writing, count the refusals in /metrics and stay
# under the memory cap.
# Prints one line per test, then "N passed, ..." (tests/lib.sh); test names
# as arguments run only those.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
TMP=$(mktemp -d /tmp/kiln-attacks.XXXXXX)
. "$HERE/agent_lib.sh"
CG=
# The memory cap; the bombs cost 768 MB to 1.3 GB each unbounded. ASan's
# shadow memory and quarantine (SANITIZE=1 sets KILN_SAN_DIR) take the
# agent near 200 MiB on their own: twice the cap there.
MEM_CAP_MB=$((${KILN_SAN_DIR:+2 *} 200))
cleanup() {
	[ -n "$AGENT_PID" ] && kill -9 "$AGENT_PID" 2>/dev/null
	stop_receiver
	stop_workloads
	[ -n "$CG" ] && rmdir "$CG" 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# A workload whose hot function is attack_hot (HOT overrides the name);
# with -DLIB, a library whose entry() runs it.
cat >"$TMP/spin.c" <<'EOF'
#include <stdlib.h>
#include <time.h>
#ifndef HOT
#define HOT attack_hot
#endif
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
__attribute__((noinline)) void HOT(double end)
{
	volatile unsigned long x = 0;
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			x += i;
}
#ifdef LIB
void entry(double seconds) { HOT(now() + seconds); }
#else
int main(int argc, char **argv)
{
	HOT(now() + (argc > 1 ? atof(argv[1]) : 2));
	return 0;
}
#endif
EOF
WL_CFLAGS="-O1 -g -fno-omit-frame-pointer"

# build_debuglink_workload DIR: DIR/spin, stripped, its functions in
# .dynsym only, its .gnu_debuglink naming DIR/spin.debug (the caller
# replaces that file with the attack).
build_debuglink_workload() {
	mkdir -p "$1" &&
		gcc $WL_CFLAGS -rdynamic -o "$1/spin" "$TMP/spin.c" &&
		objcopy --only-keep-debug "$1/spin" "$1/spin.debug" &&
		objcopy --strip-all --add-gnu-debuglink="$1/spin.debug" "$1/spin" &&
		rm -f "$1/spin.debug"
}

# debuglink_run NAME WHAT REASON CMD...: kiln record of a workload whose
# debug file CMD (given its path) has replaced; kiln must finish, name the
# workload's functions from .dynsym, and count the refusal as
# files_refused.REASON.
debuglink_run() {
	local name=$1 what=$2 reason=$3 d=$TMP/$1 rc n refused
	shift 3
	build_debuglink_workload "$d" && "$@" "$d/spin.debug" ||
		{ fail "$name" "cannot build the workload"; return; }
	timeout 60 "$KILN" record -q -d 3 --stats "$d/stats.json" -o "$d/out.folded" \
		-- "$d/spin" 3 2>"$d/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		fail "$name" "kiln record exited $rc (124: hung on $what): $(tail -1 "$d/err")"; return
	fi
	n=$(folded_count "$d/out.folded" '^spin;.*attack_hot')
	refused=$(json "$d/stats.json" files_refused "$reason")
	if [ "$n" -ge 20 ] && [ "$refused" -ge 1 ]; then
		pass "$name: record finished, $n samples named attack_hot from .dynsym, $what refused (files_refused.$reason=$refused)"
	else
		fail "$name" "attack_hot samples $n (want >= 20), files_refused.$reason=$refused (want >= 1)"
	fi
}

# (a) The debug file named by .gnu_debuglink is a FIFO with no writer: a
# plain open() blocks kiln's only loop thread for good.
test_fifo_debuglink() {
	debuglink_run fifo_debuglink "a FIFO debug file" not_regular mkfifo
}

# (a2) The debug file is a sparse 64 GiB file: checking its CRC, as the
# debuglink asks, would read all of it. It is over the size cap, so it is
# refused before a byte is read.
test_huge_debuglink() {
	debuglink_run huge_debuglink "a sparse 64 GiB debug file" too_large truncate -s 64G
}

# (b) Inside a private mount namespace, a tmpfs root holds a static
# workload whose debug file is a symlink to an absolute path: on the host,
# that path is the workload's real debug file. Followed from kiln's root, it
# would name the workload's functions. Resolved inside the process's root
# it reaches the container's own file at that path, a FIFO: refused and
# counted, and no name comes from the host's file. (/proc/PID/maps shows
# kiln the binary as <mount point>/spin, so the debuglink is looked up in
# that directory inside the root: the symlink is planted at both places.)
test_symlink_out_of_mount_ns() {
	local d=$TMP/mntns root=$TMP/mntns/root host=$TMP/mntns/host rc n total refused
	mkdir -p "$root" "$host"
	gcc $WL_CFLAGS -static -o "$d/spin" "$TMP/spin.c" 2>"$d/cc.err" ||
		{ fail symlink_out_of_mount_ns "cannot build a static workload: $(tail -1 "$d/cc.err")"; return; }
	objcopy --only-keep-debug "$d/spin" "$host/spin.debug" &&
		objcopy --strip-all --add-gnu-debuglink="$host/spin.debug" "$d/spin" ||
		{ fail symlink_out_of_mount_ns "objcopy failed"; return; }
	# until the command exits (no -d: spin's 3 s begin after the mount
	# namespace is set up, and -d's window after kiln's own start)
	timeout 60 "$KILN" record -q --stats "$d/stats.json" -o "$d/out.folded" -- \
		unshare -m --propagation private sh -c '
			mount -t tmpfs kiln-attack "$1" || exit 1
			cp "$2/spin" "$1/spin" && mkdir -p "$1$3" "$1$1" && mkfifo "$1$3/spin.debug" &&
			ln -s "$3/spin.debug" "$1/spin.debug" && ln -s "$3/spin.debug" "$1$1/spin.debug" || exit 1
			exec chroot "$1" /spin 3' sh "$root" "$d" "$host" 2>"$d/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		fail symlink_out_of_mount_ns "kiln record exited $rc: $(tail -1 "$d/err")"; return
	fi
	total=$(folded_count "$d/out.folded" '^spin;')
	n=$(folded_count "$d/out.folded" '^spin;.*attack_hot')
	refused=$(json "$d/stats.json" files_refused not_regular)
	if [ "$total" -ge 20 ] && [ "$n" = 0 ] && [ "$refused" -ge 1 ]; then
		pass "symlink_out_of_mount_ns: the host's debug file unread ($total samples, none named from it), the in-root target refused, files_refused.not_regular=$refused"
	else
		# (CI saw every sample of spin counted under sh: the mm of its
		# exec had the address of sh's, see e2e exec_chain)
		fail symlink_out_of_mount_ns "samples $total (want >= 20), named from the host file $n (want 0), files_refused.not_regular=$refused (want >= 1); heaviest stacks: $(sort -t' ' -k2 -n "$d/out.folded" | tail -n 3 | cut -c1-200 | paste -sd'|' -)"
	fi
}

# A memory cgroup of MEM_CAP_MB for kiln (v2 where the memory controller
# is there, else v1); sets CG, or fails.
cgroup_setup() {
	local v2=/sys/fs/cgroup/unified v1=/sys/fs/cgroup/memory
	[ -n "$CG" ] && return 0
	[ -f /sys/fs/cgroup/cgroup.controllers ] && v2=/sys/fs/cgroup
	if grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
		echo +memory >"$v2/cgroup.subtree_control" 2>/dev/null
		CG=$v2/kiln-attacks-$$
		mkdir "$CG" && echo "${MEM_CAP_MB}M" >"$CG/memory.max" && echo 0 >"$CG/memory.swap.max" 2>/dev/null
		[ -f "$CG/memory.max" ]
	elif [ -d "$v1" ]; then
		CG=$v1/kiln-attacks-$$
		mkdir "$CG" && echo "${MEM_CAP_MB}M" >"$CG/memory.limit_in_bytes"
	else
		return 1
	fi
}

# cgroup_cap MB: CG's memory limit, MB megabytes.
cgroup_cap() {
	if [ -f "$CG/memory.max" ]; then
		echo "$1M" >"$CG/memory.max"
	else
		echo "$1M" >"$CG/memory.limit_in_bytes"
	fi
}

# CG_EXEC CG CMD...: CMD in the memory cgroup CG (exec'd: CMD keeps the pid).
CG_EXEC=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"')

# BPF maps larger than the memory cgroup kiln runs in (memory cgroups
# charge map memory since 5.11), under a 200M cap (with sanitizers too:
# kiln stops before it touches much memory): --max-processes 4194304 asks
# for 370 MB at load (the instances LRU map), and --unwind-processes 262144
# for 1.3 GB more where the per-process maps are preallocated (before
# 6.1), refused with one line that names the maps and the flags, no
# output, no crash.
test_maps_over_memory_cap() {
	local d=$TMP/mapcap rc lines
	mkdir -p "$d"
	cgroup_setup || { fail maps_over_memory_cap "no memory cgroup to run kiln under"; return; }
	cgroup_cap 200
	timeout 60 "${CG_EXEC[@]}" "$CG" "$KILN" record -d 1 --max-processes 4194304 \
		--unwind-processes 262144 -o "$d/out.folded" 2>"$d/err"
	rc=$?
	cgroup_cap "$MEM_CAP_MB"
	lines=$(wc -l <"$d/err")
	if [ "$rc" != 0 ] && [ "$rc" -lt 124 ] && [ "$lines" = 1 ] && [ ! -e "$d/out.folded" ] &&
		grep -q 'could not allocate the BPF maps.*--max-processes' "$d/err"; then
		pass "maps_over_memory_cap: exit $rc, one line: $(cat "$d/err")"
	else
		fail maps_over_memory_cap "exit $rc, $lines lines: $(head -n 2 "$d/err" | tr '\n' '|')"
	fi
}

# --unwind-memory 1G under the same cap: a ceiling the rows grow toward,
# 1 MiB at a time as tables need it, so record of Debian's python3 runs,
# its maps far below the cap.
test_unwind_memory_over_memory_cap() {
	local d=$TMP/rowcap rc maps n
	mkdir -p "$d"
	cgroup_setup || { fail unwind_memory_over_memory_cap "no memory cgroup to run kiln under"; return; }
	timeout 60 "${CG_EXEC[@]}" "$CG" "$KILN" record -q -d 2 --unwind-memory 1G \
		--stats "$d/stats.json" -o "$d/big.folded" -- /usr/bin/python3 "$HERE/../unwind/workloads/cpu.py" 2 \
		>/dev/null 2>"$d/err"
	rc=$?
	maps=$(json "$d/stats.json" bpf_maps_bytes 2>/dev/null)
	n=$(folded_count "$d/big.folded" '')
	if [ "$rc" = 0 ] && [ "${maps:-0}" -gt 0 ] && [ "$maps" -lt $((MEM_CAP_MB << 19)) ] && [ "$n" -ge 20 ]; then
		pass "unwind_memory_over_memory_cap: --unwind-memory 1G under ${MEM_CAP_MB}M ran, BPF maps $((maps >> 20)) MiB, $n samples"
	else
		fail unwind_memory_over_memory_cap "exit $rc, BPF maps ${maps:-?} bytes (want under half the cap), samples $n (want >= 20): $(tail -1 "$d/err")"
	fi
}

# bomb_run NAME BINARY COUNTER [RECORD_ARGS...]: kiln record of BINARY under
# the memory cap; checks completion, peak RSS and the elf_refused counter.
bomb_run() {
	local name=$1 bin=$2 counter=$3 d rc rss refused n
	shift 3
	d=$(dirname "$bin")
	if ! cgroup_setup; then
		fail "$name" "no memory cgroup to run kiln under"; return
	fi
	timeout 120 "${CG_EXEC[@]}" "$CG" "$KILN" record -q -d 3 --stats "$d/stats.json" \
		-o "$d/out.folded" "$@" -- "$bin" 3 2>"$d/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		fail "$name" "kiln record exited $rc under a ${MEM_CAP_MB}M memory cgroup (137: OOM-killed): $(tail -1 "$d/err")"; return
	fi
	rss=$(json "$d/stats.json" max_rss_kb)
	refused=$(json "$d/stats.json" elf_refused "$counter")
	n=$(folded_count "$d/out.folded" "^$(basename "$bin");")
	if [ "$rss" -lt $((MEM_CAP_MB * 1024)) ] && [ "$refused" -ge 1 ] && [ "$n" -ge 20 ]; then
		pass "$name: record completed under a ${MEM_CAP_MB}M cgroup, peak RSS $((rss / 1024)) MiB, elf_refused.$counter=$refused, $n samples"
	else
		fail "$name" "peak RSS ${rss} KiB, elf_refused.$counter=$refused (want >= 1), samples $n (want >= 20)"
	fi
}

# elf_bomb.py WHAT FILE ARGS...: doctors FILE, an x86-64 workload, into an
# ELF bomb that still runs (exec reads only the ELF and program headers).
#   note FILE                       a PT_NOTE claiming 768 MiB, the file a
#                                   sparse 900 MiB (no disk, no page cache)
#   sections FILE                   5 million section headers (extended
#                                   numbering), a sparse 320 MiB table
#   symbols FILE COUNT LEN MODE     one more .symtab (FILE is stripped): COUNT
#                                   function symbols named LEN bytes each,
#                                   one name for all (MODE shared) or one
#                                   each (distinct)
cat >"$TMP/elf_bomb.py" <<'EOF'
import struct, sys
what, path = sys.argv[1], sys.argv[2]
f = open(path, 'r+b')
eh = f.read(64)
assert eh[:4] == b'\x7fELF' and eh[4] == 2 and eh[5] == 1, 'want ELF64 little endian'
phoff, shoff = struct.unpack_from('<QQ', eh, 32)
phentsize, phnum, shentsize, shnum = struct.unpack_from('<HHHH', eh, 54)
end = f.seek(0, 2)
SHDR = '<IIQQQQIIQQ'
if what == 'note':
    for i in range(phnum):
        off = phoff + i * phentsize
        f.seek(off)
        if struct.unpack('<I', f.read(4))[0] == 4:          # PT_NOTE
            f.seek(off + 32)                                # p_filesz
            f.write(struct.pack('<Q', 768 << 20))
            f.truncate(900 << 20)
            sys.exit(0)
    sys.exit('no PT_NOTE')
elif what == 'sections':
    count = 5000000
    shoff = (end + 4095) & ~4095
    f.seek(40)
    f.write(struct.pack('<Q', shoff))
    f.seek(60)
    f.write(struct.pack('<HH', 0, 0))       # e_shnum 0: the count is section 0's sh_size
    f.seek(shoff)
    f.write(struct.pack(SHDR, 0, 0, 0, 0, 0, count, 0, 0, 0, 0))
    f.truncate(shoff + count * 64)
elif what == 'symbols':
    count, length, mode = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    f.seek(shoff)
    shdrs = f.read(shnum * 64)
    sh = [struct.unpack_from(SHDR, shdrs, i * 64) for i in range(shnum)]
    assert not any(h[1] == 2 for h in sh), 'strip FILE first: it has a .symtab'
    entry, = struct.unpack_from('<Q', eh, 24)
    text = next(i for i, h in enumerate(sh) if h[2] & 4 and h[3] <= entry < h[3] + h[5])
    if mode == 'shared':
        strtab = b'\0' + b'b' * length + b'\0'
        names = [1] * count
    else:
        strtab = b'\0' + b''.join(b'f%0*d\0' % (length - 1, i) for i in range(count))
        names = [1 + i * (length + 1) for i in range(count)]
    symtab = bytes(24) + b''.join(struct.pack('<IBBHQQ', names[i], 0x12, 0, text, sh[text][3] + i, 1)
                                  for i in range(count))
    sym_off = (end + 7) & ~7
    str_off = sym_off + len(symtab)
    new_shoff = (str_off + len(strtab) + 7) & ~7
    f.seek(sym_off)
    f.write(symtab + strtab)
    f.seek(new_shoff)
    f.write(shdrs)
    f.write(struct.pack(SHDR, 0, 2, 0, 0, sym_off, len(symtab), shnum + 1, 1, 8, 24))
    f.write(struct.pack(SHDR, 0, 3, 0, 0, str_off, len(strtab), 0, 0, 1, 0))
    f.seek(40)
    f.write(struct.pack('<Q', new_shoff))
    f.seek(60)
    f.write(struct.pack('<H', shnum + 2))
else:
    sys.exit('unknown bomb ' + what)
EOF

# build_elf_bomb FILE WHAT ARGS...: the spin workload, stripped, as FILE,
# doctored by elf_bomb.py WHAT ARGS.
build_elf_bomb() {
	local file=$1
	shift
	mkdir -p "$(dirname "$file")" && gcc $WL_CFLAGS -s -o "$file" "$TMP/spin.c" &&
		python3 "$TMP/elf_bomb.py" "$1" "$file" "${@:2}"
}

# build_demangle_bomb FILE: C++ names that demangle to hundreds of MB: a
# function template instantiated on P<T, T> nested 26 deep has a mangled
# name of a few hundred bytes (substitutions) and a demangled one of
# 2^26 * 8 bytes.
build_demangle_bomb() {
	mkdir -p "$(dirname "$1")"
	python3 - >"$1.cc" <<'EOF'
print('#include <stdlib.h>\n#include <time.h>')
print('template <class A, class B> struct P {};')
print('typedef P<int, int> T0;')
for i in range(1, 27):
    print('typedef P<T%d, T%d> T%d;' % (i - 1, i - 1, i))
print('''static double now() { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec + ts.tv_nsec / 1e9; }
template <class T> __attribute__((noinline)) void bomb(double end)
{ volatile unsigned long x = 0; while (now() < end) for (int i = 0; i < 100000; i++) x += i; }
template <class T> __attribute__((noinline)) void bomb2(double end) { bomb<T>(end); }
template <class T> __attribute__((noinline)) void bomb3(double end) { bomb2<T>(end); }
int main(int argc, char **argv) { bomb3<T26>(now() + (argc > 1 ? atof(argv[1]) : 2)); return 0; }''')
EOF
	g++ -O1 -fno-omit-frame-pointer -o "$1" "$1.cc"
}

# (c1) A PT_NOTE claiming 768 MiB: reading the note as claimed costs 768 MiB.
test_sparse_note_bomb() {
	build_elf_bomb "$TMP/note/notebomb" note ||
		{ fail sparse_note_bomb "cannot doctor the PT_NOTE"; return; }
	bomb_run sparse_note_bomb "$TMP/note/notebomb" note
}

# (c2) The demangling bomb.
test_demangle_bomb() {
	build_demangle_bomb "$TMP/demangle/dmbomb" ||
		{ fail demangle_bomb "cannot build the C++ workload"; return; }
	bomb_run demangle_bomb "$TMP/demangle/dmbomb" demangle
}

# (c3) 5 million section headers: libelf allocates per section at
# elf_begin (1.3 GB) unless the count is refused first.
test_sections_bomb() {
	build_elf_bomb "$TMP/sections/shbomb" sections ||
		{ fail sections_bomb "cannot doctor the section headers"; return; }
	bomb_run sections_bomb "$TMP/sections/shbomb" headers
}

# (c4) 100 000 function symbols sharing one 8 KiB name: 8 KiB of strings
# in the file, 800 MB once each name is copied. Names are cut to 1 KiB and
# a table's name bytes bounded.
test_symbol_names_bomb() {
	build_elf_bomb "$TMP/names/namebomb" symbols 100000 8192 shared ||
		{ fail symbol_names_bomb "cannot add the symbol table"; return; }
	bomb_run symbol_names_bomb "$TMP/names/namebomb" names
}

# (c5) A table larger than the symbol cache lets one entry be: with
# --symbol-cache 1M a table may take 256 KiB; 6000 symbols named 31 bytes
# make 336 KB, though symbols and names are each under the bound alone.
test_table_over_cache_bound() {
	build_elf_bomb "$TMP/table/tablebomb" symbols 6000 31 distinct ||
		{ fail table_over_cache_bound "cannot add the symbol table"; return; }
	bomb_run table_over_cache_bound "$TMP/table/tablebomb" table_too_large --symbol-cache 1M
}

# (d) Process A maps libhot.so, forged: different function names but the
# build id of the victim's libhot.so, which process B maps. A runs first,
# so its table is loaded first; B's frames must still carry the victim's
# names (the cache is keyed by the file, not by the id the file claims).
#
# build_forged DIR: DIR/forgeA and DIR/victimB, each with its libhot.so;
# the forger's has the victim's build id.
build_forged() {
	local d=$1
	mkdir -p "$d/victim" "$d/forged"
	cat >"$d/main.c" <<'EOF'
#include <stdlib.h>
void entry(double seconds);
int main(int argc, char **argv) { entry(argc > 1 ? atof(argv[1]) : 2); return 0; }
EOF
	gcc $WL_CFLAGS -shared -fPIC -DLIB -DHOT=victim_hot -Wl,-soname,libhot.so -o "$d/victim/libhot.so" "$TMP/spin.c" &&
		gcc $WL_CFLAGS -shared -fPIC -DLIB -DHOT=forged_hot -Wl,-soname,libhot.so -o "$d/forged/libhot.so" "$TMP/spin.c" &&
		gcc $WL_CFLAGS -o "$d/victimB" "$d/main.c" -L"$d/victim" -lhot -Wl,-rpath,"$d/victim" &&
		gcc $WL_CFLAGS -o "$d/forgeA" "$d/main.c" -L"$d/forged" -lhot -Wl,-rpath,"$d/forged" &&
		python3 - "$d/victim/libhot.so" "$d/forged/libhot.so" <<'EOF'
import subprocess, sys
def build_id(path):
    out = subprocess.run(['readelf', '-n', path], capture_output=True, text=True).stdout
    return bytes.fromhex(out.split('Build ID:')[1].split()[0])
victim, forged = build_id(sys.argv[1]), build_id(sys.argv[2])
data = open(sys.argv[2], 'rb').read()
assert data.count(forged) == 1 and len(victim) == len(forged)
open(sys.argv[2], 'wb').write(data.replace(forged, victim))
assert build_id(sys.argv[2]) == victim
EOF
}

test_forged_build_id() {
	local d=$TMP/forged rc vb va fa fb loads
	build_forged "$d" || { fail forged_build_id "cannot build the libraries or forge the build id"; return; }
	timeout 60 "$KILN" record -q --stats "$d/stats.json" -o "$d/out.folded" \
		-- sh -c "'$d/forgeA' 3; '$d/victimB' 3" 2>"$d/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		fail forged_build_id "kiln record exited $rc: $(tail -1 "$d/err")"; return
	fi
	vb=$(folded_count "$d/out.folded" '^victimB;.*victim_hot')
	fb=$(folded_count "$d/out.folded" '^victimB;.*forged_hot')
	fa=$(folded_count "$d/out.folded" '^forgeA;.*forged_hot')
	va=$(folded_count "$d/out.folded" '^forgeA;.*victim_hot')
	loads=$(json "$d/stats.json" symtab_loads)
	if [ "$vb" -ge 20 ] && [ "$fb" = 0 ] && [ "$fa" -ge 20 ] && [ "$va" = 0 ]; then
		pass "forged_build_id: B's $vb samples named victim_hot (forged_hot 0), A's $fa forged_hot; two tables for one claimed build id (symtab_loads=$loads)"
	else
		fail forged_build_id "B: victim_hot $vb (want >= 20), forged_hot $fb (want 0); A: forged_hot $fa, victim_hot $va"
	fi
}

# (e) Another user (nobody) plants symlinks to a root-owned victim in a
# shared output directory (sticky and world-writable, as /tmp): at the
# final name and at every old predictable temporary name
# (<path>.tmp.<pid>) of the next pids. kiln record must not write through
# any of them: the planted final name is refused and counted, a profile
# under another name is written there (0640), and a directory nobody owns
# is refused at start with one line. The victim stays as it was.
test_output_symlink_clobber() {
	local d=$TMP/outsafe rc rc2 rc3 link mode lines sum
	mkdir -p "$d/shared" "$d/evil" && chmod 1777 "$d/shared" &&
		chown 65534:65534 "$d/evil" && chmod 0711 "$TMP" "$d" &&
		printf 'root:secret:victim\n' >"$d/victim" && chmod 0600 "$d/victim" ||
		{ fail output_symlink_clobber "cannot set up the directories"; return; }
	sum=$(sha256sum <"$d/victim")
	# As nobody: one link at each final name, 400 at the old tmp names.
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import os, sys
d = sys.argv[1]
last = int(open("/proc/sys/kernel/ns_last_pid").read())
os.symlink(d + "/victim", d + "/shared/cpu.folded")
os.symlink(d + "/victim", d + "/evil/cpu.folded")
for name in ("cpu.folded", "other.folded"):
    for pid in range(last, last + 400):
        os.symlink(d + "/victim", "%s/shared/%s.tmp.%d" % (d, name, pid))
' "$d" || { fail output_symlink_clobber "cannot plant the links as nobody"; return; }
	# Each record profiles its own busy child: on an idle machine a
	# system-wide second may hold no sample, and an empty profile would
	# prove nothing about where it was written.
	timeout 60 "$KILN" record -q --stats "$d/stats.json" -o "$d/shared/cpu.folded" \
		-- "$WORKLOADS/cpu_ratio" 1 2>"$d/err1"
	rc=$?
	timeout 60 "$KILN" record -q -o "$d/shared/other.folded" \
		-- "$WORKLOADS/cpu_ratio" 1 2>"$d/err2"
	rc2=$?
	timeout 60 "$KILN" record -q -o "$d/evil/cpu.folded" \
		-- "$WORKLOADS/cpu_ratio" 1 2>"$d/err3"
	rc3=$?
	link=$(json "$d/stats.json" output_refused link 2>/dev/null)
	mode=$(stat -c '%a %U' "$d/shared/other.folded" 2>/dev/null)
	lines=$(wc -l <"$d/err3")
	if [ "$(sha256sum <"$d/victim")" != "$sum" ]; then
		fail output_symlink_clobber "the victim was written through a planted link"
	elif [ "$rc" != 1 ] || [ "${link:-0}" -lt 1 ] || [ ! -L "$d/shared/cpu.folded" ]; then
		fail output_symlink_clobber "planted final name: record exited $rc (want 1), output_refused.link=${link:-none} (want >= 1): $(tail -2 "$d/err1")"
	elif [ "$rc2" != 0 ] || [ "$mode" != "640 root" ] || ! grep -q ';' "$d/shared/other.folded"; then
		fail output_symlink_clobber "other name: record exited $rc2, file '$mode' (want 640 root): $(tail -1 "$d/err2")"
	elif [ "$rc3" != 2 ] || [ "$lines" != 1 ] || ! grep -q "refused: owned by uid 65534" "$d/err3"; then
		fail output_symlink_clobber "nobody's directory: record exited $rc3 (want 2) with $lines lines (want 1): $(cat "$d/err3")"
	else
		pass "output_symlink_clobber: victim untouched; planted final name refused (output_refused.link=$link), other.folded written ($mode) past 800 planted tmp links, nobody's directory refused at start: $(cat "$d/err3")"
	fi
}

# Hostile perf maps: the process (tests/workloads/fake_jit, JIT code in an
# anonymous mapping) owns /tmp/perf-<pid>.map, and kiln reads it when its
# frames are unnamed. jit_run NAME MODE SETUP: kiln record of fake_jit
# under the memory cap, after the shell code SETUP planted the file ($$ is
# fake_jit's pid to be); MODE map: fake_jit appends its own line after
# the planted ones, none: it writes nothing. Sets JD (the test's folder),
# JRC, JRSS (peak RSS, KiB), JALL and JNAMED (samples, samples named
# fake_jit_spin); the caller reads the counters from $JD/stats.json.
jit_run() {
	local name=$1 mode=$2 setup=$3
	JD=$TMP/$name JRC= JRSS=0 JALL=0 JNAMED=0
	mkdir -p "$JD"
	cgroup_setup || { JRC=cgroup; return; }
	timeout 120 "${CG_EXEC[@]}" "$CG" "$KILN" record -q --stats "$JD/stats.json" \
		-o "$JD/out.folded" -- sh -c "echo \$\$ >'$JD/pid'; $setup && exec '$WORKLOADS/fake_jit' 3 $mode" \
		2>"$JD/err"
	JRC=$?
	[ -s "$JD/pid" ] && rm -f "/tmp/perf-$(cat "$JD/pid").map"
	[ "$JRC" = 0 ] || return
	JRSS=$(json "$JD/stats.json" max_rss_kb)
	JALL=$(folded_count "$JD/out.folded" '^fake_jit;')
	JNAMED=$(folded_count "$JD/out.folded" '^fake_jit;.*fake_jit_spin')
}

# jit_checks NAME WHAT: fails NAME unless record finished (no hang, not
# OOM-killed) under the cap with fake_jit profiled; prints nothing else.
jit_checks() {
	if [ "$JRC" = cgroup ]; then
		fail "$1" "no memory cgroup to run kiln under"
	elif [ "$JRC" != 0 ]; then
		fail "$1" "kiln record exited $JRC on $2 (124: hung, 137: OOM-killed): $(tail -1 "$JD/err")"
	elif [ "$JRSS" -ge $((MEM_CAP_MB * 1024)) ] || [ "$JALL" -lt 20 ]; then
		fail "$1" "peak RSS $JRSS KiB (cap $MEM_CAP_MB MiB), $JALL samples of fake_jit (want >= 20)"
	else
		return 0
	fi
	return 1
}

# jit_counted NAME WHAT OBJECT KEY: after jit_checks, NAME passes when
# --stats counted OBJECT.KEY at least once.
jit_counted() {
	local n
	n=$(json "$JD/stats.json" "$3" "$4")
	if [ "$n" -ge 1 ]; then
		pass "$1: record finished on $2, refused and counted ($3.$4=$n), $JALL samples, peak RSS $((JRSS / 1024)) MiB"
	else
		fail "$1" "$3.$4=$n (want >= 1)"
	fi
}

# (f1) Garbage lines (binary junk, bad numbers, a 100 KiB line, NULs)
# before fake_jit's own line: each counted, skipped, and the good line
# after them still names the JIT code.
test_jit_garbage_lines() {
	local bad
	jit_run jit_garbage_lines map "python3 -c '
import os, random
r = random.Random(7)
with open(\"/tmp/perf-%d.map\" % os.getppid(), \"wb\") as f:
    for i in range(500):
        k = i % 5
        if k == 0: f.write(bytes(r.randrange(1, 256) for _ in range(60)).replace(b\"\\n\", b\"\") + b\"\\n\")
        elif k == 1: f.write(b\"%x\\n\" % r.getrandbits(64))
        elif k == 2: f.write(b\"zz%x 10 not_hex\\n\" % i)
        elif k == 3: f.write(b\"ffffffffffffff00 200 wraps\\n\")
        else: f.write(b\"1 100000000 four_gib\\n\")
    f.write(b\"12 \" + b\" \" * 100000 + b\"\\n\")
'"
	jit_checks jit_garbage_lines "garbage lines" || return
	bad=$(json "$JD/stats.json" jit_refused bad_line)
	if [ "$bad" -ge 500 ] && [ $((JNAMED * 100)) -ge $((JALL * 80)) ]; then
		pass "jit_garbage_lines: 501 garbage lines counted (jit_refused.bad_line=$bad) and skipped; the good line after them names $JNAMED of $JALL samples; peak RSS $((JRSS / 1024)) MiB"
	else
		fail jit_garbage_lines "jit_refused.bad_line=$bad (want >= 500), $JNAMED of $JALL samples named fake_jit_spin"
	fi
}

# (f2) 10 million lines, 57 MiB (under the 64 MiB file cap), every one a
# valid entry: the table stops at its bound (a quarter of --jit-memory),
# the rest of the file is not read, memory stays bounded. (Written out of
# the memory cgroup and moved into place, so its page cache is not
# charged to kiln's.)
test_jit_ten_million_lines() {
	local big=$TMP/ten-million.map
	python3 -c 'import sys; open(sys.argv[1], "w").write("0 1 a\n" * 10000000)' "$big" ||
		{ fail jit_ten_million_lines "cannot write the file"; return; }
	jit_run jit_ten_million_lines map "mv '$big' /tmp/perf-\$\$.map"
	jit_checks jit_ten_million_lines "10 million lines" &&
		jit_counted jit_ten_million_lines "10 million lines" jit_refused table_too_large
}

# (f3) /tmp/perf-<pid>.map is a symlink to /etc/shadow: refused as a link
# (never followed: no line of it parsed), nothing named from it.
test_jit_symlink_shadow() {
	local link reads bad
	jit_run jit_symlink_shadow none 'ln -s /etc/shadow /tmp/perf-$$.map'
	jit_checks jit_symlink_shadow "a symlink to /etc/shadow" || return
	link=$(json "$JD/stats.json" files_refused link)
	reads=$(json "$JD/stats.json" jit reads.perf_map)
	bad=$(json "$JD/stats.json" jit_refused bad_line)
	if [ "$link" -ge 1 ] && [ "$reads" = 0 ] && [ "$bad" = 0 ] && [ "$JNAMED" = 0 ] &&
		! grep -q 'root:' "$JD/out.folded"; then
		pass "jit_symlink_shadow: the link refused (files_refused.link=$link), /etc/shadow never read (jit.reads.perf_map=0), $JALL samples unnamed"
	else
		fail jit_symlink_shadow "files_refused.link=$link (want >= 1), jit.reads.perf_map=$reads, jit_refused.bad_line=$bad (want 0), named $JNAMED"
	fi
}

# (f4) /tmp/perf-<pid>.map is a FIFO nobody writes: a plain open would
# block kiln's loop for good.
test_jit_fifo() {
	jit_run jit_fifo none 'mkfifo /tmp/perf-$$.map'
	jit_checks jit_fifo "a FIFO" && jit_counted jit_fifo "a FIFO" files_refused not_regular
}

# (f5) A process that asks for its perf map at exit (the JVM's
# -XX:+DumpPerfMapAtExit on its command line) holds its samples until it
# ended and keeps its /tmp open: its map is then a symlink (to a file it
# writes through the link as it exits). Refused as a link at every open,
# while it ran and after: nothing named, its held samples still counted.
test_jit_exit_symlink() {
	local link reads held
	jit_run jit_exit_symlink -XX:+DumpPerfMapAtExit "ln -s '$TMP/jit_exit_symlink/decoy.map' /tmp/perf-\$\$.map"
	jit_checks jit_exit_symlink "a symlink as the map written at exit" || return
	link=$(json "$JD/stats.json" files_refused link)
	reads=$(json "$JD/stats.json" jit reads.perf_map)
	held=$(json "$JD/stats.json" jit samples_waited)
	if [ "$link" -ge 1 ] && [ "$reads" = 0 ] && [ "$JNAMED" = 0 ] && [ "$held" -ge 1 ] &&
		grep -q fake_jit_spin "$JD/decoy.map"; then
		pass "jit_exit_symlink: the link refused (files_refused.link=$link), never read (jit.reads.perf_map=0) though its target names the code; $held samples held for the map, $JALL samples kept, unnamed"
	else
		fail jit_exit_symlink "files_refused.link=$link (want >= 1), jit.reads.perf_map=$reads (want 0), named $JNAMED (want 0), jit.samples_waited=$held (want >= 1), decoy written: $(grep -c fake_jit_spin "$JD/decoy.map" 2>/dev/null)"
	fi
}

# The same attacks against the long-running agent, which must go on
# draining and exporting while they run (one loop thread: a hang there
# stops everything), count each refusal in /metrics, and keep its memory
# bounded. Files (--output-dir) and pushes to tests/receiver/receiver.py.

# attack_agent NAME ARGS...: the agent, 1 s intervals, no pod watcher,
# until /ready answers (its first drain).
attack_agent() {
	local name=$1
	shift
	start_agent "$name" --interval 1 --no-kube "$@"
	wait_until "$GUARD" answers_200 "$MPORT" /ready
}

# folded_all DIR REGEX: the samples of the matching lines of every
# interval's folded file in DIR.
folded_all() { folded_count <(cat "$1"/*-all.folded 2>/dev/null) "$2"; }
# intervals DIR: how many intervals' folded files DIR holds.
intervals() { ls "$1" 2>/dev/null | grep -c -- '-all\.folded$'; }
# at_least N CMD...: CMD prints a number of at least N.
at_least() { [ "$("${@:2}")" -ge "$1" ] 2>/dev/null; }
# one_interval_has DIR REGEX...: one interval's folded file matches each REGEX.
one_interval_has() {
	local dir=$1 f re
	shift
	for f in "$dir"/*-all.folded; do
		for re in "$@"; do grep -qE "$re" "$f" || continue 2; done
		return 0
	done
	return 1
}

# (a) agent: the FIFO debug file. The refusal is counted, and after it
# the agent still pushes, writes interval files and answers /healthz; the
# workload's frames are named from .dynsym.
test_agent_fifo_debuglink() {
	local d=$TMP/agent-fifo re='^kiln_files_refused_total\{reason="not_regular"\} ' refused= n0 f0
	local got= named problem
	build_debuglink_workload "$d" && mkfifo "$d/spin.debug" ||
		{ fail agent_fifo_debuglink "cannot build the workload"; return; }
	start_receiver agent-fifo
	attack_agent agent-fifo --server "http://127.0.0.1:$RPORT" --output-dir "$d/out"
	start_workload "$d/spin" 120
	if wait_metric "$re[1-9]"; then
		refused=$(metric "$re")
		n0=$(value agent-fifo 'len(D)')
		f0=$(intervals "$d/out")
		await agent-fifo "len(D) >= ${n0:-0} + 2 and has_function('attack_hot')" && got=pushes
		wait_until "$GUARD" at_least $((f0 + 2)) intervals "$d/out" && got="$got files"
		got="$got $(http_code "$MPORT" /healthz)"
	fi
	named=$(folded_all "$d/out" '^spin;.*attack_hot')
	stop_workloads
	stop_agent
	stop_receiver
	problem=$(exit_problem agent-fifo)
	if [ -n "$problem" ]; then
		fail agent_fifo_debuglink "$problem"
	elif [ -z "$refused" ]; then
		fail agent_fifo_debuglink "no refusal counted (kiln_files_refused_total{reason=\"not_regular\"}): $(grep -m1 'spin.debug' "$TMP/agent-fifo.err")"
	elif [ "$got" != "pushes files 200" ] || [ "$named" -lt 20 ]; then
		fail agent_fifo_debuglink "after the refusal want 2 more pushes naming attack_hot, 2 more interval files and /healthz 200, got '$got'; attack_hot samples $named (want >= 20)"
	else
		pass "agent_fifo_debuglink: FIFO refused (kiln_files_refused_total{reason=\"not_regular\"} $refused), then 2 more pushes and interval files, /healthz 200, $named samples named attack_hot from .dynsym"
	fi
}

# (d) agent: the forged build id from a second process. The forger runs
# first and goes on running; once its table is in use the victim starts.
# In the same intervals, each process's frames carry its own file's names.
test_agent_forged_build_id() {
	local d=$TMP/agent-forged both= vb va fa fb problem
	build_forged "$d" || { fail agent_forged_build_id "cannot build the libraries or forge the build id"; return; }
	attack_agent agent-forged --output-dir "$d/out"
	start_workload "$d/forgeA" 120
	wait_until "$GUARD" at_least 20 folded_all "$d/out" '^forgeA;.*forged_hot'
	start_workload "$d/victimB" 120
	wait_until "$GUARD" at_least 20 folded_all "$d/out" '^victimB;.*victim_hot'
	wait_until "$GUARD" one_interval_has "$d/out" '^forgeA;.*forged_hot' '^victimB;.*victim_hot' &&
		both=yes
	stop_workloads
	stop_agent
	vb=$(folded_all "$d/out" '^victimB;.*victim_hot')
	fb=$(folded_all "$d/out" '^victimB;.*forged_hot')
	fa=$(folded_all "$d/out" '^forgeA;.*forged_hot')
	va=$(folded_all "$d/out" '^forgeA;.*victim_hot')
	problem=$(exit_problem agent-forged)
	if [ -n "$problem" ]; then
		fail agent_forged_build_id "$problem"
	elif [ "$vb" -ge 20 ] && [ "$fb" = 0 ] && [ "$fa" -ge 20 ] && [ "$va" = 0 ] && [ -n "$both" ]; then
		pass "agent_forged_build_id: while the forger ran (its $fa samples forged_hot), the victim's $vb samples were named victim_hot (forged_hot 0), both in one interval"
	else
		fail agent_forged_build_id "victimB: victim_hot $vb (want >= 20), forged_hot $fb (want 0); forgeA: forged_hot $fa, victim_hot $va (want 0); one interval with both: ${both:-no}"
	fi
}

# (c) agent: the ELF memory bombs at once (the sparse note, 5 million
# sections, 100 000 symbols sharing a name, the demangling bomb) while the
# agent runs under the memory cgroup. Each refusal is counted in /metrics,
# each bomb is profiled, the agent goes on, and its peak RSS stays under
# the cap (the cgroup would have killed it: the exit check sees that).
test_agent_elf_bombs() {
	local d=$TMP/agent-bombs b c refused= missing= hwm health problem f0 n
	local -a AGENT_WRAP
	build_elf_bomb "$d/notebomb" note && build_elf_bomb "$d/shbomb" sections &&
		build_elf_bomb "$d/namebomb" symbols 100000 8192 shared &&
		build_demangle_bomb "$d/dmbomb" || { fail agent_elf_bombs "cannot build the bombs"; return; }
	cgroup_setup || { fail agent_elf_bombs "no memory cgroup to run kiln under"; return; }
	AGENT_WRAP=("${CG_EXEC[@]}" "$CG")
	attack_agent agent-bombs --output-dir "$d/out"
	for b in notebomb shbomb namebomb dmbomb; do start_workload "$d/$b" 120; done
	# (each wait gives up at once once the agent is gone: OOM-killed)
	for c in note headers names demangle; do
		if kill -0 "$AGENT_PID" 2>/dev/null &&
			wait_metric "^kiln_elf_refused_total\{reason=\"$c\"\} [1-9]"; then
			refused="$refused $c=$(metric "^kiln_elf_refused_total\{reason=\"$c\"\} ")"
		else
			missing="$missing $c"
		fi
	done
	for b in notebomb shbomb namebomb dmbomb; do
		kill -0 "$AGENT_PID" 2>/dev/null &&
			wait_until "$GUARD" at_least 20 folded_all "$d/out" "^$b;" ||
			missing="$missing $b-samples"
	done
	f0=$(intervals "$d/out")
	kill -0 "$AGENT_PID" 2>/dev/null && wait_until "$GUARD" at_least $((f0 + 2)) intervals "$d/out" ||
		missing="$missing intervals"
	health=$(http_code "$MPORT" /healthz)
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$AGENT_PID/status" 2>/dev/null)
	stop_workloads
	stop_agent
	n=$(folded_all "$d/out" '^(notebomb|shbomb|namebomb|dmbomb);')
	problem=$(exit_problem agent-bombs)
	if [ -n "$problem" ]; then
		fail agent_elf_bombs "under a ${MEM_CAP_MB}M memory cgroup: $problem (137: OOM-killed)"
	elif [ -n "$missing" ] || [ "$health" != 200 ]; then
		fail agent_elf_bombs "missing:$missing; /healthz $health; refused:$refused"
	elif [ -z "$hwm" ] || [ "$hwm" -ge $((MEM_CAP_MB * 1024)) ]; then
		fail agent_elf_bombs "peak RSS ${hwm:-unknown} KiB, cap ${MEM_CAP_MB} MiB"
	else
		pass "agent_elf_bombs: 4 bombs profiled ($n samples) under a ${MEM_CAP_MB}M cgroup, agent peak RSS $((hwm / 1024)) MiB, kiln_elf_refused_total$refused, 2 more intervals after, /healthz 200"
	fi
}

# (e) agent: its --output-dir is shared (sticky, world-writable, as /tmp)
# and another user (nobody) has planted symlinks to a root-owned victim at
# latest.html and at the interval file names of the next minute. The agent
# must write through none of them, count the refusals, and go on writing
# its other files.
test_agent_output_symlink_clobber() {
	local d=$TMP/agent-outsafe sum re='^kiln_output_refused_total\{reason="link"\} ' refused= w0
	local got= problem
	mkdir -p "$d/shared" && chmod 1777 "$d/shared" && chmod 0711 "$TMP" "$d" &&
		printf 'root:secret:victim\n' >"$d/victim" && chmod 0600 "$d/victim" ||
		{ fail agent_output_symlink_clobber "cannot set up the directories"; return; }
	sum=$(sha256sum <"$d/victim")
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import os, sys, time
d = sys.argv[1]
os.symlink(d + "/victim", d + "/shared/latest.html")
for t in range(int(time.time()) - 2, int(time.time()) + 60):
    os.symlink(d + "/victim", "%s/shared/%d-all.folded" % (d, t))
' "$d" || { fail agent_output_symlink_clobber "cannot plant the links as nobody"; return; }
	attack_agent agent-outsafe --output-dir "$d/shared"
	if wait_metric "$re([2-9]|[1-9][0-9])"; then
		refused=$(metric "$re")
		w0=$(metric '^kiln_files_written_total ')
		wait_until "$GUARD" at_least $((w0 + 2)) metric '^kiln_files_written_total ' && got=written
		got="$got $(http_code "$MPORT" /healthz)"
	fi
	stop_agent
	problem=$(exit_problem agent-outsafe)
	if [ "$(sha256sum <"$d/victim")" != "$sum" ]; then
		fail agent_output_symlink_clobber "the victim was written through a planted link"
	elif [ -n "$problem" ]; then
		fail agent_output_symlink_clobber "$problem"
	elif [ -z "$refused" ] || [ ! -L "$d/shared/latest.html" ]; then
		fail agent_output_symlink_clobber "want latest.html and interval files refused (kiln_output_refused_total{reason=\"link\"} >= 2: ${refused:-none}), latest.html still nobody's link"
	elif [ "$got" != "written 200" ] || ! ls "$d/shared" | grep -q '\.pb\.gz$'; then
		fail agent_output_symlink_clobber "after the refusals want more files written and /healthz 200, got '$got'"
	else
		pass "agent_output_symlink_clobber: victim untouched; $refused planted names refused (kiln_output_refused_total{reason=\"link\"}), other files written on, /healthz 200"
	fi
}

TESTS="test_fifo_debuglink test_huge_debuglink test_symlink_out_of_mount_ns test_sparse_note_bomb
	test_demangle_bomb test_sections_bomb test_symbol_names_bomb test_table_over_cache_bound
	test_forged_build_id test_output_symlink_clobber test_agent_fifo_debuglink
	test_agent_forged_build_id test_agent_elf_bombs test_agent_output_symlink_clobber
	test_jit_garbage_lines test_jit_ten_million_lines test_jit_symlink_shadow test_jit_fifo test_jit_exit_symlink
	test_maps_over_memory_cap test_unwind_memory_over_memory_cap"
# all tests, or those named on the command line (e.g. test_fifo_debuglink)
[ $# = 0 ] || TESTS="$*"
if [ "$(id -u)" != 0 ]; then
	skip_all "needs root (BPF, mount namespaces, cgroups)" $TESTS
else
	run_tests $TESTS
fi
finish "$(wc -w <<<"$TESTS")"
