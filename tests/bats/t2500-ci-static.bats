#!/usr/bin/env bats
# make test: beside the cluster
# nodeforge ci with the stand-in bootstrap tool (tests/fixtures/bin/
# mmdebstrap): build, static stage and JUnit report are real.
load helper

setup() {
	nf_setup
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	mkdir -p ov
	stub_profiles prof
}

ci() { nf -C prof ci compute --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" "$@"; }

# verdict of one test case in the JUnit file: pass, failure, error, skipped
junit_case() {
	python3 - "$1" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot()
assert t.tag == "testsuite", t.tag
for c in t.iter("testcase"):
    if c.get("name") == sys.argv[2]:
        kids = [k.tag for k in c if k.tag in ("failure", "error", "skipped")]
        print(kids[0] if kids else "pass")
        sys.exit(0)
print("absent")
PY
}

@test "ci: no role is a usage error; --help" {
	run nf ci
	status_is 2
	[[ "$output" == *"which role?"* ]]
	run nf ci compute login
	status_is 2
	run nf ci --help
	status_is 0
	[[ "${lines[0]}" == "usage: nodeforge ci "* ]]
}

@test "ci: an unknown role is a runtime failure, the JUnit file says where" {
	run nf ci nosuchrole --cache "$SCRATCH/cache" --junit j.xml
	status_is 1
	[[ "$output" == *"nosuchrole"* ]]
	[ "$(junit_case j.xml stage.build)" = error ]
	[ "$(junit_case j.xml stage.static)" = skipped ]
}

@test "ci: a limits drop-in with memlock not unlimited fails the static stage with its check id" {
	run ci --junit good.xml
	[ "$(junit_case good.xml limits.unit.memlock)" = pass ]
	[ "$(junit_case good.xml stage.build)" = pass ]
	[ "$(junit_case good.xml ci.secrets.munge_key)" = pass ]
	[ "$(junit_case good.xml ci.identity.machine_id)" = pass ]
	[ "$(junit_case good.xml ci.identity.ssh_host_keys)" = pass ]
	mkdir -p ov/compute/etc/systemd/system/slurmd.service.d
	# drop-ins apply in name order: this one comes after 50-nodeforge-limits.conf
	printf '[Service]\nLimitMEMLOCK=64M\n' > ov/compute/etc/systemd/system/slurmd.service.d/zz-local.conf
	run ci --junit bad.xml
	status_is 3
	[[ "$output" == *"fail  limits.unit.memlock"* ]]
	[[ "$output" == *"fail  stage.static"* ]]
	[ "$(junit_case bad.xml limits.unit.memlock)" = failure ]
	[ "$(junit_case bad.xml stage.static)" = failure ]
	[ "$(junit_case bad.xml stage.build)" = pass ]
	[ "$(junit_case bad.xml stage.boot)" = skipped ]
	grep -q 'zz-local.conf' bad.xml
}

@test "ci: secrets and host identity in an overlay are findings" {
	mkdir -p ov/compute/etc/slurm ov/compute/root/.ssh ov/compute/etc/ssh
	printf 'StorageHost=db\nStoragePass=hunter2\n' > ov/compute/etc/slurm/slurmdbd.conf
	printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n' > ov/compute/root/.ssh/id_ed25519
	echo PRIVATE > ov/compute/etc/ssh/ssh_host_rsa_key
	run ci --junit j.xml --json
	status_is 3
	[ "$(junit_case j.xml ci.secrets.storage_pass)" = failure ]
	[ "$(junit_case j.xml ci.secrets.private_key)" = failure ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["verdict"] == "fail", d["verdict"]
c = {x["id"]: x for x in d["cases"]}
assert c["ci.secrets.private_key"]["verdict"] == "fail"
assert "root/.ssh/id_ed25519" in c["ci.secrets.private_key"]["message"]
assert "etc/slurm/slurmdbd.conf" in c["ci.secrets.storage_pass"]["message"]
'
}

@test "ci: --boot whose VM dies before a verdict is a stage error with the console's last lines (stand-in QEMU)" {
	[ -f /usr/lib/ipxe/qemu/pxe-virtio.rom ] || skip "ipxe-qemu not installed"
	mkdir t
	TMPDIR=$SCRATCH/t NODEFORGE_QEMU=$FIXTURES/bin/qemu-exits run ci --boot --junit j.xml
	status_is 1
	[[ "$output" == *"QEMU exited (status 1) before the node reported a verdict"* ]]
	[ "$(junit_case j.xml stage.boot)" = error ]
	grep -q 'stand-in VM: no kernel here' j.xml
	# nothing left behind: no boot tree, no throwaway key
	[ -z "$(ls -A t)" ]
}

@test "ci: --boot options are checked" {
	run ci --boot --accel xen
	status_is 2
	[[ "$output" == *"--accel 'xen': tcg or kvm"* ]]
	run ci --boot --boot-timeout 0
	status_is 2
	run ci --vm-memory lots
	status_is 2
}

@test "ci: a role without slurmd skips slurmd's unit limits; compute's auto GRES waits for first boot" {
	run nf ci controller --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" --junit c.xml
	[ "$(junit_case c.xml limits.unit.nofile)" = skipped ]
	run ci --junit g.xml
	[ "$(junit_case g.xml slurm.gres.conf)" = skipped ]
	grep -q 'gres.auto.json' g.xml
}

@test "ci: the secret scan reads a tree as deep as an image holds (a munge key 40 directories down is found)" {
	d=ov/compute/etc/deep
	for i in $(seq 40); do d=$d/d$i; done
	mkdir -p "$d"
	echo key > "$d/munge.key"
	run ci --junit j.xml --json
	status_is 3
	[ "$(junit_case j.xml ci.secrets.munge_key)" = failure ]
	[[ "$output" == *"d39/d40/munge.key"* ]]
}


# root opens any mode: here the directories fail to open for want of file
# descriptors.  The deep tree comes with the image's packages (the
# stand-in bootstrap's NF_STUB_EXTRA); the image is built first with the
# usual limit, and the second run is a cache hit.
ci_few_fds() { ulimit -n "$1"; shift; ci "$@"; }

@test "ci: the secret scan fails closed: a directory it cannot open fails the secret cases, named, and the scan goes on" {
	export NF_STUB_EXTRA=$SCRATCH/extra
	d=extra/etc/deep
	for i in $(seq 120); do d=$d/d$i; done
	mkdir -p "$d" extra/etc/zz
	printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n' > extra/etc/zz/id_ed25519
	run ci --junit all.xml
	status_is 3
	[ "$(junit_case all.xml ci.secrets.munge_key)" = pass ]
	[ "$(junit_case all.xml stage.build)" = pass ]
	run ci_few_fds 64 --junit j.xml --json
	status_is 3
	[ "$(junit_case j.xml stage.build)" = pass ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = {x["id"]: x for x in d["cases"]}
# found past the directory the scan could not open
assert "etc/zz/id_ed25519" in c["ci.secrets.private_key"]["message"], c
for k in ("munge_key", "storage_pass", "private_key"):
    m = c["ci.secrets." + k]
    assert m["verdict"] == "fail", m
    assert "not scanned, unreadable: etc/deep/d1/d2/" in m["message"], m
    assert "(Too many open files)" in m["message"], m
'
}
