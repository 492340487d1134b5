#!/usr/bin/env bats
# docs/flags.md: one option name per concept, in every command that has
# the concept; the older spellings still work.
load helper

@test "flags: --out for pack and keys (and --output, their old spelling)" {
	mkdir root && echo x > root/f
	run nf pack root --out a.tar
	status_is 0
	[ -f a.tar ]
	run nf pack root --output b.tar
	status_is 0
	cmp a.tar b.tar
	run nf keys munge --out k1
	status_is 0
	[ -s k1 ]
}

@test "flags: pxe takes --server and --tree, like status, enroll and serve" {
	cp "$NF_SRCDIR/examples/racks.yaml" .
	run nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml --tree t --server http://10.0.0.9:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 --kernel-args compute=q \
		--kernel-args controller=q --kernel-args login=q --ipxe-dir none
	status_is 0
	grep -q 'nodeforge.server=http://10.0.0.9:8080' t/ipxe/mac/52-54-00-00-01-01.ipxe
}

@test "flags: serve --state-dir and a host name in --listen; inventory shows without 'show'" {
	mkdir tree
	"$NF_BIN" serve --tree tree --listen localhost:0 --state-dir st > serve.out 2>&1 3>&- &
	pid=$!
	for _ in $(seq 50); do grep -q '^listening on' serve.out && break; sleep 0.1; done
	kill $pid; wait $pid || true
	grep -qE '^listening on http://127\.0\.0\.1:[1-9][0-9]*$' serve.out
	[ -d st ]
	run nf inventory -i "$NF_SRCDIR/examples/racks.yaml"
	status_is 0
	[[ "${lines[0]}" == NAME* ]]
	run nf inventory frobnicate -i "$NF_SRCDIR/examples/racks.yaml"
	status_is 2
}

@test "flags: enroll and keys rotate take --enroll-state, like serve" {
	mkdir -m 700 es
	printf 'nodes:\n  - { name: n1, mac: "52:54:00:00:00:01", ip: 10.0.0.5, role: compute }\n' > r.yaml
	run nf enroll open n1 --for 1m -i r.yaml --enroll-state es
	status_is 0
	run nf enroll list --enroll-state es --json
	status_is 0
	echo "$output" | jq -e '.windows[0].node == "n1"' >/dev/null
}

@test "flags: a path option's directory is relative to the working directory; a missing one is named" {
	run nf serve --tree ../tree
	status_is 1
	[ "$output" = "nodeforge serve: --tree '../tree': no such directory" ]
	cp "$NF_SRCDIR/examples/racks.yaml" .
	run nf pxe -i racks.yaml --tree t --images ../out --server http://10.0.0.9:8080
	status_is 1
	[ "$output" = "nodeforge pxe: --images '../out': no such directory" ]
	[ ! -e t ]
	run nf -C profiles lint
	status_is 1
	[ "$output" = "nodeforge lint: -C 'profiles': no such directory" ]
	NODEFORGE_PROFILES=profiles run nf lint
	status_is 1
	[ "$output" = "nodeforge lint: NODEFORGE_PROFILES 'profiles': no such directory" ]
}

@test "flags: a site file the user names must exist, also where a command can do without one" {
	cp "$NF_SRCDIR/examples/racks.yaml" .
	run nf -s ../site.yaml pxe -i racks.yaml --tree t
	status_is 1
	[ "$output" = "nodeforge pxe: -s '../site.yaml': no such file or directory" ]
	[ ! -e t ]
	run nf --site=my.yaml inventory -i racks.yaml
	status_is 1
	[ "$output" = "nodeforge inventory: --site 'my.yaml': no such file or directory" ]
	NODEFORGE_SITE=my.yaml run nf build cpu
	status_is 1
	[ "$output" = "nodeforge build: NODEFORGE_SITE 'my.yaml': no such file or directory" ]
}

@test "flags: a missing --root or --sysroot is named before any check runs" {
	run nf verify --role cpu --root ../root
	status_is 1
	[ "$output" = "nodeforge verify: --root '../root': no such directory" ]
	run nf verify --role cpu --sysroot sys
	status_is 1
	[ "$output" = "nodeforge verify: --sysroot 'sys': no such directory" ]
	run nf disk list --sysroot sys
	status_is 1
	[ "$output" = "nodeforge disk: --sysroot 'sys': no such directory" ]
	run nf gres render --root ../root
	status_is 1
	[ "$output" = "nodeforge gres: --root '../root': no such directory" ]
}

# One rule in the option parser (cmd/main.c input_paths): --inventory,
# --root and --sysroot name what must be there, for every command that
# takes them, with the option as typed, before anything runs
@test "flags: a missing -i/--inventory, --root or --sysroot is named as typed, by every command, before anything runs" {
	run nf inventory show -i nope.yaml
	status_is 1
	[ "$output" = "nodeforge inventory: -i 'nope.yaml': no such file or directory" ]
	run nf lint --inventory=../nope.yaml
	status_is 1
	[ "$output" = "nodeforge lint: --inventory '../nope.yaml': no such file or directory" ]
	run nf pxe -inope.yaml --tree t
	status_is 1
	[ "$output" = "nodeforge pxe: -i 'nope.yaml': no such file or directory" ]
	[ ! -e t ]
	run nf enroll open n1 --for 1m --inventory nope.yaml
	status_is 1
	[ "$output" = "nodeforge enroll: --inventory 'nope.yaml': no such file or directory" ]
	run nf build cpu --inventory ../racks.yaml --cache c --out o
	status_is 1
	[ "$output" = "nodeforge build: --inventory '../racks.yaml': no such file or directory" ]
	[ ! -e c ] && [ ! -e o ]
	run nf efi list --sysroot sys
	status_is 1
	[ "$output" = "nodeforge efi: --sysroot 'sys': no such directory" ]
	run nf cluster fetch --root ../root --server http://127.0.0.1:9
	status_is 1
	[ "$output" = "nodeforge cluster: --root '../root': no such directory" ]
	run nf manifest diff --root ../root m.json
	status_is 1
	[ "$output" = "nodeforge manifest: --root '../root': no such directory" ]
	run nf enroll status --sysroot sys
	status_is 1
	[ "$output" = "nodeforge enroll: --sysroot 'sys': no such directory" ]
	# a file where a directory must be
	touch f
	run nf cluster fetch --root f --server http://127.0.0.1:9
	status_is 1
	[ "$output" = "nodeforge cluster: --root 'f': not a directory" ]
}
