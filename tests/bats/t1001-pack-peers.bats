#!/usr/bin/env bats
# Real peers read nodeforge's archives; the manifest matches sha256sum.
load helper
load pack_helper

@test "GNU tar and bsdtar list the same entries" {
	command -v bsdtar || skip "bsdtar not installed"
	make_tree root
	nf pack root -o o.tar.zst -q
	tar --zstd -tf o.tar.zst | sed 's,/$,,' >gnu
	bsdtar -tf o.tar.zst | sed 's,/$,,' >bsd
	diff gnu bsd
	grep -qx 'usr/lib/x/big-link' gnu
	# the manifest lists the same entries
	python3 -c '
import json; m = json.load(open("o.tar.zst.manifest.json"))
print("\n".join("." if e["path"] == "." else e["path"] for e in m["entries"]))' >mf
	sed 's,^\./\?$,.,' gnu >gnu2
	diff gnu2 mf
}

@test "GNU tar reads the xattrs and the hard link" {
	[ "$(id -u)" = 0 ] || skip "needs root for capabilities"
	make_tree root
	nf pack root -o o.tar -q
	mkdir x
	tar --xattrs --xattrs-include='*' -C x -xf o.tar
	getcap x/usr/bin/tool | grep -q cap_net_raw
	[ "$(stat -c %i x/usr/lib/x/big)" = "$(stat -c %i x/usr/lib/x/big-link)" ]
}

@test "UTF-8 names are plain pax paths: GNU tar and bsdtar extract them silently, the same bytes in any locale" {
	mkdir -p root/etc/ssl/certs
	printf 'x' > "root/etc/ssl/certs/Certinomis_-_Autorité_Racine.pem"
	printf 'y' > "root/etc/ssl/certs/NetLock_Arany_=Class_Gold=_Főtanúsítvány.pem"
	LC_ALL=C nf pack root -o c.tar -q
	LC_ALL=C.UTF-8 nf pack root -o u.tar -q
	cmp c.tar u.tar
	! grep -aq hdrcharset c.tar
	mkdir g
	run tar -xf c.tar -C g
	status_is 0
	[ -z "$output" ]
	[ -f "g/etc/ssl/certs/Certinomis_-_Autorité_Racine.pem" ]
	if command -v bsdtar >/dev/null; then
		mkdir b
		run env LC_ALL=C.UTF-8 bsdtar -xf c.tar -C b
		status_is 0
		[ -z "$output" ]
		[ -f "b/etc/ssl/certs/NetLock_Arany_=Class_Gold=_Főtanúsítvány.pem" ]
	fi
	# and nodeforge reads back the same names, in the C locale
	LC_ALL=C nf unpack c.tar n
	[ -f "n/etc/ssl/certs/Certinomis_-_Autorité_Racine.pem" ]
}

@test "cpio -it reads the newc archive" {
	command -v cpio || skip "cpio not installed"
	make_tree root
	nf pack root -o o.cpio -q
	run cpio -it <o.cpio
	status_is 0
	[[ "$output" == *"usr/bin/tool"* ]]
	[[ "$output" == *"usr/lib/x/big-link"* ]]
	zstd -q -d -c <(nf pack root -o o.cpio.zst -q; cat o.cpio.zst) | cpio -it >/dev/null
}

@test "manifest sha256 values equal sha256sum; archive sha256 too" {
	make_tree root
	nf pack root -o o.tar.zst -q
	python3 - <<'PY'
import hashlib, json, os
m = json.load(open("o.tar.zst.manifest.json"))
n = 0
for e in m["entries"]:
    if e["type"] == "file":
        h = hashlib.sha256(open(os.path.join("root", e["path"]), "rb").read()).hexdigest()
        assert h == e["sha256"], e
        assert os.path.getsize(os.path.join("root", e["path"])) == e["size"]
        n += 1
assert n >= 5, n
links = [e for e in m["entries"] if e["type"] == "hardlink"]
assert links and links[0]["target"] == "usr/lib/x/big", links
PY
	want=$(sha256sum o.tar.zst | cut -d' ' -f1)
	grep -q "\"sha256\":\"$want\",\"size\":$(stat -c %s o.tar.zst)" o.tar.zst.manifest.json
}
