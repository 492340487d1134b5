#!/usr/bin/env bats
# make test: beside the cluster
# nodeforge build with a stand-in bootstrap tool (tests/fixtures/bin/
# mmdebstrap makes a tiny root): the whole pipeline after the bootstrap is
# real.  The real mmdebstrap build is in tests/e2e/.
load helper

setup() {
	nf_setup
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	export NF_STUB_LOG=$SCRATCH/stub.log
	mkdir -p ov
}

b() { nf build controller --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" "$@"; }

current() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' out/controller/controller.current "$1"; }

# the published rootfs, unpacked once per test
rootfs_file() {
	if [ ! -d "rootfs.$(current rootfs_sha256)" ]; then
		mkdir "rootfs.$(current rootfs_sha256)"
		zstd -dc "out/controller/$(current rootfs)" | tar -x -C "rootfs.$(current rootfs_sha256)"
	fi
	cat "rootfs.$(current rootfs_sha256)/$1"
}

@test "build: no role is a usage error" {
	run nf build
	status_is 2
	[[ "$output" == *"which role?"* ]]
	run nf build controller login
	status_is 2
	[[ "$output" == *"unexpected argument 'login'"* ]]
	run nf build controller --offline --no-cache
	status_is 2
}

@test "build: --prepare with --no-cache is a usage error that names both" {
	run nf build controller --prepare --no-cache
	status_is 2
	[[ "$output" == *"--prepare fills the cache: it cannot be combined with --no-cache"* ]]
	[ ! -e "$SCRATCH/cache" ]
}

@test "build: a SOURCE_DATE_EPOCH that is no number is refused before anything is written" {
	SOURCE_DATE_EPOCH=soon run b
	status_is 1
	[[ "$output" == *"SOURCE_DATE_EPOCH 'soon' is not a number of seconds"* ]]
	[ ! -e "$SCRATCH/cache" ]
	[ ! -e out ]
	SOURCE_DATE_EPOCH=soon run b --epoch 1000
	status_is 0
	[[ "$output" != *SOURCE_DATE_EPOCH* ]]
}

@test "build: unknown role fails and publishes nothing" {
	run nf build nosuchrole --cache "$SCRATCH/cache"
	status_is 1
	[[ "$output" == *"nosuchrole"* ]]
	[ ! -e out/nosuchrole/nosuchrole.current ]
}

@test "build: the image's nodeforge package is looked for by release: none there is named, with how to make it" {
	mkdir pkgs
	run b --self-package "$SCRATCH/pkgs"
	status_is 1
	[[ "$output" == *"no nodeforge $("$NF_BIN" version --json | jq -r .version) package for trixie"* ]]
	[[ "$output" == *"'$SCRATCH/pkgs/trixie/nodeforge_"*"_amd64.deb' does not exist"* ]]
	[[ "$output" == *"make image-pkgs"* ]]
	[ ! -e out/controller/controller.current ]
	! grep -q '^bootstrap' stub.log 2>/dev/null
}

@test "build: --self-package of the wrong kind or missing is refused before any work" {
	touch nodeforge.rpm
	run b --self-package "$SCRATCH/nodeforge.rpm"
	status_is 1
	[[ "$output" == *"'$SCRATCH/nodeforge.rpm' is not a .deb file nor a directory of packages (this image is Debian)"* ]]
	run b --self-package "$SCRATCH/nope.deb"
	status_is 1
	[ "$output" = "nodeforge build: --self-package '$SCRATCH/nope.deb': no such file or directory" ]
	[ ! -e out/controller/controller.current ]
	! grep -q '^bootstrap' stub.log 2>/dev/null
}

@test "build: publishes content-addressed files, a pointer and a verifiable manifest" {
	run b
	status_is 0
	sha=$(current rootfs_sha256)
	id=${sha:0:12}
	[ "$(current rootfs)" = "controller-$id.rootfs.tar.zst" ]
	[ "$(current initramfs)" = "controller-$id.initramfs.cpio.zst" ]
	[ "$(current kernel)" = "controller-$id.vmlinuz" ]
	[ "$(current manifest)" = "controller-$id.manifest.json" ]
	[ "$(sha256sum out/controller/controller-$id.rootfs.tar.zst | cut -d' ' -f1)" = "$sha" ]
	[ "$(cat out/controller/controller-$id.vmlinuz)" = "stub kernel" ]
	run nf manifest verify --pubkey out/signing.pub out/controller/controller-$id.manifest.json
	status_is 0
	run nf manifest verify --pubkey out/signing.pub out/controller/controller-$id.initramfs.manifest.json
	status_is 0
	# the image trusts the key it is signed with (the boot tree's cluster
	# files must be signed by it: t4402)
	cmp <(rootfs_file etc/nodeforge/signing.pub) out/signing.pub
	# no leftovers
	[ -z "$(ls -A out/controller | grep '^\.tmp-' || true)" ]
	[ -z "$(ls -A cache/work 2>/dev/null || true)" ]
}

@test "build: the image holds the facets' files and no host identity" {
	b -q
	rootfs_file etc/slurm/slurm.conf | grep -qx 'ClusterName=production'
	rootfs_file etc/slurm/slurm.conf | grep -qx 'Include /etc/slurm/cluster.conf'
	rootfs_file etc/slurm/slurmdbd.conf | grep -qx 'DbdHost=localhost'
	rootfs_file etc/slurm/slurmdbd.conf | grep -qx 'ArchiveResvs=yes'
	rootfs_file etc/mysql/mariadb.conf.d/90-slurm.cnf | grep -q 'innodb_lock_wait_timeout *= 900'
	rootfs_file etc/nodeforge/profile.json | python3 -c 'import json,sys; assert json.load(sys.stdin)["role"]=="controller"'
	rootfs_file etc/stub-packages | grep -qx slurmctld
	rootfs_file etc/stub-packages | grep -qx linux-image-amd64
	# nodeforge itself (the first-boot verifier) and its libraries
	rootfs_file etc/stub-packages | grep -qx libjansson4
	cmp <(rootfs_file usr/bin/nodeforge) "$NF_BIN"
	[ -z "$(rootfs_file etc/machine-id)" ]
	[ "$(rootfs_file etc/hostname)" = localhost ]
	list=$(zstd -dc "out/controller/$(current rootfs)" | tar -tv)
	! grep -q ssh_host_ <<<"$list"
	! grep -q random-seed <<<"$list"
	! grep -q initrd.img <<<"$list"
	! grep -q InRelease <<<"$list"
	grep -q 'etc/slurm/slurmdbd.conf' <<<"$list"
	grep 'etc/slurm/slurmdbd.conf' <<<"$list" | grep -q '^-rw------- 64030/64030'
	# secrets never enter the image, even when a package generates one
	! grep -q 'munge.key$' <<<"$list"
	grep -q 'etc/munge/$' <<<"$list"
	# the initramfs is the whole image with systemd as /init
	zstd -dc "out/controller/$(current initramfs)" | cpio -it 2>/dev/null | grep -qx init
}

@test "build: with the shipped overlays, enrollment and networking are enabled on the node" {
	run nf build controller --cache "$SCRATCH/cache" --overlays "$NF_SRCDIR/overlays" -q
	status_is 0
	list=$(zstd -dc "out/controller/$(current rootfs)" | tar -tv)
	# the munge key arrives at first boot, before munged starts
	grep -q 'etc/systemd/system/nodeforge-enroll.service$' <<<"$list"
	grep -q 'etc/systemd/system/multi-user.target.wants/nodeforge-enroll.service -> /etc/systemd/system/nodeforge-enroll.service' <<<"$list"
	grep -q 'etc/systemd/system/munge.service.requires/nodeforge-enroll.service -> /etc/systemd/system/nodeforge-enroll.service' <<<"$list"
	# DHCP on every Ethernet link; online when one link is
	rootfs_file etc/systemd/network/50-nodeforge-dhcp.network | grep -qx 'Type=ether'
	rootfs_file etc/systemd/system/systemd-networkd-wait-online.service.d/nodeforge.conf | grep -q -- '--any'
	grep -q 'multi-user.target.wants/systemd-networkd.service -> ' <<<"$list"
}

@test "build: unchanged inputs are a cache hit, same sha256" {
	b -q
	sha=$(current rootfs_sha256)
	run b
	status_is 0
	[[ "$output" == *"unchanged"* ]]
	[ "$(current rootfs_sha256)" = "$sha" ]
	[ "$(grep -c '^bootstrap' stub.log)" -eq 1 ]
}

@test "build: same inputs from scratch give the same sha256 (reproducible)" {
	b -q
	sha=$(current rootfs_sha256)
	rm -rf out
	b -q --no-cache
	[ "$(current rootfs_sha256)" = "$sha" ]
	[ "$(grep -c '^bootstrap' stub.log)" -eq 2 ]
}

@test "build: an overlay change rebuilds without bootstrapping, templates rendered" {
	b -q
	sha=$(current rootfs_sha256)
	mkdir -p ov/controller/etc ov/common/usr/local/bin
	printf 'cluster {{site.cluster}} role {{role}} ntp {{site.ntp.0}} cost ${HOME} \\{{x}}\n' > ov/controller/etc/motd.tmpl
	printf '#!/bin/sh\necho hi\n' > ov/common/usr/local/bin/hello
	chmod 0700 ov/common/usr/local/bin/hello
	run b
	status_is 0
	[[ "$output" == *"cached"* ]]
	[ "$(grep -c '^bootstrap' stub.log)" -eq 1 ]
	[ "$(current rootfs_sha256)" != "$sha" ]
	[ "$(rootfs_file etc/motd)" = 'cluster production role controller ntp 10.0.0.1 cost ${HOME} {{x}}' ]
	zstd -dc "out/controller/$(current rootfs)" | tar -tv | grep 'usr/local/bin/hello' | grep -q '^-rwxr-xr-x 0/0'
	zstd -dc "out/controller/$(current rootfs)" | tar -tv | grep -q 'etc/motd$'
}

@test "build: an undefined template variable fails, naming it; previous image kept" {
	b -q
	before=$(cat out/controller/controller.current)
	mkdir -p ov/controller/etc
	printf 'x\ny {{site.nosuchkey}}\n' > ov/controller/etc/motd.tmpl
	run b
	status_is 1
	[[ "$output" == *"motd.tmpl:2: unknown template variable '{{site.nosuchkey}}'"* ]]
	# the syntax overlay templates had before: refused, with the new spelling
	printf 'x\ny\nz ${site.cluster} ${role}\n' > ov/controller/etc/motd.tmpl
	run b
	status_is 1
	[[ "$output" == *"motd.tmpl:3: '\${site.cluster}' is the old template syntax: write '{{site.cluster}}'"* ]]
	[ "$(cat out/controller/controller.current)" = "$before" ]
}

@test "build: a second build while one runs is refused" {
	mkdir -p out/controller
	flock out/controller/.lock sleep 1 3>&- &
	sleep 0.2
	run b
	status_is 1
	[[ "$output" == *"another build of 'controller' is running"* ]]
	kill %1 2>/dev/null || true
	wait || true
}

@test "build: a killed build leaves the previous image intact" {
	b -q
	before=$(cat out/controller/controller.current)
	mkdir -p ov/controller/etc
	echo changed > ov/controller/etc/motd
	(NF_STUB_SLEEP=1 exec "$NF_BIN" build controller --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" --no-cache -q) 3>&- &
	pid=$!
	for i in $(seq 50); do [ -d out/controller ] && grep -q bootstrap stub.log 2>/dev/null && [ "$(grep -c '^bootstrap' stub.log)" -ge 2 ] && break; sleep 0.1; done
	kill -9 $pid
	wait $pid || true
	[ "$(cat out/controller/controller.current)" = "$before" ]
	for f in kernel initramfs rootfs manifest; do [ -f "out/controller/$(current $f)" ]; done
	run b
	status_is 0
	[ -z "$(ls -A out/controller | grep '^\.tmp-' || true)" ]
}

@test "build: the work root a dead build left (CACHE/work/ROLE-PID) is removed by the next build; a running build's is not" {
	b -q
	sleep 0 & dead=$!
	wait "$dead"
	mkdir -p "cache/work/controller-$dead/root/usr" "cache/work/login-$$/root" cache/work/notes
	echo x > "cache/work/controller-$dead/root/usr/big"
	run b
	status_is 0
	[ ! -e "cache/work/controller-$dead" ]
	[ -d "cache/work/login-$$/root" ]
	[ -d cache/work/notes ]
}

@test "build: a package missing from the distro is named" {
	mkdir -p prof
	cp "$NF_SRCDIR"/profiles/*.yaml prof/
	sed -i 's/install: \[slurmctld,/install: [no-such-package, slurmctld,/' prof/controller.yaml
	run nf -C prof build controller --cache "$SCRATCH/cache"
	status_is 1
	[[ "$output" == *"Unable to locate package no-such-package"* ]]
	[[ "$output" == *"artifact"* ]]
	[ ! -e out/controller/controller.current ]
}

@test "build: --offline without a cached bootstrap says what to do" {
	run b --offline
	status_is 1
	[[ "$output" == *"--offline: no cached bootstrap"* ]]
}

@test "build: --json result" {
	run b --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["rootfs"].startswith("controller-") and len(d["rootfs_sha256"])==64'
}

@test "build: a package both installed and purged after the artifacts (system.packages.build) is refused, file:line:col" {
	stub_profiles prof
	cat > prof/tools.yaml <<'YAML'
description: a role that keeps make and purges it
inherits: [base]
system:
  packages:
    install: [make]
    build: [gcc, make]
YAML
	run nf -C prof lint tools
	status_is 3
	[[ "$output" == *"prof/tools.yaml:6:18: error: package 'make' is also in system.packages.install: the image cannot keep it and purge it"* ]]
	run nf -C prof build tools --cache "$SCRATCH/cache"
	status_is 1
	[[ "$output" == *"package 'make' is also in system.packages.install"* ]]
	[ ! -e out/tools/tools.current ]
	! grep -q '^bootstrap' stub.log 2>/dev/null
}

@test "build: two builds of one role on one new cache at once: one signing key, one bootstrap, both publish images that verify" {
	NF_STUB_SLEEP=2 b --out outA -q >a.log 2>&1 &
	pa=$!
	NF_STUB_SLEEP=2 b --out outB -q >b.log 2>&1 &
	pb=$!
	ra=0 rb=0
	wait "$pa" || ra=$?
	wait "$pb" || rb=$?
	cat a.log b.log
	[ "$ra" = 0 ] && [ "$rb" = 0 ]
	# the second waited for the first's bootstrap and took it from the cache
	[ "$(grep -c '^bootstrap ' "$SCRATCH/stub.log")" = 1 ]
	cmp outA/signing.pub outB/signing.pub
	cmp outA/signing.pub "$SCRATCH/cache/keys/signing.pub"
	for o in outA outB; do
		m=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifest"])' "$o/controller/controller.current")
		nf manifest verify --pubkey "$SCRATCH/cache/keys/signing.pub" "$o/controller/$m" >/dev/null
	done
}
