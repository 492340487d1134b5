#!/usr/bin/env bats
# nodeforge pack: zstd in several jobs, and hard links found while packing.
load helper

# N bytes of noise that is the same in every run (AES-CTR of zeros under
# a fixed key; IV $2): a size comparison must not depend on the draw
noise() {
	openssl enc -aes-128-ctr -nosalt -K 000102030405060708090a0b0c0d0e0f \
		-iv "$2" </dev/zero 2>/dev/null | head -c "$1"
}

# About 30 MB, half noise: zstd cuts it into several jobs at level 3
make_big_tree() {
	mkdir -p root/a root/b
	noise 16000000 00000000000000000000000000000001 >root/a/noise
	seq 1 2000000 >root/b/text
	noise 1000000 00000000000000000000000000000002 >root/b/more
	[ "$(stat -c %s root/a/noise)" = 16000000 ]
}

@test "--threads 1, 2 and 4 give the same bytes when zstd runs several jobs" {
	make_big_tree
	nf pack root -o t1.tar.zst --threads 1 -q
	nf pack root -o t2.tar.zst --threads 2 -q
	nf pack root -o t4.tar.zst --threads 4 -q
	cmp t1.tar.zst t2.tar.zst
	cmp t1.tar.zst t4.tar.zst
	# More than one job's worth of input
	[ "$(zstd -dc t1.tar.zst | wc -c)" -gt 25000000 ]
	zstd -q -t t1.tar.zst
	nf pack root -o t1.cpio.zst --threads 1 -q
	nf pack root -o t4.cpio.zst --threads 4 -q
	cmp t1.cpio.zst t4.cpio.zst
}

@test "zstd output is no larger than the zstd command line at the same level" {
	make_big_tree
	nf pack root -o o.tar -q
	nf pack root -o o.tar.zst -q
	zstd -q -T0 -3 -c <o.tar >peer.zst
	# the same input every run: on random noise the two differed by a few
	# hundred bytes either way (their jobs split the input differently)
	echo "nodeforge $(stat -c %s o.tar.zst), zstd -T0 -3 $(stat -c %s peer.zst)"
	[ "$(stat -c %s o.tar.zst)" -le "$(stat -c %s peer.zst)" ]
	zstd -dc o.tar.zst | cmp - o.tar
}

@test "a file whose other name is outside the tree is packed with its content" {
	mkdir -p root/d outside
	echo content >root/d/f
	ln root/d/f outside/g
	echo two >root/x
	ln root/x root/y
	nf pack root -o o.tar -q
	run tar -tvf o.tar
	[[ "$output" == *"-rw-r--r-- 0/0"*" 8 "*"d/f"* ]]
	[[ "$output" == *"y link to x"* ]]
	mkdir out
	tar -xf o.tar -C out
	[ "$(cat out/d/f)" = content ]
	[ "$(stat -c %h out/x)" = 2 ]
	nf pack root -o o.cpio -q
	mkdir outc
	(cd outc && cpio -id --quiet <../o.cpio)
	[ "$(cat outc/d/f)" = content ]
	[ "$(stat -c %h outc/d/f)" = 1 ]
	[ "$(stat -c %h outc/x)" = 2 ]
	[ "$(cat outc/y)" = two ]
}

@test "the manifest holds names with quotes, backslashes, control bytes and UTF-8" {
	mkdir -p root/d
	touch 'root/q"uote' 'root/back\slash' "root/$(printf 'nl\nx')" \
		"root/$(printf 'ctl\001\037\177')" 'root/héllo wörld' 'root/日本'
	ln -s "$(printf 'tgt"\\\n\001é')" root/d/link
	nf pack root -o o.tar -q
	python3 - <<'PY'
import json, os
m = json.load(open("o.tar.manifest.json", encoding="utf-8"))
paths = {e["path"] for e in m["entries"]}
want = {".", "d", "d/link"} | set(os.listdir("root"))
assert paths == want, (paths ^ want)
link = [e for e in m["entries"] if e["path"] == "d/link"][0]
assert link["target"] == os.readlink("root/d/link"), link
PY
}

@test "an extended attribute name that is not UTF-8 fails the pack, naming the file; nothing is written" {
	mkdir root
	echo x > root/f
	setfattr -n "trusted.$(printf 'a\377')" -v 1 root/f 2>/dev/null || skip "no trusted xattrs here (needs root)"
	run nf pack root -o o.tar.zst
	status_is 1
	[[ "$output" == *"'f': extended attribute name is not valid UTF-8"* ]]
	[ ! -e o.tar.zst ] && [ ! -e o.tar.zst.manifest.json ]
	[ -z "$(ls -A | grep -v -e '^root$' -e '^home$')" ]
}
