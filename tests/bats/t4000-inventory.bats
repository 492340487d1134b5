#!/usr/bin/env bats
# nodeforge inventory show: racks.yaml parsing, ranges and validation.
load helper

PROFILES=$FIXTURES/boot/profiles

@test "example inventory expands ranges and address runs" {
	run nf -C "$PROFILES" inventory show -i "$NF_SRCDIR/examples/racks.yaml"
	status_is 0
	[[ "${lines[0]}" == NAME* ]]
	[[ "$output" == *"gpu-04               52:54:00:00:01:04 10.0.1.14       compute      r01      10.1.1.14"* ]]
	[[ "$output" == *"6 nodes"* ]]
}

@test "inventory show --json is the same data" {
	run nf -C "$PROFILES" --json inventory show --inventory "$NF_SRCDIR/examples/racks.yaml"
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["count"] == 6, d
n = {x["name"]: x for x in d["nodes"]}
assert n["gpu-03"]["mac"] == "52:54:00:00:01:03"
assert n["gpu-03"]["ip"] == "10.0.1.13"
assert n["gpu-03"]["bmc"] == "10.1.1.13"
assert n["ctl-01"]["role"] == "controller"
'
}

@test "default inventory file is racks.yaml in the current directory" {
	cp "$NF_SRCDIR/examples/racks.yaml" .
	run nf -C "$PROFILES" inventory show
	status_is 0
	[[ "$output" == *"login-01"* ]]
}

@test "unreadable inventory exits 1 naming the file" {
	run nf -C "$PROFILES" inventory show -i nope.yaml
	status_is 1
	[ "$output" = "nodeforge inventory: -i 'nope.yaml': no such file or directory" ]
	# there, but not readable: the loader names it
	if [ "$(id -u)" != 0 ]; then
		install -m 000 /dev/null unreadable.yaml
		run nf -C "$PROFILES" inventory show -i unreadable.yaml
		status_is 1
		[[ "$output" == *"nodeforge inventory: cannot read 'unreadable.yaml'"* ]]
	fi
}

@test "no subcommand is show (docs/flags.md); an unknown one is a usage error" {
	cp "$NF_SRCDIR/examples/racks.yaml" .
	run nf inventory
	status_is 0
	[[ "${lines[0]}" == NAME* ]]
	run nf inventory list
	status_is 2
	[[ "$output" == *"unknown subcommand 'list'"*"try 'nodeforge inventory --help'"* ]]
}

@test "every bad inventory fixture exits 3 with its exact file:line:col" {
	n=0
	for f in "$FIXTURES"/inventory/*.yaml; do
		b=$(basename "$f")
		cp "$f" "$b"
		want=$(sed -n '1s/^# expect: //p' "$b")
		[ -n "$want" ] || { echo "$b: no expect line"; false; }
		run nf -C "$PROFILES" inventory show -i "$b"
		[ "$status" -eq 3 ] || { echo "$b: exit $status: $output"; false; }
		[[ "$output" == *"$b:${want%%: *}: error: ${want#*: }"* ]] ||
			{ echo "$b: want '$want', got: $output"; false; }
		n=$((n + 1))
	done
	[ "$n" -ge 20 ]
}

@test "node IPs outside the site's provisioning network are errors at their line" {
	sed 's/ip: 10.0.1.11+/ip: 10.5.1.11+/' "$NF_SRCDIR/examples/racks.yaml" > racks.yaml
	run nf -s "$NF_SRCDIR/profiles/site.yaml" inventory show
	status_is 3
	[[ "$output" == *"racks.yaml:20:5: error: IP 10.5.1.11 of node 'gpu-01' is outside the provisioning network 10.0.0.0/16"* ]]
	cp "$NF_SRCDIR/examples/racks.yaml" racks.yaml
	run nf -s "$NF_SRCDIR/profiles/site.yaml" inventory show
	status_is 0
}

@test "the shipped profiles define every role of the example inventory" {
	run nf inventory show -i "$NF_SRCDIR/examples/racks.yaml"
	status_is 0
}

@test "inventory show --json on an invalid inventory: the diagnostics as JSON on stdout, exit 3" {
	printf 'nodes:\n  - { name: a, mac: "zz", ip: 10.0.0.5, role: compute }\n' > bad.yaml
	run bash -c '"$NF_BIN" inventory show -i bad.yaml --json > out.json 2>err.txt'
	status_is 3
	jq -e '.errors == 1 and .diagnostics[0].line == 2 and .diagnostics[0].column == 16 and (.diagnostics[0].message | test("malformed MAC address .zz."))' out.json
	[ ! -s err.txt ]
}

@test "inventory show: a hostlist, --rack and --role list only those nodes, as status does" {
	cp "$NF_SRCDIR/examples/racks.yaml" racks.yaml
	run nf -C "$PROFILES" inventory show 'gpu-[01-02],ctl-01'
	status_is 0
	[ "$(echo "$output" | awk 'NR > 1 && NF > 2 { print $1 }' | paste -sd' ')" = "ctl-01 gpu-01 gpu-02" ]
	[ "${lines[-1]}" = "3 nodes" ]
	run nf -C "$PROFILES" inventory show --rack r01 --role compute --json
	status_is 0
	[ "$(echo "$output" | jq -c '[[.nodes[].name], .count]')" = '[["gpu-01","gpu-02","gpu-03","gpu-04"],4]' ]
	run nf -C "$PROFILES" inventory show --role controller
	[ "$(echo "$output" | awk 'NR > 1 && NF > 2 { print $1 }')" = ctl-01 ]
}

@test "inventory show: an unknown rack, role or node is a usage error naming the known ones" {
	cp "$NF_SRCDIR/examples/racks.yaml" racks.yaml
	run nf -C "$PROFILES" inventory show --rack r9
	status_is 2
	[[ "$output" == *"nodeforge inventory: no node of 'racks.yaml' has rack 'r9'; racks: r00, r01"* ]]
	run nf -C "$PROFILES" inventory show --role gpu
	status_is 2
	[[ "$output" == *"has role 'gpu'; roles: controller, login, compute"* ]]
	run nf -C "$PROFILES" inventory show nope-01
	status_is 2
	[[ "$output" == *"no node 'nope-01' in 'racks.yaml'"* ]]
	run nf -C "$PROFILES" inventory show 'gpu-[01'
	status_is 2
	[[ "$output" == *"'gpu-[01' is not a node name or a hostlist"* ]]
}
