#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# What installs kiln, tested offline (no helm, cluster or Docker engine here):
# helm/kiln rendered by helmrender (text/template + sprig, as helm renders)
# for the default values and every ci/*-values.yaml and checked document by
# document; the values against values.schema.json; yamllint; the committed
# manifest against the chart; the image's packages against ldd; the systemd
# unit (systemd-analyze, and its ExecStart run for real with the unit's
# capabilities); make install and uninstall. Needs root for the agent run.
# Prints one line per test and "N passed, N failed, N skipped" last
# (tests/lib.sh).
set -u
. "$(dirname "$0")/../lib.sh"

KILN=$(realpath "${KILN:-build/kiln}")
HELMRENDER=$(realpath "${HELMRENDER:-build/helmrender}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/deploy
CHART=$ROOT/helm/kiln
PY=/usr/bin/python3     # Debian's, which has python3-yaml and python3-jsonschema
NS=observability
TMP=$(mktemp -d /tmp/kiln-deploy.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

"$KILN" agent --help >"$TMP/help.txt"

# render NAME KUBE_VERSION [VALUES]: $TMP/render-NAME.yaml, checked.
render() {
	local name=$1 kube=$2 values=${3:-} out=$TMP/render-$1.yaml
	if ! "$HELMRENDER" -namespace "$NS" -kube-version "$kube" ${values:+-f "$values"} \
		"$CHART" >"$out" 2>"$TMP/err"; then
		fail "render $name" "$(head -3 "$TMP/err")"; return
	fi
	if ! $PY "$HERE/check_render.py" --help-text "$TMP/help.txt" --chart "$CHART" \
		${values:+--values "$values"} --namespace "$NS" --kube-version "$kube" \
		"$out" >"$TMP/problems"; then
		fail "render $name" "$(head -5 "$TMP/problems" | paste -sd '|')"; return
	fi
	pass "render $name (kube $kube): $(sed -n 's/^kind: //p' "$out" | sort | paste -sd ' ')"
}

test_renders() {
	local f
	render default v1.30.0
	for f in "$CHART"/ci/*-values.yaml; do
		render "$(basename "$f" -values.yaml)" v1.30.0 "$f"
	done
	# Before 1.30 AppArmor is an annotation, not a securityContext field.
	render capabilities-1.29 v1.29.0 "$CHART/ci/capabilities-values.yaml"
}

# The default render and the plain manifest: no privileged container,
# seccomp RuntimeDefault, every capability dropped but the six kiln uses,
# no privilege escalation, a read-only root, and a NetworkPolicy that lets
# in only the metrics port and lets out only named ports. Fixed
# expectations, not the values: a default loosened in values.yaml fails.
# Privileged mode renders a privileged container (the checker can fail).
test_default_least_privilege() {
	local out
	out=$($PY "$HERE/check_least_privilege.py" "$ROOT/user/core/preflight.c" \
		"$TMP/render-default.yaml" "$ROOT/deploy/kubernetes/kiln.yaml")
	if [ -n "$out" ]; then
		fail least_privilege "$(head -5 <<<"$out" | paste -sd '|')"
	elif $PY "$HERE/check_least_privilege.py" "$ROOT/user/core/preflight.c" \
		"$TMP/render-privileged.yaml" >/dev/null; then
		fail least_privilege "the checker passed the privileged render"
	else
		pass "least privilege by default: no privileged container, seccomp RuntimeDefault, drop ALL + the 6 capabilities kiln uses, NetworkPolicy (render and manifest)"
	fi
}

# Values the templates refuse, with a message naming the value.
test_render_errors() {
	local out
	printf 'pyroscope:\n  url: ""\n' >"$TMP/no-url.yaml"
	printf 'pyroscope:\n  basicAuth: {existingSecret: a}\n  bearerToken: {existingSecret: b}\n' \
		>"$TMP/two-auths.yaml"
	out=$("$HELMRENDER" -f "$TMP/no-url.yaml" "$CHART" 2>&1 >/dev/null)
	if [ $? = 0 ] || ! grep -q 'pyroscope.url is required' <<<"$out"; then
		fail render_errors "an empty pyroscope.url rendered: $out"; return
	fi
	out=$("$HELMRENDER" -f "$TMP/two-auths.yaml" "$CHART" 2>&1 >/dev/null)
	if [ $? = 0 ] || ! grep -q 'set one of them, not both' <<<"$out"; then
		fail render_errors "basic auth and a bearer token rendered: $out"; return
	fi
	out=$("$HELMRENDER" -kube-version v1.20.0 "$CHART" 2>&1 >/dev/null)
	if [ $? = 0 ] || ! grep -q 'requires kubeVersion' <<<"$out"; then
		fail render_errors "Kubernetes 1.20 accepted: $out"; return
	fi
	# Credentials to a plain http:// server: refused, unless allowed; each
	# kind of credential, and a URL's user:password.
	for f in 'pyroscope: {tenantID: t1}' 'pyroscope: {bearerToken: {existingSecret: b}}' \
		'pyroscope: {basicAuth: {existingSecret: a}}' \
		'pyroscope: {url: "HTTP://u:p@pyroscope:4040"}' \
		'{pyroscope: {url: "https://pyroscope:4040", tenantID: t1}, otlp: {endpoint: "http://c:4318"}}'; do
		printf '%s\n' "$f" >"$TMP/cleartext.yaml"
		out=$("$HELMRENDER" -f "$TMP/cleartext.yaml" "$CHART" 2>&1 >/dev/null)
		if [ $? = 0 ] || ! grep -q 'set pyroscope.allowInsecureCredentials=true' <<<"$out" ||
			{ [ "${f#*otlp}" != "$f" ] && ! grep -q 'otlp.endpoint is plain http' <<<"$out"; }; then
			fail render_errors "credentials to http:// rendered ($f): $out"; return
		fi
	done
	printf 'pyroscope: {url: "https://u:p@pyroscope:4040", tenantID: t1, bearerToken: {existingSecret: b}}\n' \
		>"$TMP/tls.yaml"
	out=$("$HELMRENDER" -f "$TMP/tls.yaml" "$CHART" 2>&1 >/dev/null) ||
		{ fail render_errors "credentials to https:// refused: $out"; return; }
	pass "render errors: empty pyroscope.url, two auth methods, Kubernetes 1.20, 4 kinds of credentials to http:// without allowInsecureCredentials, and to an http:// otlp.endpoint"
}

# NOTES.txt, shown after helm install, names the release's objects.
test_notes() {
	local out
	out=$("$HELMRENDER" -notes -namespace "$NS" -f "$CHART/ci/ingest-values.yaml" "$CHART" 2>&1)
	if [ $? != 0 ] || ! grep -q "rollout status daemonset/kiln" <<<"$out" ||
		! grep -q "helm -n $NS test kiln" <<<"$out" ||
		! grep -q "to http://pyroscope.$NS.svc:4040" <<<"$out"; then
		fail notes "$(head -5 <<<"$out" | paste -sd '|')"
	else
		pass "NOTES.txt: rollout status, helm test, metrics to check, the server"
	fi
}

# The render checker sees each kind of breakage (a check that cannot fail
# checks nothing).
test_checker_fails() {
	local base=$TMP/render-basic-auth.yaml m missed=
	local mutations=(
		's/hostPID: true/hostPID: false/'
		's/--frequency=/--frequncy=/'
		's|path: /ready|path: /metrics|'
		's/containerPort: 4041/containerPort: 4042/'
		's/fieldPath: spec.nodeName/fieldPath: metadata.name/'
		's/mountPath: \/tmp/mountPath: \/scratch/'
		's/path: password/path: pass/'
		's/verbs: \[get, list, watch\]/verbs: ["*"]/'
		's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/'
		's/type: RuntimeDefault/type: Unconfined/'
		's/- SYSLOG/- SYS_ADMIN/'
		's/drop: \[ALL\]/drop: [NET_RAW]/'
		's/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/'
		's/port: health/port: metrics/'
		's/--health-addr=0.0.0.0:4042/--health-addr=127.0.0.1:4042/'
		's/- port: metrics/- port: health/'
		's/policyTypes: \[Ingress, Egress\]/policyTypes: [Ingress]/'
		's/- port: 443/- port: 80/'
		's/app.kubernetes.io\/name: prometheus/app.kubernetes.io\/name: grafana/'
		's/namespace: observability/namespace: default/'
	)
	[ -s "$base" ] || { fail checker "no basic-auth render to mutate"; return; }
	for m in "${mutations[@]}"; do
		sed "$m" "$base" >"$TMP/mutant.yaml"
		cmp -s "$base" "$TMP/mutant.yaml" && { missed="$missed [no change: $m]"; continue; }
		$PY "$HERE/check_render.py" --help-text "$TMP/help.txt" --chart "$CHART" \
			--values "$CHART/ci/basic-auth-values.yaml" --namespace "$NS" \
			"$TMP/mutant.yaml" >/dev/null && missed="$missed [$m]"
	done
	# privileged mode, the opt-in
	sed 's/privileged: true/privileged: false/' "$TMP/render-privileged.yaml" >"$TMP/mutant.yaml"
	$PY "$HERE/check_render.py" --help-text "$TMP/help.txt" --chart "$CHART" \
		--values "$CHART/ci/privileged-values.yaml" --namespace "$NS" \
		"$TMP/mutant.yaml" >/dev/null && missed="$missed [privileged: false]"
	# --allow-insecure-credentials: only where the values ask for it
	sed '/"--allow-insecure-credentials"/d' "$TMP/render-insecure-credentials.yaml" >"$TMP/mutant.yaml"
	$PY "$HERE/check_render.py" --help-text "$TMP/help.txt" --chart "$CHART" \
		--values "$CHART/ci/insecure-credentials-values.yaml" --namespace "$NS" \
		"$TMP/mutant.yaml" >/dev/null && missed="$missed [no --allow-insecure-credentials]"
	sed 's/^\( *\)- "--server-api=push"/&\n\1- "--allow-insecure-credentials"/' "$base" >"$TMP/mutant.yaml"
	if cmp -s "$base" "$TMP/mutant.yaml"; then
		missed="$missed [no change: --allow-insecure-credentials added]"
	else
		$PY "$HERE/check_render.py" --help-text "$TMP/help.txt" --chart "$CHART" \
			--values "$CHART/ci/basic-auth-values.yaml" --namespace "$NS" \
			"$TMP/mutant.yaml" >/dev/null && missed="$missed [--allow-insecure-credentials added]"
	fi
	if [ -n "$missed" ]; then
		fail checker "broken renders passed:$missed"
	else
		pass "checker: $((${#mutations[@]} + 3)) broken renders each rejected"
	fi
}

test_yamllint() {
	if yamllint --strict -c "$HERE/yamllint.yaml" "$CHART/Chart.yaml" "$CHART/values.yaml" \
		"$CHART"/ci/*.yaml "$ROOT/deploy/kubernetes/kiln.yaml" "$TMP"/render-*.yaml \
		>"$TMP/lint" 2>&1; then
		pass "yamllint: Chart.yaml, values, ci values, $(ls "$TMP"/render-*.yaml | wc -l) renders, the manifest"
	else
		fail yamllint "$(grep -m3 -E 'error|warning' "$TMP/lint" | paste -sd '|')"
	fi
}

test_schema() {
	local f out bad=
	for f in "" "$CHART"/ci/*-values.yaml; do
		out=$($PY "$HERE/check_values.py" schema "$CHART" $f) || bad="$bad ${f:-defaults}: $out"
	done
	[ -z "$bad" ] || { fail schema "valid values rejected:$bad"; return; }
	cat >"$TMP/bad-values.yaml" <<-'X'
	pyroscope:
	  url: pyroscope:4040
	  api: grpc
	agent:
	  frequency: 5000
	  tagz: {}
	securityContext:
	  mode: root
	X
	out=$($PY "$HERE/check_values.py" schema "$CHART" "$TMP/bad-values.yaml")
	if [ "$(grep -cE "^(pyroscope.url|pyroscope.api|agent.frequency|agent|securityContext.mode):" <<<"$out")" != 5 ]; then
		fail schema "bad values not all rejected: $out"; return
	fi
	pass "values.schema.json: defaults and $(ls "$CHART"/ci/*-values.yaml | wc -l) ci files valid, 5 bad values rejected"
}

test_values_documented() {
	local out
	out=$($PY "$HERE/check_values.py" comments "$CHART"; $PY "$HERE/check_values.py" readme "$CHART" "$CHART/README.md")
	if [ -n "$out" ]; then
		fail values_documented "$(head -5 <<<"$out" | paste -sd '|')"
	elif [ "$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' "$CHART/Chart.yaml")" != "$(cat "$ROOT/VERSION")" ]; then
		fail values_documented "Chart.yaml's appVersion is not VERSION ($(cat "$ROOT/VERSION"))"
	else
		pass "values: each one commented in values.yaml and in helm/kiln/README.md's table; appVersion = VERSION"
	fi
}

test_manifest() {
	if ! make -s -C "$ROOT" manifests OUT="$(dirname "$HELMRENDER")" MANIFEST="$TMP/kiln.yaml" \
		>"$TMP/err" 2>&1; then
		fail manifest "make manifests: $(head -3 "$TMP/err")"
	elif ! diff -u "$ROOT/deploy/kubernetes/kiln.yaml" "$TMP/kiln.yaml" >"$TMP/diff"; then
		fail manifest "deploy/kubernetes/kiln.yaml differs from the chart (make manifests): $(sed -n 3,8p "$TMP/diff" | paste -sd '|')"
	else
		$PY "$HERE/check_render.py" --help-text "$TMP/help.txt" --chart "$CHART" --namespace kiln \
			--skip-tests "$ROOT/deploy/kubernetes/kiln.yaml" >"$TMP/problems" ||
			{ fail manifest "$(head -3 "$TMP/problems" | paste -sd '|')"; return; }
		pass "deploy/kubernetes/kiln.yaml is the default render (namespace kiln, no test hook)"
	fi
}

# Every library ldd resolves for build/kiln comes from a package the image's
# runtime stage installs: the ones kiln links directly are listed there by
# name, the rest are their dependencies. So are those kiln loads at their
# first call (user/core/lazy_stubs.c's sonames).
test_image_libraries() {
	local df=$ROOT/deploy/docker/Dockerfile runtime listed closure needed lib path pkg missing=
	runtime=$(awk '/^FROM /{ s = "" } { s = s $0 "\n" } END { printf "%s", s }' "$df")
	listed=$(awk '/apt-get install/{ on = 1; next } on && /^ +[a-z0-9][a-z0-9.+-]* \\$/{ print $1; next } { on = 0 }' \
		<<<"$runtime" | sort -u)
	grep -qx 'FROM debian:bookworm-slim AS build' "$df" && grep -q 'make -j.* all' "$df" &&
		[ "$(grep -c '^FROM debian:bookworm-slim' "$df")" = 2 ] &&
		grep -qx 'ENTRYPOINT \["kiln", "agent"\]' <<<"$runtime" ||
		{ fail image "want two bookworm-slim stages, make in the first, ENTRYPOINT [\"kiln\", \"agent\"]"; return; }
	[ -n "$listed" ] || { fail image "no packages found in the runtime stage"; return; }
	closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
		--no-breaks --no-replaces --no-enhances $listed 2>/dev/null | grep -v '^[ <]' | sort -u)
	ldd "$KILN" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' >"$TMP/libs"
	needed=$(readelf -d "$KILN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	for lib in $(sed -n 's/^LIBRARY([a-z]*, "\([^"]*\)".*/\1/p' "$ROOT/user/core/lazy_stubs.c"); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|AArch64/ { print $NF; exit }')
		echo "$lib ${path:-/nonexistent/$lib}" >>"$TMP/libs"
		needed="$needed"$'\n'"$lib"
	done
	while read -r lib path; do
		# merged /usr: dpkg knows each file under one of its two names
		pkg=$(dpkg -S "$path" "/usr$path" "${path#/usr}" 2>/dev/null | head -1 | cut -d: -f1)
		if [ -z "$pkg" ]; then
			missing="$missing $lib(no package)"
		elif grep -qxF "$lib" <<<"$needed"; then
			grep -qx "$pkg" <<<"$listed" || missing="$missing $lib($pkg not listed)"
		else
			grep -qx "$pkg" <<<"$closure" || missing="$missing $lib($pkg not installed)"
		fi
	done <"$TMP/libs"
	if [ -n "$missing" ]; then
		fail image "the runtime stage lacks:$missing"
	else
		pass "image: $(wc -l <"$TMP/libs") libraries from $(wc -l <<<"$listed") listed packages and their dependencies"
	fi
}

# The unit and the default file name only what exists.
test_unit_files() {
	local unit=$ROOT/deploy/systemd/kiln.service def=$ROOT/deploy/systemd/kiln.default v bad=
	grep -qx 'ExecStart=/usr/local/bin/kiln agent' "$unit" &&
		grep -qx 'EnvironmentFile=-/etc/default/kiln' "$unit" &&
		grep -qx 'StateDirectory=kiln' "$unit" && grep -qx 'WorkingDirectory=/var/lib/kiln' "$unit" ||
		{ fail unit_files "ExecStart, EnvironmentFile, StateDirectory or WorkingDirectory changed"; return; }
	for v in $(grep -oE '^#?KILN_[A-Z_]+=' "$def" | tr -d '#='); do
		grep -qE "env $v( |$)" "$TMP/help.txt" || bad="$bad $v"
	done
	[ -z "$bad" ] || { fail unit_files "kiln.default sets unknown variables:$bad"; return; }
	# every setting has a comment: a commented-out setting follows a comment
	# or another setting
	bad=$(awk '/^#?KILN_/ && prev !~ /^#/ { print NR } { prev = $0 }' "$def")
	[ -z "$bad" ] || { fail unit_files "kiln.default lines $bad have no comment"; return; }
	pass "unit files: ExecStart, EnvironmentFile, state directory; $(grep -c '^#KILN_' "$def") settings in kiln.default, all real"
}

# make install DESTDIR lays down exactly these files; uninstall removes them
# and keeps an edited /etc/default/kiln.
test_install() {
	local d=$TMP/destdir want got
	want=$(printf '%s\n' etc/default/kiln usr/bin/kiln usr/lib/systemd/system/kiln.service \
		usr/share/man/man8/kiln.8)
	make -s -C "$ROOT" install OUT="$(dirname "$KILN")" DESTDIR="$d" PREFIX=/usr >"$TMP/err" 2>&1 ||
		{ fail install "make install: $(tail -3 "$TMP/err")"; return; }
	got=$(cd "$d" && find . -type f | sed 's|^\./||' | sort)
	[ "$got" = "$want" ] || { fail install "installed: $(echo $got)"; return; }
	grep -qx 'ExecStart=/usr/bin/kiln agent' "$d/usr/lib/systemd/system/kiln.service" ||
		{ fail install "the installed unit does not run /usr/bin/kiln"; return; }
	cmp -s "$KILN" "$d/usr/bin/kiln" && [ -x "$d/usr/bin/kiln" ] ||
		{ fail install "usr/bin/kiln is not build/kiln"; return; }
	if ! grep -q '^\.SH OPTIONS' "$d/usr/share/man/man8/kiln.8" ||
		! grep -q 'basic\\-auth\\-password\\-file' "$d/usr/share/man/man8/kiln.8"; then
		fail install "kiln.8 lacks the agent's options"; return
	fi
	if man --warnings -l "$d/usr/share/man/man8/kiln.8" 2>&1 >/dev/null | grep -q .; then
		fail install "man warns about kiln.8: $(man --warnings -l "$d/usr/share/man/man8/kiln.8" 2>&1 >/dev/null | head -2)"; return
	fi
	echo "KILN_SERVER=http://edited:4040" >>"$d/etc/default/kiln"
	make -s -C "$ROOT" install OUT="$(dirname "$KILN")" DESTDIR="$d" PREFIX=/usr >/dev/null 2>&1
	grep -q edited "$d/etc/default/kiln" || { fail install "reinstall overwrote /etc/default/kiln"; return; }
	make -s -C "$ROOT" uninstall DESTDIR="$d" PREFIX=/usr >"$TMP/out" 2>&1
	got=$(cd "$d" && find . -type f | sed 's|^\./||')
	[ "$got" = etc/default/kiln ] && grep -q kept "$TMP/out" ||
		{ fail install "uninstall left: $(echo $got)"; return; }
	make -s -C "$ROOT" install OUT="$(dirname "$KILN")" DESTDIR="$d.2" PREFIX=/usr >/dev/null 2>&1 &&
		make -s -C "$ROOT" uninstall DESTDIR="$d.2" PREFIX=/usr >/dev/null 2>&1
	got=$(cd "$d.2" && find . -type f)
	[ -z "$got" ] || { fail install "uninstall of a fresh install left: $(echo $got)"; return; }
	pass "make install: exactly bin, man8, unit, /etc/default/kiln; reinstall keeps an edited default; uninstall reverses it"
}

# The installed unit as systemd would run it, without systemd as PID 1:
# systemd-analyze verify, then its ExecStart in its working directory with
# its EnvironmentFile, under what unit_sandbox.sh applies of the unit
# (ProtectSystem=strict but the state directory, PrivateDevices,
# ProtectKernelModules, ProtectControlGroups, UMask, NoNewPrivileges,
# CapabilityBoundingSet, SystemCallFilter with RestrictAddressFamilies),
# writing profiles (no server) of a busy shell loop until the first
# appears. A probe in the same sandbox shows each part is in force.
test_unit_runs() {
	local p unit state exec envs pid n busy probe bad
	p=$TMP/prefix
	if ! command -v systemd-analyze >/dev/null; then
		fail unit_runs "systemd-analyze is not installed (make test-deps installs systemd)"; return
	fi
	if ! $PY -c 'import seccomp' 2>/dev/null; then
		fail unit_runs "no python3-seccomp for $PY (make deps)"; return
	fi
	make -s -C "$ROOT" install OUT="$(dirname "$KILN")" DESTDIR="$p" PREFIX="$p" >/dev/null 2>&1 ||
		{ fail unit_runs "make install PREFIX=$p failed"; return; }
	unit=$p$p/lib/systemd/system/kiln.service
	# systemd-analyze wants the binary where ExecStart says
	mkdir -p "$p/bin" && cp "$p$p/bin/kiln" "$p/bin/kiln"
	if ! systemd-analyze verify --man=no "$unit" >"$TMP/verify" 2>&1 || [ -s "$TMP/verify" ]; then
		fail unit_runs "systemd-analyze verify: $(head -3 "$TMP/verify" | paste -sd '|')"; return
	fi
	exec=$(sed -n 's/^ExecStart=//p' "$unit")
	state=$TMP/state$(sed -n 's/^WorkingDirectory=//p' "$unit")
	mkdir -p "$state"
	# the sandbox holds: /usr read-only, the state directory writable, the
	# umask, a call outside the filter (ioprio_set, @resources) refused
	probe=$("$HERE/unit_sandbox.sh" "$unit" "$state" /bin/sh -c 'touch /usr/.kiln-probe 2>/dev/null && echo usr-writable;
		touch probe && echo state-writable; umask; ionice -c 3 -p $$ >/dev/null 2>&1 || echo ioprio-refused;
		ls /dev | paste -sd " "' 2>&1)
	rm -f "$state/probe" /usr/.kiln-probe
	if [ "$probe" != "$(printf 'state-writable\n0077\nioprio-refused\nfull null random tty urandom zero')" ]; then
		fail unit_runs "the sandbox does not hold: $(paste -sd '|' <<<"$probe")"; return
	fi
	# EnvironmentFile: the installed default (every line commented: the
	# defaults), then a 1 s interval so that the run is short.
	envs=$(grep -E '^KILN_[A-Z_]+=' "$p/etc/default/kiln")
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin $envs KILN_INTERVAL=1 KILN_METRICS_ADDR=off \
		"$HERE/unit_sandbox.sh" "$unit" "$state" $exec 2>"$TMP/unit.log" &
	pid=$!
	# something to sample, even on an idle host; stop once an interval's
	# profile and page are written
	timeout 120 sh -c 'while :; do :; done' &
	busy=$!
	wait_until 90 sh -c "ls '$state/profiles' 2>/dev/null | grep -q '\.pb\.gz\$' &&
		[ -s '$state/profiles/latest.html' ]"
	kill $busy 2>/dev/null
	kill -TERM $pid
	wait $pid || { fail unit_runs "the agent exited $?: $(grep -m2 level=error "$TMP/unit.log")"; return; }
	n=$(ls "$state/profiles" 2>/dev/null | grep -c '\.pb\.gz$')
	bad=$(find "$state/profiles" -type f -perm /077 | head -3)
	if [ "$n" -lt 1 ] || [ ! -s "$state/profiles/latest.html" ]; then
		fail unit_runs "no profiles in $state/profiles: $(tail -2 "$TMP/unit.log" | paste -sd '|')"
	elif grep 'level=\(warn\|error\)' "$TMP/unit.log" | grep -v "msg=\"file '" | grep -qv '(pid [0-9]*)'; then
		# (a refused file of some process on the host, "file '...':
		# refused (...)", or an interpreter it runs that kiln cannot walk,
		# "...(pid N): ...", is that process's doing, logged by design)
		fail unit_runs "warnings: $(grep 'level=\(warn\|error\)' "$TMP/unit.log" | grep -v "msg=\"file '" | grep -v '(pid [0-9]*)' | head -2 | paste -sd '|')"
	elif [ -n "$bad" ]; then
		fail unit_runs "UMask=0077 but group or others may read: $(echo $bad)"
	else
		pass "unit: verified; ExecStart under its file system, device, capability and system call limits wrote $n profiles (0600) to WorkingDirectory/profiles"
	fi
}

run_tests test_renders test_default_least_privilege test_render_errors test_notes test_checker_fails test_yamllint test_schema \
	test_values_documented test_manifest test_image_libraries test_unit_files test_install
if [ "$(id -u)" -eq 0 ]; then
	run_tests test_unit_runs
else
	skip unit_runs "loading BPF needs root"
fi
finish 23
