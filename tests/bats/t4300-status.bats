#!/usr/bin/env bats
# nodeforge status: the rack view from a running nodeforge serve.
load helper

setup() {
	nf_setup
	nf_status_serve
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

@test "status shows not seen, booting, verified and failed with the root cause" {
	curl -sf "$U/ipxe/mac/52-54-00-00-01-01.ipxe" >/dev/null
	curl -sf -X POST -d '{"result":"fail","root_causes":[{"id":"gpu.count","message":"expected 8, seen 0"}]}' \
		"$U/api/v1/nodes/gpu-02/verdict" >/dev/null
	curl -sf -X POST -d '{"result":"pass","image":"controller@beee51305295"}' "$U/api/v1/nodes/ctl-01/verdict" >/dev/null
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-01" >/dev/null
	run nf status --server "$U"
	# not every node is verified
	status_is 3
	[[ "${lines[0]}" == "NODE"*"STATE"*"RACK"*"IMAGE"*"TIME" ]]
	[[ "$output" =~ ctl-01\ +verified\ +r00\ +controller@beee51305295 ]]
	[[ "$output" == *"login-01 not seen r00  -"* ]]
	# the image as `image list` and `reimage --image` name it
	[[ "$output" =~ gpu-01\ +booting\ +r01\ +compute@[0-9a-f]{12}\  ]]
	[[ "$output" =~ gpu-02\ +failed\ +r01\ .*gpu\.count:\ expected\ 8,\ seen\ 0 ]]
	[[ "$output" == *"unknown MAC 52:54:00:99:00:01"* ]]
	[[ "$output" == *"6 nodes: 1 verified, 1 failed, 1 booting, 3 not seen"* ]]
	# the root cause on its own line under its node
	[[ "$output" == *$'\n''gpu-02 '*$'\n''    root cause: gpu.count: expected 8, seen 0'$'\n'* ]]
}

@test "status --json carries the same data" {
	curl -sf -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-03/verdict" >/dev/null
	run nf status --server "$U/" --json
	status_is 3
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = {x["name"]: x for x in d["nodes"]}
assert n["gpu-03"]["state"] == "verified" and n["gpu-03"]["time"], n["gpu-03"]
# absent values are null, never a placeholder
assert n["login-01"]["image"] is None and n["login-01"]["root_cause"] is None, n["login-01"]
assert n["gpu-03"]["root_cause"] is None, n["gpu-03"]
assert d["summary"] == {"nodes": 6, "verified": 1, "failed": 0, "booting": 0, "not_seen": 5}, d["summary"]'
}

@test "unreachable or wrong server exits 1 naming the URL" {
	run nf status --server http://127.0.0.1:1 --timeout 2
	status_is 1
	[[ "$output" == *"nodeforge status: cannot fetch 'http://127.0.0.1:1/api/v1/nodes'"*"(server http://127.0.0.1:1)"* ]]
	# --json: an error object on stdout, naming the server
	"$NF_BIN" status --server http://127.0.0.1:1 --timeout 2 --json > err.json 2>/dev/null || true
	jq -e '.server == "http://127.0.0.1:1" and (.error | test("cannot fetch"))' err.json
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
	nf_wait_url serve.log
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-03" >/dev/null
	run nf status --server "$U" --unknown
	status_is 0
	[[ "$output" != *"NODE"*"STATE"* ]]
	[[ "$output" =~ unknown[[:space:]]+MAC[[:space:]]+52:54:00:99:00:02[[:space:]]+from[[:space:]]+127\.0\.0\.1[[:space:]]+first[[:space:]]+asked[[:space:]]+to[[:space:]]+boot[[:space:]]+at[[:space:]]+[0-9T:-]+Z,[[:space:]]+last[[:space:]]+at ]]
	[[ "$output" == *"unknown MAC 52:54:00:99:00:03"* ]]
	[[ "$output" == *"2 unknown machine(s)"* ]]
	run nf status --server "$U" --unknown --json
	status_is 0
	echo "$output" | jq -e '(.nodes == null) and (.unknown | length == 2) and (.unknown[0].first_seen != null)' >/dev/null
}

# a site's view: every node verified is the only 0
post_verdicts() {
	curl -sf -X POST -d '{"result":"fail","root_causes":[{"id":"gpu.count","message":"expected 8, seen 0"}],"counts":{"pass":30,"fail":1,"skip":2,"hung":0},"checks":[{"id":"gpu.count","verdict":"fail","expected":"8 NVIDIA GPUs","seen":"0","remedy":"nvidia-smi -L; check the PCIe slots"}]}' \
		"$U/api/v1/nodes/gpu-02/verdict" >/dev/null
	curl -sf -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-01/verdict" >/dev/null
	curl -sf -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/ctl-01/verdict" >/dev/null
}

@test "status NODE shows that node's verdict: each root cause with expected, seen and remedy" {
	post_verdicts
	run nf status gpu-02 --server "$U"
	status_is 3
	[[ "${lines[0]}" == "gpu-02: failed (role compute, rack r01)" ]]
	# the verdict as verify shows it on the node
	[[ "$output" == *$'\n'"FAIL gpu.count: 0 (expected 8 NVIDIA GPUs)"$'\n'"     -> nvidia-smi -L; check the PCIe slots"$'\n'* ]]
	[[ "$output" == *$'\n'"1 root cause (-v shows every check)"$'\n'"compute: FAIL: 30 passed, 1 failed, 0 hung, 2 skipped"* ]]
	run nf status gpu-01 --server "$U"
	status_is 0
	[[ "$output" != *"root cause"* && "$output" != *FAIL* ]]
	run nf status gpu-02 --server "$U" --json
	status_is 3
	echo "$output" | jq -e '.state == "failed" and .root_causes[0].id == "gpu.count" and .root_causes[0].remedy != null' >/dev/null
	run nf status gpu-99 --server "$U"
	status_is 1
	[[ "$output" == *"HTTP 404: no node 'gpu-99' in the inventory"*"(server $U)"* ]]
}

@test "status filters by hostlist, --state and --rack; exit 0 only when every node listed is verified" {
	post_verdicts
	run nf status 'gpu-[01-02],ctl-01' --server "$U" --json
	status_is 3
	echo "$output" | jq -e '[.nodes[].name] == ["ctl-01","gpu-01","gpu-02"] or ([.nodes[].name] | sort) == ["ctl-01","gpu-01","gpu-02"]' >/dev/null
	echo "$output" | jq -e '.summary.nodes == 3 and .summary.failed == 1' >/dev/null
	run nf status 'gpu-01,ctl-01' --server "$U"
	status_is 0
	[[ "$output" == *"2 nodes: 2 verified, 0 failed, 0 booting, 0 not seen"* ]]
	run nf status --state failed --server "$U" --json
	status_is 3
	echo "$output" | jq -e '[.nodes[].name] == ["gpu-02"]' >/dev/null
	run nf status --state verified --server "$U"
	status_is 0
	run nf status --rack r01 --server "$U" --json
	echo "$output" | jq -e '(.nodes | length) > 0 and all(.nodes[]; .rack == "r01")' >/dev/null
	run nf status --state not-seen --rack r01 --server "$U" --json
	status_is 3
	echo "$output" | jq -e 'all(.nodes[]; .state == "not seen" and .rack == "r01")' >/dev/null
	# a name the server does not know is an error, not an empty list
	run nf status 'gpu-[01-02],gpu-77' --server "$U"
	status_is 1
	[[ "$output" == *"no node 'gpu-77' in the server's inventory"* ]]
	run nf status --state broken --server "$U"
	status_is 2
	run nf status 'gpu-[01-' --server "$U"
	status_is 2
}

@test "a rack, role or state no node has is a usage error naming the known ones" {
	run nf status --rack r09 --server "$U"
	status_is 2
	[[ "$output" == *"nodeforge status: no node of the server's inventory has rack 'r09'; racks: "*r00*r01* ]]
	[[ "$output" == *"try 'nodeforge status --help'"* ]]
	run nf status --role comptue --server "$U" --json
	status_is 2
	[[ "$output" == *"has role 'comptue'; roles: controller, login, compute"* ]]
	run nf status --state broken --server "$U"
	status_is 2
	[[ "$output" == *"not-seen, booting, verified or failed"* ]]
	run nf status --role login --server "$U" --json
	status_is 3
	echo "$output" | jq -e '[.nodes[].name] == ["login-01"]' >/dev/null
}

@test "unknown machines show in the plain list and with --unknown, not in a filtered one" {
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-01" >/dev/null
	run nf status --server "$U"
	[[ "$output" == *"unknown MAC 52:54:00:99:00:01"* ]]
	for f in "--rack r01" "--state not-seen" "--role compute" "gpu-[01-02]"; do
		run nf status $f --server "$U"
		[[ "$output" != *"unknown MAC"* ]] || { echo "$f: $output"; false; }
	done
	run nf status --rack r01 --server "$U" --json
	echo "$output" | jq -e '.unknown == []' >/dev/null
}

@test "status NODE prints a remedy that works as pasted, as verify does" {
	remedy="printf '[Service]\\nLimitNOFILE=1048576\\n' > 60-local.conf"
	jq -n --arg r "$remedy" '{result: "fail", root_causes: [{id: "limits.unit.nofile"}],
		checks: [{id: "limits.unit.nofile", verdict: "fail", expected: "1048576", seen: "1024", remedy: $r}]}' \
		| curl -sf -X POST --data-binary @- "$U/api/v1/nodes/gpu-02/verdict" >/dev/null
	run nf status gpu-02 --server "$U"
	status_is 3
	pasted=$(sed -n 's/^     -> //p' <<<"$output")
	[ "$pasted" = "$remedy" ]
	bash -c "$pasted"
	printf '[Service]\nLimitNOFILE=1048576\n' > want
	cmp want 60-local.conf
}

@test "status: the list fits 80 columns, long causes wrap at words under their node; colour for failed and verified only on a terminal" {
	cause="slurm.conf.present: /etc/slurm/slurm.conf is missing and slurmd therefore refuses to start on this node until the image is rebuilt"
	jq -n --arg c "$cause" '{result: "fail", root_causes: [{id: "slurm.conf.present", message: ($c | sub("^[^ ]+ "; ""))}]}' \
		| curl -sf -X POST --data-binary @- "$U/api/v1/nodes/gpu-02/verdict" >/dev/null
	curl -sf -X POST -d '{"result":"pass","image":"controller@beee51305295"}' "$U/api/v1/nodes/ctl-01/verdict" >/dev/null
	curl -sf "$U/api/v1/unknown/52-54-00-99-00-07" >/dev/null
	COLUMNS=80 run nf status --server "$U"
	status_is 3
	echo "$output" | awk 'length($0) > 80 { print "too wide: " $0; bad = 1 } END { exit bad }'
	# every word of the cause whole, in order, on the lines under gpu-02
	under=$(echo "$output" | awk '/^gpu-02 / { on = 1; next } /^[a-z]/ { on = 0 } on')
	[ "$(echo "$under" | wc -l)" -ge 2 ]
	[ "$(echo "$under" | sed 's/^ *root cause: //; s/^ *//' | paste -sd' ')" = "$cause" ]
	[[ "$output" != *$'\033'* ]]
	command -v script >/dev/null || skip "script (util-linux) not installed"
	script -qec "$NF_BIN status --server $U" /dev/null > tty.out || true
	grep -q $'\033\\[1;31mfailed' tty.out
	grep -q $'\033\\[32mverified' tty.out
	NO_COLOR=1 script -qec "$NF_BIN status --server $U" /dev/null > tty2.out || true
	! grep -q $'\033' tty2.out
}

@test "status NODE wraps seen at words, and the remedy as a command that works as pasted, within 80 columns" {
	seen="the node has 0 of the 8 NVIDIA GPUs its profile names: nvidia-smi lists none and the PCIe bus shows no device of vendor 10de at all"
	remedy="nvidia-smi -L; lspci -d 10de: -nn; journalctl -k -b | grep -i -e nvrm -e xid; check the PCIe slots and the risers of this node"
	jq -n --arg s "$seen" --arg r "$remedy" '{result: "fail", root_causes: [{id: "gpu.count"}],
		checks: [{id: "gpu.count", verdict: "fail", expected: "8 NVIDIA GPUs", seen: $s, remedy: $r}]}' \
		| curl -sf -X POST --data-binary @- "$U/api/v1/nodes/gpu-02/verdict" >/dev/null
	COLUMNS=80 run nf status gpu-02 --server "$U"
	status_is 3
	echo "$output" | awk 'length($0) > 80 { print "too wide: " $0; bad = 1 } END { exit bad }'
	# seen (expected): wrapped, every word whole
	block=$(echo "$output" | awk '/^FAIL gpu.count: / { on = 1 } /^     -> / { on = 0 } on')
	[ "$(echo "$block" | wc -l)" -ge 2 ]
	[ "$(echo "$block" | sed 's/^FAIL gpu.count: //; s/^ *//' | paste -sd' ')" = "$seen (expected 8 NVIDIA GPUs)" ]
	# the remedy: its broken lines end in " \", the shell reads one command
	cmd=$(echo "$output" | awk '/^     -> / { on = 1 } on && !/^     ( |->)/ { on = 0 } on' | sed 's/^     -> //; s/^ *//')
	[ "$(echo "$cmd" | wc -l)" -ge 2 ]
	[ "$(printf '%s\n' "$cmd" | sed -z 's/ \\\n/ /g; s/\n$//')" = "$remedy" ]
}
