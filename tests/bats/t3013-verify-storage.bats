#!/usr/bin/env bats
# Storage checks against fixture sysroots (recorded /sys/block and
# mountinfo, no real disks or EFI firmware): the enroot cache's mount, file
# system and disk (the profile's rule), and the BootNext warning of an
# installed node.
load verify_helper

GUID=8be4df61-93ca-11d2-aa0d-00e098032b8c

# One check of the last --json output: "verdict|seen|expected|remedy|reason"
check_of() {
	echo "$output" | jq -r --arg id "$1" '.checks[] | select(.id == $id) |
		[.verdict, .seen // "", .expected // "", .remedy // "", .reason // ""] | join("|")'
}

@test "storage (fixture, no hardware): cache on its own xfs mount on the rule's disk passes" {
	vfx pass
	vrun --json --only storage
	status_is 0
	[ "$(check_of storage.enroot_cache.mount)" = "pass|/mnt/nvme (xfs from /dev/nvme1n1)|/mnt/nvme/enroot/cache on the /mnt/nvme mount||" ]
	[ "$(check_of storage.enroot_cache.fs)" = "pass|xfs on /mnt/nvme (from /dev/nvme1n1)|xfs on /mnt/nvme||" ]
	[ "$(check_of storage.enroot_cache.device)" = "pass|/mnt/nvme from /dev/nvme1n1 (disk nvme1n1)|/mnt/nvme on nvme1n1, the disk 'transport=nvme,removable=0,largest' picks||" ]
	# the whole compute set still passes on the fixture
	vrun --json
	status_is 0
}

@test "storage (fixture, no hardware): cache not a mount point fails mount, root cause first" {
	expect_root fail-storage-mount storage.enroot_cache.mount \
		"/mnt/nvme is not a mount point: /mnt/nvme/enroot/cache is on / (ext4 from /dev/nvme0n1p2)"
	[[ "$(check_of storage.enroot_cache.mount)" == *"|nodeforge disk pick 'transport=nvme,removable=0,largest'   # then mount that disk on /mnt/nvme and add it to /etc/fstab|" ]]
	[ "$(verdict_of storage.enroot_cache.fs)" = "skip because storage.enroot_cache.mount failed" ]
	[ "$(verdict_of storage.enroot_cache.device)" = "skip because storage.enroot_cache.mount failed" ]
}

@test "storage (fixture, no hardware): cache on the wrong disk fails device with expected vs seen" {
	expect_root fail-storage-device storage.enroot_cache.device \
		"/mnt/nvme from /dev/nvme0n1p3: disk nvme0n1, not nvme1n1"
	[ "$(check_of storage.enroot_cache.device)" = "fail|/mnt/nvme from /dev/nvme0n1p3: disk nvme0n1, not nvme1n1|/mnt/nvme on nvme1n1, the disk 'transport=nvme,removable=0,largest' picks|umount /mnt/nvme; mount /dev/nvme1n1 (or its partition) on /mnt/nvme and fix /etc/fstab   # nodeforge disk pick 'transport=nvme,removable=0,largest'|" ]
	[ "$(verdict_of storage.enroot_cache.mount)" = "pass /mnt/nvme (xfs from /dev/nvme0n1p3)" ]
	[ "$(verdict_of storage.enroot_cache.fs)" = "pass xfs on /mnt/nvme (from /dev/nvme0n1p3)" ]
}

@test "storage (fixture, no hardware): cache with the wrong file system fails fs" {
	expect_root fail-storage-fs storage.enroot_cache.fs "ext4 on /mnt/nvme (from /dev/nvme1n1)"
	[ "$(check_of storage.enroot_cache.fs)" = "fail|ext4 on /mnt/nvme (from /dev/nvme1n1)|xfs on /mnt/nvme|umount /mnt/nvme && mkfs.xfs -f /dev/nvme1n1 && mount /dev/nvme1n1 /mnt/nvme   # the cache refills on demand|" ]
	[ "$(verdict_of storage.enroot_cache.device)" = "pass /mnt/nvme from /dev/nvme1n1 (disk nvme1n1)" ]
}

@test "storage (fixture, no hardware): a rule that now picks another disk fails device" {
	vfx pass
	# a larger NVMe appears: 'largest' no longer names the cache disk
	jq '.storage.enroot_cache.rule = "transport=nvme,removable=0,smallest"' \
		"$SYS/etc/nodeforge/profile.json" > "$SCRATCH/p.json"
	mv "$SCRATCH/p.json" "$SYS/etc/nodeforge/profile.json"
	vrun --json --only storage
	status_is 3
	[ "$(verdict_of storage.enroot_cache.device)" = "fail /mnt/nvme from /dev/nvme1n1: disk nvme1n1, not nvme0n1" ]
}

@test "storage (fixture, no hardware): content terms of the rule are not applied, and say so" {
	vfx pass
	jq '.storage.enroot_cache.rule = "transport=nvme,empty,largest"' \
		"$SYS/etc/nodeforge/profile.json" > "$SCRATCH/p.json"
	mv "$SCRATCH/p.json" "$SYS/etc/nodeforge/profile.json"
	vrun --json --only storage
	status_is 0
	[[ "$(check_of storage.enroot_cache.device)" == "pass|"*"|/mnt/nvme on nvme1n1, the disk 'transport=nvme,empty,largest' picks (empty not applied: they describe the disk before provisioning)||" ]]
}

@test "storage (fixture, no hardware): no disk matches the rule" {
	vfx pass
	jq '.storage.enroot_cache.rule = "transport=sata"' \
		"$SYS/etc/nodeforge/profile.json" > "$SCRATCH/p.json"
	mv "$SCRATCH/p.json" "$SYS/etc/nodeforge/profile.json"
	vrun --json --only storage
	status_is 3
	[ "$(verdict_of storage.enroot_cache.device)" = "fail no disk matches 'transport=sata' (2 disks seen)" ]
}

@test "storage (fixture, no hardware): skipped, not passed, without an enroot cache in the profile" {
	vfx pass
	jq 'del(.storage.enroot_cache)' "$SYS/etc/nodeforge/profile.json" > "$SCRATCH/p.json"
	mv "$SCRATCH/p.json" "$SYS/etc/nodeforge/profile.json"
	vrun --json --only storage
	status_is 0
	for id in mount fs device; do
		[ "$(verdict_of storage.enroot_cache.$id)" = "skip the profile sets no enroot cache" ]
	done
}

# An installed node with the EFI variables of tests/fixtures/efi (Boot0000
# PXE, Boot0001 disk, BootOrder 0001,0000,0003,0002)
efi_node() {
	vfx pass
	mkdir -p "$SYS/sys/firmware"
	cp -a "$FIXTURES/efi/sysroot/sys/firmware/efi" "$SYS/sys/firmware/"
	echo '{}' > "$SYS/etc/nodeforge/installed.manifest.json"
}

@test "boot_next (fixture EFI variables): BootNext on the PXE entry warns, the gate still passes" {
	efi_node
	# as 'nodeforge efi bootnext pxe' leaves it
	run nf efi bootnext pxe --sysroot "$SYS"
	status_is 0
	vrun --json
	status_is 0
	[ "$(echo "$output" | jq -r '.result + " " + (.counts.warn | tostring)')" = "pass 1" ]
	# the text report's summary says the JSON's counts (the number of
	# checks comes from the check tables, not from this test)
	local summary
	summary=$(echo "$output" | jq -r '.counts | "\(.pass) passed, \(.fail) failed, \(.hung) hung, \(.skip) skipped, \(.warn) warned"')
	[[ "$summary" == *" passed, 0 failed, 0 hung, 2 skipped, 1 warned" ]]
	[ "$(check_of storage.install.boot_next)" = "warn|reboot will boot from network: BootNext is Boot0000 'UEFI PXEv4 (MAC:525400123456)'|the next reboot boots from the installed disk|nodeforge efi bootnext 0001   # unless a re-provisioning is intended|" ]
	# the text report shows it with its remedy, and counts it
	vrun
	status_is 0
	[[ "$output" == *"WARN storage.install.boot_next: reboot will boot from network:"*"BootNext is"*"Boot0000"* ]]
	[[ "$output" == *"-> nodeforge efi bootnext 0001"* ]]
	[ "${lines[-1]}" = "compute: PASS: $summary" ]
	# gate mode: slurmd may start, the login banner says why to look
	vrun --root "$SYS" --gate
	status_is 0
	grep -qx "nodeforge verify: PASS (warning: storage.install.boot_next: reboot will boot from network: BootNext is Boot0000 'UEFI PXEv4 (MAC:525400123456)')" "$SYS/run/motd.d/nodeforge"
}

@test "boot_next (fixture EFI variables): BootNext on the disk entry is not reported" {
	efi_node
	run nf efi bootnext debian --sysroot "$SYS"
	status_is 0
	vrun --json
	status_is 0
	[ "$(check_of storage.install.boot_next)" = "pass|BootNext is Boot0001 'debian'|the next reboot boots from the installed disk||" ]
	[ "$(echo "$output" | jq -r .counts.warn)" = 0 ]
	vrun
	[[ "$output" != *"warn"* ]]
	# no BootNext at all: BootOrder (disk first) applies
	rm "$SYS/sys/firmware/efi/efivars/BootNext-$GUID"
	vrun --json --only storage.install
	[ "$(verdict_of storage.install.boot_next)" = "pass no BootNext: BootOrder applies" ]
}

@test "boot_next (fixture): skipped without the installed manifest or without EFI" {
	efi_node
	run nf efi bootnext pxe --sysroot "$SYS"
	rm "$SYS/etc/nodeforge/installed.manifest.json"
	vrun --json --only storage.install
	status_is 0
	[ "$(verdict_of storage.install.boot_next)" = "skip not installed to disk (no /etc/nodeforge/installed.manifest.json)" ]
	echo '{}' > "$SYS/etc/nodeforge/installed.manifest.json"
	rm -rf "$SYS/sys/firmware"
	vrun --json --only storage.install
	status_is 0
	[[ "$(verdict_of storage.install.boot_next)" == "skip not an EFI system: no EFI firmware interface ('$SYS/sys/firmware/efi' is missing)"* ]]
}

@test "boot_next (fixture EFI variables): JUnit keeps a warning a passed case with its message" {
	efi_node
	run nf efi bootnext pxe --sysroot "$SYS"
	vrun --junit "$SCRATCH/v.xml"
	status_is 0
	grep -q 'failures="0" errors="0"' "$SCRATCH/v.xml"
	grep -q "<system-out>warning: reboot will boot from network: BootNext is Boot0000" "$SCRATCH/v.xml"
}
