#!/usr/bin/env bats
# pack -> unpack reproduces the tree.
load helper
load pack_helper

same_tree() {
	local d
	for d in "$1" "$2"; do
		(cd "$d" && { find . ! -type d -printf '%p %y %m %U:%G %s %l\n'
			      find . -type d -printf '%p %y %m %U:%G\n'; } | sort) >"$3.$(basename "$d")"
	done
	diff "$3.$(basename "$1")" "$3.$(basename "$2")"
}

@test "tar.zst round trip: modes, owners, links, symlinks, fifos, devices, xattrs" {
	make_tree root
	nf pack root -o o.tar.zst -q
	nf unpack o.tar.zst out --devices
	same_tree root out t
	[ "$(stat -c %i out/usr/lib/x/big)" = "$(stat -c %i out/usr/lib/x/big-link)" ]
	[ "$(readlink out/lib)" = usr/lib ]
	[ "$(stat -c %a out/usr/bin/ping)" = 4755 ]
	if [ "$(id -u)" = 0 ]; then
		[ "$(stat -c %u:%g out/etc/shadow)" = 42:43 ]
		[ -c out/var/null ]
		getcap out/usr/bin/tool | grep -q cap_net_raw
		[ "$(getfattr --only-values -n user.note out/etc/passwd)" = hello ]
	fi
	run nf manifest check o.tar.zst.manifest.json --root out
	status_is 0
}

@test "tar.xz round trip; GNU tar with --xattrs (as Anaconda runs it) reads it" {
	make_tree root
	nf pack root -o o.tar.xz -q
	nf unpack o.tar.xz out --devices
	same_tree root out x
	run nf manifest check o.tar.xz.manifest.json --root out
	status_is 0
	mkdir gnu
	tar --numeric-owner --xattrs --xattrs-include='*' -xJf o.tar.xz -C gnu
	cmp root/usr/lib/x/big gnu/usr/lib/x/big
	[ "$(readlink gnu/lib)" = usr/lib ]
}

@test "cpio round trip keeps hard links and content" {
	make_tree root
	nf pack root -o o.cpio.gz -q 2>/dev/null
	nf unpack o.cpio.gz out --devices
	same_tree root out c
	[ "$(stat -c %i out/usr/lib/x/big)" = "$(stat -c %i out/usr/lib/x/big-link)" ]
	cmp root/usr/lib/x/big out/usr/lib/x/big
	run nf manifest check o.cpio.gz.manifest.json --root out
	status_is 0
}

@test "unpack of a GNU tar archive works too" {
	mkdir root
	echo a >root/a
	mkdir root/d
	ln -s a root/d/l 2>/dev/null || true
	tar -C root -cf g.tar .
	nf unpack g.tar out
	[ "$(cat out/a)" = a ]
}

@test "a tree 256 directories deep packs, unpacks and checks; one directory deeper is refused, named" {
	d=root
	for i in $(seq 256); do d=$d/$i; done
	mkdir -p "$d"
	echo deep > "$d/f"
	nf pack root -o o.tar -q
	nf unpack o.tar out
	same_tree root out d
	run nf manifest check o.tar.manifest.json --root out
	status_is 0
	mkdir "$d/x"
	run nf pack root -o p.tar -q
	status_is 1
	[[ "$output" == *"/255/256/x': nested deeper than 256 directories"* ]]
	[ ! -e p.tar ]
	mkdir "out/${d#root/}/x"
	run nf manifest check o.tar.manifest.json --root out
	status_is 1
	[[ "$output" == *"/256/x': nested deeper than 256 directories"* ]]
}
