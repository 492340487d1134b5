#!/usr/bin/env bats
# enroot for every user (issue 14): the enroot.conf and tmpfiles.d file the
# containers facet writes into the compute image (tests/fixtures/apply/
# compute, kept equal to the build's output by test_apply), replayed with
# enroot 4.1.2's own config loader as unprivileged users; the verifier's
# enroot probe runs unprivileged; the 1777 parents are checked at boot.
load verify_helper

ENROOT_TGZ=${NF_ENROOT_TGZ:-$NF_SRCDIR/../shared/artifacts/enroot-4.1.2.tar.gz}
APPLIED=$FIXTURES/apply/compute

# An image root in $ROOT holding the generated enroot.conf (its absolute
# paths moved under $ROOT) and /mnt/nvme, with the generated tmpfiles.d
# file applied by the real systemd-tmpfiles as at boot; $LOADER: enroot's
# own start (enroot.in up to END CONFIG: set -euo pipefail, the loader,
# its mkdir -p) reading that
# enroot.conf, then using each path the way enroot does and printing $1
replay_setup() {
	[ "$(id -u)" = 0 ] || skip "needs root to switch users"
	[ -f "$ENROOT_TGZ" ] || skip "no $ENROOT_TGZ"
	command -v systemd-tmpfiles > /dev/null || skip "no systemd-tmpfiles"
	chmod 0755 "$SCRATCH"
	ROOT=$SCRATCH/root
	mkdir -p "$ROOT/etc/enroot" "$ROOT/etc/tmpfiles.d" "$ROOT/mnt/nvme"
	sed -E "s#^(ENROOT_[A-Z_]+_PATH[[:space:]]+)/#\\1$ROOT/#" \
		"$APPLIED/etc/enroot/enroot.conf" > "$ROOT/etc/enroot/enroot.conf"
	if [ -f "$APPLIED/etc/tmpfiles.d/nodeforge-enroot.conf" ]; then
		cp "$APPLIED/etc/tmpfiles.d/nodeforge-enroot.conf" "$ROOT/etc/tmpfiles.d/"
		systemd-tmpfiles --root="$ROOT" --create nodeforge-enroot.conf
	fi
	tar -xzf "$ENROOT_TGZ" -C "$SCRATCH" enroot-4.1.2/enroot.in
	LOADER=$SCRATCH/enroot
	{
		sed -n '1,/^# ----- END CONFIG -----/p' \
			"$SCRATCH/enroot-4.1.2/enroot.in" |
			sed -e "s#@sysconfdir@#$ROOT/etc/enroot#" -e 's#@libdir@#/nonexistent#'
		# what enroot then does with them: mktemp -d in the temp path
		# (common.sh), a file in the cache (docker.sh), a container root
		# in the data path, the runtime files (runtime.sh)
		cat <<-'EOF'
		t=$(mktemp -d -p "$ENROOT_TEMP_PATH" enroot.XXXXXXXXXX)
		mktemp -p "$ENROOT_CACHE_PATH" digest.XXXXXXXXXX > /dev/null
		mkdir -p "$ENROOT_DATA_PATH/pyxis_1.0" "$ENROOT_RUNTIME_PATH/overlay"
		rmdir "$t"
		EOF
		echo "echo ${1:-ok}"
	} > "$LOADER"
	chmod 0755 "$LOADER"
}

# as UID (root when 0) with umask 077, as on the image
as_user() {
	if [ "$1" = 0 ]; then
		run bash -c 'umask 077; exec bash "$0"' "$LOADER"
	else
		run setpriv --reuid="$1" --regid="$1" --clear-groups \
			bash -c 'umask 077; exec bash "$0"' "$LOADER"
	fi
}

@test "enroot (replayed): two users and root run enroot's config loader on the generated files, each in its own directories" {
	replay_setup
	# root first: what the verifier's probe did before it ran unprivileged
	for u in 0 65534 65533; do
		as_user "$u"
		[ "$status" -eq 0 ] || { echo "uid $u: $output"; false; }
	done
	# every directory enroot made is its user's own
	for u in 65534 65533; do
		n=$(find "$ROOT" -user "$u" -maxdepth 6 -type d -name "user-$u" | wc -l)
		[ "$n" -ge 3 ] || { find "$ROOT" -printf '%m %u %p\n'; false; }
	done
	[ -z "$(find "$ROOT" -user 0 -type d -perm 0700 ! -path '*/user-0*')" ] ||
		{ find "$ROOT" -printf '%m %u %p\n'; false; }
}

@test "enroot: the generated tmpfiles.d file makes the parents 1777 root and nothing else" {
	replay_setup
	[ -f "$ROOT/etc/tmpfiles.d/nodeforge-enroot.conf" ]
	run grep -v '^#' "$ROOT/etc/tmpfiles.d/nodeforge-enroot.conf"
	[ "$output" = "d /mnt/nvme/enroot/cache 1777 root root -
d /run/enroot 1777 root root -
d /run/enroot/data 1777 root root -
d /run/enroot/tmp 1777 root root -" ]
	for d in mnt/nvme/enroot/cache run/enroot run/enroot/data run/enroot/tmp; do
		[ "$(stat -c '%a %u' "$ROOT/$d")" = "1777 0" ]
	done
}

@test "verify: the enroot probe runs as nobody (setpriv) when the verifier is root" {
	vfx pass
	jq --arg log "$SCRATCH/exec.log" '.exec_log = $log' "$SYS/fixture.json" > "$SCRATCH/f.json"
	run "$NF_BIN" verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" --only containers --json
	status_is 0
	[[ "$(verdict_of containers.enroot.runs)" == "pass exit 0: 4.1.2" ]]
	if [ "$(id -u)" = 0 ]; then
		grep -qx 'setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env -- enroot version' exec.log
	else
		grep -qx 'enroot version' exec.log
	fi
}

@test "verify (enroot's own loader as the probe): the verifier as root leaves only nobody's directories" {
	replay_setup 4.1.2
	vfx pass
	mkdir -p "$SCRATCH/bin"
	ln -s "$LOADER" "$SCRATCH/bin/enroot"
	jq '.passthrough = ["enroot"]' "$SYS/fixture.json" > "$SCRATCH/f.json"
	PATH=$SCRATCH/bin:$PATH run "$NF_BIN" verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" \
		--only containers --json
	status_is 0
	[[ "$(verdict_of containers.enroot.runs)" == "pass exit 0: 4.1.2" ]]
	[ "$(find "$ROOT" -name 'user-*' -user 65534 | wc -l)" -eq 3 ]
	[ -z "$(find "$ROOT" -name 'user-0')" ]
}

@test "verify: enroot's shared directories not 1777 or missing fail with the tmpfiles remedy" {
	vfx pass
	chmod 0700 "$SYS/run/enroot"
	rmdir "$SYS/mnt/nvme/enroot/cache"
	vrun --json
	status_is 3
	[ "$(echo "$output" | jq -r '.checks[] | select(.id == "containers.enroot.dirs") | .seen + "|" + .remedy')" = \
		"/mnt/nvme/enroot/cache missing, /run/enroot mode 0700 owner $(id -u)|systemd-tmpfiles --create /etc/tmpfiles.d/nodeforge-enroot.conf" ]
	[ "$(echo "$output" | jq -r '.root_causes[0].id')" = containers.enroot.dirs ]
}

@test "verify: on an image root the tmpfiles.d file stands for the directories" {
	vfx pass
	rm -rf "$SYS/run/enroot"
	run nf verify --root "$SYS" --json
	status_is 0
	[ "$(verdict_of containers.enroot.dirs)" = "pass 4 directories 1777 root" ]
	sed -i '/run\/enroot\/data/d' "$SYS/etc/tmpfiles.d/nodeforge-enroot.conf"
	run nf verify --root "$SYS" --json
	status_is 3
	[ "$(verdict_of containers.enroot.dirs)" = "fail /run/enroot/data not in /etc/tmpfiles.d/nodeforge-enroot.conf" ]
}

@test "lint: an enroot cache, data or runtime path shared by every user is refused" {
	cp -a "$NF_SRCDIR/profiles" p
	sed -i 's#^    cache_path: .*#    cache_path: /mnt/nvme/enroot/cache#' p/enroot.yaml
	grep -q '^    cache_path: /mnt/nvme/enroot/cache$' p/enroot.yaml
	run nf -C p lint
	status_is 3
	[[ "$output" == *"p/enroot.yaml:"*": error: enroot cache_path '/mnt/nvme/enroot/cache' is one directory for every user: enroot creates it 0700 for the first user who runs it; make it per user, e.g. '/mnt/nvme/enroot/cache/user-\$(id -u)'"* ]]
}

# an ELF64 header with one PT_INTERP naming $2, written to $1
elf_asking_for() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
path = sys.argv[2].encode() + b"\0"
ehdr = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) + struct.pack(
    "<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 56, 1, 0, 0, 0)
phdr = struct.pack("<IIQQQQQQ", 3, 4, 120, 120, 120, len(path), len(path), 1)
open(sys.argv[1], "wb").write(ehdr + phdr + path)
PY
}

@test "verify: an enroot helper asking for a loader the image lacks fails, named with the loader (static too)" {
	vfx pass
	elf_asking_for "$SYS/usr/bin/enroot-nsenter" /lib/ld-musl-x86_64.so.1
	printf '#!/bin/sh\n' > "$SYS/usr/bin/enroot-mount"
	rm "$SYS/usr/bin/enroot-switchroot"
	run nf verify --root "$SYS" --json
	status_is 3
	[ "$(verdict_of containers.enroot.helpers)" = "fail /usr/bin/enroot-mount: not an ELF executable; /usr/bin/enroot-nsenter needs /lib/ld-musl-x86_64.so.1, which the image lacks; /usr/bin/enroot-switchroot: missing" ]
	[[ "$(echo "$output" | jq -r '.checks[] | select(.id == "containers.enroot.helpers") | .remedy')" == *"FORCE_GLIBC=1"* ]]
	# with the loader there, the helper passes
	mkdir -p "$SYS/lib"
	printf 'x' > "$SYS/lib/ld-musl-x86_64.so.1"
	cp "$SYS/usr/bin/enroot-nsenter" "$SYS/usr/bin/enroot-mount"
	cp "$SYS/usr/bin/enroot-nsenter" "$SYS/usr/bin/enroot-switchroot"
	run nf verify --root "$SYS" --json
	status_is 0
	[ "$(verdict_of containers.enroot.helpers)" = "pass 5 helpers, loader /lib/ld-musl-x86_64.so.1" ]
}

@test "verify: the real enroot helpers of this host's binaries parse as ELF with their loader (nf_elf_interp on /bin/true and static busybox)" {
	vfx pass
	[ -x /bin/busybox ] || skip "needs busybox-static"
	cp /bin/true "$SYS/usr/bin/enroot-nsenter"
	cp /bin/busybox "$SYS/usr/bin/enroot-mount"
	run nf verify --root "$SYS" --json
	status_is 0
	[ "$(verdict_of containers.enroot.helpers)" = "pass 5 helpers, loader /lib64/ld-linux-x86-64.so.2" ]
	# /bin/true's loader removed from the tree: named
	rm "$SYS/lib64/ld-linux-x86-64.so.2"
	run nf verify --root "$SYS" --json
	status_is 3
	[[ "$(verdict_of containers.enroot.helpers)" == "fail /usr/bin/enroot-aufs2ovlfs needs /lib64/ld-linux-x86-64.so.2, which the image lacks;"* ]]
}

@test "verify: a node still running from the initramfs (/ is rootfs) fails containers.enroot.root; the image's /init is what moves it" {
	vfx pass
	run nf verify --sysroot "$SYS" --fixture "$SYS/fixture.json" --only containers --json
	[ "$(verdict_of containers.enroot.root)" = "pass / is ext4" ]
	sed -i 's#^22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 .*#1 1 0:2 / / rw - rootfs rootfs rw,size=1000k#' "$SYS/proc/self/mountinfo"
	grep -q ' - rootfs rootfs' "$SYS/proc/self/mountinfo"
	run nf verify --sysroot "$SYS" --fixture "$SYS/fixture.json" --only containers --json
	status_is 3
	[ "$(verdict_of containers.enroot.root)" = "fail / is rootfs" ]
	# the compute image's /init (written by the containers facet, kept
	# equal to the build's by test_apply) copies into a tmpfs and
	# switch_roots there, and falls back to booting as before (t3015
	# runs it as PID 1)
	sh -n "$APPLIED/init"
	[ -x "$APPLIED/init" ]
	grep -q '^new=/.nodeforge-root$' "$APPLIED/init"
	grep -q '^		exec switch_root "$new" /sbin/init "$@"$' "$APPLIED/init"
	[ "$(tail -n 1 "$APPLIED/init")" = 'exec /sbin/init "$@"' ]
}
