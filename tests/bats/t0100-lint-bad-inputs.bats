#!/usr/bin/env bats
# Every bad input in tests/fixtures/bad/ is refused with the exact
# file:line:col and message in its `expect` file (line 1: exit status,
# following lines: text that must appear in the output).
load helper

lint_case() {
	local c=$1 dir=$FIXTURES/bad/$1
	mkdir -p "$SCRATCH/$c"
	cp "$FIXTURES/site-good.yaml" "$SCRATCH/$c/site.yaml"
	echo "description: ok" > "$SCRATCH/$c/role.yaml"
	cp "$dir"/*.yaml "$SCRATCH/$c/"
	run nf -C "$SCRATCH/$c" lint
	output=${output//$SCRATCH\/$c\//}
	local want_rc
	want_rc=$(sed -n 1p "$dir/expect")
	status_is "$want_rc"
	while IFS= read -r want; do
		[ -z "$want" ] && continue
		if [[ "$output" != *"$want"* ]]; then
			echo "case $c: expected '$want' in:" >&2
			echo "$output" >&2
			return 1
		fi
	done < <(sed 1d "$dir/expect")
}

@test "the bad-input corpus has at least 25 cases" {
	n=$(ls -d "$FIXTURES"/bad/*/ | wc -l)
	[ "$n" -ge 25 ]
}

@test "every bad input fails lint with its file:line:col and message" {
	for d in "$FIXTURES"/bad/*/; do
		lint_case "$(basename "$d")"
	done
}

@test "the shipped profiles and site lint clean" {
	run nf lint
	status_is 0
	[[ "$output" == *"lint: no errors"* ]]
}

@test "mariadb buffer pool: 75 % warns on a controller that runs slurmctld, not on a dedicated database role" {
	cp -r "$NF_SRCDIR/profiles" p
	sed -i 's/buffer_pool_pct: 50/buffer_pool_pct: 75/' p/controller.yaml
	printf 'description: database only\ninherits: [controller]\nslurm:\n  daemons: ["!slurmctld"]\n' > p/dbhost.yaml
	run nf -C p lint
	[[ "$output" == *"controller.yaml:"*"warning: buffer_pool_pct 75 on a node that also runs slurmctld and slurmdbd"* ]]
	[[ "$output" != *"dbhost"*"buffer_pool_pct"* ]]
	run nf lint
	[[ "$output" != *"buffer_pool_pct"* ]]
}

@test "slurmdbd archiving to /tmp (no ArchiveDir) gets a lint warning" {
	cp -r "$NF_SRCDIR/profiles" p
	sed -i '/ArchiveDir:/d' p/controller.yaml
	run nf -C p lint
	status_is 0
	[[ "$output" == *"warning: slurmdbd archives to ArchiveDir=/tmp (slurmdbd's default), which does not outlive a reboot"* ]]
	run nf lint
	[[ "$output" != *"ArchiveDir"* ]]
}

@test "a site whose munge key has no fingerprint gets a warning at its line; with one, none" {
	mkdir p && cp "$FIXTURES/site-good.yaml" p/site.yaml
	echo "description: ok" > p/role.yaml
	printf 'secrets:\n  munge_key:\n    path: /etc/nodeforge/secrets/munge.key\n' >> p/site.yaml
	line=$(grep -n '^  munge_key:' p/site.yaml | cut -d: -f1)
	run nf -C p lint
	status_is 0
	[[ "$output" == *"site.yaml:$line:3: warning: secrets.munge_key has no fingerprint"* ]]
	[[ "$output" == *"from whichever server answers their enrollment"* ]]
	printf '    fingerprint: "sha256:%064d"\n' 0 >> p/site.yaml
	run nf -C p lint
	status_is 0
	[[ "$output" == *"(0 warnings)"* ]]
}

@test "lint --json reports findings as JSON with counts" {
	mkdir p && cp "$FIXTURES/site-good.yaml" p/site.yaml
	printf 'memory:\n  thp: sometimes\n' > p/role.yaml
	run nf -C p lint --json
	status_is 3
	echo "$output" | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert d["errors"]==1, d
x=d["diagnostics"][0]
assert x["line"]==2 and x["column"]==3 and x["severity"]=="error", x
assert x["file"].endswith("role.yaml"), x'
}

@test "an unreadable profiles directory is a runtime failure (exit 1)" {
	run nf -C "$SCRATCH/nonexistent" lint
	status_is 1
	[[ "$output" == *"nonexistent"* ]]
}

@test "warnings alone do not fail lint" {
	mkdir p && cp "$FIXTURES/site-good.yaml" p/site.yaml
	printf 'limits:\n  memlock: 65536\n' > p/role.yaml
	run nf -C p lint
	status_is 0
	[[ "$output" == *"role.yaml:2:3: warning: memlock 65536"* ]]
}

@test "lint of a named role only checks that role" {
	mkdir p && cp "$FIXTURES/site-good.yaml" p/site.yaml
	echo "description: ok" > p/good.yaml
	printf 'colour: red\n' > p/bad.yaml
	run nf -C p lint good
	status_is 0
	run nf -C p lint bad
	status_is 3
}

@test "lint --inventory: the example rack is clean" {
	run nf lint --inventory "$NF_SRCDIR/examples/racks.yaml"
	status_is 0
}

@test "lint --inventory: a duplicate MAC names both nodes and the line" {
	cat > racks.yaml <<'YAML'
nodes:
  - { name: gpu-01, mac: "52:54:00:00:00:01", ip: 10.0.1.1, role: compute, rack: r1 }
  - { name: gpu-02, mac: "52:54:00:00:00:01", ip: 10.0.1.2, role: compute, rack: r1 }
YAML
	run nf lint --inventory racks.yaml
	status_is 3
	[[ "$output" == *"racks.yaml:3:21: error: duplicate MAC 52:54:00:00:00:01"*"gpu-01"* ]]
}

@test "lint --inventory: an address outside the site's provisioning network" {
	cat > racks.yaml <<'YAML'
nodes:
  - { name: gpu-01, mac: "52:54:00:00:00:01", ip: 10.0.1.1, role: compute, rack: r1 }
  - { name: gpu-02, mac: "52:54:00:00:00:02", ip: 192.168.1.2, role: compute, rack: r1 }
YAML
	run nf lint --inventory racks.yaml
	status_is 3
	[[ "$output" == *"racks.yaml:3:"*"192.168.1.2"* ]]
}
