#!/usr/bin/env bats
# nodeforge disk pick RULE: the one disk a rule selects, or a clear refusal.
load helper
load disk-helper

@test "disk pick: smallest empty non-removable NVMe" {
	nf_disk_sysroot
	run nf disk pick --sysroot sys-root 'transport=nvme,removable=0,empty,smallest'
	status_is 0
	[ "$output" = "/dev/nvme0n1" ]
}

@test "disk pick: the enroot cache NVMe by model and label" {
	nf_disk_sysroot
	run nf disk pick --sysroot sys-root 'model~*mzql23t8*,fstype=ext4,label=enroot'
	status_is 0
	[ "$output" = "/dev/nvme1n1" ]
	run nf disk pick --sysroot sys-root --json 'size>=3.84T,size<4T'
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin)["disks"]; assert [x["name"] for x in d]==["nvme1n1"], d'
}

@test "disk pick: largest, size units, rotational" {
	nf_disk_sysroot
	run nf disk pick --sysroot sys-root 'largest'
	[ "$output" = "/dev/sda" ]
	run nf disk pick --sysroot sys-root 'rotational=1,removable=1'
	[ "$output" = "/dev/sdb" ]
	# 32017047552 bytes: more than 29.8Gi, less than 32.1G
	run nf disk pick --sysroot sys-root 'size>29.8Gi,size<32.1G'
	status_is 0
	[ "$output" = "/dev/sdb" ]
}

@test "disk pick: nothing matches is a clear failure (exit 1)" {
	nf_disk_sysroot
	run nf disk pick --sysroot sys-root 'transport=nvme,size>=10T'
	status_is 1
	[ "$output" = "nodeforge disk: no disk matches 'transport=nvme,size>=10T' (6 disks seen)" ]
}

@test "disk pick: several matches without a tie-breaker are refused, named" {
	nf_disk_sysroot
	run nf disk pick --sysroot sys-root 'transport=nvme'
	status_is 1
	[[ "$output" == *"3 disks match 'transport=nvme': nvme0n1, nvme1n1, nvme2n1; add 'smallest', 'largest' or 'first'"* ]]
}

@test "disk pick: identical sizes still tie under smallest unless 'first'" {
	nf_disk_sysroot
	run nf disk pick --sysroot sys-root 'transport=nvme,smallest'
	status_is 1
	[[ "$output" == *"2 disks tie under 'transport=nvme,smallest': nvme0n1, nvme2n1; add 'first'"* ]]
	run nf disk pick --sysroot sys-root 'transport=nvme,smallest,first'
	status_is 0
	[ "$output" = "/dev/nvme0n1" ]
}

@test "disk pick: a malformed rule is a usage error naming the term" {
	run nf disk pick 'transport=nvme,colour=red' x.img
	status_is 2
	[[ "$output" == *"unknown key 'colour'"* ]]
	run nf disk pick 'size>=lots'
	status_is 2
	[[ "$output" == *"bad size 'lots' in term 'size>=lots'"* ]]
	run nf disk pick
	status_is 2
}

@test "disk pick among image files given on the command line" {
	truncate -s 64M a.img
	truncate -s 32M b.img
	mkfs.ext4 -q b.img
	truncate -s 48M c.img
	run nf disk pick 'empty,largest' a.img b.img c.img
	status_is 0
	[ "$output" = "a.img" ]
	run nf disk pick '!empty' a.img b.img c.img
	[ "$output" = "b.img" ]
}
