#!/usr/bin/env bats
# nodeforge build with pinned artifacts from a loopback server the test
# starts; the bootstrap is the stand-in tool (tests/fixtures/bin/mmdebstrap).
load helper

setup() {
	nf_setup
	unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	mkdir -p srv t/bin prof
	printf '#!/bin/sh\necho tool\n' > t/bin/tool
	chmod 0755 t/bin/tool
	tar --owner=0 --group=0 -C t -czf srv/tool-1.0.tar.gz bin
	SHA=$(sha256sum srv/tool-1.0.tar.gz | cut -d' ' -f1)
	python3 "$FIXTURES/http_server.py" "$SCRATCH/srv" "$SCRATCH/port" 3>&- &
	SRV=$!
	for i in $(seq 50); do [ -s port ] && break; sleep 0.05; done
	URL=http://127.0.0.1:$(cat port)
	cp "$NF_SRCDIR"/profiles/base.yaml "$NF_SRCDIR"/profiles/site.yaml prof/
}

teardown() {
	kill "$SRV" 2>/dev/null || true
	wait "$SRV" 2>/dev/null || true
	nf_teardown
}

role() {
	cat > prof/art.yaml <<EOR
description: artifact test role
inherits: [base]
system:
  artifacts:
$1
EOR
}

b() { nf -C prof build art --cache "$SCRATCH/cache" "$@"; }

@test "build: a tarball artifact is fetched, checked and installed under dest" {
	role "    - { name: tool, kind: tarball, url: '$URL/tool-1.0.tar.gz', sha256: $SHA, dest: /opt/tool }"
	run b
	status_is 0
	rootfs=$(python3 -c 'import json; print(json.load(open("out/art/art.current"))["rootfs"])')
	zstd -dc "out/art/$rootfs" | tar -tv | grep 'opt/tool/bin/tool$' | grep -q '^-rwxr-xr-x 0/0'
	[ -f "cache/artifacts/$SHA" ]
}

@test "build: an unreachable artifact stops the build, naming it; nothing published" {
	role "    - { name: enroot, kind: tarball, url: '$URL/enroot-3.5.0.tar.gz', sha256: $SHA }"
	run b
	status_is 1
	[[ "$output" == *"artifact 'enroot' cannot be fetched from '$URL/enroot-3.5.0.tar.gz'"* ]]
	# the option of build, not fetch's --mirror
	[[ "$output" == *"supply it with --artifact-mirror DIR"* ]]
	[ ! -e out/art/art.current ]
}

@test "build: a wrong pin is a hard failure" {
	role "    - { name: tool, kind: tarball, url: '$URL/tool-1.0.tar.gz', sha256: $(printf '%064d' 7) }"
	run b
	status_is 1
	[[ "$output" == *"sha256 is $SHA"* ]]
	[ ! -e out/art/art.current ]
}

@test "build: an optional artifact that cannot be fetched is skipped with a note" {
	role "    - { name: extra, kind: tarball, url: '$URL/nope.tar.gz', sha256: $SHA, optional: true }
    - { name: tool, kind: tarball, url: '$URL/tool-1.0.tar.gz', sha256: $SHA, dest: /opt/tool }"
	run b
	status_is 0
	[[ "$output" == *"optional artifact skipped"*"extra"* ]]
}

@test "build: --artifact-mirror DIR serves an air-gapped build" {
	role "    - { name: tool, kind: tarball, url: 'https://github.invalid/x/tool-1.0.tar.gz', sha256: $SHA, dest: /opt/tool }"
	mkdir -p mirror
	cp srv/tool-1.0.tar.gz mirror/
	run b --artifact-mirror "$SCRATCH/mirror"
	status_is 0
}

@test "build: a relative --artifact-mirror is a directory, relative to the working directory" {
	role "    - { name: tool, kind: tarball, url: 'https://github.invalid/x/tool-1.0.tar.gz', sha256: $SHA, dest: /opt/tool }"
	mkdir -p shared/artifacts work
	cp srv/tool-1.0.tar.gz shared/artifacts/
	cd work
	run nf -C ../prof build art --cache "$SCRATCH/cache" --artifact-mirror ../shared/artifacts
	status_is 0
	[ -f "$SCRATCH/cache/artifacts/$SHA" ]
	[ -e out/art/art.current ]
}

@test "build: a missing --artifact-mirror directory fails, naming it, before any bootstrap or fetch" {
	role "    - { name: tool, kind: tarball, url: '$URL/tool-1.0.tar.gz', sha256: $SHA, dest: /opt/tool }"
	export NF_STUB_LOG=$SCRATCH/stub.log
	run b --artifact-mirror ../shared/artifacts
	status_is 1
	[ "$output" = "nodeforge build: --artifact-mirror '../shared/artifacts': no such directory" ]
	[ ! -e stub.log ]
	[ ! -s requests.log ]
	[ ! -e out/art ]
	# the same rule when the environment names it
	NODEFORGE_ARTIFACT_MIRROR=nowhere run b
	status_is 1
	[ "$output" = "nodeforge build: NODEFORGE_ARTIFACT_MIRROR 'nowhere': no such directory" ]
	[ ! -e stub.log ]
	# a file is not a directory; a URL must be one fetch speaks
	run b --artifact-mirror prof/base.yaml
	status_is 1
	[ "$output" = "nodeforge build: --artifact-mirror 'prof/base.yaml': not a directory" ]
	run b --artifact-mirror ftp://mirror.invalid/art
	status_is 1
	[[ "$output" == *"--artifact-mirror 'ftp://mirror.invalid/art': a URL is http://, https:// or file://"* ]]
	[ ! -e stub.log ]
}

@test "build: every source option takes a relative directory, a missing one is named" {
	export NF_STUB_LOG=$SCRATCH/stub.log
	role "    - { name: tool, kind: tarball, url: '$URL/tool-1.0.tar.gz', sha256: $SHA, dest: /opt/tool }"
	run b --mirror ./debian
	status_is 1
	[ "$output" = "nodeforge build: --mirror './debian': no such directory" ]
	run b --overlays ../overlays
	status_is 1
	[ "$output" = "nodeforge build: --overlays '../overlays': no such directory" ]
	run b --self-package ../pkg
	status_is 1
	[ "$output" = "nodeforge build: --self-package '../pkg': no such file or directory" ]
	run nf -C ../profiles build art
	status_is 1
	[ "$output" = "nodeforge build: -C '../profiles': no such directory" ]
	[ ! -e stub.log ]
	# a relative distro mirror is the directory, as a file:// URL
	mkdir -p debian
	run b --mirror debian
	status_is 0
	grep -q "^source deb file://$SCRATCH/debian " stub.log
}

@test "build: rpm artifacts are refused on a Debian image unless scoped by distro" {
	role "    - { name: enroot, kind: rpm, url: '$URL/tool-1.0.tar.gz', sha256: $SHA }"
	run b
	status_is 1
	[[ "$output" == *"kind 'rpm' needs an EL distro"* ]]
	role "    - { name: enroot, kind: rpm, url: '$URL/tool-1.0.tar.gz', sha256: $SHA, distro: rocky }"
	run b
	status_is 0
}
