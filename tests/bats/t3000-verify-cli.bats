#!/usr/bin/env bats
# nodeforge verify: options, exit codes, output formats
load verify_helper

@test "verify: the passing compute fixture exits 0" {
	vfx pass
	vrun
	status_is 0
	[[ "$output" == *"compute: PASS"* ]]
}

@test "verify: default profile is SYSROOT/etc/nodeforge/profile.json, --profile overrides" {
	vfx pass
	vrun --profile "$SCRATCH/nope.json"
	status_is 1
	[[ "$output" == *"nope.json"* ]]
	cp "$SYS/etc/nodeforge/profile.json" "$SCRATCH/p.json"
	vrun --profile "$SCRATCH/p.json" -q
	status_is 0
}

@test "verify: --role resolves from the profiles (no site fingerprint: skipped, not failed)" {
	vfx pass
	vrun --role compute --json
	status_is 0
	[[ "$(verdict_of munge.key.fingerprint)" == "skip the site records no munge_key fingerprint" ]]
}

@test "verify: --role and --profile together is a usage error" {
	vfx pass
	vrun --role compute --profile x.json
	status_is 2
}

@test "verify: bad --budget is a usage error naming the value" {
	run nf verify --budget nope
	status_is 2
	[[ "$output" == *"bad --budget 'nope'"* ]]
}

@test "verify: a failure exits 3 and leads with the root cause and its remedy" {
	vfx fail-cgroup
	vrun
	status_is 3
	[[ "${lines[0]}" == "FAIL cgroup.v2: "* ]]
	[[ "$output" == *"-> add systemd.unified_cgroup_hierarchy=1"* ]]
	# what it skips is folded under it; -v names each
	[[ "$output" == *"also: 2 skipped"* ]]
	vrun -v
	[[ "$output" == *"SKIP cgroup.controllers.enabled: because cgroup.v2 failed"* ]]
}

@test "verify: --json carries verdict, counts, root causes and every check" {
	vfx fail-ib
	vrun --json
	status_is 3
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["result"] == "fail" and d["node"] == "gpu-001", d
assert [r["id"] for r in d["root_causes"]] == ["ib.port.state"], d["root_causes"]
assert "mlx5_2/1: 1: DOWN" in d["root_causes"][0]["message"]
assert d["counts"]["fail"] == 1
c = d["checks"][0]
assert c["id"] == "ib.port.state" and "mlx5_2/1: 1: DOWN" in c["seen"], c
assert c["remedy"] and c["expected"]
skipped = [x for x in d["checks"] if x.get("cause") == "ib.port.state"]
assert [x["id"] for x in skipped] == ["ib.port.rate"], skipped
'
}

@test "verify: --junit writes JUnit XML with failures and skips" {
	vfx fail-pam
	vrun --junit "$SCRATCH/j.xml" -q
	status_is 3
	python3 - "$SCRATCH/j.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
s = ET.parse(sys.argv[1]).getroot()
assert s.tag == "testsuite" and s.get("failures") == "1", s.attrib
f = [t for t in s if t.find("failure") is not None]
assert f[0].get("name") == "pam.sshd.usepam", f[0].attrib
assert "UsePAM yes" in f[0].find("failure").text
PY
}

@test "verify: --only runs one facet" {
	vfx fail-gpu
	vrun --only ib --json
	status_is 0
	[[ "$(verdict_of gpu.ecc)" == "skip not selected" ]]
}

@test "verify: --only with a list runs the checks of each facet or id prefix it names, and what they need" {
	vfx fail-gpu
	vrun --only ib,gpu.ecc --json
	status_is 3
	# gpu.ecc reads the GPUs gpu.driver found: it runs too
	[ "$(verdict_of gpu.ecc)" = "fail ECC off now but on after a reset: GPUs 5" ]
	[[ "$(verdict_of gpu.driver)" == pass* ]]
	[[ "$(verdict_of gpu.remap)" == "skip not selected" ]]
	[[ "$(verdict_of munge.key.mode)" == "skip not selected" ]]
	[ "$(echo "$output" | jq '[.checks[] | select(.id | startswith("ib.")) | select(.reason != "not selected")] | length')" -gt 0 ]
}

@test "verify: static mode (--root alone) runs only the offline checks" {
	vfx pass
	run nf verify --root "$SYS" --json
	status_is 0
	[[ "$(verdict_of slurm.conf.values)" == pass* ]]
	[[ "$(verdict_of gpu.driver)" == "skip static mode" ]]
	[[ "$(verdict_of munge.key.mode)" == "skip static mode" ]]
}

@test "verify: static mode finds a bad image" {
	vfx fail-limits
	run nf verify --root "$SYS"
	status_is 3
	[[ "$output" == *"limits.unit.nofile"*"LimitNOFILE=65536"* ]]
	[[ "$output" == *"60-local.conf"* ]]
}

@test "verify: a node file symlinked out of the root is read inside the root" {
	vfx pass
	rm "$SYS/etc/pam.d/sshd"
	echo "account required pam_slurm_adopt.so" > "$SCRATCH/outside"
	ln -s "$SCRATCH/outside" "$SYS/etc/pam.d/sshd"
	run nf verify --root "$SYS" --json --only pam
	status_is 3
	[[ "$(verdict_of pam.slurm_adopt)" == "fail no /etc/pam.d/sshd" ]]
}

@test "docs/nodeforge-verify.md's table names exactly the checks the verifier has" {
	vfx pass
	for role in controller compute login cpu; do
		nf verify --role "$role" --sysroot "$SYS" --fixture "$SYS/fixture.json" --json |
			jq -r '.checks[].id'
	done | sort -u > have
	[ "$(wc -l < have)" -ge 50 ]
	# an id with an upper-case word (limits.unit.LIMIT, sysctl.KEY) is a
	# family: one check per entry of a list or key of a mapping (a
	# sysctl's dotted name); every check must be documented and every
	# documented id or family must be a check
	python3 - "$NF_SRCDIR/docs/nodeforge-verify.md" have <<'PY'
import re, sys
text = open(sys.argv[1]).read()
table = text[text.index("## Checks"):]
table = table[:table.index("\n\n", table.index("|---"))]
doc = []
for row in table.splitlines()[2:]:
    ids = row.split("|")[2]
    for tok in re.findall(r"`([a-z_]+\.[A-Za-z0-9_.{},]+)`", ids):
        m = re.match(r"(.*)\{(.*)\}(.*)", tok)
        for part in (m.group(2).split(",") if m else [None]):
            doc.append(m.group(1) + part + m.group(3) if m else tok)
pat = {d: re.compile("".join("[a-z0-9_][a-z0-9_.-]*" if re.fullmatch(r"[A-Z]+", s)
                             else re.escape(s)
                             for s in re.split(r"([A-Z]+)", d)) + "$")
       for d in doc}
have = open(sys.argv[2]).read().split()
bad = ["undocumented: " + h for h in have
       if not any(p.match(h) for p in pat.values())]
bad += ["no such check: " + d for d, p in pat.items()
        if not any(p.match(h) for h in have)]
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

@test "verify on a machine without an image's identity says it is not a node image, with no bogus position" {
	mkdir -p root/etc
	run nf verify --root root
	status_is 1
	[[ "$output" == *"nodeforge verify: this is not a nodeforge node image: it has no 'root/etc/nodeforge/profile.json' (the identity every image is built with); check a machine against a role with --role ROLE"* ]]
	[[ "$output" != *":-1:-1:"* ]]
	run nf verify --profile nope.json
	status_is 1
	[[ "$output" == *"nodeforge verify: cannot read 'nope.json': No such file or directory"* ]]
	[[ "$output" != *":-1:-1:"* ]]
}
