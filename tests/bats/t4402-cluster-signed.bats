#!/usr/bin/env bats
# The cluster files a node installs as root at every boot are signed:
# 'pxe --key' writes cluster/NAME.sig with the key the images were built
# with, every image carries its public half (/etc/nodeforge/signing.pub),
# and 'cluster fetch' from a real 'nodeforge serve' installs nothing
# unless both files verify with it.
load helper

setup() {
	nf_setup
	INV=$NF_SRCDIR/examples/racks.yaml
	nf keys signing -o keys -q
	nf keys signing -o other -q
	mkdir -p root/etc/slurm root/etc/nodeforge
	cp keys/signing.pub root/etc/nodeforge/signing.pub
	echo keep > root/etc/slurm/cluster.conf
	printf '127.0.0.1\tlocalhost\n' > root/etc/hosts
	cp root/etc/hosts hosts.before
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

render() {
	nf pxe -i "$INV" -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" "$@"
}

# nothing of the server's answer reached the node's root
untouched() {
	[ "$(cat root/etc/slurm/cluster.conf)" = keep ]
	cmp hosts.before root/etc/hosts
}

@test "pxe --key signs cluster/slurm.conf and cluster/hosts; cluster fetch installs them with the image's key" {
	run render --key keys/signing.key
	status_is 0
	[[ "$output" != *"not signed"* ]]
	grep -Eqx 'ed25519 [0-9a-f]{128}' tree/cluster/slurm.conf.sig
	grep -Eqx 'ed25519 [0-9a-f]{128}' tree/cluster/hosts.sig
	cp tree/cluster/slurm.conf.sig sig.1
	nf_serve_bg --tree tree --state state
	run nf cluster fetch --server "$U" --root root
	status_is 0
	cmp root/etc/slurm/cluster.conf tree/cluster/slurm.conf
	grep -qx $'10.0.0.3\tlogin-01.cluster.internal login-01' root/etc/hosts
	# --pubkey names the key instead of the image's
	rm root/etc/nodeforge/signing.pub
	run nf cluster fetch --server "$U" --root root --pubkey keys/signing.pub
	status_is 0
	# the same inputs, the same signature (Ed25519 is deterministic)
	run render --key keys/signing.key
	status_is 0
	cmp sig.1 tree/cluster/slurm.conf.sig
}

@test "cluster fetch: a tampered slurm.conf or hosts is refused, naming the file, and nothing is installed" {
	render --key keys/signing.key >/dev/null
	cp -R tree good
	echo 'SlurmctldHost=evil(192.0.2.66)' >> tree/cluster/slurm.conf
	nf_serve_bg --tree tree --state state
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"nodeforge cluster: refusing '$U/cluster/slurm.conf': signature of '$U/cluster/slurm.conf' does not verify with 'root/etc/nodeforge/signing.pub'"* ]]
	untouched
	# a good slurm.conf is not installed either while hosts is bad
	cp good/cluster/slurm.conf tree/cluster/slurm.conf
	printf '192.0.2.66\tctl-01\n' >> tree/cluster/hosts
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"refusing '$U/cluster/hosts': signature of '$U/cluster/hosts' does not verify"* ]]
	untouched
}

@test "cluster fetch: a file without its signature is refused and nothing is installed; an unsigned render warns and leaves no old signature" {
	render --key keys/signing.key >/dev/null
	rm tree/cluster/hosts.sig
	nf_serve_bg --tree tree --state state
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"refusing '$U/cluster/hosts': it is not signed (HTTP 404 for '$U/cluster/hosts.sig'"* ]]
	untouched
	# no --key and no key of the build's default: unsigned, said loudly
	run render
	status_is 0
	[[ "$output" == *"warning: the cluster files are not signed"*"every node will refuse them"* ]]
	[ -e tree/cluster/slurm.conf ] && [ ! -e tree/cluster/slurm.conf.sig ]
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"refusing '$U/cluster/slurm.conf': it is not signed"* ]]
	untouched
	run render --strict
	status_is 1
	[[ "$output" == *"no key to sign the cluster files with"* ]]
}

@test "cluster fetch: files signed by another key, or a signature that is none, are refused and nothing is installed" {
	render --key other/signing.key >/dev/null
	nf_serve_bg --tree tree --state state
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"refusing '$U/cluster/slurm.conf': signature of '$U/cluster/slurm.conf' does not verify with 'root/etc/nodeforge/signing.pub'"* ]]
	untouched
	printf 'ed25519 %0128d\n' 0 > tree/cluster/slurm.conf.sig
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"does not verify"* ]]
	echo 'not a signature' > tree/cluster/slurm.conf.sig
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"'$U/cluster/slurm.conf.sig' is not an ed25519 signature"* ]]
	untouched
}

@test "cluster fetch: a root without a trusted key fails at once, even with --wait" {
	render --key keys/signing.key >/dev/null
	nf_serve_bg --tree tree --state state
	rm root/etc/nodeforge/signing.pub
	SECONDS=0
	run nf cluster fetch --server "$U" --root root --wait 60
	status_is 1
	[ "$SECONDS" -lt 5 ]
	[[ "$output" == *"no trusted key 'root/etc/nodeforge/signing.pub'"* ]]
	untouched
}

@test "pxe --key: a key that is not the one the images were signed with is refused before the tree changes" {
	cp -R "$FIXTURES/boot/out" images
	cp keys/signing.pub images/signing.pub
	run nf pxe -i "$INV" -o tree -u http://10.0.0.1:8080 --images images --key other/signing.key
	status_is 1
	[[ "$output" == *"the key 'other/signing.key' is not the one the images were signed with ('images/signing.pub')"* ]]
	[ ! -e tree/cluster/slurm.conf ]
	run nf pxe -i "$INV" -o tree -u http://10.0.0.1:8080 --images images --key keys/signing.key
	status_is 0
	[ -e tree/cluster/slurm.conf.sig ]
	run nf pxe -i "$INV" -o tree -u http://10.0.0.1:8080 --images images --key nokey
	status_is 1
	[[ "$output" == *"--key"*"nokey"* ]]
	# the build's default key is the default
	mkdir -p "$HOME/.cache/nodeforge/keys"
	cp keys/signing.key "$HOME/.cache/nodeforge/keys/"
	rm tree/cluster/*.sig
	run nf pxe -i "$INV" -o tree -u http://10.0.0.1:8080 --images images
	status_is 0
	[ -e tree/cluster/hosts.sig ]
}
