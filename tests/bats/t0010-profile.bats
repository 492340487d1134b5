#!/usr/bin/env bats
# nodeforge profile list / show against the shipped profiles and fixtures.
load helper

@test "profile list shows roles and partial profiles" {
	run nf profile list
	status_is 0
	[[ "$output" == *"compute      role"* ]]
	[[ "$output" == *"controller   role"* ]]
	[[ "$output" == *"login        role"* ]]
	[[ "$output" == *"base         partial"* ]]
}

@test "profile show compute --json holds the required kernel args" {
	run nf profile show compute --json
	status_is 0
	echo "$output" | python3 -c '
import json,sys
d=json.load(sys.stdin)
a=d["boot_args"]
for want in ["cgroup_memory=1","systemd.unified_cgroup_hierarchy=1","transparent_hugepage=never",
             "hugepagesz=1G","hugepages=160","numa_balancing=disable","iommu=pt"]:
    assert want in a, (want, a)
assert d["role"]=="compute" and d["inherits"]==["base","gpu","nvidia","enroot","pyxis","nvidia-container","compute"], d["inherits"]
assert d["limits"]["memlock"]=="unlimited"
assert d["pam"]["slurm_adopt"] is True
assert d["slurm"]["conf"]["SelectType"]=="select/cons_tres"
assert d["time"]["servers"]==["10.0.0.1"]
assert "secrets" not in d["site"]'
}

@test "isolcpus uses the kernel's flags,list syntax" {
	run nf profile show compute --args
	status_is 0
	[[ "$output" == *"isolcpus=nohz,domain,1-63,65-127,129-191,193-255"* ]]
	[[ "$output" != *"domain:"* ]]
}

@test "controller is not a GPU node and has no pam_slurm_adopt" {
	run nf profile show controller --json
	status_is 0
	echo "$output" | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert "gpu" not in d and "pam" not in d
assert d["mariadb"]["lock_wait_timeout"]==900
assert d["slurm"]["daemons"]==["slurmctld","slurmdbd"]'
}

@test "profile show is YAML for people, --json the same document for scripts" {
	for role in login compute controller; do
		nf profile show $role > text.out
		nf profile show $role --json > json.out
		head -c1 json.out | grep -qx '{'
		# block YAML, not JSON: the first key at the start of the line
		[ "$(head -1 text.out)" = "nodeforge:" ]
		grep -qx "role: $role" text.out
		# strings that would read as numbers stay strings (a YAML 1.1
		# reader is the strictest: 0400 would be octal)
		grep -qx '  mode: "0400"' text.out
		python3 -c '
import json, yaml
a = yaml.safe_load(open("text.out")); b = json.load(open("json.out"))
assert a == b, [k for k in b if a.get(k) != b[k]]'
	done
}

@test "profile show: a string that needs quotes in YAML is quoted and reads back the same" {
	mkdir p && cp "$FIXTURES/site-good.yaml" p/site.yaml
	for v in 'key: value' '*star' '&anchor' 'yes' 'Off' '0400' '1.5' 'true' '' '- dash' '# hash' 'x #y' '@at' ' lead' 'two
lines' 'ünïcode' 'plain words'; do
		python3 -c 'import json,sys; print("description: %s\nkernel:\n  args: [quiet]" % json.dumps(sys.argv[1]))' "$v" > p/tiny.yaml
		nf -C p profile show tiny > text.out
		V="$v" python3 -c '
import os, yaml
d = yaml.safe_load(open("text.out"))
assert d["description"] == os.environ["V"], (d["description"], os.environ["V"])'
	done
	printf 'description: "key: value"\nkernel:\n  args: [quiet]\n' > p/tiny.yaml
	run nf -C p profile show tiny
	[[ "$output" == *"description: 'key: value'"* ]]
	printf 'description: "*star"\nkernel:\n  args: [quiet]\n' > p/tiny.yaml
	run nf -C p profile show tiny
	[[ "$output" == *"description: '*star'"* ]]
	printf 'description: "yes"\nkernel:\n  args: [quiet]\n' > p/tiny.yaml
	run nf -C p profile show tiny
	[[ "$output" == *'description: "yes"'* ]]
}

@test "a site file changes what the profile carries" {
	sed 's/cluster: test/cluster: blue/' "$FIXTURES/site-good.yaml" > site.yaml
	run nf --site site.yaml profile show compute --json
	status_is 0
	echo "$output" | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert d["site"]["cluster"]=="blue"'
}

@test "profile show of a partial profile or an unknown role is a usage error naming the roles" {
	run nf profile show base
	status_is 2
	[[ "$output" == *"'base' is a partial profile (abstract: true), not a role; roles: compute, controller, cpu, login"* ]]
	run nf profile show nosuch
	status_is 2
	[[ "$output" == *"no profile 'nosuch'"*"; roles: compute, controller, cpu, login"* ]]
	# only roles are suggested: 'gpux' is nearest to the partial 'gpu'
	run nf profile show gpux
	status_is 2
	[[ "$output" != *"did you mean 'gpu'"* ]]
	run nf profile show comptue
	[[ "$output" == *"(did you mean 'compute'?)"* ]]
}

@test "verify --role of a partial profile or an unknown role is a usage error naming the roles" {
	run nf verify --role gpu
	status_is 2
	[[ "$output" == *"nodeforge verify: 'gpu' is a partial profile (abstract: true), not a role; roles: compute, controller, cpu, login"* ]]
	[[ "$output" == *"try 'nodeforge verify --help'"* ]]
	run nf verify --role comptue
	status_is 2
	[[ "$output" == *"(did you mean 'compute'?); roles: compute, controller, cpu, login"* ]]
}

@test "profile show with a broken site names the site's file:line" {
	printf 'cluster: x\ndistro: debian12\ncontrollers: []\nnetworks:\n  provisioning: { cidr: nope }\n' > site.yaml
	run nf --site site.yaml profile show compute
	status_is 3
	[[ "$output" == *"site.yaml:5:"*"'nope' is not a network"* ]]
}

@test "profile usage errors exit 2" {
	run nf profile
	status_is 2
	run nf profile frob
	status_is 2
	run nf profile show
	status_is 2
}

@test "-C points at another profiles directory" {
	mkdir p && cp "$FIXTURES/site-good.yaml" p/site.yaml
	printf 'description: tiny\nkernel:\n  args: [quiet]\n' > p/tiny.yaml
	run nf -C p profile show tiny --args
	status_is 0
	[ "$output" = "quiet" ]
}

@test "sysctl: one line in a profile adds a setting; a child's value for a key wins, the rest is inherited" {
	cp -r "$NF_SRCDIR/profiles" p
	printf 'description: big maps\ninherits: [compute]\nsysctl:\n  vm.max_map_count: 262144\n' > p/maps.yaml
	printf 'description: bigger maps\ninherits: [maps]\nsysctl:\n  vm.max_map_count: 1048576\n' > p/maps2.yaml
	run nf -C p profile show maps --json
	status_is 0
	[ "$(echo "$output" | jq -c .sysctl)" = '{"kernel.numa_balancing":0,"vm.max_map_count":262144}' ]
	run nf -C p profile show maps2 --json
	status_is 0
	[ "$(echo "$output" | jq -c .sysctl)" = '{"kernel.numa_balancing":0,"vm.max_map_count":1048576}' ]
	run nf -C p lint
	status_is 0
}

@test "a site's munge fingerprints (current and previous) travel, the key's path does not" {
	cp "$FIXTURES/site-good.yaml" site.yaml
	cat >> site.yaml <<YAML
secrets:
  munge_key:
    path: /srv/secret/munge.key
    fingerprint: "sha256:$(printf 'a%.0s' {1..64})"
    previous_fingerprint: "sha256:$(printf 'b%.0s' {1..64})"
YAML
	run nf --site site.yaml profile show compute --json
	status_is 0
	echo "$output" | jq -e '.site.fingerprints["munge_key.previous"] | startswith("sha256:bbbb")'
	[[ "$output" != *"/srv/secret"* ]]
}

@test "profile list: a profile that does not load is 'broken' with its first error, and exits 3" {
	cp -r "$NF_SRCDIR/profiles" p
	printf 'inherits: [base]\nmemory: {thp: sometimes}\n' > p/broken.yaml
	run nf -C p profile list
	status_is 3
	[[ "$output" =~ broken\ +broken\ +[^\ ]*broken\.yaml:2:[0-9]+:\ .*sometimes ]]
	[[ "$output" =~ base\ +partial ]]
	[[ "$output" =~ compute\ +role ]]
	run nf -C p profile list --json
	status_is 3
	echo "$output" | jq -e '.profiles[] | select(.name == "broken") | .kind == "broken"' >/dev/null
	rm p/broken.yaml
	run nf -C p profile list
	status_is 0
}
