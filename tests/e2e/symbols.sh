#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# End-to-end tests of where names come from beyond a binary's own files:
# debug files from a debuginfod server (a real `debuginfod -F` on
# 127.0.0.1, and a server that answers late, tests/e2e/slow_debuginfod.py),
# and Rust names of both manglings (Debian's rustc and cargo, offline).
# Needs root. Prints one line per test and "N passed, N failed, N skipped"
# last (tests/lib.sh). Tests wait for what they check, under a hang guard.
set -u

KILN=${KILN:-build/kiln}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib.sh"
TMP=$(mktemp -d /tmp/kiln-symbols-e2e.XXXXXX)
export HOME=$TMP
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH
. "$HERE/agent_lib.sh"
# Debian's toolchain, not one a user installed ahead of it on the PATH.
RUSTC=${RUSTC:-/usr/bin/rustc}
CARGO=${CARGO:-/usr/bin/cargo}
SERVER_PIDS=

cleanup() {
	[ -n "$AGENT_PID" ] && kill -9 "$AGENT_PID" 2>/dev/null
	[ -n "$SERVER_PIDS" ] && kill $SERVER_PIDS 2>/dev/null && wait $SERVER_PIDS 2>/dev/null
	stop_workloads
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# The stripped program: built with -g, its debug file split off into
# $TMP/srv (served by the debuginfod servers below, and nowhere else),
# then stripped of every symbol; no debuglink, no .gnu_debugdata.
# Sets TARGET and BUILD_ID.
build_target() {
	local full=$TMP/stripped_full
	TARGET=$TMP/stripped_target
	mkdir -p "$TMP/srv"
	gcc -O1 -g -fno-omit-frame-pointer -fno-inline -Wl,--build-id=sha1 \
		-o "$full" "$HERE/stripped_target.c" &&
		BUILD_ID=$(readelf -n "$full" | awk '/Build ID:/ { print $3 }') &&
		objcopy --only-keep-debug "$full" "$TMP/srv/$BUILD_ID.debug" &&
		objcopy --strip-all "$full" "$TARGET" && rm -f "$full" &&
		! readelf -S "$TARGET" | grep -qE '\.symtab|\.gnu_debuglink|\.gnu_debugdata' &&
		[ -n "$BUILD_ID" ]
}

# debuginfod -F over $TMP/srv on a free port (it listens on every address;
# only 127.0.0.1 is asked), up once it serves the file. Sets DPORT.
start_debuginfod() {
	DPORT=$(free_port)
	debuginfod -F -p "$DPORT" -d "$TMP/debuginfod.sqlite" -t 0 -g 0 "$TMP/srv" \
		>"$TMP/debuginfod.log" 2>&1 &
	SERVER_PIDS="$SERVER_PIDS $!"
	wait_until 60 answers_200 "$DPORT" "/buildid/$BUILD_ID/debuginfo"
}

# stripped_share FOLDED: "named total" of the samples of stripped_target:
# those whose stack goes main;stripped_outer;stripped_spin, and all.
stripped_share() {
	awk '/^stripped_target;/ { n = $NF; t += n; if ($0 ~ /;main;stripped_outer;stripped_spin [0-9]+$/) k += n }
		END { print k + 0, t + 0 }' "$1"
}

# kiln record names the stripped program's functions with the debug file
# only the local debuginfod server has, and counts the lookup; without
# DEBUGINFOD_URLS the same program stays file+0x.
test_debuginfod_record() {
	local named total plain=$TMP/plain.folded out=$TMP/dbgi.folded stats=$TMP/dbgi.json
	"$KILN" record -q -o "$plain" -- "$TARGET" 2 2>"$TMP/plain.err" ||
		{ fail debuginfod_record "kiln record failed: $(tail -1 "$TMP/plain.err")"; return; }
	read -r named total <<<"$(stripped_share "$plain")"
	if [ "$named" != 0 ] || ! grep -q 'stripped_target+0x' "$plain"; then
		fail debuginfod_record "the debug file was found without debuginfod: $(head -2 "$plain")"; return
	fi
	DEBUGINFOD_URLS=http://127.0.0.1:$DPORT DEBUGINFOD_CACHE_PATH=$TMP/cache-record \
		"$KILN" record -o "$out" --stats "$stats" -- "$TARGET" 3 2>"$TMP/dbgi.err" ||
		{ fail debuginfod_record "kiln record failed: $(tail -1 "$TMP/dbgi.err")"; return; }
	read -r named total <<<"$(stripped_share "$out")"
	if [ "$total" -lt 100 ] || [ $((named * 100)) -lt $((total * 95)) ]; then
		fail debuginfod_record "$named of $total samples under main;stripped_outer;stripped_spin: $(sort -t' ' -k2 -nr "$out" | head -2 | tr '\n' '|')"
	elif [ "$(json "$stats" debuginfod lookups)" -lt 1 ] || [ "$(json "$stats" debuginfod found)" != 1 ] ||
		[ "$(json "$stats" debuginfod reloads)" -lt 1 ]; then
		fail debuginfod_record "counters: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["debuginfod"])' "$stats")"
	elif [ "$(json "$stats" drained)" != "$(($(json "$stats" profiled) + $(json "$stats" filtered) +
		$(json "$stats" label_sets_full) + $(json "$stats" add_failures)))" ]; then
		fail debuginfod_record "held samples lost: drained $(json "$stats" drained), profiled $(json "$stats" profiled)"
	elif ! grep -q 'debug files fetched (debuginfod) 1' "$TMP/dbgi.err"; then
		fail debuginfod_record "the summary does not say: $(grep 'also' "$TMP/dbgi.err")"
	else
		pass "debuginfod_record: $named of $total samples named stripped_outer;stripped_spin from the server's debug file ($(json "$stats" debuginfod samples_waited) waited for it, every drained sample profiled); 0 without DEBUGINFOD_URLS"
	fi
}

# The agent: the interval that first meets the stripped program shows its
# addresses (the lookup starts there, in the background), a later one its
# names; /metrics counts the lookup.
test_debuginfod_agent() {
	local dir=$TMP/agent-out first= later= f named total
	mkdir -p "$dir"
	start_workload "$TARGET" 60
	DEBUGINFOD_URLS=http://127.0.0.1:$DPORT DEBUGINFOD_CACHE_PATH=$TMP/cache-agent \
		start_agent dbgi --output-dir "$dir" --interval 1
	wait_metric '^kiln_debuginfod_results_total\{result="found"\} 1$' &&
		wait_until "$GUARD" sh -c "ls '$dir' | grep -q -- '-all\.folded\$'"
	# the interval files, oldest first, until one is named
	wait_until "$GUARD" sh -c "grep -l ';main;stripped_outer;stripped_spin ' '$dir'/*-all.folded >/dev/null 2>&1"
	for f in $(ls "$dir" | grep -- '-all\.folded$' | sort -n); do
		read -r named total <<<"$(stripped_share "$dir/$f")"
		[ "$total" -gt 0 ] || continue
		[ -n "$first" ] || first="$f $named $total"
		[ "$named" -gt 0 ] && { later="$f $named $total"; break; }
	done
	local found reloads
	found=$(metric '^kiln_debuginfod_results_total\{result="found"\} ')
	reloads=$(metric '^kiln_debuginfod_tables_reloaded_total ')
	stop_agent
	local problem
	problem=$(exit_problem dbgi)
	set -- $first
	if [ -n "$problem" ]; then
		fail debuginfod_agent "$problem"
	elif [ -z "$first" ] || [ "$2" != 0 ]; then
		fail debuginfod_agent "the first interval with the program ($first) is named already: the lookup ran on the drain path?"
	elif [ -z "$later" ]; then
		fail debuginfod_agent "no interval names stripped_outer;stripped_spin"
	elif [ "$found" != 1 ] || [ "${reloads:-0}" -lt 1 ]; then
		fail debuginfod_agent "/metrics: debug files found $found, tables reloaded $reloads"
	else
		pass "debuginfod_agent: first interval $1 unnamed ($3 samples), $(set -- $later; echo "$1: $2 of $3") named from the debug file; 1 found, $reloads table reloaded"
	fi
}

# A server that answers the stripped program's build id after 30 s (and
# every other build id the host's binaries ask for at once, 404): while
# the agent's lookup hangs on it, the agent drains on (its own drain
# counter and drain times say so), then gives the lookup up at
# --debuginfod-timeout and counts it; record waits --debuginfod-wait for
# it and says so.
test_debuginfod_slow() {
	local sport d0 d1 pending max avg base_max base_avg out=$TMP/slow.folded
	# the agent's drains without any lookup: the baseline
	start_workload "$TARGET" 120
	start_agent base --interval 1 --output-dir "$TMP/base-out"
	wait_metric '^kiln_drains_total ([6-9]|[1-9][0-9]+)$'
	base_max=$(metric '^kiln_drain_duration_seconds_max ')
	base_avg=$(python3 -c 'import sys; print("%.6f" % (float(sys.argv[1]) / float(sys.argv[2])))' \
		"$(metric '^kiln_drain_duration_seconds_total ')" "$(metric '^kiln_drains_total ')")
	stop_agent

	$PY "$HERE/slow_debuginfod.py" --port-file "$TMP/slow.port" --delay 30 --slow-id "$BUILD_ID" \
		--log "$TMP/slow.log" >"$TMP/slow.out" 2>&1 &
	SERVER_PIDS="$SERVER_PIDS $!"
	wait_until 10 test -s "$TMP/slow.port" || { fail debuginfod_slow "the slow server did not start"; return; }
	sport=$(cat "$TMP/slow.port")
	DEBUGINFOD_URLS=http://127.0.0.1:$sport DEBUGINFOD_CACHE_PATH=$TMP/cache-slow \
		start_agent slow --interval 1 --output-dir "$TMP/slow-out" --debuginfod-timeout 8s
	wait_until "$GUARD" grep -qs "/buildid/$BUILD_ID/debuginfo started" "$TMP/slow.log"
	d0=$(metric '^kiln_drains_total ')
	wait_until "$GUARD" sh -c "[ \$(curl -s http://127.0.0.1:$MPORT/metrics | awk '/^kiln_drains_total / { print \$2 }') -ge $((d0 + 3)) ]"
	d1=$(metric '^kiln_drains_total ')
	pending=$(metric '^kiln_debuginfod_pending ')
	# still unanswered: the lookup hung all along
	grep -q "/buildid/$BUILD_ID/debuginfo [0-9]" "$TMP/slow.log" && pending=answered
	max=$(metric '^kiln_drain_duration_seconds_max ')
	avg=$(python3 -c 'import sys; print("%.6f" % (float(sys.argv[1]) / float(sys.argv[2])))' \
		"$(metric '^kiln_drain_duration_seconds_total ')" "$d1")
	wait_metric '^kiln_debuginfod_results_total\{result="timeout"\} 1$'
	wait_metric '^kiln_debuginfod_pending 0$'
	local timeouts
	timeouts=$(metric '^kiln_debuginfod_results_total\{result="timeout"\} ')
	stop_agent
	local problem
	problem=$(exit_problem slow)
	if [ -n "$problem" ]; then
		fail debuginfod_slow "$problem"; return
	elif [ "$pending" = answered ] || [ "${pending:-0}" -lt 1 ] || [ -z "$d0" ] || [ "$d1" -lt $((d0 + 3)) ]; then
		fail debuginfod_slow "drains $d0 -> $d1 while the lookup hung; lookups pending: $pending"; return
	elif ! python3 -c 'import sys; m, a, bm, ba = map(float, sys.argv[1:])
# the drain path never waited for the server: its longest drain is far
# from the 8 s a lookup took, and the average drain is the baseline'"'"'s
sys.exit(0 if m < 2.0 and a <= max(3 * ba, ba + 0.05) else 1)' "$max" "$avg" "$base_max" "$base_avg"; then
		fail debuginfod_slow "drain times with a lookup hanging: max ${max}s avg ${avg}s; without: max ${base_max}s avg ${base_avg}s"; return
	elif [ "$timeouts" != 1 ]; then
		fail debuginfod_slow "timeouts counted: $timeouts"; return
	fi
	# record: waits --debuginfod-wait, says so, writes the profile anyway
	DEBUGINFOD_URLS=http://127.0.0.1:$sport DEBUGINFOD_CACHE_PATH=$TMP/cache-slow-record \
		"$KILN" record -o "$out" --debuginfod-wait 1s -- "$TARGET" 2 2>"$TMP/slowrec.err"
	if [ $? != 0 ] || [ ! -s "$out" ]; then
		fail debuginfod_slow "kiln record failed: $(tail -1 "$TMP/slowrec.err")"
	elif ! grep -q 'waiting up to 1.0 s for 1 debug file from debuginfod' "$TMP/slowrec.err" ||
		! grep -q 'debuginfod: 0 of 1 lookups ended in .*; the others were given up' "$TMP/slowrec.err"; then
		fail debuginfod_slow "record does not say it waited: $(grep debuginfod "$TMP/slowrec.err" | head -3)"
	else
		pass "debuginfod_slow: $((d1 - d0)) drains while the lookup hung, drain max ${max}s avg ${avg}s (without a lookup: ${base_max}s, ${base_avg}s); timed out at 8 s and counted; record waited 1 s and said so"
	fi
}

# rustnames ($ROOT/tests/fixtures/rustnames) built by cargo --release
# --offline with one mangling; prints the binary's path.
build_rust() {
	local mangling=$1 flags=
	# Debian 12's rustc (1.63) mangles legacy by default and takes
	# -C symbol-mangling-version=legacy only with -Z unstable-options.
	if [ "$mangling" = v0 ] || "$RUSTC" -C symbol-mangling-version=legacy --print crate-name - \
		</dev/null >/dev/null 2>&1; then
		flags="-C symbol-mangling-version=$mangling"
	fi
	cp -r "$ROOT/tests/fixtures/rustnames" "$TMP/rust-$mangling" &&
		(cd "$TMP/rust-$mangling" && CARGO_HOME=$TMP/cargo RUSTC=$RUSTC RUSTFLAGS="$flags" \
			"$CARGO" build --release --offline -q) >"$TMP/rust-$mangling.log" 2>&1 &&
		echo "$TMP/rust-$mangling/target/release/rustnames"
}

# kiln record names a Rust program crate::module::function, without the
# legacy ::h<hash>, under both manglings (checked in the binary: nm).
test_rust_names() {
	local m bin out spin step bad kind results=
	for m in legacy v0; do
		bin=$(build_rust $m) || { fail rust_names "cargo build ($m) failed: $(tail -3 "$TMP/rust-$m.log")"; return; }
		case $m in
		legacy) kind='_ZN9rustnames6engine3hot4spin17h[0-9a-f]{16}E' ;;
		v0) kind='_RNvNtNtCs[0-9A-Za-z_]+9rustnames6engine3hot4spin' ;;
		esac
		nm "$bin" | grep -qE " $kind\$" ||
			{ fail rust_names "$m: the binary is not $m-mangled: $(nm "$bin" | grep spin)"; return; }
		out=$TMP/rust-$m.folded
		"$KILN" record -q -o "$out" -- "$bin" 3 2>"$TMP/rust-$m.err" ||
			{ fail rust_names "$m: kiln record failed: $(tail -1 "$TMP/rust-$m.err")"; return; }
		spin=$(folded_count "$out" '^rustnames;.*;rustnames::main;rustnames::engine::hot::spin [0-9]+$')
		step=$(folded_count "$out" '^rustnames;.*;rustnames::main;<rustnames::engine::Mixer as rustnames::engine::Step>::step [0-9]+$')
		# no frame mangled, no hash left
		bad=$(grep '^rustnames;' "$out" | grep -cE '(^|;)(_ZN|_R[A-Z])|::h[0-9a-f]{16}')
		if [ "$spin" -lt 20 ] || [ "$step" -lt 20 ] || [ "$bad" != 0 ]; then
			fail rust_names "$m: spin $spin, step $step samples, $bad lines with mangled names or hashes: $(sort -t' ' -k2 -nr "$out" | head -2 | tr '\n' '|')"
			return
		fi
		results="$results $m: spin $spin, step $step;"
	done
	pass "rust_names: rustnames::engine::hot::spin and <rustnames::engine::Mixer as rustnames::engine::Step>::step, no hash:$results"
}

TESTS="test_debuginfod_record test_debuginfod_agent test_debuginfod_slow test_rust_names"
[ $# = 0 ] || TESTS="$*"
if [ "$(id -u)" != 0 ]; then
	skip_all "loading BPF programs needs root (sudo make test)" $TESTS
elif ! build_target; then
	fail setup "cannot build and strip tests/e2e/stripped_target.c (gcc, binutils)"
elif ! command -v debuginfod >/dev/null || ! start_debuginfod; then
	fail setup "debuginfod (Debian's debuginfod, make test-deps) does not serve $TMP/srv: $(tail -3 "$TMP/debuginfod.log" 2>/dev/null)"
else
	for t in $TESTS; do
		run_tests "$t"
		stop_workloads
	done
fi
finish "$(wc -w <<<"$TESTS")"
