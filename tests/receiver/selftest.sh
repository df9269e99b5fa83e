#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Self-test of the test receiver: starts receiver.py, sends it real push and
# ingest requests built with protoc-generated modules, and checks the answers
# and the log lines. Prints one line per check and "N passed, N failed,
# N skipped" last (tests/lib.sh); exits non-zero if anything failed.
# Needs /usr/bin/python3 with python3-protobuf, protoc (protobuf-compiler), curl.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
PROTO_DIR=${PROTO_DIR:-$ROOT/user/proto}
TMP=$(mktemp -d /tmp/kiln-receiver-selftest.XXXXXX)
LOG=$TMP/log.jsonl
RPID=
. "$HERE/../lib.sh"

cleanup() {
	if [ -n "$RPID" ] && kill -0 "$RPID" 2>/dev/null; then
		kill -TERM "$RPID" 2>/dev/null
		wait "$RPID" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT


for tool in protoc curl; do
	command -v "$tool" >/dev/null || { echo "selftest: $tool missing (apt-get install -y protobuf-compiler curl)"; exit 2; }
done
$PY -c 'import google.protobuf' 2>/dev/null || { echo "selftest: $PY lacks google.protobuf (apt-get install -y python3-protobuf)"; exit 2; }

# ---------------------------------------------------------------- helpers

mk() { $PY "$HERE/mkpush.py" --proto-dir "$PROTO_DIR" "$@"; }

# post NAME PATH BODYFILE [curl args...]: HTTP status into $code, body into
# $TMP/NAME.body, headers into $TMP/NAME.hdr, curl's exit status into $rc
post() {
	local name=$1 path=$2 file=$3
	shift 3
	code=$(curl -s -o "$TMP/$name.body" -D "$TMP/$name.hdr" -w '%{http_code}' --max-time 20 \
		-X POST --data-binary @"$file" "$@" "http://127.0.0.1:$PORT$path")
	rc=$?
}
push() { local name=$1 file=$2; shift 2; post "$name" /push.v1.PusherService/Push "$file" -H 'Content-Type: application/proto' "$@"; }
control() {
	curl -s -o "$TMP/control.body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "$1" "http://127.0.0.1:$PORT/_control"
}

# logcheck NAME PYEXPR: logcheck.py on the log, with body = the last
# response body saved under NAME (see logcheck.py for the names in PYEXPR)
logcheck() { $PY "$HERE/logcheck.py" "$LOG" "$2" --body "$TMP/$1.body"; }

# check NAME DESCRIPTION PYEXPR
check() {
	if logcheck "$1" "$3"; then pass "$2"; else fail "$1" "$2"; fi
}

# ---------------------------------------------------------------- start

$PY "$HERE/receiver.py" --port 0 --port-file "$TMP/port" --proto-dir "$PROTO_DIR" --log "$LOG" \
	>"$TMP/stdout" 2>"$TMP/stderr" &
RPID=$!
for _ in $(seq 100); do
	[ -s "$TMP/port" ] && [ -s "$TMP/stdout" ] && break
	sleep 0.1
done
PORT=$(cat "$TMP/port" 2>/dev/null)
if [ -z "$PORT" ]; then
	echo "FAIL start: receiver did not start: $(cat "$TMP/stderr")"
	exit 1
fi
if [ "$(head -1 "$TMP/stdout")" = "listening on 127.0.0.1:$PORT" ]; then
	pass "start: first stdout line 'listening on 127.0.0.1:$PORT', port file agrees"
else
	fail start "first stdout line is '$(head -1 "$TMP/stdout")', port file says $PORT"
fi

# ---------------------------------------------------------------- push

mk --out "$TMP/push.bin" --label __name__=process_cpu --label service_name=selftest \
	--label host=h1 --label pod_name=p-1 --stack 'main;work;spin=30' --stack 'main;work;idle=10' \
	--stack 'main;other=5' --hz 100 --id 11111111-2222-3333-4444-555555555555
push push "$TMP/push.bin"
if [ "$code" = 200 ] && [ ! -s "$TMP/push.body" ] && grep -qi '^content-type: application/proto' "$TMP/push.hdr"; then
	pass "push: 200, empty application/proto PushResponse"
else
	fail push "status $code, body '$(head -c 200 "$TMP/push.body")'"
fi
check push "push log: labels in order, sample types, period, times, counts, sums" '
e["status"] == 200 and e["delivered"] and e["protocol"] == "connect+proto"
and e["headers"]["content-type"] == "application/proto"
and e["series"][0]["labels"] == [["__name__","process_cpu"],["service_name","selftest"],["host","h1"],["pod_name","p-1"]]
and p()["id"] == "11111111-2222-3333-4444-555555555555" and p()["id_is_uuid"]
and p()["gzipped"] and p()["sample_type"] == [["samples","count"],["cpu","nanoseconds"]]
and p()["period_type"] == ["cpu","nanoseconds"] and p()["period"] == 10000000
and 0 <= p()["age_seconds"] < 60 and p()["duration_nanos"] == 10000000000
and p()["num_samples"] == 3 and p()["value_sums"] == [45, 450000000] and p()["total"] == 450000000
and p()["cpu_total"] == 450000000 and p()["string_count"] == 12 and p()["mapping_count"] == 1
and p()["mappings"][0]["filename"] == "/usr/bin/selftest" and p()["mappings"][0]["build_id"] == "deadbeef"'
check push "push log: stacks root-first with cpu values, function names" '
[["main","work","spin"], 300000000] in p()["stacks"] and [["main","other"], 50000000] in p()["stacks"]
and any("spi" in f for f in p()["function_names"]) and not any("nothere" in f for f in p()["function_names"])'
push push_dup "$TMP/push.bin"
check push_dup "push log: a re-sent sample ID is flagged duplicate_id" 'e["status"] == 200 and p()["duplicate_id"]'

mk --out "$TMP/push_plain.bin" --no-gzip
push push_plain "$TMP/push_plain.bin"
check push_plain "push: pprof not gzipped is accepted (gzipped=false)" 'e["status"] == 200 and not p()["gzipped"]'

mk --out "$TMP/push.json" --json
post push_json /push.v1.PusherService/Push "$TMP/push.json" -H 'Content-Type: application/json'
check push_json "push: Connect JSON body accepted, answered {}" 'e["status"] == 200 and e["protocol"] == "connect+json" and js() == {} and p()["num_samples"] == 3'

gzip -c "$TMP/push.bin" >"$TMP/push.bin.gz"
push push_ce "$TMP/push.bin.gz" -H 'Content-Encoding: gzip'
check push_ce "push: Content-Encoding gzip request body" 'e["status"] == 200 and e["content_encoding"] == "gzip" and e["decoded_body_size"] > 0 and p()["num_samples"] == 3'

# ---------------------------------------------------------------- OTLP

mko() { $PY "$HERE/mkotlp.py" --proto-dir "$PROTO_DIR" "$@"; }
otlp() { local name=$1 file=$2; shift 2; post "$name" /v1development/profiles "$file" "$@"; }
# status_message NAME: the google.rpc.Status message of NAME's answer
status_message() {
	$PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import receiver, shutil
t, m = receiver.generate_modules(sys.argv[2]); s = m["status"].Status(); s.ParseFromString(open(sys.argv[3], "rb").read())
print(s.message); shutil.rmtree(t)' "$HERE" "$PROTO_DIR" "$TMP/$1.body"
}

mko --out "$TMP/otlp.bin"
otlp otlp "$TMP/otlp.bin" -H 'Content-Type: application/x-protobuf'
check otlp "otlp: 200, an empty ExportProfilesServiceResponse; the profile's stacks, values and resource logged" '
e["status"] == 200 and e["kind"] == "otlp" and e["protocol"] == "otlp+proto" and body == b"" and e["rejected_profiles"] == 0
and e["series"][0]["labels_map"] == {"service.name": "selftest"} and p()["format"] == "otlp"
and p()["sample_type"] == [["cpu","nanoseconds"]] and p()["period"] == 10000000 and p()["num_samples"] == 2
and [["main","work","spin"], 300000000] in p()["stacks"] and p()["cpu_total"] == 350000000'
otlp otlp_ct "$TMP/otlp.bin" -H 'Content-Type: application/proto'
if [ "$code" = 415 ] && [ "$(status_message otlp_ct)" != "" ] &&
	grep -qi '^content-type: application/x-protobuf' "$TMP/otlp_ct.hdr"; then
	pass "otlp: another Content-Type gets 415 with a google.rpc.Status body"
else
	fail otlp_ct "status $code"
fi
printf 'garbage' >"$TMP/garbage.bin"
otlp otlp_bad "$TMP/garbage.bin" -H 'Content-Type: application/x-protobuf'
check otlp_bad "otlp: a body that is no ExportProfilesServiceRequest gets 400" 'e["status"] == 400 and not e["delivered"]'
mko --out "$TMP/otlp_v19.bin" --variant v19
otlp otlp_v19 "$TMP/otlp_v19.bin" -H 'Content-Type: application/x-protobuf'
check otlp_v19 "otlp: a 1.9 sender's samples (values in field 2) have no values in 1.10: refused in a partial success" '
e["status"] == 200 and e["rejected_profiles"] == 1 and not list(profiles([e])) and "neither values nor timestamps" in e["series"][0]["error"]'
mko --out "$TMP/otlp_idx.bin" --variant badindex
otlp otlp_idx "$TMP/otlp_idx.bin" -H 'Content-Type: application/x-protobuf'
check otlp_idx "otlp: a stack index past the table refuses the profile" 'e["status"] == 200 and e["rejected_profiles"] == 1 and "out of range" in e["series"][0]["error"]'
mko --out "$TMP/otlp_old.bin" --age 7200
otlp otlp_old "$TMP/otlp_old.bin" -H 'Content-Type: application/x-protobuf'
check otlp_old "otlp: a profile 2 h old is refused in a partial success" 'e["status"] == 200 and e["rejected_profiles"] == 1'
control '{"mode":"status","status":503,"count":1,"retry_after":3}' >/dev/null
otlp otlp_503 "$TMP/otlp.bin" -H 'Content-Type: application/x-protobuf'
if [ "$code" = 503 ] && grep -qi '^retry-after: 3' "$TMP/otlp_503.hdr" &&
	[ "$(status_message otlp_503)" = "injected fault: HTTP 503" ]; then
	pass "otlp: a fault answers its status, Retry-After and a google.rpc.Status"
else
	fail otlp_503 "status $code, message '$(status_message otlp_503)'"
fi

# ---------------------------------------------------------------- ingest

printf 'main;work;spin 30\nmain;work;idle 10\nmain;other 5\n' >"$TMP/folded.txt"
now=$(date +%s)
post ingest "/ingest?name=selftest.cpu%7Benv%3Dci%2Chost%3Dh1%7D&from=$((now - 10))&until=$now&format=folded&sampleRate=100&spyName=kiln&units=samples&aggregationType=sum" \
	"$TMP/folded.txt" -H 'Content-Type: text/plain'
check ingest "ingest folded: 200, name parsed to labels, stacks and sums recorded" '
e["status"] == 200 and e["kind"] == "ingest" and e["delivered"]
and e["ingest"]["app"] == "selftest" and e["ingest"]["profile_type"] == "cpu" and e["ingest"]["spyName"] == "kiln"
and e["ingest"]["sampleRate"] == 100 and e["ingest"]["until"] - e["ingest"]["from"] == 10
and e["series"][0]["labels"] == [["__name__","cpu"],["service_name","selftest"],["env","ci"],["host","h1"]]
and p()["format"] == "folded" and p()["num_samples"] == 3 and p()["total"] == 45 and p()["cpu_total"] == 450000000
and [["main","work","spin"], 30] in p()["stacks"]'

mk --out "$TMP/prof.pb.gz" --pprof-only
post ingest_pprof "/ingest?name=selftest.cpu&format=pprof" "$TMP/prof.pb.gz" -H 'Content-Type: application/octet-stream'
check ingest_pprof "ingest pprof body" 'e["status"] == 200 and p()["format"] == "pprof" and p()["num_samples"] == 3'
code=$(curl -s -o "$TMP/ingest_mp.body" -w '%{http_code}' -F "profile=@$TMP/prof.pb.gz" \
	"http://127.0.0.1:$PORT/ingest?name=selftest.cpu%7Bmp%3D1%7D&format=pprof")
check ingest_mp "ingest multipart/form-data with field profile" 'e["status"] == 200 and e["ingest"]["multipart_fields"] == ["profile"] and p()["gzipped"] and p()["num_samples"] == 3'

post ingest_bad "/ingest?name=selftest%7Benv%3Dci%7D" "$TMP/folded.txt"
check ingest_bad "ingest: bad name -> 400 invalid_argument JSON, logged" 'e["status"] == 400 and js()["code"] == "invalid_argument" and "name" in js()["message"] and e["error"]["code"] == "invalid_argument"'
post ingest_bad2 "/ingest?name=selftest.cpu%7Bbad-key%3D1%7D" "$TMP/folded.txt"
check ingest_bad2 "ingest: bad tag key -> 400" 'e["status"] == 400 and "tag key" in js()["message"]'
printf 'main;work\n' >"$TMP/folded_bad.txt"
post ingest_bad3 "/ingest?name=selftest.cpu" "$TMP/folded_bad.txt"
check ingest_bad3 "ingest: folded line without a count -> 422" 'e["status"] == 422 and "line 1" in js()["message"]'

# ---------------------------------------------------------------- faults

c=$(control '{"mode":"status","status":503,"count":2}')
[ "$c" = 200 ] || fail control "status mode: HTTP $c $(cat "$TMP/control.body")"
push f1 "$TMP/push.bin"; s1=$code
push f2 "$TMP/push.bin"; s2=$code
push f3 "$TMP/push.bin"; s3=$code
if [ "$s1.$s2.$s3" = 503.503.200 ]; then pass "fault: 503 twice (count 2), then ok"; else fail fault "statuses $s1 $s2 $s3"; fi
check f1 "fault: injected 503 answers Connect JSON {code: unavailable}" 'js() == {"code": "unavailable", "message": "injected fault: HTTP 503"}'
check f2 "fault: error attempts logged with status, not delivered, payload still decoded" '
[x["status"] for x in L if x["kind"] == "push"][-3:] == [503, 503, 200]
and [x["delivered"] for x in L if x["kind"] == "push"][-3:] == [False, False, True]
and [x["fault"] for x in L if x["kind"] == "push"][-3:] == ["status", "status", None]
and [x for x in L if x["kind"] == "push"][-2]["series"][0]["samples"][0]["num_samples"] == 3'

control '{"mode":"status","status":429,"count":1,"retry_after":7}' >/dev/null
push f429 "$TMP/push.bin"
if [ "$code" = 429 ] && grep -qi '^retry-after: 7' "$TMP/f429.hdr" && grep -q resource_exhausted "$TMP/f429.body"; then
	pass "fault: 429 resource_exhausted with Retry-After"
else
	fail f429 "status $code, $(cat "$TMP/f429.hdr" "$TMP/f429.body" | tr '\r\n' '  ')"
fi

control '{"mode":"delay","seconds":1.5,"count":1}' >/dev/null
# The delay is a lower bound (load only lengthens it); "then immediate" is
# the log saying the second request met no fault, not a time.
t0=$(date +%s.%N); push fdelay "$TMP/push.bin"; t1=$(date +%s.%N)
push fdelay2 "$TMP/push.bin"
if [ "$code" = 200 ] && $PY -c "import sys; sys.exit(0 if $t1-$t0 >= 1.4 else 1)" &&
	logcheck fdelay 'A[-2].get("fault") == "delay" and A[-2]["delay_seconds"] == 1.5 and not A[-1].get("fault") and A[-1]["status"] == 200'; then
	pass "fault: delay 1.5 s for one request, then immediate"
else
	fail fdelay "status $code, first request took $t0..$t1"
fi

control '{"mode":"close","count":1}' >/dev/null
push fclose "$TMP/push.bin"
if [ "$rc" = 52 ]; then pass "fault: close without a response (curl: empty reply)"; else fail fclose "curl rc $rc status $code"; fi
check fclose "fault: closed attempt logged with status 0" '[x for x in L if x["kind"] == "push"][-1]["status"] == 0 and e["fault"] == "close"'

control '{"mode":"status","status":500}' >/dev/null
push fa "$TMP/push.bin"; s1=$code
push fb "$TMP/push.bin"; s2=$code
control '{"mode":"ok"}' >/dev/null
push fc "$TMP/push.bin"; s3=$code
if [ "$s1.$s2.$s3" = 500.500.200 ]; then pass "fault: no count = until changed, mode ok restores"; else fail fault_nocount "statuses $s1 $s2 $s3"; fi

# ---------------------------------------------------------------- auth

control '{"require_auth":{"authorization":"Bearer abc"}}' >/dev/null
push a1 "$TMP/push.bin"; s1=$code
push a2 "$TMP/push.bin" -H 'Authorization: Bearer wrong'; s2=$code
push a3 "$TMP/push.bin" -H 'Authorization: Bearer abc'; s3=$code
if [ "$s1.$s2.$s3" = 401.401.200 ] && grep -q '"unauthenticated"' "$TMP/a1.body"; then
	pass "auth: bearer missing/wrong -> 401 unauthenticated, right -> 200"
else
	fail auth_bearer "statuses $s1 $s2 $s3 $(cat "$TMP/a1.body")"
fi
check a3 "auth: authorization header logged; rejected attempts logged with fault auth" '
e["headers"]["authorization"] == "Bearer abc" and [x["fault"] for x in L if x["kind"] == "push"][-3:] == ["auth", "auth", None]'
control '{"require_auth":{"basic":{"username":"123456","password":"glc_tok"}}}' >/dev/null
push b1 "$TMP/push.bin" -u 123456:nope; s1=$code
push b2 "$TMP/push.bin" -u 123456:glc_tok; s2=$code
if [ "$s1.$s2" = 401.200 ]; then pass "auth: basic wrong -> 401, right -> 200"; else fail auth_basic "statuses $s1 $s2"; fi
control '{"require_auth":null,"require_headers":{"X-Scope-OrgID":"t1"}}' >/dev/null
push h1 "$TMP/push.bin"; s1=$code
push h2 "$TMP/push.bin" -H 'X-Scope-OrgID: t2'; s2=$code
push h3 "$TMP/push.bin" -H 'X-Scope-OrgID: t1'; s3=$code
control '{"require_headers":null}' >/dev/null
push h4 "$TMP/push.bin"; s4=$code
if [ "$s1.$s2.$s3.$s4" = 401.401.200.200 ]; then pass "require_headers: x-scope-orgid checked, cleared by null"; else fail headers "statuses $s1 $s2 $s3 $s4"; fi

# ---------------------------------------------------------------- bad input

# Field 1 with wire type 7, which protobuf does not have: never decodable
# (random bytes sometimes are valid protobuf).
printf '\x0f\x01garbage body, not a PushRequest' >"$TMP/garbage.bin"
printf '\xff\xff\xff\xff' >"$TMP/trunc.bin"
push m1 "$TMP/trunc.bin"
check m1 "malformed protobuf body -> 400 invalid_argument, logged" 'e["status"] == 400 and js()["code"] == "invalid_argument" and "PushRequest" in js()["message"] and e["body_size"] == 4'
push m2 "$TMP/garbage.bin"
check m2 "undecodable bytes (invalid wire type) -> 400, logged" 'e["status"] == 400 and e["error"]["code"] == "invalid_argument"'
mk --out "$TMP/badgz.bin" --raw-profile-bytes 1f8b08000000000000ff0102
push m3 "$TMP/badgz.bin"
check m3 "bad gzip raw_profile -> 400 'gzip'" 'e["status"] == 400 and "gzip" in js()["message"]'
mk --out "$TMP/badpprof.bin" --raw-profile-bytes 0a0208
push m4 "$TMP/badpprof.bin"
check m4 "undecodable pprof -> 400" 'e["status"] == 400 and "pprof" in js()["message"]'
push m5 "$TMP/push.bin.gz" -H 'Content-Encoding: br'
check m5 "unsupported Content-Encoding -> 400" 'e["status"] == 400 and "Content-Encoding" in js()["message"]'
post m6 /push.v1.PusherService/Push "$TMP/push.bin" -H 'Content-Type: application/grpc'
check m6 "wrong Content-Type -> 415" 'e["status"] == 415 and "Content-Type" in js()["message"]'
post m7 /push.v1.PusherService/Push "$TMP/folded.txt" -H 'Content-Type: application/json'
check m7 "bad JSON push body -> 400" 'e["status"] == 400 and "connect+json" in js()["message"]'
c=$(control '{"mode": "status", "status": 503')
c2=$(control '{"mode": "sideways"}')
c3=$(control '[1,2]')
if [ "$c.$c2.$c3" = 400.400.400 ]; then pass "bad control bodies -> 400"; else fail control_bad "statuses $c $c2 $c3"; fi

# ---------------------------------------------------------------- validation

v() { # v NAME DESCRIPTION EXPECTED-IN-MESSAGE mkpush-args...
	local name=$1 desc=$2 want=$3
	shift 3
	mk --out "$TMP/$name.bin" "$@"
	push "$name" "$TMP/$name.bin"
	check "$name" "validation: $desc -> 400" "e['status'] == 400 and e['error']['code'] == 'invalid_argument' and '$want' in js()['message']"
}
v v1 "no service_name" "missing service_name" --label __name__=process_cpu --label host=h1
check v1 "validation: a rejected request's labels and profile are still logged" 'e["series"][0]["labels"] == [["__name__","process_cpu"],["host","h1"]] and e["series"][0]["error"] and p()["num_samples"] == 3 and not e["delivered"]'
v v2 "no __name__" "missing __name__" --label service_name=x
v v3 "label name with '-'" "invalid label name" --label __name__=process_cpu --label service_name=x --label pod-name=p
v v4 "duplicate label name" "duplicate label" --label __name__=process_cpu --label service_name=x --label a=1 --label a=2
labels=(--label __name__=process_cpu --label service_name=x)
for i in $(seq 29); do labels+=(--label "l$i=v"); done
v v5 "31 labels" "labels, limit 30" "${labels[@]}"
v v6 "label value of 2049 bytes" "longer than 2048" --label __name__=process_cpu --label service_name=x --label "v=$(head -c 2049 /dev/zero | tr '\0' a)"
v v7 "label name of 1025 bytes" "longer than 1024" --label __name__=process_cpu --label service_name=x --label "$(head -c 1025 /dev/zero | tr '\0' a)=1"
v v8 "profile 2 h old" "older than" --age 7200
v v9 "profile 20 min in the future" "in the future" --age -1200
mk --out "$TMP/v10.bin" --age 3000
push v10 "$TMP/v10.bin"
check v10 "validation: profile 50 min old is still accepted" 'e["status"] == 200'

# ---------------------------------------------------------------- stats, query

curl -s -o "$TMP/stats.body" "http://127.0.0.1:$PORT/_stats"
check stats "/_stats totals agree with the log" '
(lambda s, d: s["by_kind"]["push"]["delivered"] == len([x for x in d if x["kind"] == "push"])
 and s["by_kind"]["push"]["attempts"] == len([x for x in L if x["kind"] == "push"])
 and s["series"] == sum(len([sr for sr in x["series"] if sr.get("stored", True)]) for x in d)
 and s["samples"] == sum(q["num_samples"] for x in d for sr in x["series"] if sr.get("stored", True) for q in sr["samples"])
 and s["cpu_by_service"]["selftest"] == sum(q["cpu_total"] for x in d for sr in x["series"] if sr["service_name"] == "selftest" and sr.get("stored", True) for q in sr["samples"])
 and s["requests_by_status"]["503"] == 3 and s["requests_by_status"]["401"] >= 5
)(js(), [x for x in L if x["delivered"]])'
curl -s -o "$TMP/query.body" "http://127.0.0.1:$PORT/_query?contains=spin&service_name=selftest"
check query "/_query?contains=spin finds the spin stacks" 'js()["matched"] > 0 and js()["matched"] < js()["total"] and js()["services"]["selftest"]["matched_stacks"] >= 1'

# ---------------------------------------------------------------- query API
# (L[-1]: the query's own log entry)

# q NAME SELECTOR [TYPE] [curl args...]: a SelectMergeProfileRequest in
# Connect JSON over the last hour
q() {
	local name=$1 sel=$2 type=${3:-process_cpu:cpu:nanoseconds:cpu:nanoseconds} now_ms
	shift 3 2>/dev/null || shift $#
	now_ms=$(($(date +%s) * 1000))
	$PY -c 'import json, sys; print(json.dumps({"profile_typeID": sys.argv[1], "labelSelector": sys.argv[2], "start": sys.argv[3], "end": sys.argv[4]}))' \
		"$type" "$sel" $((now_ms - 3600000)) $((now_ms + 600000)) >"$TMP/$name.json"
	post "$name" /querier.v1.QuerierService/SelectMergeProfile "$TMP/$name.json" -H 'Content-Type: application/json' "$@"
}
total='sum(int(v) for s in js().get("sample", []) for v in s["value"])'
q q1 '{service_name="selftest"}'
check q1 "query: SelectMergeProfile merges the stored profiles of a selector (cpu values, one sample type)" "L[-1]['status'] == 200 and L[-1]['matched_profiles'] >= 3 and $total > 0 and len(js()['sampleType']) == 1 and js()['stringTable'][int(js()['sampleType'][0]['type'])] == 'cpu'"
cp "$TMP/q1.body" "$TMP/q1.saved"
q q2 '{service_name=~"self.*", host!="nope"}'
check q2 "query: regex and != matchers select the same profiles" "$total == (lambda b: sum(int(v) for s in b.get('sample', []) for v in s['value']))(__import__('json').load(open('$TMP/q1.saved')))"
q q3 '{service_name="nothing"}'
check q3 "query: no match answers an empty profile" "L[-1]['status'] == 200 and L[-1]['matched_profiles'] == 0 and $total == 0"
q q4 'service_name="selftest"'
check q4 "query: a selector without braces -> 400 parse error" 'L[-1]["status"] == 400 and "parse error" in js()["message"]'
q q5 '{service_name="selftest"}' process_cpu:cpu
check q5 "query: a bad profile type -> 400" 'L[-1]["status"] == 400 and "profile type" in js()["message"]'
mk --out "$TMP/push_t2.bin" --label __name__=process_cpu --label service_name=t2svc
push t2 "$TMP/push_t2.bin" -H 'X-Scope-OrgID: t2'
q q6 '{service_name="t2svc"}'
check q6 "query: another tenant's profiles are not seen" "L[-1]['status'] == 200 and $total == 0"
q q7 '{service_name="t2svc"}' process_cpu:cpu:nanoseconds:cpu:nanoseconds -H 'X-Scope-OrgID: t2'
check q7 "query: the tenant's own profiles are" "L[-1]['status'] == 200 and $total > 0"

check helpers "logcheck.py helpers: has_function, stack_value, cpu" 'has_function("spin") and not has_function("nothere") and stack_value("spin") > 0 and cpu("selftest") > 0 and labels(D[0])["host"] == "h1"'

# ---------------------------------------------------------------- keep-alive

if $PY - "$PORT" "$TMP/push.bin" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
body = open(sys.argv[2], "rb").read()
for _ in range(3):
    c.request("POST", "/push.v1.PusherService/Push", body, {"Content-Type": "application/proto"})
    r = c.getresponse(); r.read()
    assert r.status == 200 and r.getheader("Connection", "").lower() != "close", r.status
    assert r.version == 11
EOF
then
	check keepalive "HTTP/1.1 keep-alive: 3 pushes on one connection" 'len(set(x["remote"] for x in L[-3:])) == 1 and all(x["status"] == 200 for x in L[-3:])'
else
	fail keepalive "requests on one connection failed"
fi

# ---------------------------------------------------------------- Pyroscope's partial success, burst

# Three series, the second without a service_name: the other two are stored,
# the answer is the second's 400.
mk --out "$TMP/three.bin" --more-series '__name__=process_cpu,service_name=' \
	--more-series '__name__=process_cpu,service_name=third'
push three "$TMP/three.bin"
if [ "$code" = 400 ]; then
	check partial "three series, one without service_name: 400, the other two stored" \
		'e["partial"] and [s["stored"] for s in e["series"]] == [True, False, True] and e in D and len(list(profiles([e]))) == 2'
else
	fail partial "want 400, got $code: $(cat "$TMP/three.body")"
fi
# Labels and decompressed profile over the burst: 429, nothing stored.
mk --out "$TMP/burst.bin" --filler-stacks 11000
push burst "$TMP/burst.bin"
if [ "$code" = 429 ]; then
	check burst "a 2 MB request: 429 resource_exhausted, nothing stored" \
		'e["burst_bytes"] > 2000000 and e not in D and js()["code"] == "resource_exhausted"'
else
	fail burst "want 429, got $code: $(head -c 300 "$TMP/burst.body")"
fi

# ---------------------------------------------------------------- still alive, shutdown

if curl -sf "http://127.0.0.1:$PORT/_health" >/dev/null && kill -0 "$RPID"; then
	pass "receiver still serving after all bad input"
else
	fail alive "receiver not answering: $(tail -5 "$TMP/stderr")"
fi
if $PY -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$LOG"; then
	pass "every log line is JSON ($(wc -l <"$LOG") lines)"
else
	fail log "log has a line that is not JSON"
fi
kill -TERM "$RPID"
for _ in $(seq 50); do kill -0 "$RPID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$RPID" 2>/dev/null; then
	fail sigterm "still running 5 s after SIGTERM"
else
	wait "$RPID"; st=$?
	if [ "$st" = 0 ]; then pass "SIGTERM: clean exit 0"; else fail sigterm "exit status $st: $(tail -3 "$TMP/stderr")"; fi
fi
RPID=

finish 68
