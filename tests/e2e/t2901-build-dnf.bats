#!/usr/bin/env bats
# EL backend: real dnf --installroot against a local repo the test makes
# with rpmbuild and createrepo_c (el_helper.bash).
load ../bats/helper
load el_helper

setup() {
	nf_setup
	el_stub_repo repo
	PROFS=$NF_SRCDIR/tests/fixtures/profiles/el
}

@test "el build: dnf --installroot from a local repo, EL paths, verifiable" {
	run nf -C "$PROFS" build elmini --cache "$SCRATCH/cache" --mirror "$SCRATCH/repo"
	status_is 0
	cur=out/elmini/elmini.current
	rootfs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rootfs"])' $cur)
	kernel=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernel"])' $cur)
	manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifest"])' $cur)
	[ "$(cat out/elmini/$kernel)" = "kernel stub" ]
	mkdir root
	zstd -dc out/elmini/$rootfs | tar -x -C root
	[ "$(cat root/usr/sbin/chronyd)" = "chrony stub" ]
	grep -qx 'server 10.0.0.1 iburst' root/etc/chrony.conf
	grep -qx 'driftfile /var/lib/chrony/drift' root/etc/chrony.conf
	[ "$(readlink root/etc/systemd/system/multi-user.target.wants/chronyd.service)" = /usr/lib/systemd/system/chronyd.service ]
	[ ! -e root/var/cache/dnf ]
	[ ! -e root/var/log/dnf.log ]
	# rpm's database is where EL's rpm looks on the node, and nothing of
	# the building user's home came along
	[ -s root/var/lib/rpm/rpmdb.sqlite ]
	[ -z "$(cd root && find . -name rpmdb.sqlite ! -path ./var/lib/rpm/rpmdb.sqlite)" ]
	[ ! -e root/root/.rpmdb ]
	rpm --root "$PWD/root" --dbpath /var/lib/rpm -q chrony kernel
	run nf manifest verify --pubkey out/signing.pub out/elmini/$manifest
	status_is 0
	# the tarball for kickstart liveimg: tar.xz, the sha256 the pointer says
	live=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["liveimg"])' $cur)
	lsha=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["liveimg_sha256"])' $cur)
	[[ "$live" == elmini-*.rootfs.tar.xz ]]
	[ "$(sha256sum out/elmini/$live | cut -d' ' -f1)" = "$lsha" ]
	tar -tJf out/elmini/$live | grep -qx usr/sbin/chronyd
	# its manifest is named by the image id, like every file of the image
	run nf manifest verify --pubkey out/signing.pub out/elmini/${manifest%.manifest.json}.liveimg.manifest.json
	status_is 0
	# unchanged: a cache hit
	run nf -C "$PROFS" build elmini --cache "$SCRATCH/cache" --mirror "$SCRATCH/repo"
	status_is 0
	[[ "$output" == *"unchanged"* ]]
}

@test "el build: a package the repo lacks is named" {
	mkdir -p prof
	cp "$PROFS"/*.yaml prof/
	sed -i 's/install: \[chrony\]/install: [chrony, no-such-rpm]/' prof/elmini.yaml
	run nf -C prof build elmini --cache "$SCRATCH/cache" --mirror "$SCRATCH/repo"
	status_is 1
	[[ "$output" == *"no-such-rpm"* ]]
	[ ! -e out/elmini/elmini.current ]
}
