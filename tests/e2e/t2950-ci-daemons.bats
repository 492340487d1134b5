#!/usr/bin/env bats
# The image's own daemons accept every file nodeforge wrote into it:
# 'nodeforge ci ROLE' (static stage) runs the image's own scontrol, srun
# --help, slurmdbd, chronyd and mariadbd inside the real image root: for
# controller, compute (GPU) and login on the embedded default (Debian 13:
# Slurm 24.11, MariaDB 11.8), the images the cluster test boots
# (tests/e2e/images.bash: built here once, found current there; their
# cluster part is the one a node fetches at boot, so ci checks them with
# its one-node stand-in, and the cluster test with the real one), and for
# controller and cpu on the Debian 12 example site (Slurm 22.05, MariaDB
# 10.11) with --inventory examples/racks.yaml.  A key the image's Slurm
# does not know fails with Slurm's own words.
# Slow: one real bootstrap per role and distribution (cached in
# $NF_E2E_CACHE, shared with the cluster test).  Needs root and mmdebstrap.
load ../bats/helper
load images

setup_file() {
	command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
	[ "$(id -u)" = 0 ] || skip "needs root (chroot into the image)"
	command -v ssh-keygen >/dev/null || skip "ssh-keygen not installed"
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	export INV=$NF_SRCDIR/examples/racks.yaml
	prebuild
	img_setup "$BATS_FILE_TMPDIR/site"
}

D12=examples/site-debian12.yaml

# The six images are built side by side before the tests
# (tests/e2e/prebuild.sh; under `make test` it already ran in the
# background and this finds them current).  Each test's ci then finds its
# image current (the same inputs) and runs the daemons on it.  A build
# that fails here fails again, with its words, in its test.
prebuild() {
	NF_E2E_CACHE=$E2E "$NF_SRCDIR/tests/e2e/prebuild.sh" 3>&- | sed 's/^/# /' >&3 || true
}

# the output directory of the images a ci call names: the Debian 12
# example site's, the shared Debian 13 ones (the test site), or a
# test's own (any other profiles or site)
outtag() {
	case " $* " in
	*"$D12"*) echo out-d12 ;;
	*" $NF_TEST_SITE "*) echo out-d13 ;;
	*) echo out-scratch ;;
	esac
}

# ci ROLE [nf options...]: the static.daemons cases as "id verdict message"
daemons() {
	local role=$1
	shift
	local rc=0 tag where
	tag=$(outtag "$@")
	case $tag in
	out-d13) where=(--out "$IMG_OUT" --overlays "$IMG_OVL") ;;
	out-d12) where=(--out "$E2E/d12/out" --inventory "$INV") ;;
	*) where=(--out "$BATS_FILE_TMPDIR/$tag" --inventory "$INV") ;;
	esac
	"$NF_BIN" "$@" ci "$role" --cache "$E2E" "${where[@]}" \
		--json > "$BATS_TEST_TMPDIR/ci.json" 2>"$BATS_TEST_TMPDIR/ci.err" || rc=$?
	# the whole report, for the tests of the static stage as a whole
	cp "$BATS_TEST_TMPDIR/ci.json" "$BATS_FILE_TMPDIR/ci-$tag-$role.json"
	echo "$rc" > "$BATS_FILE_TMPDIR/ci-$tag-$role.rc"
	# what ci said on stderr (a build that failed names its log): shown
	# with a failing test
	tail -n 20 "$BATS_TEST_TMPDIR/ci.err" >&2
	python3 - "$BATS_TEST_TMPDIR/ci.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    if c["class"] == "static.daemons":
        print(c["id"], c["verdict"], (c.get("message") or "").replace("\n", " ")[:300])
PY
}

# every case passed, and the ones named were run
all_pass() {
	local got=$1
	shift
	echo "$got"
	for id in "$@"; do
		grep -q "^$id pass" <<<"$got" || { echo "no passing case $id" >&2; return 1; }
	done
	! grep -v ' pass' <<<"$got"
}

@test "ci daemons, Debian 13: the controller's scontrol, slurmdbd, chronyd and mariadbd accept its files" {
	got=$(daemons controller -C "$NF_SRCDIR/profiles" -s "$NF_TEST_SITE")
	all_pass "$got" slurm.conf slurmdbd.conf chrony.conf mariadb
}

# The compute and login images carry pyxis, compiled in the image against
# its own Slurm (pyxis.yaml): the image's srun loads it from plugstack.conf
# and its --help lists --container-image (the plugstack.conf case asks for
# it).  enroot, built the same way, answers 'enroot version' as nobody.
enroot_runs() {
	local role=$1 out=$2 root=$BATS_TEST_TMPDIR/root rootfs
	rootfs=$(jq -r .rootfs "$out/$role/$role.current")
	mkdir -p "$root"
	zstd -dc "$out/$role/$rootfs" | tar -x -C "$root" --numeric-owner
	# the compilers and headers were there for the build only
	! chroot "$root" dpkg-query -W -f '${Status}' gcc make libslurm-dev 2>/dev/null | grep -q 'install ok installed'
	[ ! -e "$root/usr/src/nodeforge" ]
	# what a node does at boot: the tmpfiles parents, then enroot as a user
	systemd-tmpfiles --root="$root" --create nodeforge-enroot.conf
	run chroot "$root" setpriv --reuid=65534 --regid=65534 --clear-groups enroot version
	echo "$output"
	status_is 0
	[ "$output" = 4.1.2 ]
	# its helpers run in the image (a usage error, not "cannot execute":
	# an ELF interpreter the image lacks makes exec fail, status 127)
	local u
	for u in aufs2ovlfs mksquashovlfs mount nsenter switchroot; do
		run chroot "$root" "/usr/bin/enroot-$u" --help
		echo "enroot-$u: $status $output"
		[ "$status" -ne 127 ]
		[ "$status" -ne 126 ]
	done
}

@test "ci daemons, Debian 13: the compute image's scontrol accepts its files; its srun loads pyxis; enroot runs as a user" {
	got=$(daemons compute -C "$NF_SRCDIR/profiles" -s "$NF_TEST_SITE")
	all_pass "$got" slurm.conf plugstack.conf chrony.conf
	enroot_runs compute "$IMG_OUT"
}

# Part of the static stage is the daemons' (above); all of it must pass on
# the GPU role of the embedded default once the site supplies its fabric
# manager: here a STAND-IN deb named and versioned as NVIDIA's
# (tests/fixtures/fabricmanager), pinned in the test's site file
@test "ci compute (static stage) passes on the embedded default with the site's fabric manager (a STAND-IN deb): no case fails" {
	local j=$BATS_FILE_TMPDIR/ci-out-d13-compute.json
	[ -s "$j" ] || daemons compute -C "$NF_SRCDIR/profiles" -s "$NF_TEST_SITE" >/dev/null
	jq -r '.cases[] | "\(.class) \(.id) \(.verdict) \((.message // "") | .[0:160])"' "$j"
	[ "$(cat "$BATS_FILE_TMPDIR/ci-out-d13-compute.rc")" = 0 ]
	[ "$(jq '[.cases[] | select(.verdict != "pass" and .verdict != "skip")] | length' "$j")" = 0 ]
	[ "$(jq '[.cases[] | select(.verdict == "pass")] | length' "$j")" -gt 10 ]
}

@test "the Debian 13 compute image carries the site's fabric manager (a STAND-IN deb pinned in the test site): its package and version, enabled, started before slurmd; no copy of the deb left" {
	local root=$BATS_TEST_TMPDIR/root cur=$IMG_OUT/compute
	mkdir -p "$root"
	zstd -dc "$cur/$(jq -r .rootfs "$cur/compute.current")" |
		tar -x -C "$root" --numeric-owner var/lib/dpkg/status etc/systemd var/cache \
			usr/bin/nv-fabricmanager usr/lib/systemd/system/nvidia-fabricmanager.service
	run awk -v RS= '/(^|\n)Package: nvidia-fabricmanager-550\n/' "$root/var/lib/dpkg/status"
	echo "$output"
	[[ "$output" == *"Status: install ok installed"* ]]
	[[ "$output" == *"Version: 550.163.01-1"* ]]
	[[ "$(readlink "$root/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service")" == */lib/systemd/system/nvidia-fabricmanager.service ]]
	grep -qx 'After=nvidia-fabricmanager.service' "$root/etc/systemd/system/slurmd.service.d/nodeforge-fabricmanager.conf"
	[ -z "$(find "$root/var/cache" -name '*.deb' -o -name '*.control')" ]
}

# Module signing with the site's key (module_signing, lib/build_sign.c):
# the GPU image's NVIDIA modules, built by the cached artifacts stage,
# signed on the build host; the host's modinfo reads the signer back
@test "the Debian 13 compute image's NVIDIA modules are signed with the site's key when the site says so (module_signing): modinfo names the signer; the key is not in the image" {
	local t=$BATS_TEST_TMPDIR root=$BATS_TEST_TMPDIR/root
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=nodeforge e2e module key" \
		-keyout "$t/key.pem" -out "$t/cert.pem" 2>/dev/null
	chmod 600 "$t/key.pem"
	sed -e "s#^  sign: false#  sign: true\n  cert: $t/cert.pem#" \
		-e "s#^secrets:#secrets:\n  module_signing_key:\n    path: $t/key.pem#" \
		"$NF_TEST_SITE" > "$t/site.yaml"
	grep -q '^  sign: true' "$t/site.yaml"
	run "$NF_BIN" -C "$NF_SRCDIR/profiles" -s "$t/site.yaml" build compute --cache "$E2E" \
		--out "$t/out" --inventory "$INV"
	echo "$output" | tail -n 15
	status_is 0
	[[ "$output" == *"5 kernel modules signed with the site's key"* ]]
	mkdir -p "$root"
	zstd -dc "$t/out/compute/$(jq -r .rootfs "$t/out/compute/compute.current")" |
		tar -x -C "$root" --wildcards 'usr/lib/modules/*/nvidia/*'
	local n=0 m
	for m in "$root"/usr/lib/modules/*/nvidia/nvidia-current-open*.ko; do
		echo "$m: $(modinfo -F signer "$m") $(modinfo -F sig_hashalgo "$m")"
		[ "$(modinfo -F signer "$m")" = "nodeforge e2e module key" ]
		[ "$(modinfo -F sig_hashalgo "$m")" = sha256 ]
		n=$((n + 1))
	done
	[ "$n" = 5 ]
	! zstd -dc "$t/out/compute/$(jq -r .rootfs "$t/out/compute/compute.current")" |
		grep -qaF "$(sed -n 2p "$t/key.pem")"
}

# The GPU compute image carries the NVIDIA 550 open kernel modules, built
# in the image for the image's one kernel (nvidia.yaml): modprobe's view
# of the image resolves 'nvidia' to them, their version magic is that
# kernel's, and nothing of the build (headers, compiler, source, a DKMS
# signing key) stays
@test "the Debian 13 compute image: NVIDIA's open modules built for its own kernel, modprobe finds them, NVML and nvidia-smi are there, no build leftovers" {
	local root=$BATS_TEST_TMPDIR/root rootfs kver m
	rootfs=$(jq -r .rootfs "$IMG_OUT/compute/compute.current")
	mkdir -p "$root"
	zstd -dc "$IMG_OUT/compute/$rootfs" | tar -x -C "$root" --numeric-owner
	# one kernel, the pinned one
	run ls "$root/lib/modules"
	echo "kernels: $output"
	[ "${#lines[@]}" = 1 ]
	kver=${lines[0]}
	[ "linux-image-$kver" = "$("$NF_BIN" -C "$NF_SRCDIR/profiles" profile show compute --json | jq -r .kernel.package)" ]
	for m in nvidia-current-open nvidia-current-open-modeset nvidia-current-open-drm \
		 nvidia-current-open-uvm nvidia-current-open-peermem; do
		[ -f "$root/lib/modules/$kver/nvidia/$m.ko" ]
		run modinfo -F vermagic "$root/lib/modules/$kver/nvidia/$m.ko"
		echo "$m: $output"
		[[ "$output" == "$kver SMP "* ]]
		# stripped of debug sections
		! readelf -S "$root/lib/modules/$kver/nvidia/$m.ko" | grep -q '\.debug_info'
	done
	echo "modules: $(du -sm "$root/lib/modules/$kver/nvidia" | cut -f1) MB" >&3
	# modprobe in the image: 'nvidia' is Debian's install rule for the
	# open module (the gpu facet links the rules into modprobe.d), which
	# resolves to this build with its dependencies
	run chroot "$root" modprobe -S "$kver" --show-depends nvidia
	echo "$output"
	status_is 0
	[[ "$output" == *"modprobe -i nvidia-current-open "* ]]
	run chroot "$root" modprobe -S "$kver" --show-depends nvidia-current-open-uvm
	echo "$output"
	status_is 0
	[[ "$output" == *"insmod /lib/modules/$kver/nvidia/nvidia-current-open.ko"* ]]
	[[ "$output" == *"insmod /lib/modules/$kver/nvidia/nvidia-current-open-uvm.ko"* ]]
	grep -q "^nvidia/nvidia-current-open-uvm.ko: nvidia/nvidia-current-open.ko" "$root/lib/modules/$kver/modules.dep"
	# NVML and nvidia-smi: nvidia-smi runs (no driver in a chroot, so it
	# fails; never 126/127)
	chroot "$root" ldconfig -p | grep -q 'libnvidia-ml.so.1 '
	run chroot "$root" nvidia-smi
	echo "nvidia-smi: $status $output"
	[ "$status" -ne 126 ]
	[ "$status" -ne 127 ]
	[ -x "$root/usr/bin/nvidia-persistenced" ]
	# what only the build needed is gone, and no key was ever generated
	for p in gcc make nvidia-open-kernel-source "linux-headers-$kver" dkms; do
		! chroot "$root" dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'
	done
	[ ! -e "$root/usr/src/nvidia-open-kernel.tar.xz" ]
	[ ! -e "$root/usr/src/nodeforge" ]
	[ ! -e "$root/var/lib/dkms" ]
	[ -z "$(find "$root" -xdev \( -name 'mok.key' -o -name 'signing_key.pem' \) -print -quit)" ]
}

# GPU containers (profiles/nvidia-container.yaml): enroot's NVIDIA hook
# runs nvidia-container-cli for every container that sets
# NVIDIA_VISIBLE_DEVICES.  In the image the CLI (compiled there) and its
# library run, libcuda is the driver's version, and the CLI, run as the
# hook runs it, gets as far as NVML: without a GPU the driver is not
# loaded, and that is the only thing it says
@test "the Debian 13 compute image's enroot NVIDIA hook reaches nvidia-container-cli: it runs, libcuda.so.1 is the driver's, and it stops only at the missing driver" {
	local root=$BATS_TEST_TMPDIR/root rootfs drv
	rootfs=$(jq -r .rootfs "$IMG_OUT/compute/compute.current")
	mkdir -p "$root"
	zstd -dc "$IMG_OUT/compute/$rootfs" | tar -x -C "$root" --numeric-owner
	[ -x "$root/etc/enroot/hooks.d/98-nvidia.sh" ]
	run chroot "$root" nvidia-container-cli --version
	echo "$output"
	status_is 0
	[ "${lines[0]}" = "cli-version: 1.12.1" ]
	chroot "$root" ldconfig -p | grep -q 'libnvidia-container.so.1 '
	chroot "$root" ldconfig -p | grep -q 'libcuda.so.1 '
	drv=$(chroot "$root" dpkg-query -W -f '${Version}' libnvidia-ml1)
	[ "$(chroot "$root" dpkg-query -W -f '${Version}' libcuda1)" = "$drv" ]
	# the compilers and -dev packages went; what the library links stayed
	! chroot "$root" dpkg-query -W -f '${Status}' libtirpc-dev libelf-dev rpcsvc-proto 2>/dev/null | grep -q 'install ok installed'
	# the hook's own command line (98-nvidia.sh), in the image's root with
	# its own /proc
	run unshare -m sh -c 'mount -t proc proc "$1/proc" && exec chroot "$1" \
		nvidia-container-cli --user configure --no-cgroups --ldconfig=@/sbin/ldconfig \
		--device=all --compute --utility /tmp' sh "$root"
	echo "nvidia-container-cli: exit $status: $output" >&3
	[ "$status" = 1 ]
	[ "$output" = "nvidia-container-cli: initialization error: nvml error: driver not loaded" ]
}

@test "ci daemons, Debian 13: the login image's scontrol accepts its files; its srun lists --container-image" {
	got=$(daemons login -C "$NF_SRCDIR/profiles" -s "$NF_TEST_SITE")
	all_pass "$got" slurm.conf plugstack.conf chrony.conf
}

# The image's own kernel and initramfs in QEMU (no GPU), with a second
# cpio appended that adds a test init: the module built for that kernel
# loads as far as the GPU probe, and nvidia-smi runs.  The cluster test
# boots the same image over PXE and asks the same on the GPU node.
@test "the Debian 13 compute image's kernel loads its NVIDIA module up to the missing GPU (QEMU, no GPU): no version-magic or symbol error; nvidia-smi runs" {
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86 not installed"
	local d=$BATS_TEST_TMPDIR/vm cur=$IMG_OUT/compute
	mkdir -p "$d/x"
	cat > "$d/x/nf-gpu-test" <<-'EOF'
	#!/bin/sh
	mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
	echo "== uname $(uname -r)"
	echo "== vermagic $(modinfo -F vermagic nvidia-current-open)"
	modprobe nvidia; echo "== modprobe exit $?"
	dmesg | grep -i -e nvrm -e nvidia
	nvidia-smi; echo "== nvidia-smi exit $?"
	echo o > /proc/sysrq-trigger
	sleep 30
	EOF
	chmod 755 "$d/x/nf-gpu-test"
	(cd "$d/x" && echo nf-gpu-test | cpio -o -H newc --quiet > "$d/test.cpio")
	# an uncompressed cpio after a compressed one must start 4-byte
	# aligned (the kernel skips the zeros between them)
	cp "$cur/$(jq -r .initramfs "$cur/compute.current")" "$d/initrd"
	head -c $(( (4 - $(stat -c %s "$d/initrd") % 4) % 4 )) /dev/zero >> "$d/initrd"
	cat "$d/test.cpio" >> "$d/initrd"
	timeout 600 qemu-system-x86_64 -machine q35,accel=tcg -m 3072 -display none -no-reboot \
		-kernel "$cur/$(jq -r .kernel "$cur/compute.current")" -initrd "$d/initrd" \
		-append "console=ttyS0 rdinit=/nf-gpu-test panic=-1" -serial "file:$d/console" 3>&- || true
	run grep -a -e '^== ' -e NVRM -e 'nvidia' -e 'modprobe:' "$d/console"
	echo "$output" | sed 's/^/# /' >&3
	local kver
	kver=$(sed -n 's/^== uname //p' <<<"$output" | tr -d '\r')
	[ -n "$kver" ]
	[[ "$output" == *"== vermagic $kver SMP "* ]]
	[[ "$output" == *"== modprobe exit 1"* ]]
	nv_no_gpu_only "$output"
	[[ "$output" == *"== nvidia-smi exit "* ]]
	[[ "$output" != *"== nvidia-smi exit 127"* ]]
	[[ "$output" != *"== nvidia-smi exit 126"* ]]
}

@test "ci daemons, Debian 12 example site: the controller's Slurm 22.05, slurmdbd and mariadbd accept its files" {
	got=$(daemons controller -C "$NF_SRCDIR/profiles" -s "$NF_SRCDIR/$D12")
	all_pass "$got" slurm.conf slurmdbd.conf chrony.conf mariadb
}

@test "ci daemons, Debian 12 example site: the CPU compute image's scontrol accepts its files; its srun loads pyxis (Slurm 22.05)" {
	got=$(daemons cpu -C "$NF_SRCDIR/profiles" -s "$NF_SRCDIR/$D12")
	all_pass "$got" slurm.conf plugstack.conf chrony.conf
	enroot_runs cpu "$E2E/d12/out"
}

@test "Debian 12 example site: the GPU compute role, whose driver is pinned to Debian 13, is refused before anything is fetched" {
	run "$NF_BIN" -C "$NF_SRCDIR/profiles" -s "$NF_SRCDIR/$D12" build compute \
		--cache "$BATS_TEST_TMPDIR/c" --out "$BATS_TEST_TMPDIR/o"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"profile 'nvidia' is made for debian13 (its distros:), and this site's distro is debian12"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/c/bootstrap" ]
}

@test "ci daemons: a slurm.conf key the image's Slurm does not know fails with Slurm's own words" {
	cp -r "$NF_SRCDIR/profiles" "$BATS_TEST_TMPDIR/p"
	cp -r "$NF_SRCDIR/overlays" "$BATS_TEST_TMPDIR/overlays"
	sed -i 's/^    SlurmUser: slurm$/    SlurmUser: slurm\n    NoSuchSlurmKey: 1/' \
		"$BATS_TEST_TMPDIR/p/base.yaml"
	grep -q NoSuchSlurmKey "$BATS_TEST_TMPDIR/p/base.yaml"
	got=$(daemons login -C "$BATS_TEST_TMPDIR/p")
	echo "$got"
	grep -q '^slurm.conf fail .*unrecognized key: NoSuchSlurmKey' <<<"$got"
}
