# Shared by the disk tests: a copy of the recorded /sys tree with dev/
# entries made as small image files (the sysfs sizes stay the real ones).
nf_disk_sysroot() {
	cp -a "$FIXTURES/disk/sysroot" sys-root
	mkdir -p sys-root/dev
	local d
	for d in nvme0n1 nvme1n1 nvme2n1 sda sdb vda; do
		truncate -s 40M "sys-root/dev/$d"
	done
	mkfs.ext4 -q -F -L enroot -U 6f1c2d3e-0000-4000-8000-00000000e001 sys-root/dev/nvme1n1
	printf 'label: gpt\n,8M,U,\n,,L,\n' | sfdisk -q sys-root/dev/nvme2n1
	mkfs.vfat -n STICK -i 1234abcd sys-root/dev/sdb >/dev/null
	# sda: GPT with a filesystem inside partition 2
	printf 'label: gpt\n,8M,U,\n,,L,\n' | sfdisk -q sys-root/dev/sda
	mkfs.ext4 -q -F -L data -E offset=$((9 * 1024 * 1024)) sys-root/dev/sda 16M
}
