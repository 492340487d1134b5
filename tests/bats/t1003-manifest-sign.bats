#!/usr/bin/env bats
# make test: beside the cluster
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

# A large image's manifest is verified without holding it as one JSON tree
# (as one jansson tree it costs some thirty times its size): 150,000 entries,
# ~30 MB, must verify within a peak RSS of 3x the manifest's size
@test "manifest verify streams a large signed manifest: peak RSS under 3x its size" {
	python3 - img.tar.zst.manifest.json big.manifest.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
e = [{"path": "usr/share/f%06d" % i, "type": "file", "mode": "0644",
      "uid": 0, "gid": 0, "size": i, "sha256": "%064x" % i} for i in range(150000)]
m["entries"] = [{"path": ".", "type": "dir", "mode": "0755", "uid": 0, "gid": 0}] + e
json.dump(m, open(sys.argv[2], "w"), indent=1)
PY
	nf sign big.manifest.json --key keys/signing.key -q
	size=$(stat -c %s big.manifest.json)
	[ "$size" -gt 25000000 ]
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8 \
	run python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(r.stdout + r.stderr, end="")
print("maxrss_kib=%d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(r.returncode)' "$NF_BIN" manifest verify big.manifest.json --pubkey keys/signing.pub
	echo "$output"
	status_is 0
	[[ "$output" == *"signature and archive ok"* ]]
	rss=$(echo "$output" | sed -n 's/^maxrss_kib=//p')
	echo "# manifest $((size / 1024)) KiB, peak RSS ${rss} KiB" >&3
	[ "$rss" -lt $((size * 3 / 1024)) ]
	# an entry broken deep inside is still found, by its index
	sed -i '0,/"mode": "0644"/s//"mode": "9999"/' big.manifest.json
	nf sign big.manifest.json --key keys/signing.key -q
	run nf manifest verify big.manifest.json --pubkey keys/signing.pub
	status_is 1
	[[ "$output" == *"manifest entry 1: 'mode' missing or not an octal mode"* ]]
}
