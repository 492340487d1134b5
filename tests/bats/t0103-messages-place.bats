#!/usr/bin/env bats
# An option that names the wrong thing stops the command where it was
# given, instead of the command going on with something else.
load helper

@test "lint with a site file that cannot be read stops, linting nothing" {
	run nf -s sit.yaml lint
	status_is 1
	[[ "$output" == *"nodeforge lint: -s 'sit.yaml': no such file or directory"* ]]
	# nothing about the profiles: they were not linted with another site
	[ "${#lines[@]}" -eq 1 ]
}

@test "enroll open, list and answer refuse the node side's options" {
	cp "$NF_SRCDIR/examples/racks.yaml" .
	run nf enroll open gpu-01 --for 1m --server http://10.0.0.1:8080 \
		--enroll-state st -i racks.yaml
	status_is 2
	[[ "$output" == *"nodeforge enroll: '--server' is an option of enroll on a node, not of 'enroll open', which works on this machine's --enroll-state DIR"* ]]
	[ ! -e st ]
	run nf enroll list --node=gpu-01 --enroll-state st
	status_is 2
	[[ "$output" == *"'--node' is an option of enroll on a node, not of 'enroll list'"* ]]
}
