#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the seeds of tests/fuzz/corpus/gopclntab/ (committed; run this
only to refresh them): one small, valid Go function table of each layout
core/gopclntab.c reads (Go 1.2-1.15, 1.16-1.17, 1.18-1.19, 1.20 on), with
three functions (one asm, one top frame), their pc-value tables, files
and compilation units. Real tables are megabytes; these keep the fuzzer
fast. The fuzz target reads them with a text start of 0x401000."""
import os
import struct
import sys

TEXT = 0x401000
FUNCS = [  # name, size, flag, file, pcsp (value, pc delta) pairs
    ("main.main", 0x40, 0, "main.go", [(0, 4), (24, 0x30), (0, 0xc)]),
    ("runtime.goexit", 0x10, 1, "asm_amd64.s", [(0, 0x10)]),
    ("crypto/sha256.block", 0x60, 4, "sha256block_amd64.s", [(0, 8), (0x220, 0x50), (0, 8)]),
]


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def pcvalue(pairs):
    """(value, pc delta) pairs -> Go's zig-zag encoded pc-value table."""
    out, prev = bytearray(), -1
    for value, delta in pairs:
        d = value - prev
        out += uvarint((d << 1) if d >= 0 else ((-d - 1) << 1) | 1)
        out += uvarint(delta)
        prev = value
    return bytes(out + b"\0")


def table(version):
    magic = {"1.2": 0xFFFFFFFB, "1.16": 0xFFFFFFFA, "1.18": 0xFFFFFFF0, "1.20": 0xFFFFFFF1}[version]
    head = struct.pack("<IBBBB", magic, 0, 0, 1, 8)
    names = b"".join(f[0].encode() + b"\0" for f in FUNCS)
    name_offs, at = [], 0
    for f in FUNCS:
        name_offs.append(at)
        at += len(f[0]) + 1
    files = b"".join(f[3].encode() + b"\0" for f in FUNCS)
    file_offs, at = [], 0
    for f in FUNCS:
        file_offs.append(at)
        at += len(f[3]) + 1
    # pc-value tables: offset 0 means "none", so one pad byte first
    pctab, sp_offs, file_pc_offs = bytearray(b"\0"), [], []
    for i, f in enumerate(FUNCS):
        sp_offs.append(len(pctab))
        pctab += pcvalue(f[4])
        file_pc_offs.append(len(pctab))
        pctab += pcvalue([(i if version != "1.2" else 0, f[1])]) if version != "1.2" \
            else pcvalue([(i + 1, f[1])])
    entries, pc = [], TEXT
    for f in FUNCS:
        entries.append(pc)
        pc += f[1]
    end = pc

    def record(i, entry_field, name_base, pc_base):
        f = FUNCS[i]
        rec = entry_field + struct.pack("<iiIIIII", name_base + name_offs[i], 0, 0,
                                        pc_base + sp_offs[i], pc_base + file_pc_offs[i], 0, 0)
        if version == "1.2":
            return rec + struct.pack("<BBBB", 0, 0, 0, 0)
        if version == "1.20":
            return rec + struct.pack("<IiBBBB", 0, 1, 0, f[2], 0, 0)
        return rec + struct.pack("<IBBBB", 0, 0, f[2], 0, 0)

    if version == "1.2":
        n = len(FUNCS)
        functab_off = 16
        functab_len = (2 * n + 1) * 8 + 4
        rec_base = functab_off + functab_len
        recs, rec_offs = bytearray(), []
        # records first, then the names, pc-values and files they refer to
        rec_size = 8 + 28 + 4
        names_off = rec_base + n * rec_size
        pctab_off = names_off + len(names)
        filestr_off = pctab_off + len(pctab)
        filetab_off = filestr_off + len(files)
        for i in range(n):
            rec_offs.append(rec_base + len(recs))
            recs += record(i, struct.pack("<Q", entries[i]), names_off, pctab_off)
        functab = b"".join(struct.pack("<QQ", entries[i], rec_offs[i]) for i in range(n))
        functab += struct.pack("<Q", end) + struct.pack("<I", filetab_off)
        # file numbers start at 1; entry 0 holds the count
        filetab = struct.pack("<I", n + 1) + b"".join(
            struct.pack("<I", filestr_off + o) for o in file_offs)
        return head + struct.pack("<Q", n) + functab + recs + names + pctab + files + filetab

    n = len(FUNCS)
    nwords = 7 if version == "1.16" else 8
    hdr_len = 8 + nwords * 8
    cutab = b"".join(struct.pack("<I", o) for o in file_offs)
    off_names = hdr_len
    off_cu = off_names + len(names)
    off_files = off_cu + len(cutab)
    off_pctab = off_files + len(files)
    off_pcln = off_pctab + len(pctab)
    field = 8 if version == "1.16" else 4
    functab_len = (2 * n + 1) * field
    recs, rec_offs = bytearray(), []
    for i in range(n):
        rec_offs.append(functab_len + len(recs))
        entry = struct.pack("<Q", entries[i]) if field == 8 else struct.pack("<I", entries[i] - TEXT)
        # compilation unit 0 for all: file value i indexes cutab
        recs += record(i, entry, 0, 0)
    if field == 8:
        functab = b"".join(struct.pack("<QQ", entries[i], rec_offs[i]) for i in range(n))
        functab += struct.pack("<Q", end)
        words = [n, n, off_names, off_cu, off_files, off_pctab, off_pcln]
    else:
        functab = b"".join(struct.pack("<II", entries[i] - TEXT, rec_offs[i]) for i in range(n))
        functab += struct.pack("<I", end - TEXT)
        # Go 1.26 stores a zero text start; 1.18 the real one
        words = [n, n, TEXT if version == "1.18" else 0, off_names, off_cu, off_files,
                 off_pctab, off_pcln]
    return head + struct.pack("<%dQ" % nwords, *words) + names + cutab + files + pctab + \
        functab + recs


def main():
    dst = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "gopclntab")
    os.makedirs(dst, exist_ok=True)
    for v in ("1.2", "1.16", "1.18", "1.20"):
        with open(os.path.join(dst, "go" + v), "wb") as f:
            f.write(table(v))


if __name__ == "__main__":
    main()
