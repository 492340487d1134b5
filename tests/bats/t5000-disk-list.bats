#!/usr/bin/env bats
# nodeforge disk list: sysfs attributes from a fixture tree, contents
# probed by libblkid from image files.
load helper
load disk-helper

@test "disk list --sysroot shows every whole disk, not loop devices" {
	nf_disk_sysroot
	run nf disk list --sysroot sys-root
	status_is 0
	[[ "$output" == *"/dev/nvme0n1"* ]]
	[[ "$output" == *"/dev/sdb"* ]]
	[[ "$output" != *"loop0"* ]]
	[ "$(echo "$output" | grep -c '^/dev/')" -eq 6 ]
}

@test "disk list --json: transport, model, rotational, removable from sysfs" {
	nf_disk_sysroot
	run nf --json disk list --sysroot sys-root
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = {x["name"]: x for x in json.load(sys.stdin)["disks"]}
assert sorted(d) == ["nvme0n1", "nvme1n1", "nvme2n1", "sda", "sdb", "vda"], sorted(d)
assert d["nvme0n1"]["transport"] == "nvme"
assert d["nvme0n1"]["size"] == 3750748848 * 512
assert d["nvme0n1"]["model"] == "SAMSUNG MZQL21T9HCJR-00A07"
assert d["nvme0n1"]["rotational"] is False and d["nvme0n1"]["removable"] is False
assert d["sda"]["transport"] == "sata" and d["sda"]["rotational"] is True
assert d["sdb"]["transport"] == "usb" and d["sdb"]["removable"] is True
assert d["vda"]["transport"] == "virtio" and d["vda"]["model"] is None
assert d["nvme0n1"]["pttype"] is None and d["nvme0n1"]["fstype"] is None
'
}

@test "disk list --json: filesystems, labels, UUIDs, partitions" {
	nf_disk_sysroot
	run nf disk list --json --sysroot sys-root
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = {x["name"]: x for x in json.load(sys.stdin)["disks"]}
n1 = d["nvme1n1"]
assert n1["fstype"] == "ext4" and n1["label"] == "enroot", n1
assert n1["uuid"] == "6f1c2d3e-0000-4000-8000-00000000e001"
assert d["sdb"]["fstype"] == "vfat" and d["sdb"]["label"] == "STICK"
assert d["sdb"]["uuid"] == "1234-ABCD", d["sdb"]["uuid"]
p = d["sda"]["partitions"]
assert d["sda"]["pttype"] == "gpt" and len(p) == 2, d["sda"]
assert p[0]["number"] == 1 and p[0]["start"] == 1048576 and p[0]["size"] == 8 << 20
assert p[0]["type"] == "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
assert p[1]["fstype"] == "ext4" and p[1]["label"] == "data", p[1]
assert p[0]["fstype"] is None
'
}

@test "disk list probes image files given on the command line" {
	truncate -s 64M a.img
	printf 'label: dos\n,16M,c\n,,83\n' | sfdisk -q a.img
	mkfs.vfat --offset 2048 -n BOOT a.img 16384 >/dev/null
	truncate -s 320M x.img
	mkfs.xfs -q -L xfsdata x.img
	run nf disk list --json a.img x.img
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = {x["name"]: x for x in json.load(sys.stdin)["disks"]}
a = d["a.img"]
assert a["transport"] == "file" and a["size"] == 64 << 20
assert a["pttype"] == "dos" and [p["type"] for p in a["partitions"]] == ["0xc", "0x83"], a
assert a["partitions"][0]["fstype"] == "vfat" and a["partitions"][0]["label"] == "BOOT"
assert d["x.img"]["fstype"] == "xfs" and d["x.img"]["label"] == "xfsdata"
'
	run nf disk list a.img
	status_is 0
	[[ "${lines[1]}" == "a.img "*"64.0M file"*"dos"* ]]
	[[ "$output" == *"part 1"*"vfat"*"BOOT"* ]]
}

@test "disk list: a missing file is a clear error, exit 1" {
	run nf disk list nosuch.img
	status_is 1
	[[ "$output" == "nodeforge disk: cannot read 'nosuch.img': No such file or directory" ]]
}

@test "disk list: an unreadable device is listed with the reason" {
	nf_disk_sysroot
	rm sys-root/dev/vda
	run nf disk list --json --sysroot sys-root
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = {x["name"]: x for x in json.load(sys.stdin)["disks"]}
assert "cannot open" in d["vda"]["error"], d["vda"]
'
}

@test "disk: unknown subcommand and missing subcommand are usage errors" {
	run nf disk frob
	status_is 2
	[[ "$output" == *"unknown subcommand 'frob'"* ]]
	run nf disk
	status_is 2
}
