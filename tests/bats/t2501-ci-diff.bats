#!/usr/bin/env bats
# nodeforge ci --baseline: what changed since the last released image.
load helper

setup() {
	nf_setup
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	mkdir -p ov
	stub_profiles prof
}

ci() { nf -C prof ci compute --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" "$@"; }

current() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' out/compute/compute.current "$1"; }

# release the current image: its manifest and rootfs, side by side
release() {
	mkdir -p rel
	cp "out/compute/$(current manifest)" "out/compute/$(current rootfs)" rel/
	echo "rel/$(current manifest)"
}

@test "ci --baseline: two builds differing by one package show exactly that package" {
	ci -q --junit j0.xml || true
	base=$(release)
	sed -i 's/install: \[slurmd, /install: [slurmd, htop, /' prof/compute.yaml
	run ci --baseline "$base" --junit j.xml --json
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)["diff"]
p = d["packages"]
assert p["added"] == {"htop": "1.0-stub"}, p
assert p["removed"] == {} and p["changed"] == {}, p
assert d["kernel_args"] == {"added": [], "removed": []}, d["kernel_args"]
paths = [c["path"] for c in d["config"]]
assert "etc/stub-packages" in paths, paths
'
	python3 - j.xml <<'PY'
import sys, xml.etree.ElementTree as ET
c = {x.get("name"): x for x in ET.parse(sys.argv[1]).getroot().iter("testcase")}
assert c["stage.diff"].find("failure") is None and c["stage.diff"].find("error") is None
assert "1 added, 0 removed, 0 changed" in c["diff.packages"].find("system-out").text
PY
	run ci --baseline "$base" -q
	[[ "$output" != *"package"* ]]
	run ci --baseline "$base"
	[[ "$output" == *"package + htop 1.0-stub"* ]]
	[ "$(grep -c 'package [-+~]' <<<"$output")" -eq 1 ]
}

@test "ci --baseline: kernel arguments changed are listed" {
	ci -q || true
	base=$(release)
	sed -i 's/^  args:$/  args:\n    - nodeforge.test=1/' prof/compute.yaml
	run ci --baseline "$base"
	[[ "$output" == *"kernel arg + nodeforge.test=1"* ]]
	[[ "$output" != *"package +"* ]]
}

@test "ci --baseline: an unreadable baseline is a runtime failure, reported" {
	run ci --baseline nosuch.manifest.json --junit j.xml
	status_is 1
	[[ "$output" == *"nosuch.manifest.json"* ]]
	grep -q 'name="stage.diff"' j.xml
	grep -A1 'name="stage.diff"' j.xml | grep -q '<error'
}
