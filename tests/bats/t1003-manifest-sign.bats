#!/usr/bin/env bats
# keys signing, sign, manifest verify.
load helper
load pack_helper

setup() {
	nf_setup
	make_tree root
	nf pack root -o img.tar.zst -q
	nf keys signing -o keys -q
	nf sign img.tar.zst.manifest.json --key keys/signing.key -q
}

flip() { # flip one byte of $1 at offset $2
	python3 -c 'import sys
p, o = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[o] ^= 1; open(p, "wb").write(b)' "$1" "$2"
}

@test "keys signing writes a 0600 private key and a public key" {
	[ "$(stat -c %a keys/signing.key)" = 600 ]
	[ "$(stat -c %a keys)" = 700 ]
	grep -q 'BEGIN PRIVATE KEY' keys/signing.key
	grep -q 'BEGIN PUBLIC KEY' keys/signing.pub
	openssl pkey -in keys/signing.key -noout -text | grep -qi ed25519
	run nf keys signing -o keys
	status_is 1
	[[ "$output" == *"already exists"* ]]
	run nf keys frob -o k2
	status_is 2
	[[ "$output" == *"unknown key kind 'frob'"* ]]
}

@test "a signed manifest and its archive verify" {
	grep -Eq '^ed25519 [0-9a-f]{128}$' img.tar.zst.manifest.json.sig
	run nf manifest verify img.tar.zst.manifest.json --pubkey keys/signing.pub
	status_is 0
	[[ "$output" == *"signature and archive ok"* ]]
	run nf --json manifest verify img.tar.zst.manifest.json --pubkey keys/signing.pub
	status_is 0
	echo "$output" | python3 -c 'import json,sys; assert json.load(sys.stdin)["verified"] is True'
}

@test "a flipped byte in the archive fails verify" {
	flip img.tar.zst 200
	run nf manifest verify img.tar.zst.manifest.json --pubkey keys/signing.pub
	status_is 1
	[[ "$output" == *"archive 'img.tar.zst' does not match manifest"* ]]
}

@test "a flipped byte in the manifest or the signature fails verify" {
	cp img.tar.zst.manifest.json m.bak
	flip img.tar.zst.manifest.json 150
	run nf manifest verify img.tar.zst.manifest.json --pubkey keys/signing.pub
	status_is 1
	[[ "$output" == *"signature of 'img.tar.zst.manifest.json' does not verify"* ]]
	cp m.bak img.tar.zst.manifest.json
	flip img.tar.zst.manifest.json.sig 20
	run nf manifest verify img.tar.zst.manifest.json --pubkey keys/signing.pub
	status_is 1
}

@test "another key, a missing signature, a missing archive all fail" {
	nf keys signing -o other -q
	run nf manifest verify img.tar.zst.manifest.json --pubkey other/signing.pub
	status_is 1
	rm img.tar.zst.manifest.json.sig
	run nf manifest verify img.tar.zst.manifest.json --pubkey keys/signing.pub
	status_is 1
	[[ "$output" == *"is not signed"* ]]
	nf sign img.tar.zst.manifest.json --key keys/signing.key -q
	rm img.tar.zst
	run nf manifest verify img.tar.zst.manifest.json --pubkey keys/signing.pub
	status_is 1
	[[ "$output" == *"cannot read archive"* ]]
	run nf manifest verify img.tar.zst.manifest.json
	status_is 2
	run nf sign img.tar.zst.manifest.json --key keys/signing.pub
	status_is 1
}

@test "keys signing refuses a directory others can write to" {
	mkdir -m 0777 open
	chmod 0777 open
	run nf keys signing -o open
	status_is 1
	[[ "$output" == *"'open' is group- or world-writable"* ]]
	[ ! -e open/signing.key ]
	ln -s keys link
	run nf keys signing -o link
	status_is 1
	[[ "$output" == *"symlink"* ]]
}

@test "manifest verify without a .sig refuses before reading the manifest" {
	# a FIFO as the manifest: reading it first would block
	mkfifo unsigned.manifest.json
	run timeout 5 "$NF_BIN" manifest verify unsigned.manifest.json --pubkey keys/signing.pub
	[ "$status" -ne 124 ]
	status_is 1
	[[ "$output" == *"is not signed: no 'unsigned.manifest.json.sig'"* ]]
}
