#!/usr/bin/env bats
# Pinned artifacts over a loopback HTTP server the test starts
# (tests/fixtures/http_server.py): pin, mismatch, 404, stall, resume.
load helper

setup() {
	nf_setup
	unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
	mkdir -p srv
	head -c 200000 /dev/urandom > srv/enroot.deb
	SHA=$(sha256sum srv/enroot.deb | cut -d' ' -f1)
	python3 "$FIXTURES/http_server.py" "$SCRATCH/srv" "$SCRATCH/port" 3>&- &
	SRV=$!
	for i in $(seq 50); do [ -s port ] && break; sleep 0.05; done
	URL=http://127.0.0.1:$(cat port)
}

teardown() {
	kill "$SRV" 2>/dev/null || true
	wait "$SRV" 2>/dev/null || true
	nf_teardown
}

f() { nf fetch "$@" --cache "$SCRATCH/cache"; }

@test "fetch: a pinned artifact lands in the content-addressed cache" {
	run f enroot "$URL/enroot.deb" "$SHA"
	status_is 0
	[ "$output" = "$SCRATCH/cache/artifacts/$SHA" ]
	cmp srv/enroot.deb "cache/artifacts/$SHA"
	# second time: from the cache, no request
	n=$(wc -l < requests.log)
	run f enroot "$URL/enroot.deb" "$SHA"
	status_is 0
	[ "$(wc -l < requests.log)" -eq "$n" ]
}

@test "fetch: a checksum mismatch is refused and nothing is cached" {
	bad=$(printf '%064d' 0)
	run f enroot "$URL/enroot.deb" "$bad"
	status_is 1
	[[ "$output" == *"artifact 'enroot'"* ]]
	[[ "$output" == *"sha256 is $SHA, the pin says $bad"* ]]
	[ ! -e "cache/artifacts/$bad" ]
}

@test "fetch: 404 fails at once with artifact, URL and how to supply it" {
	run f pyxis "$URL/pyxis-0.20.0.tar.gz" "$SHA"
	status_is 1
	[[ "$output" == *"artifact 'pyxis' cannot be fetched from '$URL/pyxis-0.20.0.tar.gz'"* ]]
	[[ "$output" == *"404"* ]]
	[[ "$output" == *"--mirror DIR"* ]]
	[ "$(grep -c pyxis requests.log)" -eq 1 ]
}

@test "fetch: a stalled server times out, is retried, then fails clearly" {
	run timeout 20 "$NF_BIN" fetch enroot "$URL/stall/enroot.deb" "$SHA" \
		--cache "$SCRATCH/cache" --timeout 1 --retries 1
	status_is 1
	[[ "$output" == *"cannot be fetched"* ]]
	[ "$(grep -c stall requests.log)" -eq 2 ]
	# the second try resumed from what the first one got
	grep stall requests.log | tail -1 | grep -q 'bytes=100000-'
}

@test "fetch: a dropped connection is resumed with a Range request" {
	run f enroot "$URL/drop/enroot.deb" "$SHA"
	status_is 0
	cmp srv/enroot.deb "cache/artifacts/$SHA"
	[ "$(grep -c drop requests.log)" -eq 2 ]
	grep drop requests.log | tail -1 | grep -q 'bytes=100000-'
}

@test "fetch: a server that ignores Range still gives the right file" {
	mkdir -p cache/artifacts/partial
	head -c 5000 srv/enroot.deb > "cache/artifacts/partial/$SHA.part"
	run f enroot "$URL/norange/enroot.deb" "$SHA"
	status_is 0
	cmp srv/enroot.deb "cache/artifacts/$SHA"
}

@test "fetch: --mirror DIR and --offline" {
	mkdir -p mirror
	cp srv/enroot.deb mirror/
	run f enroot "https://github.invalid/NVIDIA/enroot/enroot.deb" "$SHA" --mirror "$SCRATCH/mirror" --offline
	status_is 0
	cmp srv/enroot.deb "cache/artifacts/$SHA"
	run f other "https://github.invalid/x/other.deb" "$(printf '%064d' 1)" --offline
	status_is 1
	[[ "$output" == *"--offline"* ]]
	[[ "$output" == *"other.deb"* ]]
}

@test "fetch: a relative --mirror is a directory; a missing one is named first" {
	mkdir -p shared/artifacts work
	cp srv/enroot.deb shared/artifacts/
	cd work
	run f enroot "https://github.invalid/NVIDIA/enroot/enroot.deb" "$SHA" --mirror ../shared/artifacts
	status_is 0
	cmp ../srv/enroot.deb "$SCRATCH/cache/artifacts/$SHA"
	run f other "$URL/enroot.deb" "$(printf '%064d' 1)" --mirror ../nowhere
	status_is 1
	[ "$output" = "nodeforge fetch: --mirror '../nowhere': no such directory" ]
	[ ! -s ../requests.log ]
}

@test "fetch: --mirror URL prefix replaces the origin" {
	run f enroot "https://github.invalid/NVIDIA/enroot/enroot.deb" "$SHA" --mirror "$URL/"
	status_is 0
	grep -q '^/enroot.deb' requests.log
}

@test "fetch: usage errors" {
	run nf fetch onlyname
	status_is 2
	run f x "$URL/enroot.deb" nothex
	status_is 1
	[[ "$output" == *"not 64 lowercase hex"* ]]
}
