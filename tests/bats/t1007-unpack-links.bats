#!/usr/bin/env bats
# nodeforge unpack: a cpio hard link that carries data writes only into a
# regular file the same unpack created, never into a FIFO, a device node
# or a symlink it planted.
load helper

# $HOME/mkcpio.py KIND OUT [MAJOR MINOR]: a newc archive built entry by
# entry; in newc the data of a hard-linked file travels with its last link
setup() {
	nf_setup
	cat >"$HOME/mkcpio.py" <<'PY'
import sys
kind, out = sys.argv[1], sys.argv[2]
rmaj, rmin = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (1, 7)
def ent(n, mode, data=b"", ino=1, nlink=1, rmaj=0, rmin=0):
    nb = n.encode() + b"\0"
    h = b"070701" + b"".join(b"%08X" % v for v in (ino, mode, 0, 0, nlink, 0,
        len(data), 0, 0, rmaj, rmin, len(nb), 0)) + nb
    h += b"\0" * (-len(h) % 4)
    return h + data + b"\0" * (-len(data) % 4)
a = []
if kind == "fifo":
    a = [ent("p", 0o010644, ino=7, nlink=2),
         ent("h", 0o100644, b"hello", ino=7, nlink=2)]
elif kind == "fifo-replaced":
    # a regular file, replaced by a FIFO under its name, then its data
    a = [ent("f", 0o100644, ino=5, nlink=2),
         ent("f", 0o010644, ino=6),
         ent("h", 0o100644, b"hello", ino=5, nlink=2)]
elif kind == "device":
    a = [ent("dev/x", 0o020600, ino=11, nlink=2, rmaj=rmaj, rmin=rmin),
         ent("etc/motd", 0o100644, b"INJECTED\n", ino=11, nlink=2)]
elif kind == "symlink":
    a = [ent("s", 0o120777, b"/tmp/nf-evil-link", ino=9, nlink=2),
         ent("h", 0o100644, b"hello", ino=9, nlink=2)]
elif kind == "root-mode":
    a = [ent(".", 0o047777, ino=2, nlink=2),
         ent("f", 0o100644, b"x", ino=4)]
elif kind == "regular":
    a = [ent("a", 0o100644, ino=3, nlink=3),
         ent("d/b", 0o100600, ino=3, nlink=3),
         ent("c", 0o100644, b"linked data\n", ino=3, nlink=3)]
open(out, "wb").write(b"".join(a) + ent("TRAILER!!!", 0, ino=0))
PY
}

cpio() { python3 "$HOME/mkcpio.py" "$@"; }

nothing_left() { # refused, exit 1, no DIR and no temporary directory
	status_is 1
	[ ! -e out ]
	[ -z "$(ls -A . | grep -v -e '\.cpio$' -e '^home$')" ] || { ls -A; false; }
}

@test "a hard link with data to a FIFO is refused without blocking" {
	cpio fifo fifo.cpio
	run timeout 10 "$NF_BIN" unpack fifo.cpio out
	[ "$status" -ne 124 ] || { echo "unpack blocked on the FIFO" >&2; false; }
	nothing_left
	[[ "$output" == *"refusing to write the data of hard link 'h' into 'p'"* ]]
}

@test "a hard link with data to a file a FIFO replaced is refused" {
	cpio fifo-replaced fr.cpio
	run timeout 10 "$NF_BIN" unpack fr.cpio out
	[ "$status" -ne 124 ] || { echo "unpack blocked on the FIFO" >&2; false; }
	nothing_left
	[[ "$output" == *"hard link 'h' into 'f'"* ]]
}

@test "a hard link with data to a symlink is refused" {
	cpio symlink s.cpio
	run timeout 20 "$NF_BIN" unpack s.cpio out
	nothing_left
	[ ! -e /tmp/nf-evil-link ]
}

# The device is 1:7, /dev/full: a write that reaches it fails with ENOSPC,
# so one cannot pass unnoticed (the reproducer's 8:0 would be a disk)
@test "a hard link with data to a device node never writes the device" {
	[ "$(id -u)" = 0 ] || skip "creating a device node needs root"
	cpio device dev.cpio 1 7
	run timeout 20 "$NF_BIN" unpack --devices dev.cpio out
	[[ "$output" != *"No space left on device"* ]] || { echo "$output"; false; }
	nothing_left
	[[ "$output" == *"refusing to write the data of hard link 'etc/motd' into 'dev/x'"* ]]
	run nf unpack dev.cpio out
	nothing_left
	[[ "$output" == *"device node 'dev/x': refusing (use --devices)"* ]]
}

@test "a hard link with data to a regular file of the archive is written" {
	cpio regular r.cpio
	nf unpack r.cpio out -q
	[ "$(cat out/a)" = "linked data" ]
	[ "$(stat -c %i out/a)" = "$(stat -c %i out/d/b)" ]
	[ "$(stat -c %i out/a)" = "$(stat -c %i out/c)" ]
	[ "$(stat -c %h out/c)" = 3 ]
}

@test "a root entry does not set the target's mode (07777 stays out)" {
	cpio root-mode m.cpio
	nf unpack m.cpio out -q
	[ "$(stat -c %a out)" = 755 ]
	[ "$(cat out/f)" = x ]
}
