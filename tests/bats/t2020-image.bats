#!/usr/bin/env bats
# make test: beside the cluster
# nodeforge image list|show|prune on the images real builds published
# (tests/fixtures/bin/mmdebstrap and dnf stand in for the bootstraps, as in
# t2000 and t2003; everything after them is the real build).
load helper

setup() {
	nf_setup
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	export NODEFORGE_DNF=$FIXTURES/bin/dnf
	export NF_STUB_LOG=$SCRATCH/stub.log
	mkdir -p ov
}

# build EPOCH: one more image of controller (the epoch changes its bytes)
build() { nf build controller --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" --epoch "$1" -q; }

cur() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' out/controller/controller.current "$1"; }

id() { cur rootfs_sha256 | cut -c1-12; }

# three images, oldest first in A B C (C is current)
three() {
	build 1000; A=$(id)
	build 2000; B=$(id)
	build 3000; C=$(id)
	[ "$A" != "$B" ] && [ "$B" != "$C" ]
}

# a boot tree of one controller node, rendered from out/ as it is now
tree() {
	printf 'nodes:\n  - name: ctl-01\n    mac: 52:54:00:00:00:01\n    ip: 10.0.0.2\n    role: controller\n    rack: r00\n' > racks.yaml
	nf pxe -o "$1" -u http://10.0.0.1:8080 --network 10.0.0.0/16 --ipxe-dir no-ipxe -q
}

@test "image: usage errors exit 2 with the help hint" {
	run nf image
	status_is 2
	[[ "$output" == *"which subcommand? list, show or prune"* ]]
	[[ "$output" == *"try 'nodeforge image --help'"* ]]
	run nf image lsit
	status_is 2
	[[ "$output" == *"unknown subcommand 'lsit' (list, show or prune)"* ]]
	mkdir out
	run nf image prune
	status_is 2
	[[ "$output" == *"prune needs --keep N"* ]]
	run nf image prune --keep two
	status_is 2
	[[ "$output" == *"--keep 'two' is not a number of images"* ]]
	run nf image list --keep 1
	status_is 2
	run nf image show
	status_is 2
	run nf image show controller@12ab
	status_is 2
	[[ "$output" == *"invalid image 'controller@12ab': ROLE@SHA with 12 to 64 lower-case hex digits"* ]]
	run nf image list --images nowhere
	status_is 1
	[ "$output" = "nodeforge image: --images 'nowhere': no such directory" ]
}

@test "image list: one line per image, newest first, the current one marked; an unknown role names the roles" {
	three
	run nf image list
	status_is 0
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == "controller@$C "*" current  signed" ]]
	[[ "${lines[1]}" == "controller@$B "*" MiB  signed" ]]
	[[ "${lines[2]}" == "controller@$A "*" MiB  signed" ]]
	[[ "${lines[0]}" =~ \ 20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z\  ]]
	run nf image list controller login
	status_is 2
	[[ "$output" == *"no image of role 'login' in 'out'; roles: controller"* ]]
	mv out built
	run nf image list controller -o built
	status_is 0
	[ "${#lines[@]}" -eq 3 ]
	run nf image list --images built
	status_is 0
	[ "${#lines[@]}" -eq 3 ]
	# a manifest names its own output directory, whatever --images says
	run nf image show "built/controller/controller-$A.manifest.json"
	status_is 0
	[[ "${lines[0]}" == "image:      controller@$A "* ]]
	[[ "$output" == *"signature:  verified with built/signing.pub"* ]]
}

@test "image list --json: each image's every file, their total size, current and signed" {
	three
	run nf --json image list controller
	status_is 0
	echo "$output" > list.json
	python3 - "$A" "$B" "$C" <<'PY'
import json, os, sys
a, b, c = sys.argv[1:]
imgs = json.load(open("list.json"))["images"]
assert [i["id"] for i in imgs] == [c, b, a], imgs
for i in imgs:
    files = sorted(f for f in os.listdir("out/controller") if f.startswith("controller-" + i["id"] + "."))
    assert i["files"] == files, (i["files"], files)
    assert len(files) == 7, files
    assert i["size"] == sum(os.path.getsize("out/controller/" + f) for f in files)
    assert i["role"] == "controller" and i["signed"] is True
    assert i["current"] is (i["id"] == c)
    assert "booted" not in i and "pruned" not in i
PY
}

@test "image show: the current image by default, by ROLE@SHA or by its manifest; the signature checked with OUT/signing.pub" {
	three
	run nf image show controller
	status_is 0
	[[ "${lines[0]}" == "image:      controller@$C "*"current  signed" ]]
	[[ "$output" == *"archive:    controller-$C.rootfs.tar.zst"* ]]
	[[ "$output" == *"sha256:     $(cur rootfs_sha256)"* ]]
	[[ "$output" == *"epoch:      1970-01-01T00:50:00Z (file times)"* ]]
	[[ "$output" == *"signature:  verified with out/signing.pub"* ]]
	run nf image show "controller@$A"
	status_is 0
	[[ "${lines[0]}" == "image:      controller@$A "* ]]
	[[ "$output" == *"epoch:      1970-01-01T00:16:40Z (file times)"* ]]
	full=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["archive"]["sha256"])' out/controller/controller-$B.manifest.json)
	run nf --json image show "controller@$full"
	status_is 0
	[ "$(echo "$output" | jq -r '.id + " " + .signature + " " + .manifest.sha256')" = "$B verified $full" ]
	[ "$(echo "$output" | jq -r .manifest.entries)" -gt 10 ]
	run nf image show "out/controller/controller-$A.manifest.json"
	status_is 0
	[[ "${lines[0]}" == "image:      controller@$A "* ]]
	# the right 12 digits but the wrong rest: no such image
	run nf image show "controller@${full:0:12}0000"
	status_is 1
	[[ "$output" == *"no image 'controller@${full:0:12}0000' in 'out/controller'"* ]]
	run nf image show controller@000000000000
	status_is 1
}

@test "image show: a signature that does not verify is bad, exit 1" {
	build 1000
	nf keys signing --out other -q
	run nf image show controller --pubkey other/signing.pub
	status_is 1
	[[ "$output" == *"signature:  bad with other/signing.pub: "* ]]
	rm "out/controller/controller-$(id).manifest.json.sig"
	run nf image show controller
	status_is 0
	[[ "$output" == *"signature:  none"* ]]
	[[ "${lines[0]}" == *"current  unsigned" ]]
}

@test "image prune --dry-run: says what would go and removes nothing" {
	three
	before=$(ls -A out/controller)
	run nf image prune --keep 1 --dry-run
	status_is 0
	[[ "${lines[0]}" == "keep   controller@$C "* ]]
	[[ "${lines[1]}" == "remove controller@$B "* ]]
	[[ "${lines[2]}" == "remove controller@$A "* ]]
	[ "$(ls -A out/controller)" = "$before" ]
}

@test "image prune --keep N: every file of the older images goes, the pointer, lock and key stay" {
	three
	run nf image prune controller --keep 2
	status_is 0
	[[ "${lines[2]}" == "remove controller@$A "* ]]
	[ -z "$(ls out/controller | grep -e "$A" || true)" ]
	[ "$(ls out/controller | grep -c -e "$B")" -eq 7 ]
	[ -f out/controller/controller.current ] && [ -f out/signing.pub ]
	run nf image list
	[ "${#lines[@]}" -eq 2 ]
	# the build of the current image's inputs still finds it published
	run build 3000
	status_is 0
	[ "$(id)" = "$C" ]
}

@test "image prune --keep 0: the current image always stays" {
	three
	run nf --json image prune --keep 0
	status_is 0
	[ "$(echo "$output" | jq -c '[.images[] | [.id, .pruned]]')" = "[[\"$C\",false],[\"$B\",true],[\"$A\",true]]" ]
	run nf image list
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "controller@$C "*current* ]]
	# the current image is an older one when the pointer says so
	build 1000
	[ "$(id)" = "$A" ]
	run nf image prune --keep 0
	status_is 0
	[[ "$output" == "keep   controller@$A "* ]]
}

@test "image prune --tree: an image a boot tree names stays, whatever its age; list --tree marks it" {
	build 1000; A=$(id)
	tree boot
	build 2000; B=$(id)
	build 3000; C=$(id)
	run nf image list --tree boot
	status_is 0
	[[ "${lines[2]}" == "controller@$A "*"booted  signed" ]]
	[[ "${lines[1]}" != *booted* ]]
	run nf image prune --keep 1 --tree boot
	status_is 0
	[[ "$output" == *"keep   controller@$A "* ]]
	[[ "$output" == *"remove controller@$B "* ]]
	[ -f "out/controller/controller-$A.rootfs.tar.zst" ]
	[ ! -e "out/controller/controller-$B.rootfs.tar.zst" ]
	# a directory that is no boot tree protects nothing: refused
	mkdir notatree
	run nf image prune --keep 1 --tree notatree
	status_is 1
	[[ "$output" == *"'notatree' is not a boot tree: cannot read 'notatree/nodes.json'"* ]]
	[ -f "out/controller/controller-$A.rootfs.tar.zst" ]
}

@test "image prune: refused while a build of the role runs (the build's lock), nothing removed" {
	three
	before=$(ls -A out/controller)
	n0=$(grep -c '^bootstrap' stub.log)
	(NF_STUB_SLEEP=2 exec "$NF_BIN" build controller --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" --no-cache --epoch 4000 -q) 3>&- &
	pid=$!
	# the build bootstraps (--no-cache) once it holds the lock
	for i in $(seq 100); do [ "$(grep -c '^bootstrap' stub.log)" -gt "$n0" ] && break; sleep 0.1; done
	[ "$(grep -c '^bootstrap' stub.log)" -gt "$n0" ]
	run nf image prune --keep 0
	status_is 1
	[[ "$output" == *"a build of 'controller' is running (lock 'out/controller/.lock' is held)"* ]]
	[ "$(ls -A out/controller)" = "$before" ]
	wait $pid
}

@test "image prune: an EL image's liveimg tarball, named by its own hash, goes with its image" {
	PROFS=$FIXTURES/profiles/el
	nf -C "$PROFS" build elmini --cache "$SCRATCH/cache" --epoch 1000 -q
	old=$(python3 -c 'import json;print(json.load(open("out/elmini/elmini.current"))["liveimg"])')
	nf -C "$PROFS" build elmini --cache "$SCRATCH/cache" --epoch 2000 -q
	new=$(python3 -c 'import json;print(json.load(open("out/elmini/elmini.current"))["liveimg"])')
	run nf --json image list elmini
	status_is 0
	[ "$(echo "$output" | jq '.images | length')" -eq 2 ]
	echo "$output" | jq -e --arg f "$old" '.images[1].files | index($f)'
	run nf image prune elmini --keep 1
	status_is 0
	[ ! -e "out/elmini/$old" ]
	[ -f "out/elmini/$new" ]
	[ "$(ls out/elmini | grep -v -e elmini.current | wc -l)" -eq 10 ]
}

@test "image: the shell completes its subcommands and options from its --help" {
	run nf __complete image ""
	status_is 0
	[ "$output" = "$(printf 'list\nshow\nprune')" ]
	run nf __complete image prune --dr
	[ "$output" = "--dry-run" ]
}
