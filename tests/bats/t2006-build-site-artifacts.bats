#!/usr/bin/env bats
# Artifacts the site supplies (supplier: site): the GPU role's fabric
# manager, which only NVIDIA's repository has.  The profile names the
# package and version; the site file pins the file's sha256.  Without the
# pin the build stops before anything is fetched; a role without NVSwitch
# needs none.  (The file's install into a real image: tests/e2e/t2950.)
load helper

setup() {
	nf_setup
	cp -r "$NF_SRCDIR/profiles" prof
}

teardown() { nf_teardown; }

@test "build compute without the site's fabric manager pin stops before anything is fetched, naming the package, its version, the file and how to pin it" {
	run nf -C prof build compute --cache "$SCRATCH/cache" --out out --self-package host
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"role 'compute' needs nvidia-fabricmanager-550 550.163.01-1 (artifact 'nvidia-fabricmanager'), which the site supplies"* ]]
	[[ "$output" == *"download nvidia-fabricmanager-550_550.163.01-1_amd64.deb"* ]]
	[[ "$output" == *"artifacts: [{name: nvidia-fabricmanager, sha256: <sha256sum of the file>}]"* ]]
	[[ "$output" == *"'gpu.nvswitch: false'"* ]]
	[ ! -e "$SCRATCH/cache/bootstrap" ]
	[ ! -e out/compute ]
}

# the fabric manager's version is the driver's: the pin moves with it
@test "the fabric manager the GPU role asks the site for is the driver's version" {
	run nf -C prof profile show compute --json
	status_is 0
	drv=$(jq -r '.system.artifacts[] | select(.name == "nvidia-open-kernel") | .version' <<<"$output")
	fm=$(jq -r '.system.artifacts[] | select(.name == "nvidia-fabricmanager") | .version' <<<"$output")
	[ -n "$drv" ]
	[ "${fm%-*}" = "$drv" ]
	[ "$(jq -r '.system.artifacts[] | select(.name == "nvidia-fabricmanager") | .package' <<<"$output")" = "nvidia-fabricmanager-${drv%%.*}" ]
}

@test "a GPU role without NVSwitch (gpu.nvswitch: false) needs no fabric manager: the build gets past the site's pins" {
	cat > prof/compute-pcie.yaml <<-'EOR'
	description: PCIe GPU node, no NVSwitch
	inherits: [compute]
	gpu:
	  count: 8
	  type: h100
	  nvswitch: false
	EOR
	run nf -C prof lint compute-pcie
	echo "$output"
	status_is 0
	# the stand-in bootstrap (no packages): the build gets as far as the
	# driver's source, which only the real image's packages bring
	NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap run nf -C prof build compute-pcie \
		--cache "$SCRATCH/cache" --out out --self-package host
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" != *"which the site supplies"* ]]
	[[ "$output" == *"artifact 'nvidia-open-kernel': '/usr/src/nvidia-open-kernel.tar.xz' is not in the image"* ]]
}

@test "the site's pin of a supplied artifact is the file's sha256: a bad one is refused at its file:line:col, so is a name pinned twice" {
	cp prof/site.yaml site.yaml
	printf 'artifacts:\n  - name: nvidia-fabricmanager\n    sha256: abc\n  - name: nvidia-fabricmanager\n    sha256: %s\n' \
		"$(printf x | sha256sum | cut -c1-64)" >> site.yaml
	line=$(grep -n 'sha256: abc' site.yaml | cut -d: -f1)
	run nf -C prof -s site.yaml profile show compute
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"site.yaml:$line:5: error: sha256 'abc' is not 64 lowercase hex digits"* ]]
	[[ "$output" == *"artifact 'nvidia-fabricmanager' is pinned twice"* ]]
}

@test "a profile cannot pin a site-supplied artifact itself, nor leave an artifact unpinned" {
	cat > prof/bad.yaml <<-'EOR'
	description: bad artifacts
	inherits: [base]
	system:
	  artifacts:
	    - name: fm
	      kind: deb
	      supplier: site
	      package: fm
	      version: "1"
	      url: https://example.invalid/fm_1_amd64.deb
	      sha256: 0000000000000000000000000000000000000000000000000000000000000000
	    - name: other
	      kind: tarball
	      url: https://example.invalid/other.tar.gz
	EOR
	run nf -C prof lint bad
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"artifact 'fm' is supplied by the site: its sha256 is the site file's"* ]]
	[[ "$output" == *"artifact 'other' has no sha256"* ]]
}
