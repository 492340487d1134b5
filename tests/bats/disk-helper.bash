# Shared by the disk tests: a copy of the recorded /sys tree with dev/
# entries made as small image files (the sysfs sizes stay the real ones).
# Built once per test file (setup_file), copied into each test's scratch.
nf_disk_sysroot_build() {
	local r=$BATS_FILE_TMPDIR/sys-root d
	cp -a "$FIXTURES/disk/sysroot" "$r"
	mkdir -p "$r/dev"
	for d in nvme0n1 nvme1n1 nvme2n1 sda sdb vda; do
		truncate -s 40M "$r/dev/$d"
	done
	mkfs.ext4 -q -F -L enroot -U 6f1c2d3e-0000-4000-8000-00000000e001 "$r/dev/nvme1n1"
	printf 'label: gpt\n,8M,U,\n,,L,\n' | sfdisk -q "$r/dev/nvme2n1"
	mkfs.vfat -n STICK -i 1234abcd "$r/dev/sdb" >/dev/null
	# sda: GPT with a filesystem inside partition 2
	printf 'label: gpt\n,8M,U,\n,,L,\n' | sfdisk -q "$r/dev/sda"
	mkfs.ext4 -q -F -L data -E offset=$((9 * 1024 * 1024)) "$r/dev/sda" 16M
}

setup_file() { nf_disk_sysroot_build; }

nf_disk_sysroot() {
	cp -a --sparse=always "$BATS_FILE_TMPDIR/sys-root" sys-root
}
