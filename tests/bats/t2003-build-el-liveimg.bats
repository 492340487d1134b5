#!/usr/bin/env bats
# make test: beside the cluster
# nodeforge build for an EL site also publishes the rootfs as tar.xz, the
# tarball a kickstart's 'liveimg' can install (Anaconda goes by the URL's
# suffix and knows no .tar.zst).  tests/fixtures/bin/dnf stands in for
# dnf; the real dnf build is tests/e2e/t2901-build-dnf.bats.
load helper

setup() {
	nf_setup
	export NODEFORGE_DNF=$FIXTURES/bin/dnf NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	export NF_STUB_LOG=$SCRATCH/stub.log
	PROFS=$FIXTURES/profiles/el
}

cur() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2"; }

@test "el build: ROLE-<xz sha12>.rootfs.tar.xz beside the tar.zst, signed, named by the pointer" {
	run nf -C "$PROFS" build elmini --cache "$SCRATCH/cache"
	status_is 0
	c=out/elmini/elmini.current
	id=$(cur $c rootfs_sha256 | cut -c1-12)
	f=out/elmini/$(cur $c liveimg)
	# the pointer's checksum is that of exactly the file it names, and the
	# name carries that hash (content-addressed like the others)
	sha=$(sha256sum "$f" | cut -d' ' -f1)
	[ "$sha" = "$(cur $c liveimg_sha256)" ]
	[ "$(cur $c liveimg)" = "elmini-${sha:0:12}.rootfs.tar.xz" ]
	xz -t "$f"
	# the same entries, in the same order, as the tar.zst
	diff <(tar -tJf "$f") <(tar --zstd -tf "out/elmini/$(cur $c rootfs)")
	m=out/elmini/elmini-$id.liveimg.manifest.json
	run nf manifest verify --pubkey out/signing.pub "$m"
	status_is 0
	python3 - "$m" "$f" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1]))
a = m["archive"]
assert m["compressor"] == "xz" and m["format"] == "tar", m["compressor"]
assert a["name"] == os.path.basename(sys.argv[2]) and a["size"] == os.path.getsize(sys.argv[2]), a
PY
	[ "$(cur "$m" role 2>/dev/null || true)" = elmini ]
	! ls -a out/elmini | grep -q '^\.tmp'
}

@test "el build: unchanged inputs are a cache hit; a lost liveimg is rebuilt" {
	nf -C "$PROFS" build elmini --cache "$SCRATCH/cache" 2>/dev/null
	run nf -C "$PROFS" build elmini --cache "$SCRATCH/cache"
	status_is 0
	[[ "$output" == *"unchanged"* ]]
	live=$(cur out/elmini/elmini.current liveimg)
	sha=$(cur out/elmini/elmini.current liveimg_sha256)
	rm "out/elmini/$live"
	run nf -C "$PROFS" build elmini --cache "$SCRATCH/cache"
	status_is 0
	[[ "$output" != *"unchanged"* ]]
	# same inputs, same bytes
	[ "$(sha256sum "out/elmini/$live" | cut -d' ' -f1)" = "$sha" ]
}

@test "debian build: no liveimg (Anaconda does not install Debian)" {
	mkdir ov
	run nf build controller --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov"
	status_is 0
	[ -z "$(cur out/controller/controller.current liveimg)" ]
	! ls out/controller | grep -q 'tar\.xz'
}
