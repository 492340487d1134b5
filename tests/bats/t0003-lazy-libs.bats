#!/usr/bin/env bats
# libcurl and libmicrohttpd are loaded on their first call
# (lib/adapters/lazy.c): not at the start of every command (verify, gate,
# version, the shell completion), only by the commands that fetch or
# serve.  The dynamic loader's own log (LD_DEBUG=files) says which
# shared objects a run opened.
load helper

setup() {
	nf_setup
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

# opened LOG: the shared objects the loader opened, by file name
opened() {
	sed -n 's/.*file=\([^ ]*\) .*\[0\];  *\(needed\|dynamically loaded\) by.*/\1/p' "$1" | sort -u
}

@test "lazy libraries: not in the binary's NEEDED; version and verify --help open neither, nor anything they link" {
	run sh -c "ldd '$NF_BIN'"
	status_is 0
	[[ "$output" != *libcurl* ]]
	[[ "$output" != *libmicrohttpd* ]]
	[[ "$output" != *libgnutls* ]]
	LD_DEBUG=files "$NF_BIN" version 2> ld.log >/dev/null
	LD_DEBUG=files "$NF_BIN" verify --help 2>> ld.log >/dev/null
	opened ld.log > libs
	grep -q '^libjansson' libs
	! grep -E 'libcurl|libmicrohttpd|libgnutls|libnghttp2' libs
}

@test "lazy libraries: a fetch loads libcurl on its first call and reaches the socket; serve loads libmicrohttpd and answers" {
	LD_DEBUG=files "$NF_BIN" status --server http://127.0.0.1:9 2> ld.log > out || true
	grep -q 'Failed to connect to 127.0.0.1 port 9' ld.log
	opened ld.log | grep -q '^libcurl\.so\.4$'
	! opened ld.log | grep -q libmicrohttpd
	mkdir tree
	LD_DEBUG=files nf_serve_bg --tree tree --state state
	curl -sf "$U/api/v1/nodes" | jq -e '.nodes' >/dev/null
	opened serve.log | grep -q '^libmicrohttpd\.so\.12$'
}
