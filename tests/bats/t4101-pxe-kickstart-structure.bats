#!/usr/bin/env bats
# nodeforge pxe kickstarts: a STRUCTURAL check against RHEL 9 kickstart
# syntax (tests/bats/ks_rhel9_structure.py), the fast check that names the
# line; t4100 runs the real validator (pykickstart's ksvalidator).  Also: the liveimg URL must be one Anaconda takes
# for a tarball, with the sha256 of exactly the file it names.
load helper

URL=http://10.0.0.1:8080

pxe() {
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u "$URL" \
		--images "${IMAGES:-$FIXTURES/boot/out}" --kickstart "$NF_SRCDIR/kickstart" \
		--network 10.0.0.0/16 --kernel-args "compute=quiet hugepages=64" \
		--kernel-args controller=quiet --kernel-args login=quiet \
		--ipxe-dir no-ipxe "$@"
}

kscheck() { python3 "$NF_SRCDIR/tests/bats/ks_rhel9_structure.py" --tree tree --server-url "$URL" "$@"; }

setup() {
	nf_setup
	cp "$NF_SRCDIR/examples/racks.yaml" .
	# a munge key on the boot server: it must never reach a kickstart
	head -c 1024 /dev/urandom >munge.key
}

@test "kickstart structure matches RHEL 9 syntax (structural check, not ksvalidator)" {
	run pxe
	status_is 0
	run kscheck tree/kickstart/compute.ks --args "quiet hugepages=64" --secret munge.key
	status_is 0
	[[ "$output" == *"compute.ks: ok"* ]]
	for r in controller login; do
		run kscheck "tree/kickstart/$r.ks" --args quiet --secret munge.key
		status_is 0
	done
	# what RHEL 9 removed or deprecates is not there
	! grep -Eq '^(install|auth|authconfig|device|deviceprobe|dmraid|multipath|autostep)( |$)' tree/kickstart/*.ks
	grep -qx 'network --bootproto=dhcp --device=link --activate --onboot=yes' tree/kickstart/compute.ks
	grep -qx 'bootloader --location=mbr --append="quiet hugepages=64 nodeforge.server=http://10.0.0.1:8080"' tree/kickstart/compute.ks
}

@test "the structural check fails on what it claims to catch" {
	pxe
	ks=tree/kickstart/compute.ks
	bad() { # sed-expression expected-message
		sed "$1" "$ks" >bad.ks
		run kscheck bad.ks --args "quiet hugepages=64" --secret munge.key
		[ "$status" -eq 1 ] || { echo "not caught: $1"; cat bad.ks; return 1; }
		[[ "$output" == *"$2"* ]] || { echo "want '$2' for $1, got: $output"; return 1; }
	}
	bad 's/^text$/install/' "'install' is removed in RHEL 9"
	bad 's/^text$/auth --enableshadow/' "'auth' is deprecated"
	bad 's/^text$/frobnicate/' "not a RHEL 9 kickstart command"
	bad '/^%end$/d' "not closed with %end"
	bad 's/^%post .*/%postt/' "not a RHEL 9 section"
	bad 's/--append="\(.*\)"$/--append="\1/' "unbalanced quoting"
	bad 's/ hugepages=64 nodeforge/ nodeforge/' "lacks the role's 'hugepages=64'"
	bad 's/--checksum=[0-9a-f]/--checksum=f/' "is not the sha256 of"
	bad 's/--checksum=[0-9a-f]*/--checksum=abc/' "64 hex digits"
	bad 's/rootfs\.tar\.xz/rootfs.tar.zst/' "rootfs.tar.zst' for a disk image"
	bad 's/^rootpw --lock$/rootpw --iscrypted $6$salt$abcdefghijklmnop/' "a crypt(3) password hash"
	bad "s|^zerombr\$|# $(base64 -w0 munge.key | head -c 60)|" "base64 blob"
	bad "s|^zerombr\$|# $(od -An -tx1 munge.key | tr -d ' \n')|" "holds the secret of 'munge.key'"
	bad 's/--device=link //' "network needs --device"
	bad 's/ --activate//' "network needs --activate"
	bad 's/--bootproto=dhcp/--bootprto=dhcp/' "'--bootprto' is not a RHEL 9 option"
	bad 's/^reboot$/reboot\nreboot/' "may appear once"
	bad 's/^systemctl enable/#systemctl enable/' "does not enable nodeforge-verify.service"
	bad '/^liveimg /d' "no 'liveimg' command"
}

@test "a rootfs Anaconda would take for a disk image is refused, naming the file and the remedy" {
	cp -r "$FIXTURES/boot/out" out
	python3 - <<'PY'
import json
p = "out/compute/compute.current"
c = json.load(open(p))
del c["liveimg"], c["liveimg_sha256"]
json.dump(c, open(p, "w"))
PY
	IMAGES=out run pxe
	status_is 1
	[[ "$output" == *"cannot render the kickstart of role 'compute'"* ]]
	[[ "$output" == *"'out/compute/compute-c91411da8643.rootfs.tar.zst' for a disk image, not a tarball"* ]]
	[[ "$output" == *"nodeforge build compute"*"compute-<sha12>.rootfs.tar.xz"* ]]
	# nothing rendered: not even the other roles' kickstarts
	[ -z "$(ls -A tree/kickstart 2>/dev/null)" ]
	[ ! -e tree/ipxe/boot.ipxe ]
	# without kickstarts the same images render
	run nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree2 -u "$URL" --images out \
		--network 10.0.0.0/16 --kernel-args compute=quiet --kernel-args controller=quiet \
		--kernel-args login=quiet --ipxe-dir no-ipxe
	status_is 0
	[ ! -e tree2/kickstart ]
}

@test "a rootfs Anaconda takes as is (.tar.gz) is used when there is no liveimg" {
	cp -r "$FIXTURES/boot/out" out
	echo gz >out/login/login-0123456789ab.rootfs.tar.gz
	sha=$(sha256sum out/login/login-0123456789ab.rootfs.tar.gz | cut -d' ' -f1)
	python3 - "$sha" <<'PY'
import json, sys
p = "out/login/login.current"
c = json.load(open(p))
del c["liveimg"], c["liveimg_sha256"]
c["rootfs"], c["rootfs_sha256"] = "login-0123456789ab.rootfs.tar.gz", sys.argv[1]
json.dump(c, open(p, "w"))
PY
	IMAGES=out run pxe
	status_is 0
	grep -qx "liveimg --url=$URL/images/login/login-0123456789ab.rootfs.tar.gz --checksum=$sha" tree/kickstart/login.ks
	run kscheck tree/kickstart/login.ks --args quiet
	status_is 0
}

@test "a malformed liveimg in the pointer is refused" {
	cp -r "$FIXTURES/boot/out" out
	sed -i 's/"liveimg_sha256":"[0-9a-f]*"/"liveimg_sha256":"XYZ"/' out/compute/compute.current
	IMAGES=out run pxe
	status_is 1
	[[ "$output" == *"'liveimg_sha256' 64 lower-case hex digits"* ]]
}

@test "an EL site gets kickstarts by default, a Debian site none" {
	sed 's/^distro: .*/distro: rocky9/' "$NF_SRCDIR/profiles/site.yaml" >el-site.yaml
	run nf -s el-site.yaml pxe -o tree --images "$FIXTURES/boot/out"
	status_is 0
	[ -f tree/kickstart/compute.ks ]
	url=$(sed -n 's/^  url: //p' el-site.yaml)
	grep -q "cluster $(sed -n 's/^cluster: //p' el-site.yaml)" tree/kickstart/compute.ks
	args=$(python3 -c 'import json; print(json.load(open("tree/nodes.json"))["roles"]["compute"]["kernel_args"])')
	run python3 "$NF_SRCDIR/tests/bats/ks_rhel9_structure.py" --tree tree --server-url "$url" \
		--args "$args" tree/kickstart/compute.ks
	status_is 0
	rm -rf tree
	run nf pxe -o tree --images "$FIXTURES/boot/out"
	status_is 0
	[ ! -e tree/kickstart ]
}
