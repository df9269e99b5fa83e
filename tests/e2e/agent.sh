#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# End-to-end tests of `kiln agent`: the real binary with the real BPF
# program, pushing to tests/receiver/receiver.py (a local server speaking
# Pyroscope's push and ingest protocols, decoding with python3-protobuf).
# Needs root. Prints one line per test and "N passed, N failed, N skipped"
# last (tests/lib.sh). Tests wait for what they check (a delivery, a
# counter), under a hang guard; none waits a fixed time and then counts.
set -u

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
PROMCHECK=$HERE/../unit/check_prom_text.py
TMP=$(mktemp -d /tmp/kiln-agent-e2e.XXXXXX)
export HOME=$TMP GOCACHE=$TMP/gocache
. "$HERE/agent_lib.sh"

cleanup() {
	[ -n "$AGENT_PID" ] && kill -9 "$AGENT_PID" 2>/dev/null
	[ -n "$RECV_PID" ] && kill "$RECV_PID" 2>/dev/null
	[ -n "${SLOW_PIDS:-}" ] && kill $SLOW_PIDS 2>/dev/null
	stop_workloads
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

control() {
	curl -s -o /dev/null -X POST --data "$2" "http://127.0.0.1:$1/_control"
}

# field NAME KEY: a key=value field of the agent's "stopped" line.
field() {
	grep 'msg="agent: stopped"' "$TMP/$1.err" | tail -1 | tr ' ' '\n' |
		sed -n "s/^$2=//p"
}

# same A B: both non-empty and equal (two empty fields prove nothing).
same() { [ -n "$1" ] && [ "$1" = "$2" ]; }

# samples_conserved NAME: the stopped line adds up, and the receiver holds
# every sample the agent profiled.
samples_conserved() {
	local drained lost
	drained=$(field "$1" drained)
	lost=$(($(field "$1" filtered) + $(field "$1" label_sets_full) + $(field "$1" out_of_memory)))
	same "$drained" "$(($(field "$1" samples) + lost))" &&
		same "$(field "$1" samples)" "$(value "$1" 'sum(x["value_sums"][0] for x in profiles())')"
}

# workload SECONDS: cpu_ratio in the background (agent_lib.sh's start_workload).
workload() { start_workload "$WORKLOADS/cpu_ratio" "$1"; }

test_push() {
	local problem
	start_receiver push
	workload 60
	start_agent push --server "http://127.0.0.1:$RPORT/" --interval 2 \
		--tag env=e2e --tag 'team.name-x=kiln'
	await push 'len(D) >= 3 and has_function("hot_three") and has_function("hot_one")'
	stop_agent
	stop_receiver
	problem=$(exit_problem push)
	if [ -n "$problem" ]; then
		fail push "$problem"
	elif ! check push 'len(D) >= 3 and all(x["status"] == 200 for x in A)'; then
		fail push "want >= 3 accepted pushes: $(value push '[x["status"] for x in A]')"
	elif ! check push 'all(s["labels"][0] == ["__name__", "process_cpu"] and "service_name" in s["labels_map"] for x in D for s in x["series"])'; then
		fail push "__name__ first and service_name on every series: $(value push 'labels(D[0])')"
	elif ! check push 'all(s["labels_map"].get("env") == "e2e" and s["labels_map"].get("team_name_x") == "kiln" and s["labels_map"].get("node") and not any(k.startswith("__") and k != "__name__" for k in s["labels_map"]) for x in D for s in x["series"])'; then
		fail push "static tags sanitized, node, no other __ labels: $(value push 'labels(D[0])')"
	elif ! check push 'all(["cpu", "nanoseconds"] in p["sample_type"] and p["period_type"] == ["cpu", "nanoseconds"] and p["duration_nanos"] > 0 for p in profiles())'; then
		fail push "profile type cpu/nanoseconds: $(value push 'profiles()[0]["sample_type"]')"
	elif ! samples_conserved push; then
		fail push "drained $(field push drained) = profiled $(field push samples) + filtered $(field push filtered) + label sets full $(field push label_sets_full) + out of memory $(field push out_of_memory)? the receiver got $(value push 'sum(x["value_sums"][0] for x in profiles())')"
	elif ! check push 'has_function("hot_three") and has_function("hot_one")'; then
		fail push "workload functions missing from the pushed profiles"
	else
		pass "push: $(value push 'len(D)') requests; drained $(field push drained) = $(field push samples) profiled + $(($(field push drained) - $(field push samples))) filtered = the receiver's samples; labels sanitized, cpu/nanoseconds"
	fi
}

# The ingest name carries the tags. Its syntax has no escape for , = { }
# inside a value, so kiln writes them as _ (an unescaped one makes
# Pyroscope answer 400 to every request); spaces and the rest survive.
test_ingest() {
	local problem
	start_receiver ingest
	workload 60
	start_agent ingest --server "http://127.0.0.1:$RPORT" --server-api ingest --interval 1 \
		--tag env=e2e --tag 'team=a,b' --tag 'odd=x={y} z'
	await ingest 'len(D) >= 3'
	stop_agent
	stop_receiver
	problem=$(exit_problem ingest)
	if [ -n "$problem" ]; then
		fail ingest "$problem"
	elif ! check ingest 'len(D) >= 3 and all(x["status"] == 200 for x in A)'; then
		fail ingest "refused requests: $(value ingest '[(x["status"], x.get("ingest", {}).get("name")) for x in A][:3]')"
	elif ! check ingest 'all(x["kind"] == "ingest" and x["ingest"]["format"] == "pprof" and x["ingest"]["profile_type"] == "cpu" for x in D)'; then
		fail ingest "format/profile type: $(value ingest 'D[0]["ingest"]')"
	elif ! check ingest 'all(dict(x["ingest"]["tags"]).get("env") == "e2e" and dict(x["ingest"]["tags"]).get("team") == "a_b" and dict(x["ingest"]["tags"]).get("odd") == "x__y_ z" for x in D)'; then
		fail ingest "tags did not survive: $(value ingest 'D[0]["ingest"]["tags"]')"
	elif ! samples_conserved ingest; then
		fail ingest "profiled $(field ingest samples), delivered $(value ingest 'sum(x["value_sums"][0] for x in profiles())')"
	else
		pass "ingest: $(value ingest 'len(D)') /ingest?format=pprof requests, tag values with , = { } written as _, spaces kept, all samples delivered"
	fi
}

# What the files hold, not only that they exist: the folded file of an
# interval and the pprof files of that interval carry the same samples.
test_files() {
	local dir=$TMP/profiles n problem page_ns curl
	mkdir -p "$dir"
	head -c 40000 /dev/urandom >"$dir/100-old.pb.gz"
	head -c 40000 /dev/urandom >"$dir/200-old.pb.gz"
	head -c 20000 /dev/urandom >"$dir/300-old.pb.gz"
	echo keep >"$dir/notes.txt"
	workload 60
	start_agent files --output-dir "$dir" --output-max-bytes 64K --interval 1
	wait_until "$GUARD" sh -c "[ \$(ls '$dir' | grep -c -- '-all\.folded\$') -ge 3 ]"
	# no server to push to: libcurl (and TLS) never loaded (lazy_lib.h)
	curl=$(grep -o 'libcurl[^ ]*' "/proc/$AGENT_PID/maps" | head -1)
	stop_agent
	n=$(ls "$dir" | grep -c '\.pb\.gz$')
	problem=$(exit_problem files)
	if [ -n "$problem" ]; then
		fail files "$problem"
	elif [ -n "$curl" ]; then
		fail files "an agent writing files mapped $curl"
	elif [ -e "$dir/100-old.pb.gz" ] || [ ! -e "$dir/notes.txt" ]; then
		fail files "rotation: the oldest interval files stay or other files went: $(ls "$dir" | head)"
	elif ! grep -q hot_three "$dir/latest.html" 2>/dev/null; then
		fail files "latest.html missing or without the workload's functions"
	elif ! page_ns=$(grep -o '"duration":[0-9]*' "$dir/latest.html" | head -1 | cut -d: -f2) ||
		[ "${page_ns:-0}" -lt 500000000 ]; then
		fail files "latest.html shows ${page_ns:-no} ns, not the last full interval of 1 s"
	elif [ "$(du -cb "$dir"/[0-9]* | tail -1 | cut -f1)" -gt 65536 ] && [ "$n" -gt 1 ]; then
		fail files "more than --output-max-bytes held: $(du -cb "$dir"/[0-9]* | tail -1)"
	elif ! problem=$(interval_agrees "$dir"); then
		fail files "$problem"
	else
		pass "files: $n pprof files, $problem; latest.html of a full interval ($page_ns ns), oldest removed beyond 64K, notes.txt kept"
	fi
}

# interval_agrees DIR: the newest interval whose files all survived and
# that holds half a second of samples at least (not the last, partial
# one the agent writes at SIGTERM, which may hold a few samples or none):
# the sum of its folded file equals the samples of its pprof files (go
# tool pprof), and cpu_ratio's leaf shares appear in both.
interval_agrees() {
	local dir=$1 start folded pprof f
	for f in $(ls -r "$dir" | grep -- '-all\.folded$'); do
		start=${f%-all.folded}
		folded=$(awk '{ s += $NF } END { print s + 0 }' "$dir/$f")
		ls "$dir" | grep -q "^$start-.*\.pb\.gz$" && [ "$folded" -ge 97 ] && break
		start=
	done
	[ -n "$start" ] || { echo "no interval with both a folded and a pprof file and 97 samples"; return 1; }
	pprof=0
	for f in "$dir/$start"-*.pb.gz; do
		pprof=$((pprof + $(pprof_samples "$f")))
	done
	if [ "$folded" = 0 ] || [ "$folded" != "$pprof" ]; then
		echo "interval $start: the folded file holds $folded samples, its pprof files $pprof"; return 1
	fi
	grep -q 'hot_three' "$dir/$start-all.folded" ||
		{ echo "interval $start: hot_three missing from the folded file"; return 1; }
	echo "interval $start: $folded samples in the folded file = its pprof files"
}

# No server at start: profiles queue, then all arrive in order once it is up.
test_down_then_up() {
	local port problem
	port=$(free_port)
	workload 60
	start_agent late --server "http://127.0.0.1:$port" --interval 1 --shutdown-timeout 30
	wait_metric '^kiln_push_failures_total [3-9]'
	start_receiver late "$port"
	# the backlog, then two intervals more
	await late 'len(profiles()) >= 6'
	stop_agent
	stop_receiver
	problem=$(exit_problem late)
	if [ -n "$problem" ]; then
		fail down_then_up "$problem"
	elif ! check late '[p["time_nanos"] for p in profiles()] == sorted(p["time_nanos"] for p in profiles())'; then
		fail down_then_up "profiles out of order"
	elif ! same "$(field late dropped_full)$(field late dropped_shutdown)$(field late rejected)" 000 ||
		! same "$(field late sent)" "$(field late profiles)" || ! samples_conserved late; then
		fail down_then_up "sent $(field late sent) of $(field late profiles); delivered $(value late 'len(profiles())')"
	else
		pass "server down at start: $(field late sent) profiles delivered late, in order, none lost"
	fi
}

# 503s: the agent backs off (each wait at least the lower half of its
# doubling backoff, 0.5, 1, 2 s: a lower bound that load cannot break), then
# delivers everything.
test_503_then_ok() {
	local problem
	start_receiver s503 0 --mode status --status 503
	workload 60
	start_agent s503 --server "http://127.0.0.1:$RPORT" --interval 1 --shutdown-timeout 30
	await s503 '[x["status"] for x in A].count(503) >= 4'
	control "$RPORT" '{"mode":"ok"}'
	await s503 'len(D) >= 1'
	stop_agent
	stop_receiver
	problem=$(exit_problem s503)
	if [ -n "$problem" ]; then
		fail 503 "$problem"
	elif ! check s503 'all(b["time"] - a["time"] >= 0.45 * 2 ** i for i, (a, b) in enumerate(zip(A[:3], A[1:4])))'; then
		fail 503 "retried without backing off: attempt times $(value s503 '[round(x["time"] - A[0]["time"], 2) for x in A[:4]]')"
	elif ! same "$(field s503 sent)" "$(field s503 profiles)" || ! samples_conserved s503; then
		fail 503 "sent $(field s503 sent) of $(field s503 profiles), statuses $(value s503 '[x["status"] for x in A]')"
	else
		pass "503: backed off ($(value s503 '[round(x["time"] - A[0]["time"], 1) for x in A[:4]]') s), all $(field s503 sent) profiles delivered afterwards"
	fi
}

test_429() {
	local problem
	start_receiver s429 0 --mode status --status 429 --count 2 --retry-after 1
	workload 60
	start_agent s429 --server "http://127.0.0.1:$RPORT" --interval 1 --shutdown-timeout 30
	await s429 'len(D) >= 3'
	stop_agent
	stop_receiver
	problem=$(exit_problem s429)
	if [ -n "$problem" ]; then
		fail 429 "$problem"
	elif ! check s429 '[x["status"] for x in A][:2] == [429, 429] and A[1]["time"] - A[0]["time"] >= 0.95'; then
		fail 429 "Retry-After: 1 not honoured: $(value s429 '[(x["status"], round(x["time"] - A[0]["time"], 2)) for x in A[:3]]')"
	elif ! same "$(field s429 sent)" "$(field s429 profiles)" || ! samples_conserved s429; then
		fail 429 "sent $(field s429 sent) of $(field s429 profiles)"
	else
		pass "429 with Retry-After: waited, then delivered all $(field s429 sent) profiles"
	fi
}

test_400() {
	local problem
	start_receiver s400 0 --mode status --status 400 --count 1
	workload 60
	start_agent s400 --server "http://127.0.0.1:$RPORT" --interval 1
	await s400 'len(D) >= 2'
	stop_agent
	stop_receiver
	problem=$(exit_problem s400)
	# the refused request is not retried: one 400, then only new ones
	if [ -n "$problem" ]; then
		fail 400 "$problem"
	elif check s400 '[x["status"] for x in A].count(400) == 1 and A[0]["status"] == 400 and len(D) == len(A) - 1' &&
		[ "$(field s400 rejected)" -ge 1 ] &&
		same $(($(field s400 sent) + $(field s400 rejected))) "$(field s400 profiles)" &&
		grep -q 'refused' "$TMP/s400.err"; then
		pass "400: dropped, counted (rejected=$(field s400 rejected)), logged, not retried"
	else
		fail 400 "statuses $(value s400 '[x["status"] for x in A]'), rejected=$(field s400 rejected)"
	fi
}

# OpenTelemetry profiles (docs/otlp.md): the agent writes files and sends
# each label set's profile as an OTLP/HTTP request to the receiver, which
# decodes it with the same .proto files (python3-protobuf) and enforces
# OTLP's rules (Content-Type, the dictionary's zero entries and indices, a
# value per sample). otlp_check.py decodes every accepted request again and
# matches each profile with the pprof file of its interval and label set:
# the same stacks, values, period, start and duration; the label set as
# semantic-convention resource attributes.
test_otlp() {
	local problem out=$TMP/otlp-files bodies=$TMP/otlp-bodies result period=$((1000000000 / 97))
	mkdir -p "$bodies"
	start_receiver otlp 0 --save-bodies "$bodies" --max-stacks 100000
	workload 60
	start_agent otlp --otlp-endpoint "http://127.0.0.1:$RPORT/" --output-dir "$out" --interval 2 \
		--tag env=e2e
	await otlp 'len(D) >= 3 and has_function("hot_three") and has_function("hot_one")'
	stop_agent
	stop_receiver
	problem=$(exit_problem otlp)
	if [ -n "$problem" ]; then
		fail otlp "$problem"
	elif ! check otlp 'all(x["status"] == 200 and x["kind"] == "otlp" and x["path"] == "/v1development/profiles" and x["content_type"] == "application/x-protobuf" and x["content_encoding"] == "gzip" and not x.get("rejected_profiles") for x in A)'; then
		fail otlp "refused or not OTLP/HTTP gzipped protobuf: $(value otlp '[(x["status"], x["path"], x["content_type"], x["content_encoding"], x.get("error")) for x in A][:3]')"
	elif ! check otlp 'all(s["labels_map"].get("service.name") and s["labels_map"].get("host.name") and s["labels_map"].get("env") == "e2e" for x in D for s in x["series"])'; then
		fail otlp "resource attributes: $(value otlp 'D[0]["series"][0]["labels_map"]')"
	elif ! same "$(field otlp samples)" "$(value otlp "sum(q['total'] for q in profiles()) // $period")" ||
		! same "$(field otlp otlp_sent)" "$(field otlp profiles)"; then
		fail otlp "profiled $(field otlp samples) samples, $(field otlp profiles) profiles; the receiver holds $(value otlp "sum(q['total'] for q in profiles()) // $period") samples, kiln sent $(field otlp otlp_sent)"
	elif ! result=$($PY "$HERE/otlp_check.py" "$HERE/../../user/proto" "$bodies" "$out"); then
		fail otlp "$result"
	else
		pass "otlp: $(value otlp 'len(D)') OTLP/HTTP requests (gzip), every sample delivered; ${result#OK }"
	fi
}

# A failing OTLP server, by OTLP/HTTP's rules: a 400 (its google.rpc.Status
# message logged) is dropped and counted, never sent again; a 429's
# Retry-After is waited out; through a 503 outage the agent backs off and
# keeps every profile, then delivers each exactly once.
test_otlp_failures() {
	local problem
	start_receiver otlpfail 0 --mode status --status 400 --count 1
	workload 60
	start_agent otlpfail --otlp-endpoint "http://127.0.0.1:$RPORT" --interval 1 --shutdown-timeout 30
	await otlpfail 'len(D) >= 1'
	control "$RPORT" '{"mode":"status","status":429,"count":2,"retry_after":1}'
	await otlpfail '[x["status"] for x in A].count(429) == 2 and D[-1]["seq"] > [x for x in A if x["status"] == 429][-1]["seq"]'
	control "$RPORT" '{"mode":"status","status":503}'
	await otlpfail '[x["status"] for x in A].count(503) >= 4'
	control "$RPORT" '{"mode":"ok"}'
	await otlpfail 'D[-1]["seq"] > [x for x in A if x["status"] == 503][-1]["seq"]'
	stop_agent
	stop_receiver
	problem=$(exit_problem otlpfail)
	if [ -n "$problem" ]; then
		fail otlp_failures "$problem"
	elif ! check otlpfail '[x["status"] for x in A].count(400) == 1 and not ({q["id"] for x in A if x["status"] == 400 for s in x["series"] for q in s["samples"]} & {q["id"] for q in profiles()})' ||
		! same "$(field otlpfail otlp_rejected)" 1 ||
		! grep -q 'refused 1 profiles" status=400 message="injected fault: HTTP 400"' "$TMP/otlpfail.err"; then
		fail otlp_failures "400: rejected=$(field otlpfail otlp_rejected), statuses $(value otlpfail '[x["status"] for x in A][:6]')"
	elif ! check otlpfail 'all(A[i + 1]["time"] - A[i]["time"] >= 0.95 for i, x in enumerate(A[:-1]) if x["status"] == 429)'; then
		fail otlp_failures "Retry-After: 1 not honoured: $(value otlpfail '[(x["status"], round(x["time"] - A[0]["time"], 2)) for x in A if x["status"] in (200, 429)][:6]')"
	elif ! check otlpfail 'all(b["time"] - a["time"] >= 0.45 * 2 ** i for B in [[x for x in A if x["status"] == 503]] for i, (a, b) in enumerate(zip(B[:3], B[1:4])))'; then
		fail otlp_failures "503: retried without backing off"
	elif ! same "$(($(field otlpfail otlp_sent) + $(field otlpfail otlp_rejected)))" "$(field otlpfail profiles)" ||
		! same "$(field otlpfail otlp_dropped_full)$(field otlpfail otlp_dropped_shutdown)$(field otlpfail otlp_dropped_old)$(field otlpfail otlp_partial)" 0000 ||
		! check otlpfail "len(list(profiles())) == $(field otlpfail otlp_sent) and not any(q['duplicate_id'] for q in profiles())"; then
		fail otlp_failures "sent $(field otlpfail otlp_sent) + rejected $(field otlpfail otlp_rejected) of $(field otlpfail profiles); the receiver stored $(value otlpfail 'len(list(profiles()))')"
	else
		pass "otlp failures: 400 dropped and counted, 429 Retry-After waited, 503 outage backed off; $(field otlpfail otlp_sent) profiles stored once each"
	fi
}

# Partial success: the receiver refuses profiles of more than 3 samples
# (200 with partial_success.rejected_profiles, as an OTLP server answers
# when it takes only part of a request); kiln counts them in /metrics and
# its stopped line and never sends them again.
test_otlp_partial() {
	local problem
	start_receiver otlppart
	control "$RPORT" '{"limits":{"max_profile_samples":3}}'
	workload 60
	start_agent otlppart --otlp-endpoint "http://127.0.0.1:$RPORT" --interval 1
	await otlppart 'sum(x.get("rejected_profiles", 0) for x in A) >= 2 and len(list(profiles())) >= 2'
	wait_metric '^kiln_otlp_profiles_dropped_total\{reason="partial_success"\} [1-9]'
	stop_agent
	stop_receiver
	problem=$(exit_problem otlppart)
	if [ -n "$problem" ]; then
		fail otlp_partial "$problem"
	elif ! check otlppart 'all(x["status"] == 200 for x in A) and all(q["num_samples"] <= 3 for q in profiles())'; then
		fail otlp_partial "statuses $(value otlppart '[x["status"] for x in A][:6]')"
	elif ! same "$(field otlppart otlp_partial)" "$(value otlppart 'sum(x.get("rejected_profiles", 0) for x in A)')" ||
		! same "$(field otlppart otlp_sent)" "$(value otlppart 'len(list(profiles()))')" ||
		! same "$(value otlppart 'len(A)')" "$(($(field otlppart otlp_sent) + $(field otlppart otlp_partial)))" ||
		! grep -q 'refused 1 of its 1 profiles' "$TMP/otlppart.err"; then
		fail otlp_partial "kiln: partial $(field otlppart otlp_partial), sent $(field otlppart otlp_sent); the receiver refused $(value otlppart 'sum(x.get("rejected_profiles", 0) for x in A)') in $(value otlppart 'len(A)') requests"
	else
		pass "otlp partial success: $(field otlppart otlp_partial) profiles refused in 200 answers, counted, not resent; $(field otlppart otlp_sent) stored"
	fi
}

# A request the server holds for 30 s does not hold up sampling: intervals
# go on while the receiver has answered nothing yet (an order of events,
# not a time).
test_slow_server() {
	local drains
	start_receiver slow 0 --mode delay --seconds 30
	workload 60
	start_agent slow --server "http://127.0.0.1:$RPORT" --interval 1 --request-timeout 60 \
		--shutdown-timeout 1
	if ! wait_metric '^kiln_intervals_total ([4-9]|[1-9][0-9])'; then
		fail slow_server "no intervals: $(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -E '^kiln_(intervals|drains)_total')"
	elif ! check slow 'len(A) == 0'; then
		fail slow_server "intervals stalled until the slow request ended: $(value slow 'len(A)') answered first"
	elif ! curl -sf "http://127.0.0.1:$MPORT/healthz" >/dev/null; then
		fail slow_server "/healthz not ok while the server is slow"
	else
		drains=$(metric '^kiln_drains_total ')
		pass "a server holding a request 30 s does not delay drains ($drains drains before its answer)"
	fi
	stop_agent
	stop_receiver
}

test_queue_bound() {
	local problem
	start_receiver queue 0 --mode status --status 503
	start_agent queue --server "http://127.0.0.1:$RPORT" --interval 1 --queue-max-bytes 64K \
		--shutdown-timeout 30
	workload 60
	if ! wait_metric '^kiln_profiles_dropped_total\{reason="queue_full"\} [1-9]'; then
		fail queue_bound "no profile dropped at the queue bound: $(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -E '^kiln_queue')"
		stop_agent; stop_receiver; return
	fi
	control "$RPORT" '{"mode":"ok"}'
	await queue 'len(D) >= 1'
	stop_agent
	stop_receiver
	problem=$(exit_problem queue)
	if [ -n "$problem" ]; then
		fail queue_bound "$problem"
	elif same $(($(field queue sent) + $(field queue dropped_full))) "$(field queue profiles)" &&
		[ "$(field queue sent)" -ge 1 ]; then
		pass "queue bound: oldest dropped and counted (dropped_full=$(field queue dropped_full)), the rest delivered"
	else
		fail queue_bound "sent $(field queue sent) + dropped $(field queue dropped_full) != built $(field queue profiles)"
	fi
}

test_sigterm_flush() {
	local problem
	start_receiver flush
	workload 60
	start_agent flush --server "http://127.0.0.1:$RPORT" --interval 60
	# a drain (10 s): seconds of samples in the partial interval
	wait_metric '^kiln_drains_total [1-9]'
	stop_agent
	stop_receiver
	problem=$(exit_problem flush)
	if [ -n "$problem" ]; then
		fail sigterm_flush "$problem"
	elif check flush 'len(D) >= 1 and len(set(q["time_nanos"] for q in profiles())) == 1 and all(1e9 < q["duration_nanos"] < 60e9 for q in profiles())' &&
		samples_conserved flush; then
		pass "SIGTERM: the partial interval ($(value flush 'round(list(profiles())[0]["duration_nanos"]/1e9,1)') s, $(value flush 'len(D)') series, a request each) was pushed before exit"
	else
		fail sigterm_flush "delivered $(value flush 'len(D)') pushes of $(value flush 'len(set(q["time_nanos"] for q in profiles()))') intervals"
	fi
}

# More distinct stacks in one interval than the server takes: scale_gen
# runs 100 000 distinct call chains, sampled at 999 Hz, against
# --push-max-stacks 1000 and --push-max-bytes 100K (the defaults are
# Pyroscope's 16 000 and 1.9 MB, which the receiver enforces; lowered here
# so that any host's sample rate passes them within seconds). What
# reaches the receiver is within them, its lightest stacks folded into
# [other], every sample delivered and counted. Beside it runs a process
# whose name is not UTF-8: its profiles are accepted too (protobuf strings
# must be UTF-8; its bad bytes are sent as '?').
test_push_caps() {
	local problem capped folded bad=$TMP/$'bad\xff\xfename'
	cp "$WORKLOADS/cpu_ratio" "$bad"
	start_receiver caps
	start_workload "$bad" 120
	start_workload "$WORKLOADS/scale_gen" 100000 1 120
	start_agent caps --server "http://127.0.0.1:$RPORT" --interval 3 -F 999 \
		--push-max-stacks 1000 --push-max-bytes 100K
	await caps 'any("[other]" in (q.get("function_names") or []) for q in profiles()) and any(s["service_name"] == "bad??name" for x in D for s in x["series"])'
	capped=$(metric '^kiln_profiles_capped_total ')
	folded=$(metric '^kiln_samples_folded_total ')
	stop_agent
	stop_receiver
	kill "$WL_PID" 2>/dev/null
	problem=$(exit_problem caps)
	if [ -n "$problem" ]; then
		fail push_caps "$problem"
	elif ! check caps 'all(x["status"] == 200 for x in A) and all(q["num_samples"] <= 1000 and q["uncompressed_size"] <= 100 * 1024 for q in profiles())'; then
		fail push_caps "refused or over the bounds: $(value caps '[(x["status"], [(q.get("num_samples"), q.get("uncompressed_size")) for q in profiles([x])]) for x in A]')"
	elif ! check caps 'any("[other]" in (q.get("function_names") or []) for q in profiles())'; then
		fail push_caps "no [other] stack in the capped profiles"
	elif ! samples_conserved caps; then
		fail push_caps "samples lost: profiled $(field caps samples), delivered $(value caps 'sum(x["value_sums"][0] for x in profiles())')"
	else
		pass "push caps: $capped profiles cut to 1000 stacks and 100K ($folded samples folded into [other]), all accepted (a non-UTF-8 process name too, as bad??name), every sample delivered"
	fi
}

test_auth() {
	local secret=s3cr3t-$RANDOM$RANDOM problem rejected retries
	echo "$secret" >"$TMP/token"
	start_receiver auth 0 --require-auth "Bearer $secret" --require-header X-Scope-OrgID=tenant-1 \
		--require-header X-Extra=yes
	workload 60
	start_agent auth --server "http://127.0.0.1:$RPORT" --interval 1 --bearer-token-file "$TMP/token" \
		--tenant-id tenant-1 --header X-Extra=yes --log-level debug --allow-insecure-credentials
	await auth 'len(D) >= 2'
	# rotate: the server wants a new token; the agent re-reads it on 401
	secret=$secret-rotated
	echo "$secret" >"$TMP/token"
	control "$RPORT" "{\"require_auth\":{\"authorization\":\"Bearer $secret\"}}"
	await auth 'D[-1]["headers"]["authorization"].endswith("-rotated")'
	# the server wants a token the file does not hold: refused, dropped,
	# counted, never retried with the same credentials
	control "$RPORT" '{"require_auth":{"authorization":"Bearer not-in-the-file"}}'
	wait_metric '^kiln_profiles_dropped_total\{reason="rejected"\} [1-9]'
	rejected=$(metric '^kiln_profiles_dropped_total\{reason="rejected"\} ')
	retries=$(metric '^kiln_push_retries_total ')
	stop_agent
	stop_receiver
	"$KILN" agent --help >"$TMP/help.txt" 2>&1
	problem=$(exit_problem auth)
	if [ -n "$problem" ]; then
		fail auth "$problem"
	elif ! check auth 'len(D) >= 3 and all(x["headers"].get("x-scope-orgid") == "tenant-1" and x["headers"].get("x-extra") == "yes" for x in D)'; then
		fail auth "headers or deliveries: $(value auth '[(x["status"], x["headers"].get("authorization", "")[:12]) for x in A]')"
	elif ! check auth 'D[-1]["headers"]["authorization"].endswith("-rotated") and 401 in [x["status"] for x in A]'; then
		fail auth "the rotated token was not used after a 401"
	elif grep -q "s3cr3t" "$TMP/auth.err" "$TMP/help.txt"; then
		fail auth "a secret appears in the logs or --help"
	elif [ "$retries" != 0 ]; then
		fail auth "401 with the same token was retried $retries times"
	else
		pass "auth: bearer token, X-Scope-OrgID and --header sent; token re-read after 401 and sent again once rotated; with the same token $rejected profiles dropped, 0 retries; never logged"
	fi
}

test_basic_auth() {
	local pw=pw-$RANDOM$RANDOM problem
	echo "$pw" >"$TMP/pw"
	start_receiver basic 0 --basic-auth "123456:$pw"
	workload 60
	start_agent basic --server "http://127.0.0.1:$RPORT" --interval 1 --basic-auth-user 123456 \
		--basic-auth-password-file "$TMP/pw" --log-level debug --allow-insecure-credentials
	await basic 'len(D) >= 2'
	stop_agent
	stop_receiver
	problem=$(exit_problem basic)
	if [ -n "$problem" ]; then
		fail basic_auth "$problem"
	elif check basic 'len(D) >= 2 and all(x["status"] == 200 for x in A)' && ! grep -q "$pw" "$TMP/basic.err"; then
		pass "basic auth (Grafana Cloud style): delivered, password never logged"
	else
		fail basic_auth "statuses $(value basic '[x["status"] for x in A]')"
	fi
}

ready_status() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/ready"; }
answered() { [ "$(ready_status)" != 000 ]; }

test_metrics_health() {
	local first_ready status problem sent delivered
	start_receiver metrics
	workload 60
	start_agent metrics --server "http://127.0.0.1:$RPORT" --interval 1
	wait_until "$GUARD" answered
	first_ready=$(ready_status)
	wait_metric '^kiln_profiles_sent_total ([2-9]|[1-9][0-9])'
	curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
	status="$(ready_status) $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/healthz")"
	stop_agent
	stop_receiver
	sent=$(sed -n 's/^kiln_profiles_sent_total //p' "$TMP/metrics.txt")
	# what the receiver had accepted by the time /metrics was read (more
	# may have arrived since): at least what the agent counted as sent
	delivered=$(value metrics 'sum(x["profile_count"] for x in D)')
	problem=$(exit_problem metrics)
	if [ -n "$problem" ]; then
		fail metrics "$problem"
	elif ! $PY "$PROMCHECK" "$TMP/metrics.txt" --expect kiln_samples_total \
		--expect kiln_samples_dropped_total --expect kiln_profiles_sent_total \
		--expect kiln_queue_bytes --expect kiln_symbol_cache_hit_ratio \
		--expect kiln_drain_duration_seconds --expect kiln_processes_tracked \
		--expect kiln_last_push_timestamp_seconds --expect kiln_symbol_cache_expired_total \
		--expect kiln_user_stacks_incomplete_total \
		>"$TMP/promcheck.out" 2>&1; then
		fail metrics "/metrics is not valid Prometheus text: $(head -3 "$TMP/promcheck.out")"
	elif [ "$first_ready" != 503 ] || [ "$status" != "200 200" ]; then
		fail metrics "/ready before the first drain: $first_ready (want 503); after: $status"
	elif [ -z "$sent" ] || [ -z "$delivered" ] || [ "$sent" -lt 2 ] || [ "$sent" -gt "$delivered" ]; then
		fail metrics "kiln_profiles_sent_total=$sent but the receiver accepted $delivered"
	elif ! grep -qx 'kiln_symbol_cache_expired_total 0' "$TMP/metrics.txt"; then
		fail metrics "symbol tables expired under the default --symbol-cache-ttl (10m): $(grep '^kiln_symbol_cache_expired' "$TMP/metrics.txt")"
	else
		pass "metrics: valid Prometheus text, sent=$sent agrees with the receiver ($delivered), /ready 503 then 200, /healthz 200"
	fi
}

# slow_status NAME KEY: open=, closed= or rounds= of a slow_clients.py run.
slow_status() { { tr ' ' '\n' <"$TMP/$1.status"; } 2>/dev/null | sed -n "s/^$2=//p"; }
slow_rounds_at_least() { [ "$(slow_status "$1" rounds)" -ge "$2" ] 2>/dev/null; }
slow_closed_is() { [ "$(slow_status "$1" closed)" = "$2" ]; }
# start_slow NAME PORT ARGS...: slow clients in the background, PID in SLOW_PIDS.
start_slow() {
	local name=$1 port=$2
	shift 2
	$PY "$HERE/slow_clients.py" --port "$port" --status "$TMP/$name.status" "$@" \
		>"$TMP/$name.slow.out" 2>&1 &
	SLOW_PIDS="$SLOW_PIDS $!"
	wait_until "$GUARD" slow_rounds_at_least "$name" 3
}

# Slow clients (a slowloris: requests sent a byte at a time, never idle,
# never done) against the agent's listeners, while a fresh client asks
# /healthz as the kubelet would. 16 from one address against the metrics
# port: the per-address limit closes those past it, and /healthz from
# another address is answered there. Then 80 from ten addresses (more than
# the metrics listener's 64 slots) plus 16 against the probes port itself:
# /healthz on --health-addr is still answered. Each answer is waited for
# under the hang guard; no time is measured.
test_probes_slow_clients() {
	local hport problem got= n
	SLOW_PIDS=
	hport=$(free_port)
	workload 60
	start_agent probes --output-dir "$TMP/probes-out" --interval 1 \
		--health-addr "127.0.0.1:$hport"
	wait_until "$GUARD" answers_200 "$hport" /ready
	start_slow one "$MPORT" --count 16 --per-addr 16 --first-addr 1
	wait_until "$GUARD" slow_closed_is one 8
	wait_until "$GUARD" answers_200 "$MPORT" /healthz 127.0.0.2 && got="metrics-port"
	answers_200 "$hport" /healthz && got="$got health-port"
	got="$got $(slow_status one open)/$(slow_status one closed)"
	start_slow many "$MPORT" --count 80 --per-addr 8 --first-addr 10
	start_slow probes "$hport" --count 16 --per-addr 16 --first-addr 30
	wait_until "$GUARD" slow_closed_is probes 8
	for n in 1 2 3 4 5; do
		wait_until "$GUARD" answers_200 "$hport" /healthz || break
		got="$got ok$n"
	done
	[ "$(http_code "$hport" /metrics)" = 404 ] && got="$got no-metrics"
	got="$got $(slow_status many open) $(slow_status probes open)/$(slow_status probes closed)"
	kill $SLOW_PIDS 2>/dev/null
	wait $SLOW_PIDS 2>/dev/null
	stop_agent
	problem=$(exit_problem probes)
	if [ -n "$problem" ]; then
		fail probes_slow_clients "$problem"
	elif [ "$got" != "metrics-port health-port 8/8 ok1 ok2 ok3 ok4 ok5 no-metrics 80 8/8" ]; then
		fail probes_slow_clients "want /healthz 200 on both ports with 16 slow clients (8 held, 8 closed), then 5 answers on --health-addr with 96 slow clients, /metrics 404 there; got: $got"
	else
		pass "probes: /healthz answered with 16 slow clients on one address (8 held, 8 closed at the per-address limit), and on --health-addr with 80 + 16 more from 12 addresses; /metrics is 404 there"
	fi
}

test_symbol_cache_ttl() {
	local expired= problem
	start_receiver ttl
	workload 3
	start_agent ttl --server "http://127.0.0.1:$RPORT" --interval 1 --symbol-cache-ttl 2s \
		--log-level debug
	# cpu_ratio's symbols are loaded while it runs, and freed 2 s after
	# it exits, at a drain (every second here)
	wait_metric '^kiln_symbol_cache_expired_total [1-9]' &&
		expired=$(metric '^kiln_symbol_cache_expired_total ')
	stop_agent
	stop_receiver
	problem=$(exit_problem ttl)
	if [ -n "$problem" ]; then
		fail symbol_cache_ttl "$problem"
	elif ! grep -q 'cpu_ratio: [0-9]* symbols from' "$TMP/ttl.err"; then
		fail symbol_cache_ttl "the workload's symbols were never loaded"
	elif [ -z "$expired" ] || ! grep -q 'msg="symbol cache: [0-9]* tables unused for 2s freed"' "$TMP/ttl.err"; then
		fail symbol_cache_ttl "no table expired with --symbol-cache-ttl 2s: $(grep -c 'symbols from' "$TMP/ttl.err") loaded"
	elif ! check ttl 'has_function("hot_three")'; then
		fail symbol_cache_ttl "the workload's profile lost its names"
	else
		pass "symbol cache ttl: $expired tables unused for 2 s freed, counted in /metrics"
	fi
}

test_config() {
	local out
	out=$("$KILN" agent --interval 0 2>&1)
	if [ $? != 2 ] || [ "$(wc -l <<<"$out")" != 1 ] || ! grep -q -- '--interval' <<<"$out"; then
		fail config "bad flag: want one line naming --interval, exit 2: $out"; return
	fi
	out=$(KILN_FREQUENCY=abc "$KILN" agent 2>&1)
	if [ $? != 2 ] || ! grep -q KILN_FREQUENCY <<<"$out"; then
		fail config "bad environment value not named: $out"; return
	fi
	printf 'server-api = soap\n' >"$TMP/bad.conf"
	out=$("$KILN" agent --config "$TMP/bad.conf" 2>&1)
	if [ $? != 2 ] || ! grep -q "bad.conf:1" <<<"$out"; then
		fail config "bad config line not named: $out"; return
	fi
	out=$("$KILN" agent --tag __private=x --no-kube 2>&1)
	if [ $? != 2 ] || ! grep -q -- '__private' <<<"$out"; then
		fail config "a reserved __ tag must be refused: $out"; return
	fi
	out=$("$KILN" agent --server ftp://x 2>&1)
	if [ $? != 2 ] || ! grep -q -- '--server' <<<"$out"; then
		fail config "bad server URL: $out"; return
	fi
	# Credentials to a plain http:// server: one line, exit 2, unless
	# --allow-insecure-credentials; a user:password in the URL never shown.
	printf 'tok\n' >"$TMP/cfg-token"
	out=$("$KILN" agent --server http://127.0.0.1:9 --bearer-token-file "$TMP/cfg-token" 2>&1)
	if [ $? != 2 ] || [ "$(wc -l <<<"$out")" != 1 ] || ! grep -q -- '--allow-insecure-credentials' <<<"$out"; then
		fail config "a token to http:// must be refused in one line naming --allow-insecure-credentials: $out"; return
	fi
	for flags in "--tenant-id t1" "--basic-auth-user u"; do
		out=$("$KILN" agent --server http://127.0.0.1:9 $flags 2>&1)
		if [ $? != 2 ] || ! grep -q -- "${flags%% *}" <<<"$out"; then
			fail config "$flags to http:// must be refused: $out"; return
		fi
	done
	out=$("$KILN" agent --server 'http://kuser:s3cr3t-pw@127.0.0.1:9' 2>&1)
	if [ $? != 2 ] || grep -q 's3cr3t-pw\|kuser' <<<"$out" || ! grep -q '\*\*\*@127.0.0.1' <<<"$out"; then
		fail config "user:password in an http:// URL: want exit 2, userinfo redacted: $out"; return
	fi
	out=$("$KILN" agent --server 'ftp://kuser:s3cr3t-pw@x' 2>&1)
	if [ $? != 2 ] || grep -q 's3cr3t-pw' <<<"$out"; then
		fail config "a bad URL's password was shown: $out"; return
	fi
	# docs/options.md (generated: make options-doc) names every flag and variable --help shows
	"$KILN" agent --help | grep -oE '(--[a-z-]+|KILN_[A-Z_]+)' | sort -u >"$TMP/help-names"
	out=$(while read -r name; do grep -qE -- "$name([^a-zA-Z_-]|$)" "$HERE/../../docs/options.md" || echo "$name"; done <"$TMP/help-names")
	if [ -n "$out" ]; then
		fail config "docs/options.md lacks: $(echo $out)"; return
	fi
	printf 'interval = 1\noutput-dir = %s\nlog-format = json\n' "$TMP/conf-out" >"$TMP/good.conf"
	workload 4
	start_agent conf --config "$TMP/good.conf" --log-format json
	wait_until "$GUARD" sh -c "ls '$TMP/conf-out' 2>/dev/null | grep -q '\.pb\.gz\$'"
	stop_agent
	if [ "$AGENT_STATUS" != 0 ]; then
		fail config "agent exit status $AGENT_STATUS: $(tail -1 "$TMP/conf.err")"
	elif ! ls "$TMP/conf-out" | grep -q '\.pb\.gz$'; then
		fail config "--config output-dir/interval not applied"
	elif ! $PY -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$TMP/conf.err" 2>/dev/null ||
		! grep -q '"msg": *"agent: stopped"' "$TMP/conf.err"; then
		fail config "--log-format json: not one JSON object per line: $(head -2 "$TMP/conf.err")"
	else
		config_userinfo_redacted
	fi
}

# With --allow-insecure-credentials the agent runs; a failed push names
# the server, its userinfo redacted, and /metrics never shows it.
config_userinfo_redacted() {
	local port
	port=$(free_port)       # nothing listens: every push fails
	start_agent userinfo --server "http://kuser:s3cr3t-pw@127.0.0.1:$port" --interval 1 \
		--allow-insecure-credentials --no-kube
	wait_until "$GUARD" grep -q 'sender: .* failed' "$TMP/userinfo.err"
	curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/userinfo.metrics"
	stop_agent
	if [ -n "$(exit_problem userinfo)" ]; then
		fail config "agent with --allow-insecure-credentials: $(exit_problem userinfo)"
	elif grep -q 's3cr3t-pw\|kuser' "$TMP/userinfo.err" "$TMP/userinfo.metrics"; then
		fail config "the URL's user:password was logged or served: $(grep -h 's3cr3t-pw\|kuser' "$TMP/userinfo.err" "$TMP/userinfo.metrics" | head -2)"
	elif ! grep -q "sender: http://\*\*\*@127.0.0.1:$port/.* failed" "$TMP/userinfo.err" ||
		! grep -q 'clear text (--allow-insecure-credentials)' "$TMP/userinfo.err"; then
		fail config "want a warning and the failed push with the URL redacted: $(grep -m2 'level=warn' "$TMP/userinfo.err")"
	else
		pass "config: errors name the flag, variable or file line (exit 2); --config applied; JSON logs; credentials to http:// refused, userinfo redacted in logs and /metrics"
	fi
}

# pod_cgroup UID CID: creates kubelet's cgroup v2 directory of a container
# (systemd driver, containerd) and prints its path; empty without cgroup v2.
pod_cgroup() {
	local v2 cg
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$v2" ] || return 1
	cg=$v2/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${1//-/_}.slice/cri-containerd-$2.scope
	mkdir -p "$cg" && echo "$cg"
}

# in_cgroup CG: cpu_ratio for 60 s inside CG; sets POD_PID.
in_cgroup() {
	sh -c "echo \$\$ > '$1/cgroup.procs' && exec '$WORKLOADS/cpu_ratio' 60" >/dev/null 2>&1 &
	POD_PID=$!
}

# start_kube_api NAME SCENARIO ARGS...: the fake API server; sets APIPORT, KUBE_PID.
start_kube_api() {
	local name=$1 scen=$2
	shift 2
	: >"$TMP/$name.api.out"         # there before the server's first line
	$PY "$HERE/../kube/fake_apiserver.py" --node kiln-e2e-node --scenario "$scen" "$@" \
		>"$TMP/$name.api.out" 2>&1 &
	KUBE_PID=$!
	wait_until 10 grep -q '^PORT' "$TMP/$name.api.out"
	APIPORT=$(awk '/^PORT/ { print $2 }' "$TMP/$name.api.out")
}

# stop_pod_test CG: stops the fake API server and the pod's workload,
# removes the pod's cgroup.
stop_pod_test() {
	kill "$KUBE_PID" "$POD_PID" 2>/dev/null
	wait "$KUBE_PID" "$POD_PID" 2>/dev/null
	rmdir "$1" "$(dirname "$1")" 2>/dev/null
}

# A pod on this host: a real cgroup v2 directory shaped like kubelet's
# (systemd driver, containerd), a workload inside it, and the local
# Kubernetes API server (tests/kube) listing the pod on this node.
test_kube_labels() {
	local cid uid cg scen filtered problem
	cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	uid=$($PY -c 'import uuid; print(uuid.uuid4())')
	cg=$(pod_cgroup "$uid" "$cid") || { fail kube_labels "no cgroup v2 mount, or cannot create the pod's cgroup"; return; }
	scen=$TMP/scenario.json
	cat >"$scen" <<JSON
{"resourceVersion": 100, "pods": [{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "web-7d9f", "namespace": "shop", "uid": "$uid", "resourceVersion": "100",
  "labels": {"app.kubernetes.io/name": "web", "team": "checkout"}, "annotations": {}},
 "spec": {"nodeName": "kiln-e2e-node", "containers": [{"name": "server"}]},
 "status": {"phase": "Running", "containerStatuses": [{"name": "server", "ready": true,
  "containerID": "containerd://$cid"}]}}]}
JSON
	echo "kube-token-$RANDOM" >"$TMP/kube-token"
	start_kube_api kube "$scen" --token "$(cat "$TMP/kube-token")"
	start_receiver kube
	workload 60
	in_cgroup "$cg"
	# The fake server speaks plain http: the token goes in clear on purpose.
	start_agent kube --server "http://127.0.0.1:$RPORT" --interval 1 --node-name kiln-e2e-node \
		--kube-api "http://127.0.0.1:$APIPORT" --kube-token-file "$TMP/kube-token" \
		--allow-insecure-credentials --pod-label team --include-namespace 'sh*'
	await kube 'len(D) >= 2 and has_function("hot_three")'
	wait_metric '^kiln_samples_filtered_total\{reason="excluded_namespace"\} [1-9]'
	filtered=$(metric '^kiln_samples_filtered_total\{reason="excluded_namespace"\} ')
	stop_agent
	stop_receiver
	stop_pod_test "$cg"
	problem=$(exit_problem kube)
	if [ -n "$problem" ]; then
		fail kube_labels "$problem"
	elif ! check kube 'len(D) >= 2 and all(s["labels_map"].get("namespace") == "shop" for x in D for s in x["series"])'; then
		fail kube_labels "want only namespace=shop series: $(value kube '[s["labels_map"] for x in A for s in x["series"]][:3]')"
	elif ! check kube 'all({k: s["labels_map"].get(k) for k in ("service_name", "pod", "container", "team", "node")} == {"service_name": "web", "pod": "web-7d9f", "container": "server", "team": "checkout", "node": "kiln-e2e-node"} for x in D for s in x["series"])'; then
		fail kube_labels "pod labels: $(value kube 'D[-1]["series"][0]["labels_map"]')"
	elif ! check kube 'has_function("hot_three")'; then
		fail kube_labels "the pod's workload is missing from its profiles"
	elif [ -z "$filtered" ] || [ "$filtered" = 0 ]; then
		fail kube_labels "host processes were not counted as filtered by --include-namespace"
	else
		pass "kube: a pod's cgroup + the pod watcher give service_name=web namespace=shop pod container team node; $filtered host samples filtered and counted"
	fi
}

# kube_pod NAME UID CID NAMESPACE ANNOTATIONS: one pod object on kiln-e2e-node.
kube_pod() {
	cat <<JSON
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$1", "namespace": "$4", "uid": "$2", "labels": {}, "annotations": {$5}},
 "spec": {"nodeName": "kiln-e2e-node", "containers": [{"name": "main"}]},
 "status": {"phase": "Running", "containerStatuses": [{"name": "main", "ready": true,
  "containerID": "containerd://$3"}]}}
JSON
}

# Fail closed: a pod that opted out (kiln.dev/profile: "false") runs a
# workload while the API server holds the first list back; its samples
# are dropped and counted (pods_not_synced) until the list arrives, then
# counted as opted_out. None of them is ever pushed.
test_kube_fail_closed() {
	local cid uid cg scen problem early not_synced opted
	cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	uid=$($PY -c 'import uuid; print(uuid.uuid4())')
	cg=$(pod_cgroup "$uid" "$cid") || { fail kube_fail_closed "no cgroup v2 mount, or cannot create the pod's cgroup"; return; }
	scen=$TMP/closed.json
	echo "{\"resourceVersion\": 100, \"pods\": [$(kube_pod secret-0 "$uid" "$cid" vault '"kiln.dev/profile": "false"')]}" >"$scen"
	start_kube_api closed "$scen" --list-delay 6
	in_cgroup "$cg"
	start_receiver closed
	start_agent closed --server "http://127.0.0.1:$RPORT" --interval 1 --node-name kiln-e2e-node \
		--kube-api "http://127.0.0.1:$APIPORT"
	wait_metric '^kiln_samples_filtered_total\{reason="pods_not_synced"\} [1-9]'
	early=$(metric '^kiln_kube_synced ')
	wait_metric '^kiln_kube_synced 1'
	wait_metric '^kiln_samples_filtered_total\{reason="opted_out"\} [1-9]'
	await closed 'len(D) >= 2'
	not_synced=$(metric '^kiln_samples_filtered_total\{reason="pods_not_synced"\} ')
	opted=$(metric '^kiln_samples_filtered_total\{reason="opted_out"\} ')
	stop_agent
	stop_receiver
	stop_pod_test "$cg"
	problem=$(exit_problem closed)
	if [ -n "$problem" ]; then
		fail kube_fail_closed "$problem"
	elif [ "$early" != 0 ]; then
		fail kube_fail_closed "the list was not held back (kiln_kube_synced $early before the delay)"
	elif ! check closed "not any(s['labels_map'].get('pod_uid') == '$uid' or s['labels_map'].get('namespace') == 'vault' for x in A for s in x['series'])"; then
		fail kube_fail_closed "the opted-out pod was pushed: $(value closed "[s['labels_map'] for x in A for s in x['series'] if s['labels_map'].get('pod_uid') == '$uid' or s['labels_map'].get('namespace') == 'vault'][:2]")"
	elif ! samples_conserved closed; then
		fail kube_fail_closed "samples do not add up: $(grep 'agent: stopped' "$TMP/closed.err")"
	else
		pass "kube: an opted-out pod is not pushed before the first list ($not_synced samples pods_not_synced) nor after ($opted opted_out)"
	fi
}

# Two pods of one namespace on this host (two cgroups shaped like
# kubelet's, a workload in each), files mode, no server: the files carry
# each pod's labels on their samples (go tool pprof -tags lists both pods),
# `kiln view DIR --match pod=a` holds pod a's samples, exactly as many as
# the files say pod a has, and `kiln diff DIR DIR --base-match pod=a
# --match pod=b` compares the two.
test_files_labels() {
	local dir=$TMP/pods ua ub ca cb cga cgb pa pb tags a_tags a_view all_view problem
	mkdir -p "$dir"
	ca=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	cb=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	ua=$($PY -c 'import uuid; print(uuid.uuid4())')
	ub=$($PY -c 'import uuid; print(uuid.uuid4())')
	cga=$(pod_cgroup "$ua" "$ca") && cgb=$(pod_cgroup "$ub" "$cb") ||
		{ fail files_labels "no cgroup v2 mount, or cannot create the pods' cgroups"; return; }
	echo "{\"resourceVersion\": 100, \"pods\": [$(kube_pod web-a "$ua" "$ca" shop ''), $(kube_pod web-b "$ub" "$cb" shop '')]}" >"$TMP/pods.json"
	echo "kube-token-$RANDOM" >"$TMP/kube-token"
	start_kube_api pods "$TMP/pods.json" --token "$(cat "$TMP/kube-token")"
	in_cgroup "$cga"
	pa=$POD_PID
	in_cgroup "$cgb"
	pb=$POD_PID
	start_agent pods --output-dir "$dir" --interval 1 --node-name kiln-e2e-node \
		--kube-api "http://127.0.0.1:$APIPORT" --kube-token-file "$TMP/kube-token" \
		--allow-insecure-credentials --include-namespace shop --tag region=test
	wait_until "$GUARD" sh -c "[ \$(ls '$dir' | grep -c -- '-all\.folded\$') -ge 4 ]"
	stop_agent
	POD_PID="$pa $pb"
	kill $pa $pb 2>/dev/null
	wait $pa $pb 2>/dev/null
	kill "$KUBE_PID" 2>/dev/null
	wait "$KUBE_PID" 2>/dev/null
	rmdir "$cga" "$(dirname "$cga")" "$cgb" "$(dirname "$cgb")" 2>/dev/null
	problem=$(exit_problem pods)
	# samples per pod, as go tool pprof reads the files' labels
	tags=$(HOME=$TMP GOCACHE=$TMP/gocache go tool pprof -tags -sample_index=samples "$dir"/*.pb.gz 2>&1)
	a_tags=$(awk '/^ pod:/ { on = 1; next } /^ [a-z_]+:/ { on = 0 } on && $NF == "web-a" { printf "%d\n", $1 }' <<<"$tags")
	"$KILN" view "$dir" --match pod=web-a --match namespace=shop -o "$TMP/a.folded" 2>"$TMP/a.view.err"
	"$KILN" view "$dir" -o "$TMP/all.folded" 2>"$TMP/all.view.err"
	a_view=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/a.folded")
	all_view=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/all.folded")
	"$KILN" diff "$dir" "$dir" --base-match pod=web-a --match pod=web-b >"$TMP/ab.diff" 2>&1
	if [ -n "$problem" ]; then
		fail files_labels "$problem"
	elif ! grep -q 'web-a' <<<"$tags" || ! grep -q 'web-b' <<<"$tags" || ! grep -q 'region' <<<"$tags"; then
		fail files_labels "go tool pprof -tags does not list both pods and the tag: $(head -c 600 <<<"$tags")"
	elif [ -z "$a_tags" ] || [ "$a_view" != "$a_tags" ]; then
		fail files_labels "view --match pod=web-a has $a_view samples, the files' labels say $a_tags"
	elif grep -qv '^cpu_ratio;' "$TMP/a.folded"; then
		fail files_labels "view --match pod=web-a holds other stacks: $(grep -v '^cpu_ratio;' "$TMP/a.folded" | head -2)"
	elif [ "$all_view" -le "$a_view" ]; then
		fail files_labels "the unfiltered view ($all_view samples) is not larger than pod a's ($a_view)"
	elif ! grep -q '^base [0-9]* samples, new [0-9]* samples' "$TMP/ab.diff"; then
		fail files_labels "diff of the two pods: $(head -3 "$TMP/ab.diff")"
	else
		pass "files labels: go tool pprof -tags lists pods web-a, web-b and region; view DIR --match pod=web-a: $a_view of $all_view samples, as the labels say; diff pod a vs b: $(grep -m1 "^base" "$TMP/ab.diff")"
	fi
}

# A big node list read in pages: 20 000 small pods sync with the agent's
# peak RSS (VmHWM) bounded; the whole list in one piece took ~286 MB near
# 64 MiB. The bound is generous (other tests share the host), but far
# below what a whole-list parse of this size costs.
test_kube_big_list() {
	local scen problem hwm pages npods rss_cap_kb
	scen=$TMP/big.json
	$PY - "$scen" <<'PY'
import json, sys
pods = []
for i in range(20000):
    pods.append({"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "p-%05d" % i, "namespace": "ns-%d" % (i % 50),
                              "uid": "00000000-0000-4000-8000-%012d" % i,
                              "labels": {"app": "a%d" % (i % 7)}},
                 "spec": {"nodeName": "kiln-e2e-node"},
                 "status": {"phase": "Running", "containerStatuses": [
                     {"name": "main", "containerID": "containerd://%064x" % (i + 1)}]}})
json.dump({"resourceVersion": 100, "pods": pods}, open(sys.argv[1], "w"))
PY
	start_kube_api big "$scen"
	start_agent big --output-dir "$TMP/big-out" --interval 1 --node-name kiln-e2e-node \
		--kube-api "http://127.0.0.1:$APIPORT" --max-pods 25000
	wait_metric '^kiln_kube_synced 1'
	npods=$(metric '^kiln_kube_pods ')
	pages=$(metric '^kiln_kube_list_pages_total ')
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$AGENT_PID/status")
	stop_agent
	kill "$KUBE_PID" 2>/dev/null
	wait "$KUBE_PID" 2>/dev/null
	problem=$(exit_problem big)
	# ASan's shadow memory and quarantine (SANITIZE=1 sets KILN_SAN_DIR)
	# multiply RSS by several times; the bound is for the shipped build.
	rss_cap_kb=$((${KILN_SAN_DIR:+4 *} 131072))
	echo "kube_big_list: 20000 pods, $pages pages, agent VmHWM ${hwm} kB" >>"$TMP/big.check"
	if [ -n "$problem" ]; then
		fail kube_big_list "$problem"
	elif [ "$npods" != 20000 ]; then
		fail kube_big_list "want 20000 pods indexed, have '$npods'"
	elif [ -z "$pages" ] || [ "$pages" -lt 40 ]; then
		fail kube_big_list "want the list in pages of 500 (40), read $pages"
	elif [ -z "$hwm" ] || [ "$hwm" -gt "$rss_cap_kb" ]; then
		fail kube_big_list "peak RSS ${hwm} kB > $((rss_cap_kb / 1024)) MiB"
	else
		pass "kube: 20000 pods listed in $pages pages, peak RSS $((hwm / 1024)) MiB"
	fi
}

# cum_samples TOP FUNC: FUNC's cum column in go tool pprof -top output
# (-sample_index=samples: counts), 0 when absent.
cum_samples() { awk -v f="$2" '$6 == f { print $4; found = 1; exit } END { if (!found) print 0 }' <<<"$1"; }

# Pulling a profile (GET /debug/pprof/profile) while the agent pushes:
# cpu_ratio in a pod-shaped cgroup (labels from the cgroup path: --no-kube)
# and Debian's python3 spinning outside it. go tool pprof fetches the
# node's profile: both workloads, cpu_ratio's 3:1 shares within sampling
# error, a window of at least the seconds asked; a pull selecting the
# cgroup's pod_uid holds only its stacks. One pull at a time
# (--pull-max-concurrent 1): a second gets 429 and is counted, /metrics is
# served while a pull waits, and the push path lost nothing.
test_pull() {
	local cid uid cg url top filtered tags three one n problem busy during counted slow KUBE_PID=
	cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	uid=$($PY -c 'import uuid; print(uuid.uuid4())')
	cg=$(pod_cgroup "$uid" "$cid") || { fail pull "no cgroup v2 mount, or cannot create the pod's cgroup"; return; }
	start_receiver pull
	in_cgroup "$cg"
	start_workload $PY -c 'while True: pass'
	start_agent pull --server "http://127.0.0.1:$RPORT" --interval 2 --no-kube \
		--pull-max-concurrent 1 --pull-max-seconds 10
	wait_until "$GUARD" answers_200 "$MPORT" /ready
	url="http://127.0.0.1:$MPORT/debug/pprof/profile"
	top=$(go tool pprof -top -cum -sample_index=samples -nodecount=400 "$url?seconds=3" 2>&1)
	go tool pprof -proto "$url?seconds=3&pod_uid=$uid" >"$TMP/pull.pb.gz" 2>"$TMP/pull.pprof.err"
	filtered=$(go tool pprof -top -sample_index=samples -nodecount=400 "$TMP/pull.pb.gz" 2>&1)
	tags=$(go tool pprof -tags "$TMP/pull.pb.gz" 2>&1)
	# one pull waits 5 s; a second is refused, /metrics answers meanwhile
	curl -s -o /dev/null "$url?seconds=5" &
	slow=$!
	wait_until "$GUARD" has_metric '^kiln_pulls 1'
	busy=$(http_code "$MPORT" "/debug/pprof/profile?seconds=1")
	during=$(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -c '^kiln_pulls 1')
	wait "$slow"
	counted=$(metric '^kiln_pull_requests_total\{result="busy"\} ')
	await pull 'len(D) >= 2'
	stop_agent
	stop_receiver
	stop_workloads
	stop_pod_test "$cg"
	problem=$(exit_problem pull)
	three=$(cum_samples "$top" hot_three)
	one=$(cum_samples "$top" hot_one)
	n=$((three + one))
	if [ -n "$problem" ]; then
		fail pull "$problem"
	elif [ "$n" -lt 100 ] || ! grep -q 'python3' <<<"$top"; then
		fail pull "go tool pprof -top of a 3 s pull: want cpu_ratio (hot_three + hot_one >= 100 samples, have $n) and python3: $(head -c 800 <<<"$top")"
	elif ! awk -v a="$three" -v n="$n" 'BEGIN { p = a / n; e = 4 * sqrt(0.1875 / n); exit !(p > 0.75 - e && p < 0.75 + e) }'; then
		fail pull "hot_three's share $three/$n is not 3/4 within 4 standard errors"
	# (pprof prints 2 decimals and drops zeros: a window of 3.002 s is "3s")
	elif ! grep -Eq '^Duration: ([3-9]|[1-9][0-9])(\.[0-9]+)?s' <<<"$top"; then
		fail pull "the window is shorter than the 3 s asked: $(grep -m1 Duration <<<"$top")"
	elif ! grep -q 'hot_three' <<<"$filtered" || grep -q 'python3' <<<"$filtered"; then
		fail pull "a pull for pod_uid=$uid: want cpu_ratio's stacks only: $(head -c 800 <<<"$filtered")"
	elif [ "$(grep -c "$uid" <<<"$tags")" != 1 ] || grep -A3 '^ *pod_uid:' <<<"$tags" | grep -v "$uid" | grep -q '[0-9a-f]\{8\}-'; then
		fail pull "the filtered pull's samples carry other pod_uids: $tags"
	elif [ "$busy" != 429 ] || [ "$during" != 1 ]; then
		fail pull "a second pull at once: status $busy (want 429); /metrics during a pull: $during"
	elif [ "$counted" != 1 ]; then
		fail pull "kiln_pull_requests_total{result=\"busy\"} is '$counted', want 1"
	elif ! samples_conserved pull; then
		fail pull "with pulls, the pushed samples do not add up: $(grep 'agent: stopped' "$TMP/pull.err")"
	else
		pass "pull: go tool pprof -top of a 3 s pull: hot_three $three of $n cpu_ratio samples, python3 there; pod_uid= selects the cgroup's stacks only; a second pull at once: 429; the push path lost nothing"
	fi
}

# CPU metrics from the profiles: cpu_ratio in a pod's cgroup (the local
# Kubernetes API names it), the agent pushing and serving /metrics. Read
# with prometheus_client's parser, the pod's kiln_cpu_seconds_total grows
# as its CPU time in /proc/PID/stat does, within the sampling error
# (tests/e2e/cpu_rate.py; the window ends after 10 s of the pod's CPU, not
# of the clock); its labels are those of the pod's pushed series; with
# --cpu-metrics-functions its leaf function spin has a series of its own.
test_cpu_metrics() {
	local cid uid cg rate line svc pod ctr spin problem KUBE_PID=
	cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	uid=$($PY -c 'import uuid; print(uuid.uuid4())')
	cg=$(pod_cgroup "$uid" "$cid") || { fail cpu_metrics "no cgroup v2 mount, or cannot create the pod's cgroup"; return; }
	echo "{\"resourceVersion\": 100, \"pods\": [$(kube_pod cpu-0 "$uid" "$cid" metrics '')]}" >"$TMP/cpum.json"
	start_kube_api cpum "$TMP/cpum.json"
	start_receiver cpum
	in_cgroup "$cg"
	start_agent cpum --server "http://127.0.0.1:$RPORT" --interval 2 --node-name kiln-e2e-node \
		--kube-api "http://127.0.0.1:$APIPORT" --cpu-metrics-functions 2
	wait_metric '^kiln_cpu_seconds_total\{.*namespace="metrics"'
	rate=$(timeout "$GUARD" $PY "$HERE/cpu_rate.py" "$MPORT" "$POD_PID" 10 namespace=metrics pod=cpu-0 2>&1)
	local rate_ok=$?
	line=$(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -m1 '^kiln_cpu_seconds_total{.*namespace="metrics"')
	svc=$(sed -n 's/.*service_name="\([^"]*\)".*/\1/p' <<<"$line")
	pod=$(sed -n 's/.*pod="\([^"]*\)".*/\1/p' <<<"$line")
	ctr=$(sed -n 's/.*container="\([^"]*\)".*/\1/p' <<<"$line")
	spin=$(metric "^kiln_cpu_function_seconds_total\\{service_name=\"$svc\",function=\"spin\"\\} ")
	await cpum "any(s['labels_map'].get('namespace') == 'metrics' for x in D for s in x['series'])"
	stop_agent
	stop_receiver
	stop_pod_test "$cg"
	problem=$(exit_problem cpum)
	if [ -n "$problem" ]; then
		fail cpu_metrics "$problem"
	elif [ "$rate_ok" != 0 ]; then
		fail cpu_metrics "${rate:-no answer from cpu_rate.py}"
	elif [ -z "$svc" ] || [ "$pod" != cpu-0 ] || [ "$ctr" != main ] ||
		! check cpum "all(s['labels_map'].get('service_name') == '$svc' and s['labels_map'].get('pod') == '$pod' and s['labels_map'].get('container') == '$ctr' for x in D for s in x['series'] if s['labels_map'].get('namespace') == 'metrics')"; then
		fail cpu_metrics "the metric's labels ($line) are not the pushed series': $(value cpum "[s['labels_map'] for x in D for s in x['series'] if s['labels_map'].get('namespace') == 'metrics'][:1]")"
	elif ! awk -v v="$spin" 'BEGIN { exit !(v > 0) }'; then
		fail cpu_metrics "no kiln_cpu_function_seconds_total for spin of $svc: '$spin'"
	else
		pass "cpu metrics: $rate; labels service_name=$svc pod=$pod container=$ctr as pushed; spin ${spin}s"
	fi
}

# Profiles from CI: kiln record --server pushes each run's profile with its
# --tag labels and the push options (a tenant the receiver requires);
# kiln diff --server compares two label selectors through the query API
# (SelectMergeProfile, answered by the receiver from what it stored).
# cpu_ratio at 50 % hot_three on branch main (two commits), 90 % on
# pr-7: main vs pr-7 reports hot_three's regression and exits 1, main vs
# main exits 0, and the server's table is the one kiln diff draws from
# the same runs' files. Without the tenant the query is refused (exit 2).
# At 499 Hz a run has ~2 000 samples: two runs' shares of one function then
# differ by 1.6 points at one sigma, and the 10-point bar is 6 sigma (at the
# default 97 Hz it was 2.8 sigma, and CI once saw 40.7 % vs 54.5 %).
test_ci_diff() {
	local url st_rec st_pr st_pr_ok st_none st_bad
	start_receiver ci 0 --require-header X-Scope-OrgID=ci-tenant
	url="http://127.0.0.1:$RPORT"
	rec() {   # rec NAME TAGS... -- PERCENT
		local name=$1 pct=${*: -1}
		shift
		"$KILN" record -q -F 499 --server "$url" --tenant-id ci-tenant --allow-insecure-credentials \
			"${@:1:$#-1}" -o "$TMP/$name.pb.gz" -- "$WORKLOADS/cpu_ratio" 2 "$pct" 2>"$TMP/$name.rec.err"
	}
	rec main-a --tag branch=main --tag commit=aaa 50 &&
		rec main-b --tag branch=main --tag commit=bbb 50 &&
		rec pr --tag branch=pr-7 --tag commit=ccc 90
	st_rec=$?
	sdiff() {   # sdiff OUT BASE NEW [ARGS...]
		local out=$1
		shift
		"$KILN" diff --server "$url" --allow-insecure-credentials "$@" >"$TMP/$out.txt" 2>"$TMP/$out.err"
	}
	sdiff main_pr --tenant-id ci-tenant 'service_name="cpu_ratio",branch="main"' \
		'{service_name="cpu_ratio",branch="pr-7"}' --fail-on-regression 10:hot_three
	st_pr=$?
	sdiff main_main --tenant-id ci-tenant 'service_name="cpu_ratio",commit="aaa"' \
		'service_name="cpu_ratio",commit="bbb"' --fail-on-regression 10:hot_three
	st_pr_ok=$?
	sdiff none 'service_name="cpu_ratio"' 'service_name="cpu_ratio"'
	st_none=$?
	sdiff bad --tenant-id ci-tenant 'service_name="cpu_ratio"' 'branch=main'
	st_bad=$?
	# the same runs from files: BASE = both main runs
	mkdir -p "$TMP/main-files" && cp "$TMP/main-a.pb.gz" "$TMP/main-b.pb.gz" "$TMP/main-files/"
	"$KILN" diff "$TMP/main-files" "$TMP/pr.pb.gz" --match service_name=cpu_ratio >"$TMP/files.txt" 2>&1
	stop_receiver
	if [ "$st_rec" != 0 ]; then
		fail ci_diff "kiln record --server exited $st_rec: $(cat "$TMP"/*.rec.err | grep -m2 'error\|pushed')"
	# (the forked child is profiled from its first instruction: a slow
	# build may push its moments as kiln before the exec, a series of its own)
	elif ! check ci 'all(x["headers"].get("x-scope-orgid") == "ci-tenant" for x in D) and sorted(s["labels_map"]["commit"] + ":" + s["labels_map"]["branch"] for x in D for s in x["series"] if s["labels_map"]["service_name"] == "cpu_ratio") == ["aaa:main", "bbb:main", "ccc:pr-7"] and all(s["labels_map"].get("commit") for x in D for s in x["series"])'; then
		fail ci_diff "want three pushes with the tenant, service_name=cpu_ratio and the tags: $(value ci '[(x["status"], s["labels_map"]) for x in A for s in x.get("series") or []]')"
	elif [ "$st_pr" != 1 ] || ! grep -q 'regression: hot_three (cpu_ratio)' "$TMP/main_pr.err"; then
		fail ci_diff "main vs pr-7: exit $st_pr, want 1 with hot_three's regression: $(cat "$TMP/main_pr.err")"
	elif [ "$st_pr_ok" != 0 ]; then
		fail ci_diff "main (aaa) vs main (bbb): exit $st_pr_ok, want 0: $(cat "$TMP/main_main.err")"
	elif [ "$(grep -E 'hot_(three|one) ' "$TMP/main_pr.txt")" != "$(grep -E 'hot_(three|one) ' "$TMP/files.txt")" ] ||
		! grep -q 'hot_three' "$TMP/main_pr.txt"; then
		fail ci_diff "the server's diff is not the files' diff: $(grep -E 'hot_' "$TMP/main_pr.txt") vs $(grep -E 'hot_' "$TMP/files.txt")"
	elif [ "$st_none" != 2 ] || ! grep -q 'answered 401' "$TMP/none.err"; then
		fail ci_diff "a query without the tenant: exit $st_none, want 2 after the server's 401: $(cat "$TMP/none.err")"
	elif [ "$st_bad" != 2 ] || ! grep -q 'answered 400' "$TMP/bad.err"; then
		fail ci_diff "a selector the server cannot parse: exit $st_bad, want 2 after its 400: $(cat "$TMP/bad.err")"
	else
		pass "ci: record --server pushed 3 tagged runs (tenant ci-tenant); diff --server main vs pr-7: $(grep -m1 'hot_three' "$TMP/main_pr.txt" | awk '{ print $1, "->", $2, $3 }') and exit 1, main vs main exit 0, as kiln diff of the files; no tenant: 401, exit 2"
	fi
}

TESTS="test_push test_push_caps test_ingest test_files test_files_labels test_down_then_up test_503_then_ok test_429 test_400
	test_otlp test_otlp_failures test_otlp_partial
	test_slow_server test_queue_bound test_sigterm_flush test_auth test_basic_auth
	test_metrics_health test_probes_slow_clients test_symbol_cache_ttl test_config test_kube_labels
	test_kube_fail_closed test_kube_big_list test_pull test_cpu_metrics test_ci_diff"
# all tests, or those named on the command line (e.g. test_push)
[ $# = 0 ] || TESTS="$*"
if [ "$(id -u)" != 0 ]; then
	skip_all "loading BPF programs needs root (sudo make test)" $TESTS
elif ! $PY -c 'import google.protobuf' 2>/dev/null; then
	fail setup "the receiver needs Debian's python3-protobuf (make deps)"
else
	for t in $TESTS; do
		run_tests "$t"
		stop_workloads
	done
fi
finish "$(wc -w <<<"$TESTS")"
