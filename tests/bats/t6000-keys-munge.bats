#!/usr/bin/env bats
# keys munge: a new munge key, 0400, with its fingerprint.
load helper

@test "keys munge writes 1024 bytes, mode 0400, and prints its fingerprint" {
	run nf keys munge -o munge.key
	status_is 0
	[ "$(stat -c %s munge.key)" = 1024 ]
	[ "$(stat -c %a munge.key)" = 400 ]
	[ "$output" = "sha256:$(sha256sum munge.key | cut -d' ' -f1)" ]
	# no temp file left behind
	[ "$(ls -A | grep -v '^home$')" = munge.key ]
}

@test "keys munge makes a different key each time" {
	nf keys munge -o a.key >/dev/null
	nf keys munge -o b.key >/dev/null
	! cmp -s a.key b.key
}

@test "keys munge never replaces a key" {
	nf keys munge -o munge.key >/dev/null
	before=$(sha256sum munge.key)
	run nf keys munge -o munge.key
	status_is 1
	[[ "$output" == *"'munge.key' already exists"* ]]
	[ "$(sha256sum munge.key)" = "$before" ]
}

@test "keys munge --owner sets the owner (as root)" {
	[ "$(id -u)" = 0 ] || skip "needs root"
	run nf keys munge -o munge.key --owner nobody
	status_is 0
	[ "$(stat -c %U munge.key)" = nobody ]
}

@test "keys munge --owner with an unknown user fails and writes nothing" {
	run nf keys munge -o munge.key --owner no-such-user-x
	status_is 1
	[[ "$output" == *"no user 'no-such-user-x'"* ]]
	[ ! -e munge.key ]
}

@test "keys munge --json names path and fingerprint" {
	run nf keys munge -o munge.key --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["kind"]=="munge" and d["bytes"]==1024 and d["fingerprint"].startswith("sha256:")'
}

@test "keys munge without -o is a usage error" {
	run nf keys munge
	status_is 2
	[[ "$output" == *"missing -o FILE"* ]]
}
