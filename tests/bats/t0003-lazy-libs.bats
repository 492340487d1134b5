#!/usr/bin/env bats
# libcurl, libmicrohttpd and libarchive are loaded on their first call
# (lib/adapters/lazy.c): not at the start of every command (verify, gate,
# version, the shell completion), only by the commands that fetch, serve
# or read and write archives.  The dynamic loader's own log (LD_DEBUG=files) says which
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
	[[ "$output" != *libarchive* ]]
	[[ "$output" != *libxml2* ]]
	LD_DEBUG=files "$NF_BIN" version 2> ld.log >/dev/null
	LD_DEBUG=files "$NF_BIN" verify --help 2>> ld.log >/dev/null
	opened ld.log > libs
	grep -q '^libjansson' libs
	! grep -E 'libcurl|libmicrohttpd|libgnutls|libnghttp2|libarchive|libxml2|libicu' libs
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

@test "lazy libraries: unpack loads libarchive on its first call and unpacks" {
	mkdir -p src/d
	echo hello > src/d/f
	tar -C src -cf a.tar d
	LD_DEBUG=files "$NF_BIN" unpack a.tar out 2> ld.log
	[ "$(cat out/d/f)" = hello ]
	opened ld.log | grep -q '^libarchive\.so\.13$'
	! opened ld.log | grep -q libcurl
}

@test "lazy libraries: one that cannot be loaded (/dev/null over it, in a mount namespace) is named with its package; the command fails, it does not crash" {
	[ "$(id -u)" = 0 ] || skip "needs root (a mount namespace)"
	command -v unshare >/dev/null || skip "unshare (util-linux) not installed"
	lib=$(readlink -f "$(ldconfig -p | sed -n 's/^[[:space:]]*libcurl\.so\.4 (libc6,x86-64) => //p' | head -n1)")
	[ -f "$lib" ]
	run unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" status --server http://127.0.0.1:9' \
		sh "$lib" "$NF_BIN"
	status_is 1
	[[ "$output" == *"nodeforge: cannot load libcurl.so.4 (Debian package libcurl4): "* ]]
	[[ "$output" == *"nodeforge status: Can not access a needed shared library"* ]]
	[ "$(echo "$output" | grep -c 'cannot load')" = 1 ]
	# libarchive, for an unpack
	tar -C "$NF_SRCDIR" -cf a.tar VERSION
	lib=$(readlink -f "$(ldconfig -p | sed -n 's/^[[:space:]]*libarchive\.so\.13 (libc6,x86-64) => //p' | head -n1)")
	run unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" unpack a.tar out' \
		sh "$lib" "$NF_BIN"
	status_is 1
	[[ "$output" == *"cannot load libarchive.so.13 (Debian package libarchive13)"* ]]
	[ ! -e out ]
}
