#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Rebuilds the ELF seeds of tests/fuzz/corpus/elf_symtab/ (committed; run
# this only to refresh them): small objects and shared objects, one per
# symbol source elf_symtab.c knows (.symtab, .dynsym only, MiniDebugInfo,
# .gnu_debuglink), C++ names, ELF32, big-endian and arm64 objects, and this
# machine's vDSO image (what symtab__load_mem reads in kiln).
set -eu
dst=$(cd "$(dirname "$0")" && pwd)/corpus/elf_symtab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir -p "$dst"
cat > tiny.c <<'C'
int counter;
__attribute__((noinline)) static int helper(int x) { return x * 3 + counter; }
__attribute__((noinline, visibility("hidden"))) int hidden_fn(int x) { return helper(x) - 2; }
__attribute__((weak)) int weak_fn(int x) { return hidden_fn(x) + 1; }
int __internal_alias(int x) { return weak_fn(x) - 1; }
int public_fn(int x) { return __internal_alias(x) ^ 5; }
C
cat > tiny.cc <<'C'
namespace kiln { template <typename T> struct box { T v; T get() const { return v; } };
int twice(int x) { return x * 2; }
long use(box<long> b) { return b.get() + twice(3); } }
C
so_flags="-O1 -fPIC -shared -nostdlib -Wl,--build-id -Wl,-z,noseparate-code -Wl,-z,max-page-size=4096"
gcc -O1 -c tiny.c -o "$dst/tiny.o"
g++ -O1 -c tiny.cc -o "$dst/tiny-cxx.o"
clang --target=i386-linux-gnu -O1 -c tiny.c -o "$dst/tiny-elf32.o"
clang --target=powerpc64-linux-gnu -O1 -c tiny.c -o "$dst/tiny-be.o"
clang --target=aarch64-linux-gnu -O1 -c tiny.c -o "$dst/tiny-arm64.o"
# shellcheck disable=SC2086
gcc $so_flags tiny.c -o tiny.so
cp tiny.so "$dst/tiny.so"
strip -s tiny.so -o "$dst/tiny-dynsym.so"
# MiniDebugInfo as distributions make it: the functions .dynsym lacks, in
# an xz-compressed ELF in .gnu_debugdata.
nm -D tiny.so --format=posix --defined-only | awk '{ print $1 }' | sort > dynsyms
nm tiny.so --format=posix --defined-only | awk '$2 ~ /^[TtW]$/ { print $1 }' | sort > funcsyms
comm -13 dynsyms funcsyms > keep
objcopy --only-keep-debug tiny.so mini
objcopy -S --remove-section .comment --keep-symbols=keep mini
xz mini
strip --strip-all -R .comment tiny.so -o mdi.so
objcopy --add-section .gnu_debugdata=mini.xz mdi.so "$dst/tiny-minidebuginfo.so"
objcopy --only-keep-debug tiny.so tiny.debug
objcopy --strip-all --add-gnu-debuglink=tiny.debug tiny.so "$dst/tiny-debuglink.so"
python3 - "$dst/vdso.so" <<'PY'
import sys
for line in open('/proc/self/maps'):
    if line.rstrip().endswith('[vdso]'):
        lo, hi = (int(x, 16) for x in line.split()[0].split('-'))
        with open('/proc/self/mem', 'rb') as mem:
            mem.seek(lo)
            open(sys.argv[1], 'wb').write(mem.read(hi - lo))
PY
# The bombs of issue 15, each a few KB that claims far more: a PT_NOTE of
# 768 MiB, 5 million sections (extended numbering: section 0's sh_size),
# and C++ names that demangle to hundreds of MB (P<T, T> nested 26 deep).
python3 - tiny.so "$dst/bomb-note.so" "$dst/bomb-sections.so" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], 'rb').read())
phoff, = struct.unpack_from('<Q', data, 32)
phentsize, phnum = struct.unpack_from('<HH', data, 54)
note = bytearray(data)
for i in range(phnum):
    off = phoff + i * phentsize
    if struct.unpack_from('<I', note, off)[0] == 4:     # PT_NOTE: p_filesz
        struct.pack_into('<Q', note, off + 32, 768 << 20)
open(sys.argv[2], 'wb').write(note)
shoff, = struct.unpack_from('<Q', data, 40)
struct.pack_into('<H', data, 60, 0)                     # e_shnum 0: see section 0
struct.pack_into('<Q', data, shoff + 32, 5000000)       # section 0 sh_size
open(sys.argv[3], 'wb').write(data)
PY
python3 - > bomb.cc <<'PY'
print('template <class A, class B> struct P {};\ntypedef P<int, int> T0;')
for i in range(1, 27):
    print('typedef P<T%d, T%d> T%d;' % (i - 1, i - 1, i))
print('template <class T> int bomb(int x) { return x + 1; }\ntemplate int bomb<T26>(int);')
PY
g++ -O1 -c bomb.cc -o "$dst/bomb-demangle.o"
ls -l "$dst"
