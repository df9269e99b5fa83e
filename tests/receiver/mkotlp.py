#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Build OTLP profiles requests for receiver.py's self-test, with modules
protoc generates from --proto-dir (receiver.generate_modules).

  mkotlp.py --proto-dir DIR --out FILE [--variant ok|v19|badindex] [--age S]

ok: one resource (service.name=selftest) with one profile, cpu/nanoseconds
at 100 Hz, stacks main;work;spin x30 and main;other x5. v19: the same with
each sample laid out as an OTLP 1.9 sender does (its values in field 2,
where 1.10 has attribute_indices): a 1.10 reader finds no values. badindex:
a sample whose stack index is past the stack table.
"""

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import receiver  # noqa: E402

PERIOD = 10000000


def build(pb, variant, age):
    req = pb.ExportProfilesServiceRequest()
    d = req.dictionary
    strings = [""]

    def s(text):
        if text not in strings:
            strings.append(text)
        return strings.index(text)

    d.mapping_table.add()
    d.location_table.add()
    d.function_table.add()
    d.link_table.add()
    d.attribute_table.add()
    d.stack_table.add()
    d.mapping_table.add(memory_start=0x400000, memory_limit=0x500000,
                        filename_strindex=s("/usr/bin/selftest"))
    locs = {}
    for i, name in enumerate(("main", "work", "spin", "other")):
        d.function_table.add(name_strindex=s(name), system_name_strindex=s(name))
        loc = d.location_table.add(mapping_index=1, address=0x401000 + 0x10 * i)
        loc.lines.add(function_index=i + 1)
        locs[name] = i + 1
    rp = req.resource_profiles.add()
    rp.resource.attributes.add(key="service.name").value.string_value = "selftest"
    sp = rp.scope_profiles.add()
    sp.scope.name = "mkotlp"
    p = sp.profiles.add()
    p.sample_type.type_strindex = s("cpu")
    p.sample_type.unit_strindex = s("nanoseconds")
    p.period_type.CopyFrom(p.sample_type)
    p.period = PERIOD
    p.time_unix_nano = int((time.time() - age - 10) * 1e9)
    p.duration_nano = 10 * 10**9
    p.profile_id = bytes(range(1, 17))
    for stack, count in ((("main", "work", "spin"), 30), (("main", "other"), 5)):
        st = d.stack_table.add()
        st.location_indices.extend(locs[f] for f in reversed(stack))  # leaf first
        smp = p.samples.add(stack_index=len(d.stack_table) - 1)
        if variant == "v19":
            smp.attribute_indices.append(count * PERIOD)
        else:
            smp.values.append(count * PERIOD)
        if variant == "badindex":
            smp.stack_index = 99
    d.string_table.extend(strings)
    return req


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--variant", choices=("ok", "v19", "badindex"), default="ok")
    ap.add_argument("--age", type=float, default=0)
    args = ap.parse_args()
    tmp, mods = receiver.generate_modules(args.proto_dir)
    try:
        with open(args.out, "wb") as f:
            f.write(build(mods["otlp"], args.variant, args.age).SerializeToString())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
