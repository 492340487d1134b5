#!/usr/bin/env bats
# 'nodeforge ci ROLE --boot' on the small test role: build (cached), the
# static stage, then the real boot stage: the embedded server, iPXE in
# QEMU, the node enrolls the run's throwaway munge key, its own verifier
# reports, and every check becomes a JUnit case.  The VM cannot reach the
# site's time server, so time.sync must be skipped by environment (not
# passed), while munge (enrolled for real) must pass.
# Slow: a systemd boot under software emulation (about a minute).
# Needs: mmdebstrap, qemu-system-x86, ipxe-qemu.
load ../bats/helper
load images

setup_file() {
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86 not installed"
	[ -f /usr/lib/ipxe/qemu/pxe-virtio.rom ] || skip "ipxe-qemu not installed"
	command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	export PROFS=$NF_SRCDIR/tests/fixtures/profiles/e2e
}

# CLASS NAME verdict[: message] of one case (a check id is in both the
# static and the boot stage: the class tells them apart)
junit_case() {
	python3 - "$1" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
t = ET.parse(sys.argv[1]).getroot()
cls, name = sys.argv[2].split(" ", 1)
for c in t.iter("testcase"):
    if c.get("name") == name and c.get("classname") == cls:
        kind = "pass"
        for k in ("failure", "error", "skipped"):
            e = c.find(k)
            if e is not None:
                kind = k + ": " + (e.get("message") or "")
        print(c.get("classname"), kind)
        break
else:
    print("missing")
PY
}

@test "ci --boot: the image PXE-boots in QEMU, enrolls, and its own verdict becomes JUnit cases" {
	mkdir t
	TMPDIR=$SCRATCH/t run nf -C "$PROFS" ci mini --boot --cache "$E2E" --out out \
		--overlays "$NF_SRCDIR/overlays" --junit ci.xml
	echo "$output" | tail -25 >&3
	status_is 0
	[ -s ci.xml ]
	[ "$(junit_case ci.xml "ci.stage stage.build")" = "ci.stage pass" ]
	[ "$(junit_case ci.xml "ci.stage stage.static")" = "ci.stage pass" ]
	[ "$(junit_case ci.xml "ci.stage stage.boot")" = "ci.stage pass" ]
	# the node's checks, from the node
	[ "$(junit_case ci.xml "boot.munge munge.key.present")" = "boot.munge pass" ]
	[ "$(junit_case ci.xml "boot.munge munge.roundtrip")" = "boot.munge pass" ]
	[ "$(junit_case ci.xml "boot.kernel kernel.cmdline.running")" = "boot.kernel pass" ]
	[[ "$(junit_case ci.xml "boot.time time.sync")" == "boot.time skipped: skipped by environment: the site's time servers are not reachable"* ]]
	# the throwaway key is gone, and never was in the image or the tree
	[ -z "$(ls -A t)" ]
	! zstd -dc out/mini/*.rootfs.tar.zst | tar -t | grep -q 'munge.key$'
}

@test "ci --boot: bad options are usage errors" {
	run nf -C "$PROFS" ci mini --boot --accel xen
	status_is 2
	[[ "$output" == *"--accel 'xen'"* ]]
	run nf -C "$PROFS" ci mini --boot --boot-timeout 0
	status_is 2
	run nf -C "$PROFS" ci mini --boot --vm-memory lots
	status_is 2
}

# Issue part 6: the GPU role of the embedded default, with the fabric
# manager the site supplies (here a STAND-IN deb named and versioned as
# NVIDIA's, tests/fixtures/fabricmanager), booted by ci in a VM that has
# no GPU: every check that needs what the VM lacks (GPU, NVSwitch,
# InfiniBand, NVMe, the hugepage pool, the time servers, the cluster) is
# skipped by environment, and nothing fails.  The compute image is
# t2950's and the cluster test's (tests/e2e/images.bash): current, not
# built again.
@test "ci compute --boot (GPU role, STAND-IN fabric manager deb): gpu.* and the other checks the VM cannot pass are skipped by environment, none fails" {
	command -v ssh-keygen >/dev/null || skip "ssh-keygen not installed"
	img_setup "$SCRATCH/site"
	mkdir t
	rc=0
	TMPDIR=$SCRATCH/t nf -C "$NF_SRCDIR/profiles" -s site/site.yaml ci compute --boot \
		--cache "$E2E" --out "$IMG_OUT" --overlays "$IMG_OVL" \
		--artifact-mirror "$SCRATCH/site/mirror" --json > ci.json 2> ci.err || rc=$?
	tail -n 5 ci.err >&3
	jq -r '.cases[] | select(.class | startswith("boot.")) | select(.verdict != "pass") |
		select((.message // "") | startswith("skipped by environment")) |
		"# \(.id): \((.message // "") | .[0:150])"' ci.json >&3
	[ "$rc" = 0 ]
	[ "$(jq '[.cases[] | select(.verdict != "pass" and .verdict != "skip")] | length' ci.json)" = 0 ]
	v() { jq -r --arg c "$1" --arg i "$2" '.cases[] | select(.class == $c and .id == $i) | "\(.verdict) \(.message // "")"' ci.json; }
	[[ "$(v boot.gpu gpu.driver)" == "skip skipped by environment: no NVIDIA GPU in the CI VM (the node saw: NVML is installed; the driver is not loaded"* ]]
	[[ "$(v boot.fabric_manager fabric_manager.active)" == "skip skipped by environment: no NVSwitch"* ]]
	[ "$(v ci.stage stage.boot)" = "pass " ]
	# the container checks ran on the node and passed
	[ "$(jq '[.cases[] | select(.class == "boot.containers" and .verdict == "pass")] | length' ci.json)" -ge 3 ]
	[ "$(jq '[.cases[] | select(.class == "boot.containers" and .verdict != "pass")] | length' ci.json)" = 0 ]
	# every check skipped by environment needs what the VM lacks
	jq -r '.cases[] | select((.message // "") | startswith("skipped by environment")) | .id' ci.json |
		grep -Ev '^(gpu|slurm\.gres|fabric_manager|ib|memory\.hugepages|kernel\.isolcpus|storage\.enroot_cache|time|slurm\.cluster|munge\.key\.fingerprint)\b' && return 1
	true
}
