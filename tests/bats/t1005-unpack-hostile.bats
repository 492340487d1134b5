#!/usr/bin/env bats
# nodeforge unpack refuses hostile archives and leaves no partial junk.
load helper

# craft KIND OUT: a tar built entry by entry with python's tarfile
craft() {
	python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
kind, out = sys.argv[1], sys.argv[2]
def reg(t, name, data=b"x"):
    i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))
def sym(t, name, target):
    i = tarfile.TarInfo(name); i.type = tarfile.SYMTYPE; i.linkname = target; t.addfile(i)
if kind == "huge":
    # a header that claims 1 TiB; no content follows
    i = tarfile.TarInfo("big"); i.size = 1 << 40
    with open(out, "wb") as f:
        f.write(tarfile.TarInfo("ok").tobuf(format=tarfile.PAX_FORMAT))
        f.write(i.tobuf(format=tarfile.PAX_FORMAT)); f.write(b"\0" * 1024)
    sys.exit(0)
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    reg(t, "first")
    if kind == "absolute":
        reg(t, "/tmp/nf-evil")
    elif kind == "dotdot":
        reg(t, "a/../../nf-evil")
    elif kind == "dotdot-ctl":
        reg(t, "a/../../nf-evil\x1b]0;pwned\x07\nnodeforge unpack: ok")
    elif kind == "symlink-dir":
        sym(t, "etc", "/tmp")
        reg(t, "etc/nf-evil")
    elif kind == "symlink-rel":
        sym(t, "d", "..")
        reg(t, "d/nf-evil")
    elif kind == "hardlink-out":
        i = tarfile.TarInfo("h"); i.type = tarfile.LNKTYPE; i.linkname = "../../etc/passwd"; t.addfile(i)
    elif kind == "device":
        i = tarfile.TarInfo("dev/sda"); i.type = tarfile.BLKTYPE; i.devmajor = 8; i.devminor = 0; t.addfile(i)
    elif kind == "many":
        for n in range(50): reg(t, "f%d" % n, b"y" * 1000)
    elif kind == "symlink-file":
        sym(t, "passwd", "/tmp/nf-evil-target")
        reg(t, "passwd", b"replaced")
PY
}

refused() { # KIND [unpack options]: refused, exit 1, nothing left behind
	local kind=$1; shift
	craft "$kind" "$kind.tar"
	run nf unpack "$kind.tar" out "$@"
	status_is 1
	[ ! -e out ]
	[ -z "$(ls -A . | grep -v -e '\.tar$' -e '^home$')" ] || { ls -A; false; }
	[ ! -e /tmp/nf-evil ] && [ ! -e "$SCRATCH/../nf-evil" ]
}

@test "absolute paths are refused" {
	refused absolute
	[[ "$output" == *"refusing absolute path '/tmp/nf-evil'"* ]]
}

@test "'..' is refused" {
	refused dotdot
	[[ "$output" == *"refusing path with '..'"* ]]
}

@test "the refusal quotes an entry's name with its control bytes escaped" {
	refused dotdot-ctl
	[[ "$output" == *"refusing path with '..'"*'nf-evil\x1b]0;pwned\x07\x0anodeforge unpack: ok'* ]]
	if printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]'; then
		printf '%s' "$output" | od -c >&2
		return 1
	fi
	[ "${#lines[@]}" -eq 1 ]
}

@test "a symlink then a file through it is refused" {
	refused symlink-dir
	[[ "$output" == *"through symlink or non-directory 'etc'"* ]]
	refused symlink-rel
}

@test "hard links out of the root are refused" {
	refused hardlink-out
}

@test "device nodes need --devices" {
	refused device
	[[ "$output" == *"device node 'dev/sda': refusing (use --devices)"* ]]
	if [ "$(id -u)" = 0 ]; then
		nf unpack device.tar out --devices -q
		[ -b out/dev/sda ]
	fi
}

@test "a huge declared size is refused before writing" {
	refused huge --max-size 1G
	[[ "$output" == *"exceeds the size cap"* ]]
}

@test "--max-size and --max-entries cap the total" {
	refused many --max-size 20K
	[[ "$output" == *"exceeds"* ]]
	refused many --max-entries 10
	[[ "$output" == *"more than 10 entries"* ]]
	nf unpack many.tar out -q
	[ "$(ls out | wc -l)" = 51 ]
}

@test "a sparse file's holes stay holes (1 GB from a tiny tar)" {
	command -v tar >/dev/null || skip "tar is not installed"
	mkdir src
	truncate -s 1G src/big
	printf 'head' | dd of=src/big conv=notrunc status=none
	printf 'tail' | dd of=src/big bs=1 seek=$((1024 * 1024 * 1024 - 4)) conv=notrunc status=none
	tar -C src --sparse -cf sparse.tar big
	[ "$(stat -c %s sparse.tar)" -lt 100000 ]
	rm -rf src
	nf unpack sparse.tar out -q
	[ "$(stat -c %s out/big)" = 1073741824 ]
	# allocated: a few blocks, not a gigabyte
	[ "$(du -k out/big | cut -f1)" -lt 1024 ]
	[ "$(head -c 4 out/big)" = head ]
	[ "$(tail -c 4 out/big)" = tail ]
}

@test "a stream of zeros becomes a hole, not 256 MB of data" {
	command -v zstd >/dev/null || skip "zstd is not installed"
	mkdir src
	truncate -s 256M src/zeros
	tar -C src -cf - zeros | zstd -q -o z.tar.zst
	rm -rf src
	nf unpack z.tar.zst out -q
	[ "$(stat -c %s out/zeros)" = 268435456 ]
	[ "$(du -k out/zeros | cut -f1)" -lt 1024 ]
	cmp out/zeros <(head -c 268435456 /dev/zero)
}

@test "the default size cap is 90% of the target's free space, said in the error" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to mount a small tmpfs"
	mkdir small
	mount -t tmpfs -o size=4m nf-unpack-test small || skip "cannot mount tmpfs here"
	head -c 6000000 /dev/urandom > data
	tar -cf data.tar data
	run nf unpack data.tar small/out
	umount small
	status_is 1
	[[ "$output" == *"90% of the free space"*"--max-size"* ]]
}

@test "a file replacing a symlink does not write through it" {
	craft symlink-file s.tar
	nf unpack s.tar out -q
	[ ! -e /tmp/nf-evil-target ]
	[ -f out/passwd ] && [ ! -L out/passwd ]
	[ "$(cat out/passwd)" = replaced ]
}

@test "a non-empty destination is refused and left alone" {
	craft many m.tar
	mkdir out
	echo keep >out/keep
	run nf unpack m.tar out
	status_is 1
	[[ "$output" == *"'out' exists and is not empty"* ]]
	[ "$(ls out)" = keep ]
	rm out/keep
	nf unpack m.tar out -q
	[ -f out/f49 ]
}

@test "garbage is a clear error" {
	head -c 5000 /dev/urandom >g.tar
	run nf unpack g.tar out
	status_is 1
	[[ "$output" == *"cannot"* ]]
	[ ! -e out ]
	run nf unpack
	status_is 2
}
