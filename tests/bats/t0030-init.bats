#!/usr/bin/env bats
# nodeforge init: a site file of one's own that lint and every command
# accept; the munge key's fingerprint pinned; nothing replaced or half
# written.
load helper

@test "init writes a site that lint accepts and that pxe uses instead of the example" {
	mkdir -m 700 sec
	nf keys munge -o sec/munge.key >/dev/null
	run nf init --network 10.20.0.0/16 --server http://10.20.0.2:8080 --gateway 10.20.0.1 \
		--cluster hopper --munge-key "$PWD/sec/munge.key" -o my.yaml
	status_is 0
	[[ "$output" == *"wrote my.yaml"* ]]
	[[ "$output" != *warning* ]]
	fp=sha256:$(sha256sum < sec/munge.key | cut -d' ' -f1)
	grep -qx "    fingerprint: \"$fp\"" my.yaml
	grep -qx 'ntp: \[10.20.0.2\]' my.yaml
	run nf --site my.yaml lint
	status_is 0
	[[ "$output" == *"lint: no errors (0 warnings)"* ]]
	cp "$NF_SRCDIR/examples/racks.yaml" .
	sed -i 's/10\.0\./10.20./g' racks.yaml
	run nf --site my.yaml pxe -o tree -i racks.yaml --images "$FIXTURES/boot/out" --ipxe-dir none
	status_is 0
	[[ "$output" != *"example site"* ]]
	grep -q 'nodeforge.server=http://10.20.0.2:8080' tree/ipxe/mac/52-54-00-00-01-01.ipxe
}

@test "init keeps an existing file unless --force, and writes nothing for invalid values" {
	run nf init --network 10.20.0.0/16 --server http://10.20.0.2:8080
	status_is 0
	cp site.yaml before.yaml
	run nf init --network 10.30.0.0/16 --server http://10.30.0.2:8080
	status_is 1
	[[ "$output" == *"'site.yaml' exists: it is kept (--force replaces it)"* ]]
	cmp site.yaml before.yaml
	run nf init --network 10.30.0.0/16 --server http://10.30.0.2:8080 --force
	status_is 0
	grep -q 'cidr: 10.30.0.0/16' site.yaml
	run nf init --network 10.5.0.0/33 --server http://10.5.0.2:8080 -o bad.yaml
	status_is 2
	[[ "$output" == *"nodeforge init: '--network 10.5.0.0/33': not a network such as 10.0.0.0/16"* ]]
	[ ! -e bad.yaml ]
	[ -z "$(ls -A | grep init)" ]
	run nf init --network '10.0.0.0/16\nx: 1' --server http://a -o bad.yaml
	status_is 2
	run nf init --network 10.0.0.0/16 --domain 'a\nx: 1' --server http://a -o bad.yaml
	status_is 3
	[[ "$output" == *"is not a plain name, address or URL"* ]]
	run nf init --server http://a
	status_is 2
	[[ "$output" == *"missing '--network CIDR'"* ]]
	run nf init --network 10.0.0.0/16 --server ftp://a -o bad.yaml
	status_is 3
	[[ "$output" == *"server 'ftp://a' is not an http(s) URL"* ]]
}

@test "init: a relative --munge-key or --password-file is relative to the working directory" {
	mkdir -p secrets work
	nf keys munge -o secrets/munge.key >/dev/null
	cd work
	run nf init --network 10.0.0.0/16 --server http://10.0.0.1:8080 \
		--munge-key ../secrets/munge.key --password-file ../secrets/slurmdbd.password
	status_is 0
	grep -qx "    path: $SCRATCH/secrets/munge.key" site.yaml
	grep -qx "    path: $SCRATCH/secrets/slurmdbd.password" site.yaml
	grep -q 'fingerprint: "sha256:' site.yaml
	run nf init --network 10.0.0.0/16 --server http://10.0.0.1:8080 \
		--munge-key ../nowhere/munge.key -o other.yaml
	status_is 1
	[ "$output" = "nodeforge init: --munge-key '../nowhere/munge.key': no such directory '../nowhere'" ]
	[ ! -e other.yaml ]
}

@test "init: errors name the option, not a line of a file never written" {
	run nf init --network 10.20.0.0/16 --server http://10.99.0.1:8080 -o s.yaml
	status_is 2
	[[ "$output" == *"nodeforge init: '--server http://10.99.0.1:8080': 10.99.0.1 is not in the provisioning network 10.20.0.0/16"* ]]
	[ ! -e s.yaml ]
	run nf init --network 10.20.0.0/16 --server http://10.20.0.1:8080 --cluster 'a b' -o s.yaml
	status_is 3
	[[ "$output" != *"s.yaml:"* ]]
	[ ! -e s.yaml ]
	# a relative key path is taken from the current directory
	mkdir sec
	nf keys munge -o sec/munge.key >/dev/null
	run nf init --network 10.20.0.0/16 --server http://10.20.0.1:8080 \
		--munge-key sec/munge.key --password-file sec/db.pw -o s.yaml
	status_is 0
	grep -qx "    path: $PWD/sec/munge.key" s.yaml
	grep -qx "    path: $PWD/sec/db.pw" s.yaml
	grep -q "fingerprint: " s.yaml
}
