#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Rebuilds the seeds of the cache file targets (committed; run this only to
# refresh them), from the files kiln writes (KILN: the kiln binary,
# build/kiln):
# - tests/fuzz/corpus/table_cache/: the unwind table cache files of two
#   small binaries of the host, and the first cut inside its rows;
# - tests/fuzz/corpus/symtab_cache/: the symbol table cache files of a
#   shell loop (dash's and libc's), the first cut inside its symbols, and
#   libstdc++'s (names deflated: over SYM_NAMES_DEFLATE_FROM) from a C++
#   loop (needs g++).
# The fuzz targets rewrite the format, the builder's or loader's
# fingerprint and the checksum themselves, so the seeds stay valid when the
# table builder or the symbol loader changes.
set -eu
kiln=$(cd "$(dirname "${KILN:-build/kiln}")" && pwd)/$(basename "${KILN:-build/kiln}")
corpus=$(cd "$(dirname "$0")" && pwd)/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$corpus/table_cache" "$corpus/symtab_cache"
for f in /bin/true /usr/bin/xz; do
	rm -rf "$tmp/cache"
	"$kiln" unwind-table --cache "$tmp/cache" --summary "$f" >/dev/null
	cp "$tmp"/cache/*.uwt "$corpus/table_cache/$(basename "$f").uwt"
done
head -c 600 "$corpus/table_cache/true.uwt" >"$corpus/table_cache/cut"

rm -rf "$tmp/cache"
"$kiln" record -q -F 999 -o "$tmp/out.folded" --unwind-cache "$tmp/cache" -- \
	/bin/dash -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done' 2>/dev/null
n=0
for f in $(ls -S -r "$tmp"/cache/*.sym | head -n 2); do
	n=$((n + 1))
	install -m 644 "$f" "$corpus/symtab_cache/table$n.sym"
done
head -c 700 "$corpus/symtab_cache/table1.sym" >"$corpus/symtab_cache/cut"

rm -rf "$tmp/cache"
printf '#include <sstream>\nint main() { for (int i = 0; i < 400000; i++) { std::ostringstream o; o << i << " " << i * 0.5; } }\n' |
	g++ -O2 -x c++ - -o "$tmp/cxx"
"$kiln" record -q -F 999 -o "$tmp/out.folded" --unwind-cache "$tmp/cache" -- "$tmp/cxx" 2>/dev/null
for f in "$tmp"/cache/*.sym; do
	# the header's deflated field (offset 48) is 1
	if [ "$(od -An -tu4 -j48 -N4 "$f" | tr -d ' ')" = 1 ]; then
		install -m 644 "$f" "$corpus/symtab_cache/deflated.sym"
	fi
done
