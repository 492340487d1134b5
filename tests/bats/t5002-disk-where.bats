#!/usr/bin/env bats
# nodeforge disk where PATH: the mount, filesystem and disk holding a path
# (fixture mountinfo and /sys/dev/block).
load helper

@test "disk where: the enroot cache is on nvme1n1 (xfs, bind of /enroot)" {
	run nf disk where --sysroot "$FIXTURES/disk/sysroot" /var/lib/enroot/cache
	status_is 0
	[ "$output" = "/var/lib/enroot/cache: mounted on /var/lib/enroot (xfs from /dev/nvme1n1p1 259:3), disk nvme1n1" ]
	run nf disk where --json --sysroot "$FIXTURES/disk/sysroot" /var/lib/enroot/cache
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d == {"path": "/var/lib/enroot/cache", "mountpoint": "/var/lib/enroot", "root": "/enroot",
             "fstype": "xfs", "source": "/dev/nvme1n1p1", "devno": "259:3", "disk": "nvme1n1"}, d
'
}

@test "disk where: a path beside a mount point is on the root filesystem" {
	run nf disk where --sysroot "$FIXTURES/disk/sysroot" /raidx/data
	status_is 0
	[[ "$output" == *"mounted on / (ext4 from /dev/nvme0n1p2 259:1), disk nvme0n1" ]]
}

@test "disk where: relative paths and '..' are refused" {
	run nf disk where --sysroot "$FIXTURES/disk/sysroot" var/lib
	status_is 1
	[[ "$output" == *"'var/lib' is not a clean absolute path"* ]]
	run nf disk where --sysroot "$FIXTURES/disk/sysroot" /var/../etc
	status_is 1
	run nf disk where
	status_is 2
}
