#!/usr/bin/env bats
# Messages and exit codes as the docs give them (docs/exit-codes.md): a
# finding in a file is exit 3 with file:line:col once, a bad option or
# argument is exit 2, and no message names a file as '' or a line as -1.
load helper
load pack_helper

setup() {
	nf_setup
	mkdir p
	cp "$NF_SRCDIR"/profiles/*.yaml p/
}

@test "profile show on a profile with bad YAML: exit 3, the error once" {
	echo "system: [" > p/login.yaml
	run nf -C p profile show login
	status_is 3
	[[ "$output" == *"p/login.yaml:2:1: error: invalid YAML"* ]]
	[ "$(grep -c 'invalid YAML' <<<"$output")" = 1 ]
	run nf -C p profile show nosuch
	status_is 2
	[[ "$output" == *"no profile 'nosuch'"* ]]
}

@test "an empty site file is named in its errors" {
	: > empty.yaml
	run nf -C p -s empty.yaml profile show compute
	status_is 3
	[[ "$output" == *"empty.yaml:1:1: error: missing required key 'cluster'"* ]]
	[[ "$output" != *$'\n: error'* && "$output" != ": error"* ]]
}

@test "verify: a fixture that is not a JSON object is named, no -1:-1" {
	nf -C p profile show compute --json > prof.json
	echo '[1, 2]' > fx.json
	run nf verify --profile prof.json --fixture fx.json
	status_is 1
	[[ "$output" == *"fx.json: the top level must be a JSON object"* ]]
	[[ "$output" != *"-1:-1"* ]]
}

@test "verify --only with no such facet or check is a usage error" {
	nf -C p profile show compute --json > prof.json
	run nf verify --profile prof.json --only gpux --sysroot /
	status_is 2
	[[ "$output" == *"--only 'gpux' names no facet and no check of role 'compute'"* ]]
	# in a list, the item that names nothing; an empty item
	run nf verify --profile prof.json --only gpu,gpux,munge --sysroot /
	status_is 2
	[[ "$output" == *"--only 'gpux' names no facet and no check of role 'compute'"* ]]
	run nf verify --profile prof.json --only gpu,,munge --sysroot /
	status_is 2
	[[ "$output" == *"--only 'gpu,,munge': an empty item"* ]]
	run nf verify --profile prof.json --only gpu --sysroot /
	[ "$status" -ne 2 ]
	[[ "$output" == *"compute: "* ]]
}

@test "serve --listen: a malformed address is exit 2; [::1]:0 listens on IPv6" {
	mkdir t
	for a in bogus 127.0.0.1 127.0.0.1:-5 127.0.0.1:70000 '[::1' '[::1]' 'zz:80'; do
		run nf serve --tree t --listen "$a"
		status_is 2
		[[ "$output" == *"invalid listen address"* ]]
	done
	[ -e /proc/net/if_inet6 ] || skip "no IPv6 on this host"
	"$NF_BIN" serve --tree t --listen '[::1]:0' > serve.out 2>&1 3>&- &
	local pid=$!
	for _ in $(seq 50); do grep -q listening serve.out && break; sleep 0.1; done
	kill $pid
	wait $pid || true
	grep -Eq '^listening on http://\[::1\]:[0-9]+$' serve.out
}

@test "manifest verify: a negative archive size is named; a wrong size says bytes" {
	make_tree root
	nf pack root -o img.tar.zst -q
	nf keys signing -o keys -q
	python3 - <<'PY'
import json
m = json.load(open("img.tar.zst.manifest.json"))
size = m["archive"]["size"]
m["archive"]["size"] = -1
json.dump(m, open("neg.manifest.json", "w"))
m["archive"]["size"] = size + 12345
json.dump(m, open("big.manifest.json", "w"))
open("want", "w").write("%d bytes, expected %d" % (size, size + 12345))
PY
	nf sign neg.manifest.json --key keys/signing.key -q
	nf sign big.manifest.json --key keys/signing.key -q
	run nf manifest verify neg.manifest.json --pubkey keys/signing.pub
	[ "$status" -ne 0 ]
	[[ "$output" == *"a size of 0 or more"* ]]
	run nf manifest verify big.manifest.json --pubkey keys/signing.pub
	[ "$status" -ne 0 ]
	[[ "$output" == *"$(cat want)"* ]]
	[[ "$output" != *"sha256"* ]]
}
