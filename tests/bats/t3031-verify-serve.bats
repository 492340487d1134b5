#!/usr/bin/env bats
# The gate's report reaches a real `nodeforge serve`: the node becomes
# verified or failed with its root cause.
load verify_helper

setup() {
	nf_setup
	cp "$NF_SRCDIR/examples/racks.yaml" .
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 \
		--kernel-args compute=quiet --kernel-args controller=quiet \
		--kernel-args login=quiet >/dev/null
	: > serve.log
	"$NF_BIN" serve --tree tree --listen 127.0.0.1:0 --state state --threads 2 -q > serve.log 2>&1 3>&- &
	SERVE_PID=$!
	nf_wait_url serve.log
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

gate_as() {	# gate_as NODE VARIANT
	vfx "$2"
	echo "$1.cluster.internal" > "$SYS/proc/sys/kernel/hostname"
	sed -i "s|\$| nodeforge.server=$U|" "$SYS/proc/cmdline"
	vrun --gate --verdict "$SCRATCH/v.json" -q
}

@test "serve: a failing node is recorded failed with its root cause" {
	gate_as gpu-02 fail-ib
	status_is 3
	[ -z "$output" ] || { echo "$output"; false; }
	run curl -sf "$U/api/v1/nodes/gpu-02"
	status_is 0
	[ "$(echo "$output" | jq -r .state)" = failed ]
	[[ "$(echo "$output" | jq -r .root_cause)" == "ib.port.state: mlx5_2/1: 1: DOWN" ]]
}

@test "serve: a passing node is recorded verified" {
	gate_as gpu-03 pass
	status_is 0
	run curl -sf "$U/api/v1/nodes/gpu-03"
	status_is 0
	[ "$(echo "$output" | jq -r .state)" = verified ]
	[ "$(echo "$output" | jq -r .verdict.counts.fail)" = 0 ]
}

@test "serve: a network-booted node reports under nodeforge.node= whatever its host name (fixture)" {
	vfx pass
	echo localhost > "$SYS/proc/sys/kernel/hostname"
	sed -i "s|\$| nodeforge.server=$U nodeforge.node=gpu-04|" "$SYS/proc/cmdline"
	vrun --gate --verdict "$SCRATCH/v.json" -q
	status_is 0
	[ "$(jq -r .node "$SCRATCH/v.json")" = gpu-04 ]
	run curl -sf "$U/api/v1/nodes/gpu-04"
	status_is 0
	[ "$(echo "$output" | jq -r .state)" = verified ]
	! grep -q 'nodes/localhost' serve.log
}
