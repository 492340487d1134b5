#!/usr/bin/env bats
# make test: beside the cluster
# Source artifacts that are patched before they are built, and source
# tarballs that one of the image's packages brings (from:), each pinned by
# sha256.  The bootstrap is the stand-in tool with a busybox shell
# (tests/fixtures/bin/mmdebstrap, NF_STUB_SHELL), so the build line really
# runs in the root; patch(1) is the host's.
load helper

setup() {
	nf_setup
	[ "$(id -u)" = 0 ] || skip "needs root (the build line runs in a chroot)"
	[ -x /bin/busybox ] || skip "needs busybox-static"
	command -v patch >/dev/null || skip "needs patch"
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap NF_STUB_SHELL=1
	unset NODEFORGE_ARTIFACT_MIRROR
	mkdir -p src/hello mirror prof/patches
	printf 'greeting = hello\nline two\nline three\n' > src/hello/hello.conf
	tar --owner=0 --group=0 --mtime=@0 -C src -czf mirror/hello-1.0.tar.gz hello
	SHA=$(sha256sum mirror/hello-1.0.tar.gz | cut -d' ' -f1)
	cp -r src/hello src/hello.new
	sed -i 's/^greeting = hello$/greeting = hello, patched/' src/hello.new/hello.conf
	(cd src && diff -u hello/hello.conf hello.new/hello.conf |
		sed -e 's#^--- hello/#--- a/hello/#' -e 's#^+++ hello.new/#+++ b/hello/#') > prof/patches/greeting.patch || true
	grep -q '^+greeting = hello, patched$' prof/patches/greeting.patch
	PSHA=$(sha256sum prof/patches/greeting.patch | cut -d' ' -f1)
	cp "$NF_SRCDIR"/profiles/base.yaml "$NF_SRCDIR"/profiles/site.yaml prof/
}

teardown() { nf_teardown; }

# role ARTIFACT-YAML: a role with that one artifact
role() {
	cat > prof/art.yaml <<EOR
description: source artifact test role
inherits: [base]
system:
  artifacts:
$1
EOR
}

b() { nf -C prof build art --cache "$SCRATCH/cache" --artifact-mirror "$SCRATCH/mirror" --self-package host "$@"; }

# the file the build line copied out of the built tree
built() {
	local rootfs
	rootfs=$(jq -r .rootfs out/art/art.current)
	zstd -dc "out/art/$rootfs" | tar -xO opt/hello.conf
}

BUILD_LINE='      build: |
        mkdir -p /opt
        cp hello/hello.conf /opt/hello.conf'

# hello_role PATCH-URL PATCH-SHA: the hello source with one patch, built
# by copying its file into /opt
hello_role() {
	role "    - name: hello
      kind: source
      url: https://example.invalid/hello-1.0.tar.gz
      sha256: $SHA
      patches:
        - { name: greeting, url: $1, sha256: $2 }
$BUILD_LINE"
}

@test "build: a source artifact's patch (a file beside the profiles, pinned) is applied before its build line runs" {
	hello_role patches/greeting.patch "$PSHA"
	run b
	status_is 0
	[[ "$output" == *"patched"* ]]
	[ "$(built | head -n 1)" = "greeting = hello, patched" ]
	# the sources are gone from the image, the patch log stays
	! zstd -dc out/art/$(jq -r .rootfs out/art/art.current) | tar -t | grep -q usr/src/nodeforge
	[ -f cache/logs/art/patch-hello-greeting.log ]
}

@test "build: a patch that does not apply stops the build, naming the patch and its failed hunk; nothing published" {
	sed -i 's/^ line two$/ line 2/' prof/patches/greeting.patch
	PSHA=$(sha256sum prof/patches/greeting.patch | cut -d' ' -f1)
	hello_role patches/greeting.patch "$PSHA"
	run b
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'hello': patch 'greeting' does not apply (exit 1): Hunk #1 FAILED at 1."* ]]
	[[ "$output" == *"(log: '$SCRATCH/cache/logs/art/patch-hello-greeting.log')"* ]]
	[ ! -e out/art/art.current ]
}

@test "build: a patch whose bytes are not its pin is refused; one not beside the profiles is named" {
	hello_role patches/greeting.patch "$(printf '%064d' 7)"
	run b
	[ "$status" -ne 0 ]
	[[ "$output" == *"patch greeting"*"$PSHA"* ]]
	[ ! -e out/art/art.current ]
	hello_role patches/nosuch.patch "$PSHA"
	run b
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'hello': patch 'greeting' not found: no file '$SCRATCH/prof/patches/nosuch.patch'"* ]]
}

@test "build: a source artifact with a relative url is the file beside the profiles (profiles/sources/), pinned; a missing one or one outside them is named" {
	mkdir -p prof/sources
	mv mirror/hello-1.0.tar.gz prof/sources/
	role "    - name: hello
      kind: source
      url: sources/hello-1.0.tar.gz
      sha256: $SHA
$BUILD_LINE"
	run b
	echo "$output"
	status_is 0
	[ "$(built | head -n 1)" = "greeting = hello" ]
	# the pin holds for a file beside the profiles as for a download
	printf 'x' >> prof/sources/hello-1.0.tar.gz
	rm -rf cache/artifacts
	run b --no-cache
	[ "$status" -ne 0 ]
	[[ "$output" == *"$SHA"* ]]
	role "    - name: hello
      kind: source
      url: sources/nosuch-1.0.tar.gz
      sha256: $SHA
$BUILD_LINE"
	run b
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'hello' not found: no file '$SCRATCH/prof/sources/nosuch-1.0.tar.gz'"* ]]
	role "    - name: hello
      kind: source
      url: ../mirror/hello-1.0.tar.gz
      sha256: $SHA
$BUILD_LINE"
	run b
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'hello': url '../mirror/hello-1.0.tar.gz' leaves the profiles directory"* ]]
}

@test "build: from: a source tarball the image's packages bring is checked against its pin, patched and built" {
	mkdir -p extra/usr/src
	cp mirror/hello-1.0.tar.gz extra/usr/src/hello.tar.gz
	export NF_STUB_EXTRA=$SCRATCH/extra
	role "    - name: hello
      kind: source
      from: /usr/src/hello.tar.gz
      sha256: $SHA
      patches:
        - { name: greeting, url: patches/greeting.patch, sha256: $PSHA }
$BUILD_LINE"
	run b
	status_is 0
	[ "$(built | head -n 1)" = "greeting = hello, patched" ]
}

@test "build: from: another file than the pinned one, or none, is refused naming the image's path" {
	mkdir -p extra/usr/src
	printf 'not the source\n' | gzip > extra/usr/src/hello.tar.gz
	# a symlink to the host's copy resolves inside the image root
	ln -s "$SCRATCH/mirror/hello-1.0.tar.gz" extra/usr/src/link.tar.gz
	export NF_STUB_EXTRA=$SCRATCH/extra
	role "    - { name: hello, kind: source, from: /usr/src/hello.tar.gz, sha256: $SHA, build: 'true' }"
	run b
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'hello': the image's '/usr/src/hello.tar.gz' has sha256 "*", not the pinned $SHA"* ]]
	role "    - { name: hello, kind: source, from: /usr/src/link.tar.gz, sha256: $SHA, build: 'true' }"
	run b
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'hello': '/usr/src/link.tar.gz' is not in the image"* ]]
	[ ! -e out/art/art.current ]
}

@test "lint: an artifact with both url and from, or neither, patches on a tarball, from on a deb are refused at file:line:col" {
	role "    - { name: a, kind: source, url: 'https://x.invalid/a.tgz', from: /usr/src/a.tgz, sha256: $SHA, build: 'true' }
    - { name: b, kind: source, sha256: $SHA, build: 'true' }
    - { name: c, kind: tarball, url: 'https://x.invalid/c.tgz', sha256: $SHA, patches: [{ name: p, url: p.patch, sha256: $PSHA }] }
    - { name: d, kind: deb, from: /usr/src/d.deb, sha256: $SHA }"
	run nf -C prof lint art
	[ "$status" -ne 0 ]
	[[ "$output" == *"art.yaml:5:7: error: artifact 'a' needs either 'url' (downloaded) or 'from' (a file the image's packages bring), not both"* ]]
	[[ "$output" == *"art.yaml:6:7: error: artifact 'b' needs either 'url'"*"and has neither"* ]]
	[[ "$output" == *"art.yaml:7:7: error: 'patches' are applied to a source artifact's tree, not kind 'tarball'"* ]]
	[[ "$output" == *"art.yaml:8:7: error: 'from' is for source and tarball artifacts, not kind 'deb'"* ]]
}

@test "build: a build line whose command is missing in the image fails with its exit 127 and the shell's words, not as a missing host tool" {
	role "    - { name: hello, kind: source, url: 'https://example.invalid/hello-1.0.tar.gz', sha256: $SHA, build: 'nf-no-such-command --version' }"
	run b
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'hello': 'cd '/usr/src/nodeforge/hello' && { nf-no-such-command --version"*"failed in the image (exit 127): "*"nf-no-such-command: not found"* ]]
	[[ "$output" != *"Debian package 'chroot'"* ]]
}

@test "build: a bootstrap tool that is not installed is named as such" {
	export NODEFORGE_MMDEBSTRAP=$SCRATCH/no-such-mmdebstrap
	role "    - { name: hello, kind: source, url: 'https://example.invalid/hello-1.0.tar.gz', sha256: $SHA, build: 'true' }"
	run b
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot run '$SCRATCH/no-such-mmdebstrap': No such file or directory (is the Debian package 'no-such-mmdebstrap' installed?)"* ]]
}

@test "build: system.components reach every source line of the bootstrap and its cache key; a bad name is refused by lint" {
	export NF_STUB_LOG=$SCRATCH/stub.log
	printf 'description: components\ninherits: [base]\n' > prof/art.yaml
	run b
	status_is 0
	[ "$(grep -c '^source deb .* main$' stub.log)" -eq 3 ]
	printf 'description: components\ninherits: [base]\nsystem:\n  components: [main, contrib, non-free, non-free-firmware]\n' > prof/art.yaml
	run b
	status_is 0
	# a second bootstrap (another key), its three lines with all four
	[ "$(grep -c '^bootstrap ' stub.log)" -eq 2 ]
	[ "$(grep -c '^source deb .* main contrib non-free non-free-firmware$' stub.log)" -eq 3 ]
	printf 'description: components\ninherits: [base]\nsystem:\n  components: [main, "non free"]\n' > prof/art.yaml
	run nf -C prof lint art
	[ "$status" -ne 0 ]
	[[ "$output" == *"art.yaml:4:22: error: component 'non free' is not an archive component name"* ]]
}

@test "build: package names are checked once for the bootstrap and the purge; a pinned build package is purged by its name" {
	export NF_STUB_LOG=$SCRATCH/stub.log
	local bad
	for bad in 'gcc;reboot' '=1.0' 'gcc=1=2' 'gcc 12'; do
		printf 'description: names\ninherits: [base]\nsystem:\n  packages:\n    build: ["%s"]\n' "$bad" > prof/art.yaml
		run b
		[ "$status" -ne 0 ]
		[[ "$output" == *"package name '$bad' in system.packages.build is not a package name"* ]] ||
			{ echo "$bad: $output"; false; }
	done
	[ ! -e stub.log ]
	# the stand-in root has no apt: the purge's command line is what it
	# runs, named in the failure
	printf 'description: names\ninherits: [base]\nsystem:\n  packages:\n    build: [gcc=4:14.2.0-1]\n' > prof/art.yaml
	run b
	[ "$status" -ne 0 ]
	grep -q '^bootstrap .*gcc=4:14.2.0-1' stub.log
	[[ "$output" == *"artifact 'purge': 'apt-get purge -y -q --autoremove gcc' failed in the image"* ]]
}

@test "build: the root after the artifacts stage is cached on its bootstrap: a rebuild with a new overlay does not run the build line again, and gives the image an uncached build gives" {
	hello_role patches/greeting.patch "$PSHA"
	run b
	status_is 0
	ls cache/built/*.tar
	[ "$(ls cache/built | grep -c '\.tar$')" = 1 ]
	[ -z "$(ls cache/built | grep -v -e '\.tar$' -e '\.lock$')" ]   # no temporary left
	# a new overlay: new inputs, the same artifacts
	mkdir -p ov/common/etc
	echo site > ov/common/etc/nf-overlay-test
	run b --overlays "$SCRATCH/ov" --out out2 -v
	status_is 0
	[[ "$output" == *"cached (built on this bootstrap before)"* ]]
	[[ "$output" != *"patched"* ]]
	cached=$(jq -r .rootfs out2/art/art.current)
	# the same inputs without the cache: the build line runs, same image
	run b --overlays "$SCRATCH/ov" --out out3 --no-cache
	status_is 0
	[[ "$output" == *"patched"* ]]
	[ "$(jq -r .rootfs out3/art/art.current)" = "$cached" ]
	zstd -dc "out2/art/$cached" | tar -xO opt/hello.conf | grep -qx 'greeting = hello, patched'
	# another pin is another key: built again
	role "    - name: hello
      kind: source
      url: https://example.invalid/hello-1.0.tar.gz
      sha256: $SHA
$BUILD_LINE"
	run b
	status_is 0
	[[ "$output" != *"cached (built"* ]]
	[ "$(ls cache/built | grep -c '\.tar$')" = 2 ]
}

@test "build --prepare: the bootstrap and the artifacts stage's root go into the cache, with no nodeforge package and nothing published; the next build starts from there" {
	export NF_STUB_LOG=$SCRATCH/stub.log
	hello_role patches/greeting.patch "$PSHA"
	run env -u NODEFORGE_SELF_PACKAGE "$NF_BIN" -C prof build art --cache "$SCRATCH/cache" \
		--artifact-mirror "$SCRATCH/mirror" --prepare -v
	status_is 0
	[[ "$output" == *"art: prepared in the cache; nothing published"* ]]
	[[ "$output" == *"patched"* ]]
	[ ! -e out ]
	[ "$(ls cache/built | grep -c '\.tar$')" = 1 ]
	[ "$(grep -c '^bootstrap' stub.log)" = 1 ]
	# prepared again: nothing to do
	run env -u NODEFORGE_SELF_PACKAGE "$NF_BIN" -C prof build art --cache "$SCRATCH/cache" \
		--artifact-mirror "$SCRATCH/mirror" --prepare --json
	status_is 0
	[ "$(echo "$output" | jq -r .prepared)" = true ]
	[ "$(grep -c '^bootstrap' stub.log)" = 1 ]
	run b -v
	status_is 0
	[[ "$output" == *"cached (built on this bootstrap before)"* ]]
	[[ "$output" != *"patched"* ]]
	[ "$(grep -c '^bootstrap' stub.log)" = 1 ]
	[ "$(built | head -n 1)" = "greeting = hello, patched" ]
}

@test "build: two builds that need one artifacts stage at once: one runs it, the other waits and starts from its root" {
	role "    - name: hello
      kind: source
      url: https://example.invalid/hello-1.0.tar.gz
      sha256: $SHA
      build: |
        busybox sleep 2
        mkdir -p /opt
        cp hello/hello.conf /opt/hello.conf"
	export NF_STUB_LOG=$SCRATCH/stub.log
	b --out o1 -v > b1.log 2>&1 &
	p1=$!
	for i in $(seq 100); do grep -q '^bootstrap' stub.log 2>/dev/null && break; sleep 0.05; done
	b --out o2 -v > b2.log 2>&1 &
	p2=$!
	rc1=0 rc2=0
	wait "$p1" || rc1=$?
	wait "$p2" || rc2=$?
	cat b1.log b2.log
	[ "$rc1" = 0 ] && [ "$rc2" = 0 ]
	# the build line ran once, in the first build
	! grep -q "cached (built" b1.log
	grep -q "waiting for another build's artifacts stage on this bootstrap" b2.log
	grep -q "cached (built on this bootstrap before)" b2.log
	[ "$(jq -r .rootfs o1/art/art.current)" = "$(jq -r .rootfs o2/art/art.current)" ]
}

@test "build: a source tree's file over the overlay cap (a driver's 20 MiB precompiled object) is copied into the image" {
	mkdir -p src/big
	head -c $((20 << 20)) /dev/urandom > src/big/blob.o_binary
	tar --owner=0 --group=0 --mtime=@0 -C src -czf mirror/big-1.0.tar.gz big
	BSHA=$(sha256sum mirror/big-1.0.tar.gz | cut -d' ' -f1)
	role "    - name: big
      kind: source
      url: https://example.invalid/big-1.0.tar.gz
      sha256: $BSHA
      build: |
        mkdir -p /opt
        cp big/blob.o_binary /opt/blob"
	run b
	status_is 0
	zstd -dc "out/art/$(jq -r .rootfs out/art/art.current)" | tar -xO opt/blob | cmp - src/big/blob.o_binary
}
