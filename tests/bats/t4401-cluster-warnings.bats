#!/usr/bin/env bats
# What the inventory's cluster lacks is said and counted: no controller
# (lint, --json, pxe) and a node declared as the cluster test's small VM.
load helper

setup() {
	nf_setup
	# the example rack without its controller
	awk '/- name: ctl-01/ { skip = 1; next } /- name:/ { skip = 0 } !skip' \
		"$NF_SRCDIR/examples/racks.yaml" > noctl.yaml
	! grep -q ctl-01 noctl.yaml
}

@test "lint --inventory counts the missing controller and --json shows it" {
	run nf lint --inventory "$NF_SRCDIR/examples/racks.yaml"
	status_is 0
	base=$(sed -n 's/^lint: no errors (\([0-9]*\) warnings)$/\1/p' <<<"$output")
	[ -n "$base" ]
	run nf lint --inventory noctl.yaml
	status_is 0
	[[ "$output" == *"noctl.yaml: warning: inventory noctl.yaml has no controller: no node's role runs slurmctld"* ]]
	[[ "$output" == *"lint: no errors ($((base + 1)) warnings)"* ]]
	run nf --json lint --inventory noctl.yaml
	status_is 0
	echo "$output" | jq -e --argjson w $((base + 1)) '.warnings == $w and any(.diagnostics[]; .file == "noctl.yaml" and .severity == "warning" and (.message | test("has no controller")))' >/dev/null
}

@test "pxe warns when nodes run slurmd and none runs slurmctld" {
	run nf pxe -i noctl.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --ipxe-dir no-ipxe
	status_is 0
	[[ "$output" == *"nodeforge pxe: warning: inventory noctl.yaml has no controller"*"every node that runs slurmd will fail slurm.cluster"* ]]
	run nf pxe -i "$NF_SRCDIR/examples/racks.yaml" -o tree2 -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --ipxe-dir no-ipxe
	status_is 0
	[[ "$output" != *"no controller"* ]]
}

@test "lint warns of the cluster test's VM shape on another site, not on the test site" {
	sed 's/role: compute/role: cpu/' "$NF_SRCDIR/examples/racks.yaml" > cpu.yaml
	run nf lint --inventory cpu.yaml
	status_is 0
	[[ "$output" == *"cpu.yaml: warning: 'NodeName=gpu-[01-04]' declares the cluster test's VM (CoresPerSocket=2 RealMemory=1024) on site 'production'"* ]]
	sed 's/^cluster: .*/cluster: test/' "$NF_SRCDIR/profiles/site.yaml" > site.yaml
	run nf -s site.yaml lint --inventory cpu.yaml
	status_is 0
	[[ "$output" != *"cluster test's VM"* ]]
	run nf lint --inventory "$NF_SRCDIR/examples/racks.yaml"
	[[ "$output" != *"cluster test's VM"* ]]
}
