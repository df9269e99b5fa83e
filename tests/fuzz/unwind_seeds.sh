#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Rebuilds the seeds of tests/fuzz/corpus/unwind_table/ (committed; run this
# only to refresh them): a small -fomit-frame-pointer shared object with a
# stack-realigning (DRAP) function and an entry point (.eh_frame), the same
# as a PIE executable, one with .debug_frame only, one without section
# headers (PT_GNU_EH_FRAME is all that is left), a truncated header, and
# the shared object built for arm64 (aarch64-linux-gnu-gcc, make deps
# ARCH=arm64 installs it).
set -eu
dst=$(cd "$(dirname "$0")" && pwd)/corpus/unwind_table
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir -p "$dst"
cat > t.c <<'C'
#include <alloca.h>
struct big { double d[8]; } __attribute__((aligned(64)));
__attribute__((noinline)) void use(struct big *b, char *p) { b->d[0] += p[0]; }
__attribute__((noinline)) long realign(int n) { struct big b; char *p = alloca(n); for (int i = 0; i < n; i++) p[i] = i; b.d[0] = n; use(&b, p); return (long)b.d[0]; }
__attribute__((noinline)) long leaf(long x) { return x * 7 + 3; }
long api(long a) { long r = 0; for (long i = 0; i < a; i++) r += leaf(i) ^ realign((int)a); return r; }
void _start(void) { api(3); for (;;) ; }
C
F="-O2 -fomit-frame-pointer -nostdlib -Wl,-z,max-page-size=4096 -Wl,-z,noseparate-code -Wl,--build-id"
# shellcheck disable=SC2086
gcc $F -shared -fPIC t.c -o "$dst/eh.so"
# shellcheck disable=SC2086
gcc $F -fPIE -pie t.c -o "$dst/exe"
# shellcheck disable=SC2086
gcc $F -shared -fPIC -g -fno-asynchronous-unwind-tables -fno-exceptions t.c -o dbg.so
strip --strip-debug --keep-section=.debug_frame dbg.so -o "$dst/dbgframe.so"
python3 - "$dst/eh.so" "$dst/noshdr.so" <<'P'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
struct.pack_into('<Q', d, 0x28, 0)            # e_shoff
struct.pack_into('<HHH', d, 0x3a, 0, 0, 0)     # e_shentsize, e_shnum, e_shstrndx
open(sys.argv[2], 'wb').write(d)
P
printf '\177ELF' > "$dst/short"
# shellcheck disable=SC2086
aarch64-linux-gnu-gcc $F -shared -fPIC t.c -o "$dst/arm64.so"
