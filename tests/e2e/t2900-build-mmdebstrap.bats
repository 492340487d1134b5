#!/usr/bin/env bats
# Real image build: mmdebstrap from Debian's mirror, a small role
# (tests/fixtures/profiles/e2e/mini.yaml), checked by inspecting what each
# facet wrote and by running the image's own sshd/chronyd on their config.
# Slow (minutes): the bootstrap is cached in $NF_E2E_CACHE when set.
load ../bats/helper

setup_file() {
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	export PROFS=$NF_SRCDIR/tests/fixtures/profiles/e2e
	export OUT=$BATS_FILE_TMPDIR/out
	"$NF_BIN" -C "$PROFS" build mini --cache "$E2E" --out "$OUT" >&3 2>&1
	export ROOT=$BATS_FILE_TMPDIR/root
	mkdir -p "$ROOT"
	rootfs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rootfs"])' "$OUT/mini/mini.current")
	zstd -dc "$OUT/mini/$rootfs" | tar -x -C "$ROOT" --numeric-owner
}

cur() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$OUT/mini/mini.current" "$1"; }

@test "e2e build: published image verifies" {
	run nf manifest verify --pubkey "$OUT/signing.pub" "$OUT/mini/$(cur manifest)"
	status_is 0
	[ -s "$OUT/mini/$(cur kernel)" ]
	file "$OUT/mini/$(cur kernel)" | grep -qi 'linux kernel' || head -c 600 "$OUT/mini/$(cur kernel)" | grep -q HdrS
}

@test "e2e build: packages are installed" {
	[ -x "$ROOT/usr/sbin/slurmd" ]
	[ -x "$ROOT/usr/sbin/munged" ]
	[ -x "$ROOT/usr/sbin/chronyd" ]
	ls "$ROOT"/lib/security/pam_slurm_adopt.so "$ROOT"/usr/lib/x86_64-linux-gnu/security/pam_slurm_adopt.so 2>/dev/null | grep -q .
}

@test "e2e build: every facet's files are in the image" {
	grep -qx 'ClusterName=production' "$ROOT/etc/slurm/slurm.conf"
	grep -qx 'Include /etc/slurm/cluster.conf' "$ROOT/etc/slurm/slurm.conf"
	! grep -q '^NodeName=' "$ROOT/etc/slurm/slurm.conf"
	grep -qx 'ConstrainCores=yes' "$ROOT/etc/slurm/cgroup.conf"
	grep -qx 'cgroup_memory=1 cgroup.memory=nokmem console=tty0 console=ttyS0,115200n8 systemd.unified_cgroup_hierarchy=1' "$ROOT/etc/kernel/cmdline"
	grep -q 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX cgroup_memory=1' "$ROOT/etc/default/grub.d/nodeforge.cfg"
	grep -qx 'LimitMEMLOCK=infinity' "$ROOT/etc/systemd/system/slurmd.service.d/50-nodeforge-limits.conf"
	grep -qx 'Requires=nodeforge-verify.service' "$ROOT/etc/systemd/system/slurmd.service.d/nodeforge-verify.conf"
	grep -q -- '--max-ttl=300' "$ROOT/etc/systemd/system/munge.service.d/nodeforge.conf"
	grep -qx 'server 10.0.0.1 iburst' "$ROOT/etc/chrony/chrony.conf"
	grep -qx 'UsePAM yes' "$ROOT/etc/ssh/sshd_config.d/90-nodeforge.conf"
	python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["role"]=="mini"' "$ROOT/etc/nodeforge/profile.json"
	[ -L "$ROOT/etc/systemd/system/multi-user.target.wants/nodeforge-verify.service" ]
}

@test "e2e build: pam_slurm_adopt follows Debian's account stack in pam.d/sshd" {
	grep -n . "$ROOT/etc/pam.d/sshd" >&3 || true
	acct=$(grep -n '^@include common-account' "$ROOT/etc/pam.d/sshd" | cut -d: -f1)
	adopt=$(grep -n '^account *required *pam_slurm_adopt.so' "$ROOT/etc/pam.d/sshd" | cut -d: -f1)
	[ -n "$acct" ] && [ -n "$adopt" ] && [ "$adopt" -gt "$acct" ]
	[ "$(grep -c pam_slurm_adopt.so "$ROOT/etc/pam.d/sshd")" -eq 1 ]
}

@test "e2e build: the image's own sshd and chronyd accept the generated config" {
	chroot "$ROOT" /usr/bin/ssh-keygen -A >/dev/null
	mkdir -p "$ROOT/run/sshd"   # systemd's RuntimeDirectory on a node
	chroot "$ROOT" /usr/sbin/sshd -t
	rm -f "$ROOT"/etc/ssh/ssh_host_*
	chroot "$ROOT" /usr/sbin/chronyd -p -f /etc/chrony/chrony.conf | grep -q '^server 10.0.0.1 iburst'
}

@test "e2e build: the image's nodeforge is the building tool's version and commit; the manifest records both" {
	run chroot "$ROOT" /usr/bin/nodeforge version
	status_is 0
	[ "$output" = "$("$NF_BIN" version)" ]
	v=$("$NF_BIN" version --json)
	python3 -c 'import json, sys
m = json.load(open(sys.argv[1])); v = json.loads(sys.argv[2])
assert m["nodeforge_version"] == v["version"], m["nodeforge_version"]
assert m["nodeforge_commit"] == v["commit"], m.get("nodeforge_commit")' "$OUT/mini/$(cur manifest)" "$v"
}

@test "e2e build: the image's nodeforge is the package built for its release, installed by its dpkg" {
	suite=$(. "$ROOT/etc/os-release" && echo "$VERSION_CODENAME")
	pkg=$NODEFORGE_SELF_PACKAGE/$suite/nodeforge_$("$NF_BIN" version --json | jq -r .version)_amd64.deb
	echo "# $suite image, package $pkg" >&3
	[ -f "$pkg" ]
	run chroot "$ROOT" dpkg-query -W -f '${Package} ${Version} ${Status}' nodeforge
	status_is 0
	[ "$output" = "nodeforge $(dpkg-deb -f "$pkg" Version) install ok installed" ]
	# the package's binary, not the building host's
	want=$(dpkg-deb --fsys-tarfile "$pkg" | tar -xO ./usr/bin/nodeforge | sha256sum | cut -d' ' -f1)
	[ "$(sha256sum < "$ROOT/usr/bin/nodeforge" | cut -d' ' -f1)" = "$want" ]
	! cmp -s "$NF_BIN" "$ROOT/usr/bin/nodeforge"
	# every library it needs is the image's own
	run chroot "$ROOT" ldd /usr/bin/nodeforge
	status_is 0
	[[ "$output" != *"not found"* ]]
	[ ! -e "$ROOT/var/cache/nodeforge/nodeforge.deb" ]
}

@test "e2e build: a package whose nodeforge is another version is refused; the published image stays" {
	cur_before=$(cat "$OUT/mini/mini.current")
	mkdir -p "$BATS_TEST_TMPDIR/fake/DEBIAN" "$BATS_TEST_TMPDIR/fake/usr/bin"
	printf 'Package: nodeforge\nVersion: 0.0.1\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n' \
		> "$BATS_TEST_TMPDIR/fake/DEBIAN/control"
	printf '#!/bin/sh\necho "nodeforge 0.0.1 (commit 000000000000)"\n' > "$BATS_TEST_TMPDIR/fake/usr/bin/nodeforge"
	chmod 0755 "$BATS_TEST_TMPDIR/fake/usr/bin/nodeforge"
	dpkg-deb --root-owner-group -b "$BATS_TEST_TMPDIR/fake" "$BATS_TEST_TMPDIR/old.deb" >/dev/null
	run "$NF_BIN" -C "$PROFS" build mini --cache "$E2E" --out "$OUT" --self-package "$BATS_TEST_TMPDIR/old.deb"
	status_is 1
	[[ "$output" == *"says 'nodeforge 0.0.1 (commit 000000000000)', not '$("$NF_BIN" version)'"* ]]
	[ "$(cat "$OUT/mini/mini.current")" = "$cur_before" ]
}

@test "e2e build: no host identity and no secrets" {
	[ ! -s "$ROOT/etc/machine-id" ]
	! ls "$ROOT"/etc/ssh/ssh_host_* 2>/dev/null
	[ ! -e "$ROOT/var/lib/systemd/random-seed" ]
	# ldconfig's inode and time record (differs per build)
	[ ! -e "$ROOT/var/cache/ldconfig/aux-cache" ]
	[ ! -e "$ROOT/etc/munge/munge.key" ]
	[ "$(readlink "$ROOT/init")" = /sbin/init ]
}

@test "e2e build: an unchanged rebuild is a cache hit under 2 s with the same sha256" {
	sha=$(cur rootfs_sha256)
	start=$(date +%s%N)
	run nf -C "$PROFS" build mini --cache "$E2E" --out "$OUT"
	status_is 0
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	echo "# no-op rebuild: ${ms} ms" >&3 || true
	[[ "$output" == *"unchanged"* ]]
	[ "$ms" -lt 2000 ]
	[ "$(cur rootfs_sha256)" = "$sha" ]
}

@test "e2e build: rebuilt from the cached bootstrap into a new output, same sha256" {
	sha=$(cur rootfs_sha256)
	run nf -C "$PROFS" build mini --cache "$E2E" --out "$BATS_FILE_TMPDIR/out2"
	status_is 0
	[[ "$output" == *"cached"* ]]
	[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rootfs_sha256"])' "$BATS_FILE_TMPDIR/out2/mini/mini.current")" = "$sha" ]
}
