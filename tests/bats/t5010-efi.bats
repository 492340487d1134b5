#!/usr/bin/env bats
# nodeforge efi: boot entries in a fixture efivarfs directory.
load helper

GUID=8be4df61-93ca-11d2-aa0d-00e098032b8c

efi_setup() {
	cp -a "$FIXTURES/efi/sysroot" sr
	V=sr/sys/firmware/efi/efivars
	(cd $V && sha256sum * | sort) > before.sum
}

hexof() { od -An -tx1 -v "$1" | tr -s ' \n' ' ' | sed 's/^ //;s/ $//'; }

# Every variable except those named is unchanged
others_unchanged() {
	(cd $V && sha256sum * | sort) > after.sum
	local x
	for x in "$@"; do
		grep -v -- "  $x-$GUID\$" before.sum > b.tmp; mv b.tmp before.sum
		grep -v -- "  $x-$GUID\$" after.sum > a.tmp; mv a.tmp after.sum
	done
	diff before.sum after.sum
}

@test "efi list: entries, order, current, network marks" {
	efi_setup
	run nf efi list --sysroot sr
	status_is 0
	[ "${lines[0]}" = "BootCurrent: Boot0000" ]
	[ "${lines[1]}" = "BootNext: -" ]
	[ "${lines[2]}" = "BootOrder: 0001,0000,0003,0002" ]
	[[ "${lines[3]}" == "*Boot0000 UEFI PXEv4 (MAC:525400123456)"*"MAC(525400123456,1)"*"[network]" ]]
	[[ "${lines[4]}" == "*Boot0001 debian "*"HD(1,GPT,4b2b9c7e-6b61-4f3e-9d2c-2f7a4c1a0001,0x800,0x100000)/File(\\EFI\\debian\\shimx64.efi)" ]]
	[[ "${lines[5]}" == " Boot0002 old install"* ]]
	[[ "${lines[6]}" == *"/Uri()  [network]" ]]
}

@test "efi list --json" {
	efi_setup
	run nf efi list --json --efivars $V
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["boot_current"] == "Boot0000" and d["boot_next"] is None
assert d["boot_order"] == ["0001", "0000", "0003", "0002"]
e = {x["name"]: x for x in d["entries"]}
assert e["Boot0000"]["network"] and not e["Boot0001"]["network"]
assert not e["Boot0002"]["active"] and e["Boot0003"]["active"]
assert e["Boot0001"]["description"] == "debian"
'
}

@test "efi bootnext pxe writes exactly BootNext = 07000000 0000" {
	efi_setup
	run nf efi bootnext pxe --sysroot sr
	status_is 0
	[ "$output" = "BootNext: Boot0000" ]
	[ "$(hexof $V/BootNext-$GUID)" = "07 00 00 00 00 00" ]
	others_unchanged BootNext
	run nf efi list --sysroot sr
	[ "${lines[1]}" = "BootNext: Boot0000" ]
}

@test "efi bootnext by number and by description" {
	efi_setup
	run nf efi --sysroot sr bootnext Boot0003
	status_is 0
	[ "$(hexof $V/BootNext-$GUID)" = "07 00 00 00 03 00" ]
	run nf efi --sysroot sr bootnext debian
	status_is 0
	[ "$(hexof $V/BootNext-$GUID)" = "07 00 00 00 01 00" ]
	others_unchanged BootNext
}

@test "efi bootorder rewrites exactly BootOrder, keeping its attributes" {
	efi_setup
	run nf efi bootorder --sysroot sr 0003 debian 0000
	status_is 0
	[ "$output" = "BootOrder: 0003,0001,0000" ]
	[ "$(hexof $V/BootOrder-$GUID)" = "07 00 00 00 03 00 01 00 00 00" ]
	others_unchanged BootOrder
}

@test "efi bootorder/bootnext refuse unknown and repeated entries, changing nothing" {
	efi_setup
	run nf efi bootorder --sysroot sr 0003 0009
	status_is 1
	[ "$output" = "nodeforge efi: no boot entry 'Boot0009'" ]
	run nf efi bootorder --sysroot sr 0003 Boot0003
	status_is 1
	[[ "$output" == *"'Boot0003' appears twice"* ]]
	run nf efi bootnext --sysroot sr nosuch
	status_is 1
	[[ "$output" == *"no boot entry 'nosuch'"* ]]
	others_unchanged
	[ ! -e $V/BootNext-$GUID ]
}

@test "efi add: a disk entry for the ESP of a GPT image, first in order" {
	efi_setup
	truncate -s 64M disk.img
	printf 'label: gpt\nlabel-id: 1B3A5E2C-9F44-4B7A-8C1D-2E3F4A5B6C7D\n,16M,U,\n,,L,\n' | sfdisk -q disk.img
	pu=$(nf disk list --json disk.img | python3 -c 'import json,sys; print(json.load(sys.stdin)["disks"][0]["partitions"][0]["partuuid"])')
	run nf efi add --sysroot sr --disk disk.img --part 1 --loader '\EFI\BOOT\BOOTX64.EFI' --label nodeforge --first
	status_is 0
	[ "$output" = "Boot0004" ]
	run nf efi list --sysroot sr
	status_is 0
	[ "${lines[2]}" = "BootOrder: 0004,0001,0000,0003,0002" ]
	[[ "${lines[7]}" == "*Boot0004 nodeforge "*"HD(1,GPT,$pu,0x800,0x8000)/File(\\EFI\\BOOT\\BOOTX64.EFI)" ]]
	others_unchanged Boot0004 BootOrder
}

@test "efi add refuses a disk without the GPT partition" {
	efi_setup
	truncate -s 8M plain.img
	run nf efi add --sysroot sr --disk plain.img --part 1 --loader '\EFI\BOOT\BOOTX64.EFI' --label x
	status_is 1
	[[ "$output" == *"'plain.img' has no GPT partition 1"* ]]
	run nf efi add --sysroot sr --disk plain.img
	status_is 2
}

@test "efi without EFI firmware: clear message, exit 1" {
	mkdir -p bios/sys/firmware
	run nf efi list --sysroot bios
	status_is 1
	[ "$output" = "nodeforge efi: no EFI firmware interface ('bios/sys/firmware/efi' is missing): the system was booted in legacy BIOS mode" ]
	run nf efi bootnext pxe --sysroot bios
	status_is 1
}

@test "efi: a truncated variable is a clear error" {
	efi_setup
	printf '\007\000' > $V/BootOrder-$GUID
	run nf efi list --sysroot sr
	status_is 1
	[[ "$output" == *"BootOrder-$GUID' is shorter than its attributes"* ]]
}
