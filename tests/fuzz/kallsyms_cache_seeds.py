# SPDX-License-Identifier: BSD-2-Clause
# Seeds of tests/fuzz/kallsyms_cache.c: kernel symbol cache files in the
# layout of user/symbolize/kallsyms.c (a 48-byte header: magic, key,
# symbol count, module count, string bytes, CRC-32; then 16-byte symbols
# {addr, name offset, module offset + 1}, 16-byte module extents
# {start, end}, the strings). The fuzz target writes the right key and
# CRC itself. Run: python3 tests/fuzz/kallsyms_cache_seeds.py DIR
import os
import struct
import sys
import zlib


def table(syms, mods):
    arena, offs = b"", {}

    def intern(s):
        nonlocal arena
        if s not in offs:
            offs[s] = len(arena)
            arena += s.encode() + b"\0"
        return offs[s]
    ents = b""
    for addr, name, mod in sorted(syms):
        n = intern(name)
        m = intern(mod) + 1 if mod else 0
        ents += struct.pack("<QII", addr, n, m)
    ext = b"".join(struct.pack("<QQ", a, b) for a, b in mods)
    body = ents + ext + arena
    hdr = b"KILNKSY1" + struct.pack("<QQQQII", 0, len(syms), len(mods), len(arena),
                                    zlib.crc32(body), 0)
    return hdr + body


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    syms = [(0xffffffff81000000, "_stext", None), (0xffffffff81000100, "do_one", None),
            (0xffffffff81000200, "helper_two", None),
            (0xffffffffc0a01000, "ext4_foo", "ext4"), (0xffffffffc0b00000, "xfs_baz", "xfs")]
    mods = [(0xffffffffc0a01000, 0xffffffffc0a03000), (0xffffffffc0b00000, 0xffffffffc0b02000)]
    good = table(syms, mods)
    seeds = {"two_modules": good, "no_modules": table(syms[:3], []),
             "cut": good[:70], "header_only": good[:48]}
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


main()
