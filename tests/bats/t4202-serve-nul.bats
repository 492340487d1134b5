#!/usr/bin/env bats
# nodeforge serve refuses (400) a URL whose decoded form holds a NUL byte:
# libmicrohttpd hands the handler a C string, so /ipxe/boot.ipxe%00.txt was
# served as /ipxe/boot.ipxe.
load helper

setup() {
	nf_setup
	cp "$NF_SRCDIR/examples/racks.yaml" .
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 \
		--kernel-args compute=quiet --kernel-args controller=quiet \
		--kernel-args login=quiet >/dev/null
	nf_serve_bg --tree tree --state state
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

@test "a %00 in the path is refused with 400, not cut short and served" {
	[ "$(code "$U/ipxe/boot.ipxe")" = 200 ]
	run curl -s -w ' %{http_code}' "$U/ipxe/boot.ipxe%00.txt"
	[ "$output" = '{"error":"NUL byte in URL"} 400' ]
	[ "$(code "$U/ipxe/boot.ipxe%00")" = 400 ]
	[ "$(code -I "$U/ipxe/boot.ipxe%00.txt")" = 400 ]
	[ "$(code "$U/ipxe/mac/52-54-00-00-01-01.ipxe%00")" = 400 ]
	grep -q '"GET (NUL in URL)" 400' serve.log
	# the refused per-MAC fetch did not mark the node booting
	run nf status --server "$U" --json
	# exit 3: no node is verified here
	status_is 3
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["summary"]["booting"] == 0, d["summary"]'

}

@test "a %00 in the API path or the query string is refused with 400" {
	[ "$(code -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/gpu-03%00x/verdict")" = 400 ]
	[ "$(code "$U/api/v1/nodes%00")" = 400 ]
	[ "$(code "$U/ipxe/boot.ipxe?x=%00")" = 400 ]
}

@test "other escapes still decode; a broken escape is not a NUL" {
	[ "$(code "$U/ipxe/boot%2Eipxe")" = 200 ]
	[ "$(code "$U/ipxe/boot.ipxe%0")" = 404 ]
	[ "$(code "$U/ipxe/boot.ipxe%0g")" = 404 ]
	[ "$(code "$U/ipxe/boot.ipxe%01")" = 404 ]
	# the next request after a refused one is served
	run curl -s -o /dev/null -o /dev/null -w '%{http_code} ' \
		"$U/ipxe/boot.ipxe%00" "$U/ipxe/boot.ipxe"
	[ "$output" = "400 200 " ]
}
