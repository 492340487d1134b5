#!/usr/bin/env bats
# Disk rules in profiles are checked by lint with the disk pick grammar.
load helper

@test "lint: a malformed storage disk rule is an error at its position" {
	cp -a "$NF_SRCDIR/profiles" p
	grep -q 'rule: "transport=nvme,removable=0,largest"' p/compute.yaml
	sed -i 's/rule: "transport=nvme,removable=0,largest"/rule: "transport=nvme,colour=red"/' p/compute.yaml
	run nf -C p lint
	status_is 3
	[[ "$output" == *"p/compute.yaml:"*": error: unknown key 'colour' in disk rule 'transport=nvme,colour=red'"* ]]
}

@test "lint: the shipped storage rule parses" {
	run nf -C "$NF_SRCDIR/profiles" lint
	status_is 0
}

@test "lint: a tmpfs enroot cache with a disk rule is an error at the rule" {
	cp -a "$NF_SRCDIR/profiles" p
	sed -i 's/^    fs: xfs$/    fs: tmpfs/' p/compute.yaml
	grep -q '^    fs: tmpfs$' p/compute.yaml
	run nf -C p lint
	status_is 3
	[[ "$output" == *"p/compute.yaml:"*": error: a tmpfs enroot cache is on no disk: drop the disk rule or choose xfs or ext4"* ]]
}
