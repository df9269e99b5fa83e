#!/bin/bash
# End-to-end tests of `kiln agent`: the real binary with the real BPF
# program, pushing to tests/receiver/receiver.py (a local server speaking
# Pyroscope's push and ingest protocols, decoding with python3-protobuf).
# Needs root. Prints one line per test and "N passed, N failed" last.
set -u

KILN=${KILN:-build/kiln}
WORKLOADS=${WORKLOADS:-build/workloads}
HERE=$(cd "$(dirname "$0")" && pwd)
RECEIVER=$HERE/../receiver/receiver.py
LOGCHECK=$HERE/../receiver/logcheck.py
PROMCHECK=$HERE/../unit/check_prom_text.py
PY=/usr/bin/python3                     # Debian's, with python3-protobuf
TMP=$(mktemp -d /tmp/kiln-agent-e2e.XXXXXX)
export HOME=$TMP GOCACHE=$TMP/gocache
passed=0
failed=0
RECV_PID=
AGENT_PID=

cleanup() {
	[ -n "$AGENT_PID" ] && kill -9 "$AGENT_PID" 2>/dev/null
	[ -n "$RECV_PID" ] && kill "$RECV_PID" 2>/dev/null
	pkill -f "$WORKLOADS/cpu_ratio" 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

free_port() {
	$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_receiver NAME [PORT] [ARGS...]: receiver on PORT (default: free),
# log in $TMP/NAME.jsonl; sets RPORT and RECV_PID.
start_receiver() {
	local name=$1 port=${2:-0}
	shift 2 2>/dev/null || shift
	rm -f "$TMP/$name.port"
	$PY "$RECEIVER" --port "$port" --port-file "$TMP/$name.port" --log "$TMP/$name.jsonl" \
		"$@" >"$TMP/$name.recv.out" 2>&1 &
	RECV_PID=$!
	for _ in $(seq 100); do
		[ -s "$TMP/$name.port" ] && break
		sleep 0.1
	done
	RPORT=$(cat "$TMP/$name.port" 2>/dev/null)
}

stop_receiver() {
	[ -n "$RECV_PID" ] && kill "$RECV_PID" 2>/dev/null && wait "$RECV_PID" 2>/dev/null
	RECV_PID=
}

control() {
	curl -s -o /dev/null -X POST --data "$2" "http://127.0.0.1:$1/_control"
}

# start_agent NAME ARGS...: agent in the background, stderr in $TMP/NAME.err
start_agent() {
	local name=$1
	shift
	MPORT=$(free_port)
	"$KILN" agent --metrics-addr "127.0.0.1:$MPORT" --log-level info "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	AGENT_PID=$!
}

# stop_agent: SIGTERM, wait; returns the agent's exit status.
stop_agent() {
	local st
	kill -TERM "$AGENT_PID" 2>/dev/null
	wait "$AGENT_PID"
	st=$?
	AGENT_PID=
	return $st
}

# field NAME KEY: a key=value field of the agent's "stopped" line.
field() {
	grep 'msg="agent: stopped"' "$TMP/$1.err" | tail -1 | tr ' ' '\n' |
		sed -n "s/^$2=//p"
}

check() { $PY "$LOGCHECK" "$TMP/$1.jsonl" "$2" 2>>"$TMP/$1.check"; }
value() { $PY "$LOGCHECK" "$TMP/$1.jsonl" "$2" --print 2>/dev/null; }

workload() { "$WORKLOADS/cpu_ratio" "$1" >/dev/null 2>&1 & }

wait_metric() {   # wait_metric REGEX SECONDS: until /metrics has a matching line
	for _ in $(seq $(($2 * 10))); do
		curl -s "http://127.0.0.1:$MPORT/metrics" 2>/dev/null | grep -Eq "$1" && return 0
		sleep 0.1
	done
	return 1
}

test_push() {
	local samples delivered
	start_receiver push
	workload 6
	start_agent push --server "http://127.0.0.1:$RPORT/" --interval 2 \
		--tag env=e2e --tag 'team.name-x=kiln'
	sleep 6.5
	stop_agent || { fail push "agent exit status $? ($(tail -1 "$TMP/push.err"))"; stop_receiver; return; }
	stop_receiver
	samples=$(field push samples)
	delivered=$(value push 'sum(x["value_sums"][0] for x in profiles())')
	if ! check push 'len(D) >= 3 and all(x["status"] == 200 for x in A)'; then
		fail push "want >= 3 accepted pushes: $(value push '[x["status"] for x in A]')"
	elif ! check push 'all(s["labels"][0] == ["__name__", "process_cpu"] and "service_name" in s["labels_map"] for x in D for s in x["series"])'; then
		fail push "__name__ first and service_name on every series: $(value push 'labels(D[0])')"
	elif ! check push 'all(s["labels_map"].get("env") == "e2e" and s["labels_map"].get("team_name_x") == "kiln" and s["labels_map"].get("node") and not any(k.startswith("__") and k != "__name__" for k in s["labels_map"]) for x in D for s in x["series"])'; then
		fail push "static tags sanitized, node, no other __ labels: $(value push 'labels(D[0])')"
	elif ! check push 'all(["cpu", "nanoseconds"] in p["sample_type"] and p["period_type"] == ["cpu", "nanoseconds"] and p["duration_nanos"] > 0 for p in profiles())'; then
		fail push "profile type cpu/nanoseconds: $(value push 'profiles()[0]["sample_type"]')"
	elif [ -z "$samples" ] || [ "$samples" != "$delivered" ]; then
		fail push "the receiver got $delivered samples, the agent profiled $samples"
	elif ! check push 'has_function("hot_three") and has_function("hot_one")'; then
		fail push "workload functions missing from the pushed profiles"
	else
		pass "push: $(value push 'len(D)') requests, $delivered samples = agent's count, labels sanitized, cpu/nanoseconds"
	fi
}

test_ingest() {
	start_receiver ingest
	workload 5
	start_agent ingest --server "http://127.0.0.1:$RPORT" --server-api ingest --interval 1 --tag env=e2e
	sleep 3.5
	stop_agent
	stop_receiver
	if check ingest 'len(D) >= 3 and all(x["kind"] == "ingest" and x["ingest"]["format"] == "pprof" and x["ingest"]["profile_type"] == "cpu" and dict(x["ingest"]["tags"]).get("env") == "e2e" for x in D)' &&
		[ "$(field ingest samples)" = "$(value ingest 'sum(x["value_sums"][0] for x in profiles())')" ]; then
		pass "ingest: $(value ingest 'len(D)') /ingest?format=pprof requests, all samples delivered"
	else
		fail ingest "$(value ingest '[(x["status"], x.get("ingest", {}).get("name")) for x in A][:3]')"
	fi
}

test_files() {
	local dir=$TMP/profiles n
	mkdir -p "$dir"
	head -c 40000 /dev/urandom >"$dir/100-old.pb.gz"
	head -c 40000 /dev/urandom >"$dir/200-old.pb.gz"
	head -c 20000 /dev/urandom >"$dir/300-old.pb.gz"
	echo keep >"$dir/notes.txt"
	workload 5
	start_agent files --output-dir "$dir" --output-max-bytes 64K --interval 1
	sleep 3.5
	stop_agent
	n=$(ls "$dir" | grep -c '\.pb\.gz$')
	if [ -e "$dir/100-old.pb.gz" ] || [ ! -e "$dir/notes.txt" ]; then
		fail files "rotation: the oldest interval files stay or other files went: $(ls "$dir" | head)"
	elif ! ls "$dir" | grep -q -- '-all\.folded$'; then
		fail files "no <start>-all.folded file"
	elif ! grep -q hot_three "$dir/latest.html" 2>/dev/null; then
		fail files "latest.html missing or without the workload's functions"
	elif ! f=$(ls -t "$dir"/*.pb.gz | head -1) || ! go tool pprof -raw "$f" >/dev/null 2>&1; then
		fail files "go tool pprof cannot read $f"
	elif [ "$(du -cb "$dir"/[0-9]* | tail -1 | cut -f1)" -gt 65536 ] && [ "$n" -gt 1 ]; then
		fail files "more than --output-max-bytes held: $(du -cb "$dir"/[0-9]* | tail -1)"
	else
		pass "files: $n pprof files, folded per interval, latest.html, oldest removed beyond 64K, notes.txt kept"
	fi
}

test_down_then_up() {
	local port
	port=$(free_port)
	workload 12
	start_agent late --server "http://127.0.0.1:$port" --interval 1 --shutdown-timeout 15
	sleep 4
	start_receiver late "$port"
	sleep 6
	stop_agent
	stop_receiver
	if check late 'len(D) >= 8 and [p["time_nanos"] for p in profiles()] == sorted(p["time_nanos"] for p in profiles())' &&
		[ "$(field late dropped_full)$(field late dropped_shutdown)$(field late rejected)" = 000 ] &&
		[ "$(field late sent)" = "$(field late profiles)" ] &&
		[ "$(field late samples)" = "$(value late 'sum(x["value_sums"][0] for x in profiles())')" ]; then
		pass "server down at start: $(field late sent) profiles delivered late, in order, none lost"
	else
		fail down_then_up "sent $(field late sent) of $(field late profiles); delivered $(value late 'len(D)')"
	fi
}

test_503_then_ok() {
	start_receiver s503 0 --mode status --status 503
	workload 12
	start_agent s503 --server "http://127.0.0.1:$RPORT" --interval 1 --shutdown-timeout 20
	sleep 1
	local t0 t1
	t0=$(awk '{ print $14 + $15 }' "/proc/$AGENT_PID/stat")
	sleep 5
	# backing off is sleeping: the agent's CPU over 5 s of outage stays
	# far below what a spinning backoff burns (over 100 ticks)
	t1=$(awk '{ print $14 + $15 }' "/proc/$AGENT_PID/stat")
	control "$RPORT" '{"mode":"ok"}'
	sleep 4
	stop_agent
	stop_receiver
	if [ $((t1 - t0)) -gt 50 ]; then
		fail 503 "the agent burned $((t1 - t0)) CPU ticks in 5 s of backoff"
	elif check s503 'any(x["status"] == 503 for x in A) and len(D) >= 8' &&
		[ "$(field s503 sent)" = "$(field s503 profiles)" ] &&
		[ "$(field s503 samples)" = "$(value s503 'sum(x["value_sums"][0] for x in profiles())')" ]; then
		pass "503 for 6 s: retried ($((t1 - t0)) CPU ticks while backing off), all $(field s503 sent) profiles delivered afterwards"
	else
		fail 503 "sent $(field s503 sent) of $(field s503 profiles), statuses $(value s503 '[x["status"] for x in A]')"
	fi
}

test_429() {
	start_receiver s429 0 --mode status --status 429 --count 2 --retry-after 1
	workload 6
	start_agent s429 --server "http://127.0.0.1:$RPORT" --interval 1 --shutdown-timeout 15
	sleep 4
	stop_agent
	stop_receiver
	if check s429 '[x["status"] for x in A][:2] == [429, 429] and len(D) >= 3' &&
		[ "$(field s429 sent)" = "$(field s429 profiles)" ]; then
		pass "429 with Retry-After: backed off and delivered all $(field s429 sent) profiles"
	else
		fail 429 "statuses $(value s429 '[x["status"] for x in A]'), sent $(field s429 sent) of $(field s429 profiles)"
	fi
}

test_400() {
	start_receiver s400 0 --mode status --status 400 --count 1
	workload 5
	start_agent s400 --server "http://127.0.0.1:$RPORT" --interval 1
	sleep 3.5
	stop_agent
	stop_receiver
	# the refused request is not retried: one 400, then only new ones
	if check s400 '[x["status"] for x in A].count(400) == 1 and A[0]["status"] == 400 and len(D) == len(A) - 1' &&
		[ "$(field s400 rejected)" -ge 1 ] &&
		[ $(($(field s400 sent) + $(field s400 rejected))) = "$(field s400 profiles)" ] &&
		grep -q 'refused' "$TMP/s400.err"; then
		pass "400: dropped, counted (rejected=$(field s400 rejected)), logged, not retried"
	else
		fail 400 "statuses $(value s400 '[x["status"] for x in A]'), rejected=$(field s400 rejected)"
	fi
}

test_slow_server() {
	local drains
	start_receiver slow 0 --mode delay --seconds 10
	workload 12
	start_agent slow --server "http://127.0.0.1:$RPORT" --interval 1 --request-timeout 60 \
		--shutdown-timeout 1
	sleep 1
	if ! wait_metric '^kiln_intervals_total [6-9]' 15; then
		fail slow_server "intervals stalled behind a 10 s request: $(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -E '^kiln_(intervals|drains)_total')"
	elif ! curl -sf "http://127.0.0.1:$MPORT/healthz" >/dev/null; then
		fail slow_server "/healthz not ok while the server is slow"
	else
		drains=$(curl -s "http://127.0.0.1:$MPORT/metrics" | sed -n 's/^kiln_drains_total //p')
		pass "a server taking 10 s per request does not delay drains ($drains drains meanwhile)"
	fi
	stop_agent
	stop_receiver
}

test_queue_bound() {
	start_receiver queue 0 --mode status --status 503
	start_agent queue --server "http://127.0.0.1:$RPORT" --interval 1 --queue-max-bytes 64K \
		--shutdown-timeout 20
	workload 8
	if ! wait_metric '^kiln_profiles_dropped_total\{reason="queue_full"\} [1-9]' 20; then
		fail queue_bound "no profile dropped at the queue bound: $(curl -s "http://127.0.0.1:$MPORT/metrics" | grep -E '^kiln_queue')"
		stop_agent; stop_receiver; return
	fi
	control "$RPORT" '{"mode":"ok"}'
	sleep 3
	stop_agent
	stop_receiver
	if [ $(($(field queue sent) + $(field queue dropped_full))) = "$(field queue profiles)" ] &&
		[ "$(field queue sent)" -ge 1 ]; then
		pass "queue bound: oldest dropped and counted (dropped_full=$(field queue dropped_full)), the rest delivered"
	else
		fail queue_bound "sent $(field queue sent) + dropped $(field queue dropped_full) != built $(field queue profiles)"
	fi
}

test_sigterm_flush() {
	start_receiver flush
	workload 5
	start_agent flush --server "http://127.0.0.1:$RPORT" --interval 60
	sleep 3
	stop_agent
	stop_receiver
	if check flush 'len(D) == 1 and 1e9 < list(profiles())[0]["duration_nanos"] < 30e9' &&
		[ "$(field flush samples)" = "$(value flush 'sum(x["value_sums"][0] for x in profiles())')" ]; then
		pass "SIGTERM: the partial interval ($(value flush 'round(list(profiles())[0]["duration_nanos"]/1e9,1)') s) was pushed before exit"
	else
		fail sigterm_flush "delivered $(value flush 'len(D)') pushes"
	fi
}

test_auth() {
	local secret=s3cr3t-$RANDOM$RANDOM pw=pw-$RANDOM$RANDOM
	echo "$secret" >"$TMP/token"
	start_receiver auth 0 --require-auth "Bearer $secret" --require-header X-Scope-OrgID=tenant-1 \
		--require-header X-Extra=yes
	workload 8
	start_agent auth --server "http://127.0.0.1:$RPORT" --interval 1 --bearer-token-file "$TMP/token" \
		--tenant-id tenant-1 --header X-Extra=yes --log-level debug
	sleep 2.5
	# rotate: the server wants a new token; the agent re-reads it on 401
	secret=$secret-rotated
	echo "$secret" >"$TMP/token"
	control "$RPORT" "{\"require_auth\":{\"authorization\":\"Bearer $secret\"}}"
	sleep 3
	stop_agent
	stop_receiver
	"$KILN" agent --help >"$TMP/help.txt" 2>&1
	if ! check auth 'len(D) >= 3 and all(x["headers"].get("x-scope-orgid") == "tenant-1" and x["headers"].get("x-extra") == "yes" for x in D)'; then
		fail auth "headers or deliveries: $(value auth '[(x["status"], x["headers"].get("authorization", "")[:12]) for x in A]')"
	elif ! check auth 'D[-1]["headers"]["authorization"].endswith("-rotated")'; then
		fail auth "the rotated token was not used after a 401"
	elif grep -q "s3cr3t" "$TMP/auth.err" "$TMP/help.txt"; then
		fail auth "a secret appears in the logs or --help"
	else
		pass "auth: bearer token, X-Scope-OrgID and --header sent; token re-read after 401; never logged"
	fi
	echo "$pw" >"$TMP/pw"
	start_receiver basic 0 --basic-auth "123456:$pw"
	start_agent basic --server "http://127.0.0.1:$RPORT" --interval 1 --basic-auth-user 123456 \
		--basic-auth-password-file "$TMP/pw" --log-level debug
	sleep 4
	stop_agent
	stop_receiver
	if check basic 'len(D) >= 2' && ! grep -q "$pw" "$TMP/basic.err"; then
		pass "basic auth (Grafana Cloud style): delivered, password never logged"
	else
		fail basic_auth "statuses $(value basic '[x["status"] for x in A]')"
	fi
}

test_metrics_health() {
	local first_ready status
	start_receiver metrics
	workload 7
	start_agent metrics --server "http://127.0.0.1:$RPORT" --interval 1
	for _ in $(seq 100); do
		first_ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/ready")
		[ "$first_ready" != 000 ] && break
		sleep 0.05
	done
	sleep 4
	curl -s "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
	status="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/ready") $(
		curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/healthz")"
	stop_agent
	stop_receiver
	local sent delivered
	sent=$(sed -n 's/^kiln_profiles_sent_total //p' "$TMP/metrics.txt")
	# what the receiver had accepted by the time /metrics was read (more
	# may have arrived since): at least what the agent counted as sent
	delivered=$(value metrics 'sum(x["profile_count"] for x in D)')
	if ! $PY "$PROMCHECK" "$TMP/metrics.txt" --expect kiln_samples_total \
		--expect kiln_samples_dropped_total --expect kiln_profiles_sent_total \
		--expect kiln_queue_bytes --expect kiln_symbol_cache_hit_ratio \
		--expect kiln_drain_duration_seconds --expect kiln_processes_tracked \
		--expect kiln_last_push_timestamp_seconds --expect kiln_symbol_cache_expired_total \
		>"$TMP/promcheck.out" 2>&1; then
		fail metrics "/metrics is not valid Prometheus text: $(head -3 "$TMP/promcheck.out")"
	elif [ "$first_ready" != 503 ] || [ "$status" != "200 200" ]; then
		fail metrics "/ready before the first drain: $first_ready (want 503); after: $status"
	elif [ -z "$sent" ] || [ "$sent" -lt 2 ] || [ "$sent" -gt "$delivered" ]; then
		fail metrics "kiln_profiles_sent_total=$sent but the receiver accepted $delivered"
	elif ! grep -qx 'kiln_symbol_cache_expired_total 0' "$TMP/metrics.txt"; then
		fail metrics "symbol tables expired within seconds under the default --symbol-cache-ttl (10m): $(grep '^kiln_symbol_cache_expired' "$TMP/metrics.txt")"
	else
		pass "metrics: valid Prometheus text, sent=$sent agrees with the receiver ($delivered), /ready 503 then 200, /healthz 200"
	fi
}

test_symbol_cache_ttl() {
	local expired=
	start_receiver ttl
	workload 3
	start_agent ttl --server "http://127.0.0.1:$RPORT" --interval 1 --symbol-cache-ttl 2s \
		--log-level debug
	# cpu_ratio's symbols are loaded while it runs, and freed 2 s after
	# it exits, at a drain (every second here)
	wait_metric '^kiln_symbol_cache_expired_total [1-9]' 30 &&
		expired=$(curl -s "http://127.0.0.1:$MPORT/metrics" |
			sed -n 's/^kiln_symbol_cache_expired_total //p')
	stop_agent
	stop_receiver
	if ! grep -q 'cpu_ratio: [0-9]* symbols from' "$TMP/ttl.err"; then
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
	# the README's option table names every flag and variable --help shows
	"$KILN" agent --help | grep -oE '(--[a-z-]+|KILN_[A-Z_]+)' | sort -u >"$TMP/help-names"
	out=$(while read -r name; do grep -qE -- "$name([^a-zA-Z_-]|$)" "$HERE/../../README.md" || echo "$name"; done <"$TMP/help-names")
	if [ -n "$out" ]; then
		fail config "README lacks: $(echo $out)"; return
	fi
	printf 'interval = 1\noutput-dir = %s\nlog-format = json\n' "$TMP/conf-out" >"$TMP/good.conf"
	workload 4
	start_agent conf --config "$TMP/good.conf" --log-format json
	sleep 2.5
	stop_agent
	if ! ls "$TMP/conf-out" | grep -q '\.pb\.gz$'; then
		fail config "--config output-dir/interval not applied"
	elif ! $PY -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$TMP/conf.err" 2>/dev/null ||
		! grep -q '"msg": *"agent: stopped"' "$TMP/conf.err"; then
		fail config "--log-format json: not one JSON object per line: $(head -2 "$TMP/conf.err")"
	else
		pass "config: errors name the flag, variable or file line (exit 2); --config applied; JSON logs"
	fi
}

# A pod on this host: a real cgroup v2 directory shaped like kubelet's
# (systemd driver, containerd), a workload inside it, and the local
# Kubernetes API server (tests/kube) listing the pod on this node.
test_kube_labels() {
	local v2 cid uid cg scen apiport filtered
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$v2" ] || { fail kube_labels "no cgroup v2 mount"; return; }
	cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	uid=$($PY -c 'import uuid; print(uuid.uuid4())')
	cg=$v2/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${uid//-/_}.slice/cri-containerd-$cid.scope
	mkdir -p "$cg" || { fail kube_labels "cannot create $cg"; return; }
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
	$PY "$HERE/../kube/fake_apiserver.py" --node kiln-e2e-node --token "$(cat "$TMP/kube-token")" \
		--scenario "$scen" >"$TMP/kubeapi.out" 2>&1 &
	local kube_pid=$!
	for _ in $(seq 50); do grep -q '^PORT' "$TMP/kubeapi.out" && break; sleep 0.1; done
	apiport=$(awk '/^PORT/ { print $2 }' "$TMP/kubeapi.out")
	start_receiver kube
	workload 8
	sh -c "echo \$\$ > '$cg/cgroup.procs' && exec '$WORKLOADS/cpu_ratio' 7" >/dev/null 2>&1 &
	start_agent kube --server "http://127.0.0.1:$RPORT" --interval 1 --node-name kiln-e2e-node \
		--kube-api "http://127.0.0.1:$apiport" --kube-token-file "$TMP/kube-token" \
		--pod-label team --include-namespace 'sh*'
	sleep 5
	filtered=$(curl -s "http://127.0.0.1:$MPORT/metrics" |
		sed -n 's/^kiln_samples_filtered_total{reason="excluded_namespace"} //p')
	stop_agent
	stop_receiver
	kill "$kube_pid" 2>/dev/null
	wait 2>/dev/null
	rmdir "$cg" "$(dirname "$cg")" 2>/dev/null
	if ! check kube 'len(D) >= 2 and all(s["labels_map"].get("namespace") == "shop" for x in D for s in x["series"])'; then
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

if [ "$(id -u)" != 0 ]; then
	echo "agent e2e tests need root"; exit 1
fi
if ! $PY -c 'import google.protobuf' 2>/dev/null; then
	echo "agent e2e tests need Debian's python3-protobuf (make deps)"; exit 1
fi

# all tests, or those named on the command line (e.g. test_push)
for t in ${@:-test_push test_ingest test_files test_down_then_up test_503_then_ok test_429 \
	test_400 test_slow_server test_queue_bound test_sigterm_flush test_auth \
	test_metrics_health test_symbol_cache_ttl test_config test_kube_labels}; do
	$t
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
