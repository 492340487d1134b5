#!/usr/bin/env bats
# A source artifact (the SPANK plugin in tests/fixtures/spank) served from
# a loopback server, fetched, pinned and compiled inside the image root
# against the image's own Slurm headers (libslurm-dev), as pyxis is; the
# build packages (system.packages.build) are purged afterwards.
# The role is the shipped login role with the plugin in pyxis's place:
# the same packages, so after t2950 its bootstrap is in the cache.
load ../bats/helper

setup_file() {
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
}

setup() {
	nf_setup
	unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
	# the artifact comes from this test's server, not the site's mirror
	unset NODEFORGE_ARTIFACT_MIRROR
	mkdir -p srv src/nf-test-spank prof
	cp "$FIXTURES/spank/nf_test_spank.c" src/nf-test-spank/
	tar --owner=0 --group=0 --mtime=@0 -C src -czf srv/nf-test-spank-1.0.tar.gz nf-test-spank
	SHA=$(sha256sum srv/nf-test-spank-1.0.tar.gz | cut -d' ' -f1)
	python3 "$FIXTURES/http_server.py" "$SCRATCH/srv" "$SCRATCH/port" 3>&- &
	SRV=$!
	for i in $(seq 50); do [ -s port ] && break; sleep 0.05; done
	URL=http://127.0.0.1:$(cat port)
	cp "$NF_SRCDIR"/profiles/*.yaml prof/
	cat > prof/spank.yaml <<EOR
description: the login role with a SPANK plugin built from source in the image
inherits: [login]
system:
  artifacts:
    - "!pyxis"
    - name: nf-test-spank
      kind: source
      url: '$URL/nf-test-spank-1.0.tar.gz'
      sha256: $SHA
      build: |
        cd nf-test-spank
        gcc -shared -fPIC -Wall -Werror -o /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_nftest.so nf_test_spank.c
EOR
}

teardown() {
	kill "$SRV" 2>/dev/null || true
	wait "$SRV" 2>/dev/null || true
	nf_teardown
}

@test "source artifact: compiled in the image against its Slurm headers" {
	run nf -C prof build spank --cache "$E2E"
	status_is 0
	rootfs=$(python3 -c 'import json; print(json.load(open("out/spank/spank.current"))["rootfs"])')
	mkdir root
	zstd -dc "out/spank/$rootfs" | tar -x -C root
	[ -f root/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_nftest.so ]
	# a SPANK plugin: it carries the plugin symbols Slurm looks for
	nm -D root/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_nftest.so | grep -q ' slurm_spank_init$'
	nm -D root/usr/lib/x86_64-linux-gnu/slurm-wlm/spank_nftest.so | grep -q ' plugin_name$'
	# sources gone
	[ ! -e root/usr/src/nodeforge ]
	# the compiler and headers were there for the build only: purged, with
	# what only they pulled in; Slurm itself stays
	[ -x root/usr/bin/srun ]
	for p in gcc libc6-dev libslurm-dev cpp; do
		! chroot root dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed'
	done
	[ ! -e root/usr/bin/gcc ]
	[ ! -e root/usr/include/slurm/spank.h ]
}

@test "source artifact: a build that fails names the compiler's error and a log that is there to read; nothing is published" {
	# the same packages as above (its bootstrap is cached); the build
	# line compiles a file the source does not have
	sed -e 's/^description: .*/description: a SPANK plugin that does not compile/' \
		-e 's/nf_test_spank\.c$/nf_no_such_file.c/' prof/spank.yaml > prof/spankbad.yaml
	grep -q nf_no_such_file.c prof/spankbad.yaml
	run nf -C prof build spankbad --cache "$E2E"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'nf-test-spank'"*"failed in the image (exit 1)"* ]]
	[[ "$output" == *"nf_no_such_file.c: No such file or directory"* ]]
	log=$(sed -n "s/.*(log: '\([^']*\)').*/\1/p" <<<"$output")
	[ -n "$log" ]
	[ "$log" = "$E2E/logs/spankbad/artifact-nf-test-spank.log" ]
	grep -q 'nf_no_such_file.c: No such file or directory' "$log"
	# the work directory with the image root (work/ROLE-PID) is gone, the
	# log stays; other builds may share the cache meanwhile (make test
	# builds the shared images beside this file)
	[ -z "$(find "$E2E/work" -maxdepth 1 -name 'spankbad-*' 2>/dev/null)" ]
	[ ! -e out/spankbad/spankbad.current ]
}
