#!/usr/bin/env bats
# nodeforge serve takes a request's address from X-Real-IP only when its
# TCP peer is a proxy listed with --trusted-proxy: without one, a process
# on the boot server cannot claim a node's secrets or report its verdict
# by naming the node's address in a header.
load enroll_helper

setup() {
	nf_setup
	enroll_fixture db-pass
	nf pxe --out boot -i racks.yaml --images "$FIXTURES/boot/out" >/dev/null
	nf enroll open gpu-01 --for 15m >/dev/null
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

# serve_with ARGS...: serve with enrollment for racks.yaml (cp-01 at
# 127.0.0.1, gpu-01 at 127.0.0.2), verdicts under vstate; URL in $U
serve_with() {
	nf_serve_bg --tree boot --state vstate -i racks.yaml "$@"
}

claim() {
	printf '{"name":"%s","mac":"%s","pubkey":"%s","nonce":"%s"}' "$1" "$2" \
		"$(openssl rand -base64 32)" "$(openssl rand -base64 16)"
}

# post PATH BODY [curl args]: prints the HTTP status, the body in resp
post() {
	local path=$1 body=$2
	shift 2
	curl -s -o resp -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "$body" "$@" "$U$path"
}

# expect CODE PATH BODY [curl args]: the POST answers CODE
expect() {
	local want=$1 got
	shift
	got=$(post "$@")
	[ "$got" = "$want" ] || { echo "POST $1: HTTP $got, not $want: $(cat resp)"; false; }
}

@test "without --trusted-proxy a forged X-Real-IP claims no secret" {
	serve_with
	# from 127.0.0.1, naming gpu-01's address 127.0.0.2
	expect 403 /api/v1/enroll "$(claim gpu-01 52:54:00:00:00:02)" -H 'X-Real-IP: 127.0.0.2'
	grep -q '"reason": *"wrong-address"' resp
	grep -q 'not from its inventory address 127.0.0.2' resp
	! grep -q sealed resp
	run nf enroll list --json
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert not d.get("claims"), d
assert [r for r in d["refusals"] if r.get("reason") == "wrong-address"], d'
	# gpu-01 from its own address is served as before
	expect 200 /api/v1/enroll "$(claim gpu-01 52:54:00:00:00:02)" --interface 127.0.0.2
	grep -q '"sealed"' resp
}

@test "without --trusted-proxy a forged X-Real-IP reports no verdict" {
	serve_with
	expect 403 /api/v1/nodes/gpu-01/verdict '{"result":"pass"}' -H 'X-Real-IP: 127.0.0.2'
	grep -q "verdict for 'gpu-01' from 127.0.0.1, not its inventory address 127.0.0.2" resp
	[ ! -e vstate/nodes/gpu-01.json ]
	[ "$(jq -r '.nodes[] | select(.name == "gpu-01") | .state' <(curl -s "$U/api/v1/nodes"))" = "not seen" ]
	expect 404 /api/v1/nodes/gpu-99/verdict '{"result":"pass"}' -H 'X-Real-IP: 127.0.0.2'
	[ ! -e vstate/nodes/gpu-99.json ]
	# gpu-01 from its own address is served as before
	expect 200 /api/v1/nodes/gpu-01/verdict '{"result":"fail"}' --interface 127.0.0.2
	[ "$(jq -r .state vstate/nodes/gpu-01.json)" = failed ]
}

# node_json NAME: the server's view of a node
node_json() { curl -sf "$U/api/v1/nodes" | jq -c ".nodes[] | select(.name == \"$1\")"; }

@test "only the node's own address marks it booting, and its last verdict stays until the next" {
	# the proxy in front of serve (127.0.0.1) names each client's address
	serve_with --trusted-proxy 127.0.0.1
	expect 200 /api/v1/nodes/gpu-01/verdict \
		'{"result":"fail","root_causes":[{"id":"gpu.count","message":"expected 8, seen 0"}]}' \
		-H 'X-Real-IP: 127.0.0.2'
	vat=$(node_json gpu-01 | jq -r .verdict_at)
	# another address fetches gpu-01's boot script: served, nothing changes
	curl -sf -H 'X-Real-IP: 10.9.9.9' "$U/ipxe/mac/52-54-00-00-00-02.ipxe" | grep -q '^kernel '
	[ "$(node_json gpu-01 | jq -r .state)" = failed ]
	# nor from a peer naming gpu-01's address in a header nobody vouches for
	curl -sf --interface 127.0.0.3 -H 'X-Real-IP: 127.0.0.2' \
		"$U/ipxe/mac/52-54-00-00-00-02.ipxe" >/dev/null
	[ "$(node_json gpu-01 | jq -r .state)" = failed ]
	# gpu-01 itself: booting, with its last verdict, its time and cause
	sleep 1
	curl -sf -H 'X-Real-IP: 127.0.0.2' "$U/ipxe/mac/52-54-00-00-00-02.ipxe" >/dev/null
	node_json gpu-01 > n.json
	[ "$(jq -r .state n.json)" = booting ]
	[ "$(jq -r .result n.json)" = fail ]
	[ "$(jq -r .verdict_at n.json)" = "$vat" ]
	[ "$(jq -r .booted_at n.json)" != "$vat" ]
	[ "$(jq -r .root_cause n.json)" = "gpu.count: expected 8, seen 0" ]
	run nf status --server "$U" gpu-01,cp-01
	[[ "$output" =~ gpu-01\ +booting\ .*"last verdict: fail at $vat: gpu.count: expected 8, seen 0" ]] ||
		{ echo "$output"; false; }
	run nf status --server "$U" gpu-01,cp-01 --json
	jq -e --arg vat "$vat" '.nodes[] | select(.name == "gpu-01") |
		.state == "booting" and .result == "fail" and .verdict_at == $vat and
		.root_cause == "gpu.count: expected 8, seen 0"' <<<"$output"
	# the state file keeps it too
	for _ in $(seq 50); do
		[ "$(jq -r .state vstate/nodes/gpu-01.json)" = booting ] && break
		sleep 0.1
	done
	[ "$(jq -r .state vstate/nodes/gpu-01.json)" = booting ]
	[ "$(jq -r .verdict.result vstate/nodes/gpu-01.json)" = fail ]
	# the next verdict replaces it
	expect 200 /api/v1/nodes/gpu-01/verdict '{"result":"pass"}' -H 'X-Real-IP: 127.0.0.2'
	node_json gpu-01 > n.json
	[ "$(jq -r .state n.json)" = verified ]
	[ "$(jq -r .root_cause n.json)" = null ]
	[ "$(jq -r .result n.json)" = pass ]
}

@test "--trusted-proxy 127.0.0.1: X-Real-IP from that peer is the node's address" {
	serve_with --trusted-proxy 127.0.0.1
	expect 200 /api/v1/nodes/gpu-01/verdict '{"result":"pass"}' -H 'X-Real-IP: 127.0.0.2'
	[ "$(jq -r .state vstate/nodes/gpu-01.json)" = verified ]
	expect 200 /api/v1/enroll "$(claim gpu-01 52:54:00:00:00:02)" -H 'X-Real-IP: 127.0.0.2'
	grep -q '"sealed"' resp
	run nf enroll list
	[[ "$output" == *"gpu-01"*"from 127.0.0.2 key sha256:"* ]]
}

@test "a peer not listed with --trusted-proxy is judged by its own address" {
	serve_with --trusted-proxy 127.0.0.1
	nf enroll open cp-01 --for 15m >/dev/null
	# 127.0.0.2 (gpu-01) naming cp-01's address
	expect 403 /api/v1/enroll "$(claim cp-01 52:54:00:00:00:01)" --interface 127.0.0.2 -H 'X-Real-IP: 127.0.0.1'
	grep -q '"reason": *"wrong-address"' resp
	expect 403 /api/v1/nodes/cp-01/verdict '{"result":"pass"}' --interface 127.0.0.2 -H 'X-Real-IP: 127.0.0.1'
	grep -q "verdict for 'cp-01' from 127.0.0.2" resp
	[ ! -e vstate/nodes/cp-01.json ]
}

# signed KEYFILE NAME BODY [SKEW]: curl header arguments of a verdict
# signed as an enrolled node signs it (nf_verdict_proof)
signed() {
	python3 - "$@" <<'PY'
import base64, hashlib, hmac, sys, time
key = open(sys.argv[1], "rb").read()
name, body = sys.argv[2], sys.argv[3]
t = str(int(time.time()) + (int(sys.argv[4]) if len(sys.argv) > 4 else 0))
msg = b"nodeforge-verdict-v1\0" + name.encode() + b"\0" + t.encode() + b"\0" + body.encode()
p = base64.b64encode(hmac.new(key, msg, hashlib.sha256).digest()).decode()
print("X-Nodeforge-Time: " + t)
print("X-Nodeforge-Proof: " + p)
PY
}

@test "an enrolled node's verdict is taken only signed with the cluster's munge key" {
	serve_with
	expect 200 /api/v1/enroll "$(claim gpu-01 52:54:00:00:00:02)" --interface 127.0.0.2
	body='{"result":"pass"}'
	# unsigned, from its own address: refused, nothing stored
	expect 403 /api/v1/nodes/gpu-01/verdict "$body" --interface 127.0.0.2
	grep -q "must be signed with its munge key" resp
	[ ! -e vstate/nodes/gpu-01.json ]
	# signed with another key
	head -c 1024 /dev/urandom > other.key
	mapfile -t h < <(signed other.key gpu-01 "$body")
	expect 403 /api/v1/nodes/gpu-01/verdict "$body" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	grep -q "not signed with the cluster's munge key" resp
	# signed with the key, but an hour old
	mapfile -t h < <(signed sec/munge.key gpu-01 "$body" -3600)
	expect 403 /api/v1/nodes/gpu-01/verdict "$body" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	grep -q "more than 300 s from the server's clock" resp
	[ ! -e vstate/nodes/gpu-01.json ]
	# signed for another body
	mapfile -t h < <(signed sec/munge.key gpu-01 '{"result":"fail"}')
	expect 403 /api/v1/nodes/gpu-01/verdict "$body" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	# signed with the key: stored
	mapfile -t h < <(signed sec/munge.key gpu-01 "$body")
	expect 200 /api/v1/nodes/gpu-01/verdict "$body" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	[ "$(jq -r .state vstate/nodes/gpu-01.json)" = verified ]
	# a node that has not enrolled is judged by its address alone
	expect 200 /api/v1/nodes/cp-01/verdict '{"result":"fail"}' --interface 127.0.0.1
}

@test "a signed verdict is taken once: a replay, or one dated no later than the last, is refused" {
	serve_with
	expect 200 /api/v1/enroll "$(claim gpu-01 52:54:00:00:00:02)" --interface 127.0.0.2
	fail='{"result":"fail","root_causes":[{"id":"gpu.count","message":"expected 8, seen 0"}]}'
	pass='{"result":"pass"}'
	mapfile -t old < <(signed sec/munge.key gpu-01 "$pass" -60)
	mapfile -t h < <(signed sec/munge.key gpu-01 "$fail" -10)
	expect 200 /api/v1/nodes/gpu-01/verdict "$fail" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	[ "$(jq -r .state vstate/nodes/gpu-01.json)" = failed ]
	# the same request again, inside the clock window
	expect 403 /api/v1/nodes/gpu-01/verdict "$fail" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	grep -q "not after the last one taken from it" resp
	# an older signed "pass" seen earlier cannot erase the failure
	expect 403 /api/v1/nodes/gpu-01/verdict "$pass" --interface 127.0.0.2 -H "${old[0]}" -H "${old[1]}"
	grep -q "a replay" resp
	[ "$(jq -r .state vstate/nodes/gpu-01.json)" = failed ]
	# a restart forgets nothing
	kill "$SERVE_PID" && wait "$SERVE_PID" 2>/dev/null || true
	serve_with
	expect 403 /api/v1/nodes/gpu-01/verdict "$fail" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	# a newer one is taken
	mapfile -t h < <(signed sec/munge.key gpu-01 "$pass")
	expect 200 /api/v1/nodes/gpu-01/verdict "$pass" --interface 127.0.0.2 -H "${h[0]}" -H "${h[1]}"
	[ "$(jq -r .state vstate/nodes/gpu-01.json)" = verified ]
}

@test "GET /api/v1/enroll answers the boot server itself, not a node" {
	serve_with --trusted-proxy 127.0.0.1
	[ "$(curl -s -o resp -w '%{http_code}' "$U/api/v1/enroll")" = 200 ]
	grep -q '"gpu-01"' resp
	# a client on the network (through the proxy) learns nothing
	[ "$(curl -s -o resp -w '%{http_code}' -H 'X-Real-IP: 10.0.0.99' "$U/api/v1/enroll")" = 403 ]
	! grep -q 'gpu-01' resp
	grep -q 'boot server itself' resp
}

@test "serve --help lists --trusted-proxy; a bad address is a usage error" {
	run nf serve --help
	status_is 0
	[[ "$output" == *"--trusted-proxy ADDR"* ]]
	run nf serve --tree boot --trusted-proxy nginx.local
	status_is 2
	[[ "$output" == *"invalid --trusted-proxy 'nginx.local'"* ]]
}
