#!/usr/bin/env bats
# nodeforge pack: the same tree gives the same bytes.
load helper
load pack_helper

@test "two packs of the same tree are byte-identical" {
	make_tree root
	nf pack root -o a.tar.zst -q
	nf pack root -o b.tar.zst -q
	cmp a.tar.zst b.tar.zst
	[ -s a.tar.zst.manifest.json ]
}

@test "--threads 1 and --threads 2 give the same bytes" {
	make_tree root
	head -c 3000000 /dev/urandom >root/rand
	nf pack root -o t1.tar.zst --threads 1 -q
	nf pack root -o t2.tar.zst --threads 2 -q
	cmp t1.tar.zst t2.tar.zst
	nf pack root -o t1.cpio.zst --threads 1 -q
	nf pack root -o t2.cpio.zst --threads 2 -q
	cmp t1.cpio.zst t2.cpio.zst
}

@test "xz: --threads 1, 2 and 3 give the same bytes, split into blocks" {
	command -v xz >/dev/null || skip "xz not installed"
	mkdir root
	head -c 3000000 /dev/urandom >root/rand
	seq 1 200000 >root/seq
	for t in 1 2 3; do
		nf pack root -o "t$t.tar.xz" --threads "$t" --level 0 -q
	done
	cmp t1.tar.xz t2.tar.xz
	cmp t1.tar.xz t3.tar.xz
	# the multi-threaded block format, whatever --threads said
	[ "$(xz --robot -l t1.tar.xz | awk '$1 == "totals" { print $3 }')" -ge 2 ]
	grep -q '"compressor":"xz","level":0' t1.tar.xz.manifest.json
	nf pack root -o a.tar.xz -q
	nf pack root -o b.tar.xz -q --threads 1
	cmp a.tar.xz b.tar.xz
	grep -q '"compressor":"xz","level":6' a.tar.xz.manifest.json
	run nf pack root -o c.tar.xz --level 10
	status_is 2
	[[ "$output" == *"xz takes 0-9"* ]]
}

@test "mtimes above the epoch, umask and creation order do not change the bytes" {
	make_tree root
	nf pack root -o a.tar.zst --epoch 1000 -q
	touch -d @5000 root/etc/passwd root/usr/bin/tool
	touch root/var/empty
	(umask 077; nf pack root -o b.tar.zst --epoch 1000 -q)
	cmp a.tar.zst b.tar.zst
	[ "$(stat -c %a b.tar.zst)" = 644 ]
	# Same content, created in another order: other readdir order, inodes
	mkdir r2
	for f in z y x w v u t s r q; do echo "$f" >"r2/$f"; done
	mkdir r3
	for f in q r s t u v w x y z; do echo "$f" >"r3/$f"; done
	touch -d @0 r2 r2/* r3 r3/*
	nf pack r2 -o r2.tar -q
	nf pack r3 -o r3.tar -q
	cmp r2.tar r3.tar
}

@test "SOURCE_DATE_EPOCH is the default epoch; mtimes below it are kept" {
	mkdir root
	echo a >root/a
	touch -d @100 root/a
	echo b >root/b
	SOURCE_DATE_EPOCH=200 nf pack root -o o.tar -q
	run tar --full-time -tvf o.tar
	[[ "$output" == *"1970-01-01 00:01:40 a"* ]]
	[[ "$output" == *"1970-01-01 00:03:20 b"* ]]
	grep -q '"epoch":200' o.tar.manifest.json
}

@test "format comes from the suffix or --format; unknown is a usage error" {
	mkdir root
	echo a >root/a
	for s in tar.zst cpio.zst tar.xz cpio.xz tar.gz cpio.gz tar cpio; do
		nf pack root -o "o.$s" -q
		grep -q "\"format\":\"${s%%.*}\"" "o.$s.manifest.json"
	done
	for c in zst:zstd xz:xz gz:gzip; do
		grep -q "\"compressor\":\"${c#*:}\"" "o.tar.${c%%:*}.manifest.json"
	done
	grep -q '"compressor":"none"' o.tar.manifest.json
	xz -t o.tar.xz o.cpio.xz
	nf pack root -o img --format cpio.gz -q
	gzip -t img
	run nf pack root -o o.zip
	status_is 2
	[[ "$output" == *"cannot tell the format from 'o.zip'"* ]]
	run nf pack root -o o.tar --level 99
	status_is 2
	run nf pack root
	status_is 2
}

@test "the gzip output carries no timestamp" {
	mkdir root
	echo a >root/a
	nf pack root -o a.tar.gz -q
	sleep 1
	nf pack root -o b.tar.gz -q
	cmp a.tar.gz b.tar.gz
}

@test "sockets are skipped with a warning" {
	mkdir root
	echo a >root/a
	python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind("root/sock")'
	run nf pack root -o o.tar
	status_is 0
	[[ "$output" == *"skipping socket 'sock'"* ]]
	run tar -tf o.tar
	[[ "$output" != *sock* ]]
}

@test "a failed pack publishes nothing" {
	mkdir root
	echo a >root/a
	chmod 000 root/a
	if [ "$(id -u)" = 0 ]; then
		# root reads anything: make a name the manifest cannot hold
		touch "root/$(printf 'bad\xff')"
	fi
	run nf pack root -o o.tar.zst
	status_is 1
	[ ! -e o.tar.zst ]
	[ ! -e o.tar.zst.manifest.json ]
	[ -z "$(ls -A . | grep -v -e '^root$' -e '^home$')" ]
}

@test "entries are sorted bytewise per component: a directory's content follows it" {
	mkdir -p root/a/b root/a-c
	touch root/a.b root/a/b/f root/B
	nf pack root -o o.tar -q
	run tar -tf o.tar
	[ "$output" = "$(printf '%s\n' ./ B a/ a/b/ a/b/f a-c/ a.b)" ]
	nf pack root -o o.cpio -q
	run cpio -it --quiet <o.cpio
	[ "$output" = "$(printf '%s\n' . B a a/b a/b/f a-c a.b)" ]
}
