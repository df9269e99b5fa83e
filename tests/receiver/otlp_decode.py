# SPDX-License-Identifier: BSD-2-Clause
"""OTLP 1.10 profiles (v1development), read the way a consumer must read
them: every index checked against its dictionary table, each table's entry 0
the zero value, stacks resolved into function names. Used by receiver.py
(the OTLP endpoint) and by the e2e checks; decoding itself is the protoc
generated module's (python3-protobuf), never a hand-written parser.

resolve(req) -> (profiles, problems): problems are structural faults of the
request as a whole (a consumer cannot read it: 400); each profile is a dict

  resource     {key: value} of its Resource's attributes
  scope        InstrumentationScope name
  sample_type  [type, unit];  period_type [type, unit];  period
  time_nanos, duration_nanos, profile_id (hex)
  samples      [{"frames": [root .. leaf], "value": int, "attributes": {k: v}}]
  problems     what makes this profile unacceptable (a partial success)
"""


def any_value(v):
    """An AnyValue as Python (strings, numbers, bools; lists/dicts nested)."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


class _Dict:
    """The dictionary with checked look-ups; faults go to problems."""

    def __init__(self, d, problems, check_tables=True):
        self.d = d
        self.problems = problems
        if check_tables:
            self.check_tables()

    def check_tables(self):
        d, problems = self.d, self.problems
        st = d.string_table
        if not st or st[0] != "":
            problems.append("string_table[0] must be \"\" and present")
        for name in ("mapping_table", "location_table", "function_table", "link_table",
                     "attribute_table", "stack_table"):
            table = getattr(d, name)
            if not table:
                problems.append("%s[0] (the zero value) missing" % name)
            elif table[0].ByteSize() != 0:
                problems.append("%s[0] is not the zero value" % name)

    def at(self, table, i, what):
        t = getattr(self.d, table)
        if 0 <= i < len(t):
            return t[i]
        self.problems.append("%s: index %d out of range of %s (%d entries)" % (what, i, table, len(t)))
        return None

    def s(self, i, what):
        return self.at("string_table", i, what)

    def attributes(self, indices, what):
        out = {}
        for i in indices:
            a = self.at("attribute_table", i, what)
            if a is None:
                continue
            if i == 0:
                self.problems.append("%s: attribute index 0 (the zero value) used" % what)
                continue
            k = self.s(a.key_strindex, what + " key")
            if k in out:
                self.problems.append("%s: attribute %r twice" % (what, k))
            out[k] = any_value(a.value)
        return out

    def frames(self, loc_index, what):
        """A location's function names, outermost first."""
        loc = self.at("location_table", loc_index, what)
        if loc is None:
            return ["?"]
        if loc_index == 0:
            self.problems.append("%s: location index 0 (the zero value) in a stack" % what)
        self.at("mapping_table", loc.mapping_index, what + " mapping")
        self.attributes(loc.attribute_indices, what + " location")
        names = []
        for ln in loc.lines:
            f = self.at("function_table", ln.function_index, what + " line")
            names.append(self.s(f.name_strindex, what + " function") if f else "?")
        if not names:
            names.append("0x%x" % loc.address)
        names.reverse()
        return names


def resolve(req):
    problems = []
    d = _Dict(req.dictionary, problems)
    for i, m in enumerate(req.dictionary.mapping_table):
        d.s(m.filename_strindex, "mapping %d filename" % i)
        d.attributes(m.attribute_indices, "mapping %d" % i)
    profiles = []
    for r, rp in enumerate(req.resource_profiles):
        resource = {kv.key: any_value(kv.value) for kv in rp.resource.attributes}
        if len(resource) != len(rp.resource.attributes):
            problems.append("resource %d: an attribute key twice" % r)
        for sp in rp.scope_profiles:
            for p in sp.profiles:
                where = "resource %d profile %d" % (r, len(profiles))
                own = []
                dp = _Dict(req.dictionary, own, check_tables=False)
                out = {
                    "resource": resource,
                    "scope": sp.scope.name,
                    "sample_type": [d.s(p.sample_type.type_strindex, where),
                                    d.s(p.sample_type.unit_strindex, where)],
                    "period_type": [d.s(p.period_type.type_strindex, where),
                                    d.s(p.period_type.unit_strindex, where)],
                    "period": p.period,
                    "time_nanos": p.time_unix_nano,
                    "duration_nanos": p.duration_nano,
                    "profile_id": p.profile_id.hex(),
                    "samples": [],
                    "problems": own,
                }
                if not p.HasField("sample_type"):
                    own.append("%s: no sample_type" % where)
                if len(p.profile_id) != 16 or not any(p.profile_id):
                    own.append("%s: profile_id must be 16 bytes, not all zero" % where)
                for n, smp in enumerate(p.samples):
                    w = "%s sample %d" % (where, n)
                    if not smp.values and not smp.timestamps_unix_nano:
                        # what a 1.9 sender's values (field 2) look like here
                        own.append("%s: neither values nor timestamps" % w)
                    if smp.values and smp.timestamps_unix_nano and \
                            len(smp.values) != len(smp.timestamps_unix_nano):
                        own.append("%s: values and timestamps differ in count" % w)
                    st = dp.at("stack_table", smp.stack_index, w)
                    frames = []
                    for li in st.location_indices if st is not None else []:
                        frames[:0] = dp.frames(li, w)
                    out["samples"].append({
                        "frames": frames,
                        "value": sum(smp.values) if smp.values else len(smp.timestamps_unix_nano),
                        "attributes": dp.attributes(smp.attribute_indices, w),
                    })
                profiles.append(out)
    return profiles, problems
