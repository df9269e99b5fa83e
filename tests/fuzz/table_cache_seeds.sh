#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Rebuilds the seeds of tests/fuzz/corpus/table_cache/ (committed; run this
# only to refresh them): the unwind table cache files kiln writes for two
# small binaries of the host (KILN: the kiln binary, build/kiln), and the
# first of them cut inside its rows. The fuzz target rewrites the builder
# fingerprint and the checksum itself, so the seeds stay valid when the
# table builder changes.
set -eu
kiln=$(cd "$(dirname "${KILN:-build/kiln}")" && pwd)/$(basename "${KILN:-build/kiln}")
dst=$(cd "$(dirname "$0")" && pwd)/corpus/table_cache
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dst"
for f in /bin/true /usr/bin/xz; do
	rm -rf "$tmp/cache"
	"$kiln" unwind-table --cache "$tmp/cache" --summary "$f" >/dev/null
	cp "$tmp"/cache/*.uwt "$dst/$(basename "$f").uwt"
done
head -c 600 "$dst/true.uwt" >"$dst/cut"
