# Shared by the t1xxx pack/manifest tests: a small root tree with every
# kind of entry the packer handles.
make_tree() {
	local d=$1
	mkdir -p "$d/etc" "$d/usr/bin" "$d/usr/lib/x" "$d/var/empty" "$d/a-b"
	printf 'root:x:0:0::/root:/bin/sh\n' >"$d/etc/passwd"
	printf '#!/bin/sh\necho hi\n' >"$d/usr/bin/tool"
	chmod 0755 "$d/usr/bin/tool"
	printf 'ping' >"$d/usr/bin/ping"
	chmod 4755 "$d/usr/bin/ping"
	head -c 300000 /dev/zero | tr '\0' 'z' >"$d/usr/lib/x/big"
	ln "$d/usr/lib/x/big" "$d/usr/lib/x/big-link"
	ln -s ../lib/x/big "$d/usr/bin/big"
	ln -s usr/lib "$d/lib"
	printf 'sec' >"$d/etc/shadow"
	chmod 0640 "$d/etc/shadow"
	mkfifo "$d/var/fifo"
	printf 'x' >"$d/a-b/c"
	if [ "$(id -u)" = 0 ]; then
		chown 42:43 "$d/etc/shadow"
		mknod "$d/var/null" c 1 3
		setfattr -n user.note -v hello "$d/etc/passwd" 2>/dev/null || true
		setcap cap_net_raw+ep "$d/usr/bin/tool" 2>/dev/null || true
	fi
}
