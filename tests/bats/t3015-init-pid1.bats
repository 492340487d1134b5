#!/usr/bin/env bats
# The /init the containers facet writes into an image (tests/fixtures/
# apply/compute/init, kept equal to the build's output by test_apply),
# run unchanged as PID 1 the way the kernel starts it: in a new pid and
# mount namespace, chrooted into a tmpfs that stands in for the initramfs
# (rootfs), with the kernel's environment (HOME=/ TERM=linux, no PATH).
# The stand-in initramfs holds the host's own dash, GNU tar, util-linux
# mount/umount/switch_root and coreutils with their libraries, laid out
# as on Debian (merged /usr, /usr/sbin/init -> /lib/systemd/systemd);
# its "systemd" is a script that says which root it runs from.
#
# Whatever fails, PID 1 must live: it either switch_roots into a complete
# copy or execs the initramfs's own /sbin/init, saying on the console why.
load helper

INIT=$FIXTURES/apply/compute/init

# copy the host's binary $1 and the libraries it loads into $R
put() {
	local b=$1 l
	mkdir -p "$R${b%/*}"
	cp -L "$b" "$R$b"
	for l in $(ldd "$b" 2>/dev/null | grep -o '/[^ ]*'); do
		[ -e "$R$l" ] && continue
		mkdir -p "$R${l%/*}"
		cp -L "$l" "$R$l"
	done
}

# The stand-in initramfs's contents, as a directory tree $SCRATCH/tree
# the namespace copies into its tmpfs
init_tree() {
	[ "$(id -u)" = 0 ] || skip "needs root for namespaces"
	command -v unshare > /dev/null || skip "no unshare"
	unshare --pid --fork --mount true 2> /dev/null || skip "no pid/mount namespaces here"
	R=$SCRATCH/tree
	mkdir -p "$R/usr/bin" "$R/usr/sbin" "$R/usr/lib/x86_64-linux-gnu" "$R/usr/lib64" \
		"$R/etc" "$R/proc" "$R/dev" "$R/tmp" "$R/usr/lib/systemd"
	ln -s usr/bin "$R/bin"
	ln -s usr/sbin "$R/sbin"
	ln -s usr/lib "$R/lib"
	ln -s usr/lib64 "$R/lib64"
	local b
	for b in /usr/bin/dash /usr/bin/tar /usr/sbin/switch_root /usr/sbin/chroot \
		/usr/bin/mount /usr/bin/umount /usr/bin/mkdir /usr/bin/rmdir \
		/usr/bin/stat /usr/bin/cat /usr/bin/echo /usr/bin/test; do
		[ -x "$b" ] || skip "no $b on this host"
		put "$b"
	done
	ln -s dash "$R/usr/bin/sh"
	# Debian's layout: an absolute link into /lib, which a test for
	# -x on $NEWROOT/sbin/init resolves in the old root, not the new one
	ln -s /lib/systemd/systemd "$R/usr/sbin/init"
	cat > "$R/usr/lib/systemd/systemd" <<-'EOF'
	#!/bin/sh
	if [ "$(stat -c %d /)" = "$(cat /etc/initramfs-dev)" ]; then
		where="the initramfs"
		[ "$(stat -c %d /.nodeforge-root 2> /dev/null)" != "$(cat /etc/initramfs-dev)" ] &&
			[ -d /.nodeforge-root ] && where="$where, tmpfs still mounted"
	else
		where="a copy"
	fi
	echo "stand-in systemd: pid $$, root is $where, args $*"
	EOF
	chmod 0755 "$R/usr/lib/systemd/systemd"
	cp "$INIT" "$R/init"
	chmod 0755 "$R/init"
}

# Run /init as PID 1 in the stand-in initramfs (a 256 MiB tmpfs) inside
# new pid and mount namespaces.  $status is PID 1's exit status: when
# PID 1 exits the namespace dies, where the kernel would panic.
run_init() {
	run unshare --pid --fork --mount --propagation private sh -c '
		set -e
		mount -t tmpfs -o size=256m,mode=0755 nf-initramfs "$1"
		cp -a "$2/." "$1/"
		stat -c %d "$1" > "$1/etc/initramfs-dev"
		exec env -i HOME=/ TERM=linux "$(command -v chroot)" "$1" /init quiet' \
		sh "$SCRATCH/mnt" "$R"
	echo "$output"
}

@test "init: a complete copy: PID 1 switch_roots and runs the copy's init" {
	init_tree
	mkdir "$SCRATCH/mnt"
	run_init
	[ "$status" = 0 ]
	[[ "$output" == *"stand-in systemd: pid 1, root is a copy, args quiet"* ]]
	[[ "$output" != *"nodeforge:"* ]]
}

@test "init: no switch_root in the image: PID 1 lives on in the initramfs and says why" {
	init_tree
	rm "$R/usr/sbin/switch_root"
	mkdir "$SCRATCH/mnt"
	run_init
	[ "$status" = 0 ]
	[[ "$output" == *"nodeforge: "*"no switch_root"* ]]
	[[ "$output" == *"stand-in systemd: pid 1, root is the initramfs, args quiet"* ]]
}

@test "init: the archiving tar dies midway (stand-in: it stops before usr/lib/systemd, exit 2): PID 1 falls back" {
	init_tree
	mv "$R/usr/bin/tar" "$R/usr/bin/tar.gnu"
	# its stream ends between entries, which the extracting tar takes
	# for a whole archive (exit 0)
	cat > "$R/usr/bin/tar" <<-'EOF'
	#!/bin/sh
	case " $* " in
	*" -cf "*) /usr/bin/tar.gnu --exclude=./usr/lib/systemd "$@"; exit 2 ;;
	esac
	exec /usr/bin/tar.gnu "$@"
	EOF
	chmod 0755 "$R/usr/bin/tar"
	mkdir "$SCRATCH/mnt"
	run_init
	[ "$status" = 0 ]
	[[ "$output" == *"nodeforge: "*"tar"*"exit 2"* ]]
	[[ "$output" == *"stand-in systemd: pid 1, root is the initramfs, args quiet"* ]]
}

@test "init: too little memory (stand-in: mount caps the tmpfs at 1 MiB): PID 1 falls back and frees the tmpfs" {
	init_tree
	mv "$R/usr/bin/mount" "$R/usr/bin/mount.real"
	cat > "$R/usr/bin/mount" <<-'EOF'
	#!/bin/sh
	case " $* " in
	*" nodeforge-root "*) exec /usr/bin/mount.real "$@" -o size=1m ;;
	esac
	exec /usr/bin/mount.real "$@"
	EOF
	chmod 0755 "$R/usr/bin/mount"
	mkdir "$SCRATCH/mnt"
	run_init
	[ "$status" = 0 ]
	[[ "$output" == *"No space left on device"* ]]
	[[ "$output" == *"nodeforge: "*"copy"* ]]
	[[ "$output" == *"stand-in systemd: pid 1, root is the initramfs, args quiet"* ]]
}

@test "init: /sbin/init missing in the copy (its target on another file system): PID 1 falls back" {
	init_tree
	mkdir "$SCRATCH/mnt"
	# --one-file-system leaves out what is mounted below /: the init
	# the link points to lives on its own tmpfs
	run unshare --pid --fork --mount --propagation private sh -c '
		set -e
		mount -t tmpfs -o size=256m,mode=0755 nf-initramfs "$1"
		cp -a "$2/." "$1/"
		mv "$1/usr/lib/systemd/systemd" "$1/tmp/systemd"
		mount -t tmpfs -o size=1m,mode=0755 nf-systemd "$1/usr/lib/systemd"
		mv "$1/tmp/systemd" "$1/usr/lib/systemd/systemd"
		stat -c %d "$1" > "$1/etc/initramfs-dev"
		exec env -i HOME=/ TERM=linux "$(command -v chroot)" "$1" /init quiet' \
		sh "$SCRATCH/mnt" "$R"
	echo "$output"
	[ "$status" = 0 ]
	[[ "$output" == *"nodeforge: "*"/sbin/init"* ]]
	[[ "$output" == *"stand-in systemd: pid 1, root is the initramfs, args quiet"* ]]
}
