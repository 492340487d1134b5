#!/usr/bin/env bats
# nodeforge status: the rack view from a running nodeforge serve.
load helper

setup() {
	nf_setup
	cp "$NF_SRCDIR/examples/racks.yaml" .
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 \
		--kernel-args compute=quiet --kernel-args controller=quiet \
		--kernel-args login=quiet >/dev/null
	: > serve.log
	"$NF_BIN" serve --tree tree --listen 127.0.0.1:0 --state state -q > serve.log 2>&1 3>&- &
	SERVE_PID=$!
	for _ in $(seq 50); do
		U=$(sed -n 's/^listening on //p' serve.log)
		[ -n "$U" ] && break
		sleep 0.05
	done
	[ -n "$U" ]
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

@test "status shows not seen, booting, verified and failed with the root cause" {
	curl -sf "$U/ipxe/mac/52-54-00-00-01-01.ipxe" >/dev/null
	curl -sf -X POST -d '{"result":"fail","root_causes":[{"id":"gpu.count","message":"expected 8, seen 0"}]}' \
		"$U/api/v1/nodes/gpu-02/verdict" >/dev/null
	curl -sf -X POST -d '{"result":"pass","image":"controller-beee51305295"}' "$U/api/v1/nodes/ctl-01/verdict" >/dev/null
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-01" >/dev/null
	run nf status --server "$U"
	status_is 0
	[[ "${lines[0]}" == "NODE"*"STATE"*"ROOT CAUSE" ]]
	[[ "$output" == *"ctl-01               verified  controller-beee51305295"* ]]
	[[ "$output" == *"login-01             not seen"* ]]
	[[ "$output" =~ gpu-01\ +booting\ +compute-[0-9a-f]{12}\.vmlinuz ]]
	[[ "$output" =~ gpu-02\ +failed\ .*gpu\.count:\ expected\ 8,\ seen\ 0 ]]
	[[ "$output" == *"unknown MAC 52:54:00:99:00:01"* ]]
	[[ "$output" == *"6 nodes: 1 verified, 1 failed, 1 booting, 3 not seen"* ]]
}

@test "status --json carries the same data" {
	curl -sf -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-03/verdict" >/dev/null
	run nf status --server "$U/" --json
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = {x["name"]: x for x in d["nodes"]}
assert n["gpu-03"]["state"] == "verified" and n["gpu-03"]["time"], n["gpu-03"]
assert d["summary"] == {"nodes": 6, "verified": 1, "failed": 0, "booting": 0, "not_seen": 5}, d["summary"]'
}

@test "unreachable or wrong server exits 1 naming the URL" {
	run nf status --server http://127.0.0.1:1 --timeout 2
	status_is 1
	[[ "$output" == *"nodeforge status: cannot fetch 'http://127.0.0.1:1/api/v1/nodes'"* ]]
	run nf status --server "$U/nope"
	status_is 1
	[[ "$output" == *"HTTP 404"* ]]
	run nf status --server ftp://127.0.0.1/
	status_is 1
	[[ "$output" == *"only http and https"* ]]
	run nf status --timeout 0
	status_is 2
}

@test "unknown machines are kept across a server restart; status --unknown lists them" {
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-02" >/dev/null
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-03" >/dev/null
	[ -f state/unknown/52-54-00-99-00-02.json ]
	kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true
	: > serve.log
	"$NF_BIN" serve --tree tree --listen 127.0.0.1:0 --state state -q > serve.log 2>&1 3>&- &
	SERVE_PID=$!
	U=
	for _ in $(seq 50); do U=$(sed -n 's/^listening on //p' serve.log); [ -n "$U" ] && break; sleep 0.05; done
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-03" >/dev/null
	run nf status --server "$U" --unknown
	status_is 0
	[[ "$output" != *"NODE"*"STATE"* ]]
	[[ "$output" =~ unknown\ MAC\ 52:54:00:99:00:02\ from\ 127\.0\.0\.1\ first\ asked\ to\ boot\ at\ [0-9T:-]+Z,\ last\ at ]]
	[[ "$output" == *"unknown MAC 52:54:00:99:00:03"* ]]
	[[ "$output" == *"2 unknown machine(s)"* ]]
	run nf status --server "$U" --unknown --json
	status_is 0
	echo "$output" | jq -e '(.nodes == null) and (.unknown | length == 2) and (.unknown[0].first_seen != null)' >/dev/null
}
