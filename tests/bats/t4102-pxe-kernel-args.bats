#!/usr/bin/env bats
# nodeforge pxe --kernel-args: ROLE+=ARGS adds to the role's arguments,
# ROLE=ARGS replaces them and says what that drops, a role no node has is
# a usage error.
load helper

pxe() {
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree \
		-u http://10.0.0.1:8080 --images "$FIXTURES/boot/out" \
		--network 10.0.0.0/16 --ipxe-dir no-ipxe "$@"
}

setup() {
	nf_setup
	cp "$NF_SRCDIR/examples/racks.yaml" .
}

@test "ROLE+=ARGS appends to the role's kernel arguments" {
	run pxe --kernel-args "compute+=console=ttyS0,115200" \
		--kernel-args "compute+=nosmt"
	status_is 0
	[[ "$output" != *"replaces the kernel"* ]]
	grep -q " quiet console=ttyS0,115200 nosmt nodeforge.server=" tree/ipxe/mac/52-54-00-00-01-04.ipxe
	# the other roles keep theirs
	grep -q " quiet nodeforge.server=" tree/ipxe/mac/52-54-00-00-00-01.ipxe
}

@test "ROLE=ARGS replaces them, with a warning naming what it drops" {
	run pxe --kernel-args "compute=console=ttyS0,115200"
	status_is 0
	[[ "$output" == *"warning: '--kernel-args compute=console=ttyS0,115200' replaces the kernel arguments of role 'compute' and drops 'quiet'; '--kernel-args compute+=ARGS' adds to them instead"* ]]
	grep -q "initrd=[^ ]* console=ttyS0,115200 nodeforge.server=" tree/ipxe/mac/52-54-00-00-01-04.ipxe
	# replacing with a superset drops nothing and says nothing
	run pxe --kernel-args "compute=quiet nosmt"
	status_is 0
	[[ "$output" != *"replaces the kernel"* ]]
}

@test "a role no node has is a usage error naming the roles" {
	run pxe --kernel-args "comptue=console=ttyS0"
	status_is 2
	[[ "$output" == *"nodeforge pxe: '--kernel-args comptue': no node of the inventory has role 'comptue' (did you mean 'compute'?); roles: "*compute* ]]
	[[ "$output" == *controller* && "$output" == *login* ]]
	[ ! -e tree/ipxe ]
	run pxe --kernel-args "+=quiet"
	status_is 2
}
