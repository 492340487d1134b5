#!/usr/bin/env bats
# nodeforge install: argument checks and refusals that happen before any
# disk is touched (the full install runs in tests/e2e).
load helper

mkimage() {
	mkdir -p root/boot root/etc
	echo k > root/boot/vmlinuz-6.1.0
	echo node > root/etc/hostname
	nf pack root -o img.tar.zst >/dev/null
	nf keys signing -o keys >/dev/null
	nf sign img.tar.zst.manifest.json --key keys/signing.key >/dev/null
}

@test "install: --image, --pubkey and --disk are required" {
	run nf install --image x.tar.zst --disk /dev/null
	status_is 2
	[[ "$output" == *"--image, --pubkey and --disk are required"* ]]
	run nf install --image x --pubkey p --disk d --esp-size lots
	status_is 2
	[[ "$output" == *"bad ESP size 'lots'"* ]]
}

@test "install: a tampered manifest is refused before the disk is looked at" {
	mkimage
	truncate -s 1G disk.img
	sed -i 's/hostname/hostnamX/' img.tar.zst.manifest.json
	run nf install --image img.tar.zst --pubkey keys/signing.pub --disk disk.img --no-efi
	status_is 1
	[[ "$output" == *"signature"* ]]
	[ "$(nf disk list --json disk.img | python3 -c 'import json,sys; d=json.load(sys.stdin)["disks"][0]; print(d["pttype"], d["fstype"])')" = "None None" ]
}

@test "install: the wrong key is refused" {
	mkimage
	nf keys signing -o other >/dev/null
	run nf install --image img.tar.zst --pubkey other/signing.pub --disk /dev/null --no-efi
	status_is 1
	[[ "$output" == "nodeforge install: "*"signature"* ]]
}

@test "install: a file is not a disk" {
	mkimage
	truncate -s 1G disk.img
	run nf -q install --image img.tar.zst --pubkey keys/signing.pub --disk disk.img --no-efi
	status_is 1
	[ "$output" = "nodeforge install: 'disk.img' is not a block device" ]
}

@test "install --disk auto refuses when the rule matches nothing" {
	mkimage
	run nf install --image img.tar.zst --pubkey keys/signing.pub --disk auto --disk-rule 'size>=1P' --no-efi
	status_is 1
	[[ "$output" == *"no disk matches 'size>=1P'"* ]]
}
