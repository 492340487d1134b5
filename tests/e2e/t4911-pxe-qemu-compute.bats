#!/usr/bin/env bats
# The real compute image of the embedded default (profiles/, Debian 12),
# network-booted in QEMU as a rack node would be.  A VM has no GPU, so the
# GPU role must fail on the GPU checks and slurmd must not start.
# Slow (a bootstrap from Debian's mirror unless cached in $NF_E2E_CACHE,
# and a systemd boot under software emulation): NF_E2E_SKIP_COMPUTE=1
# skips it.
# Needs: mmdebstrap, qemu-system-x86, ipxe-qemu.
load boot_helper

MAC=52:54:00:12:34:58

setup_file() {
	[ -z "${NF_E2E_SKIP_COMPUTE:-}" ] || skip "NF_E2E_SKIP_COMPUTE is set"
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86 not installed"
	[ -f /usr/lib/ipxe/qemu/pxe-virtio.rom ] || skip "ipxe-qemu not installed"
	command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	export OUT=$BATS_FILE_TMPDIR/out
	"$NF_BIN" -C "$NF_SRCDIR/profiles" build compute --cache "$E2E" --out "$OUT" >&3 2>&1
}

setup() { nf_setup; }
teardown() { boot_teardown; }

@test "QEMU boots the real compute image over iPXE: the GPU checks fail on a node without GPUs and slurmd stays down" {
	boot_node "$NF_SRCDIR/profiles" compute gpu-e2e "$MAC" "$OUT"
	[ "$STATE" = failed ]
	run curl -sf "$U/api/v1/nodes/gpu-e2e"
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
checks = {c["id"]: c for c in d["verdict"]["checks"]}
print("root cause:", d["root_cause"], file=sys.stderr)
print("failed:", sorted(i for i, c in checks.items() if c["verdict"] == "fail"), file=sys.stderr)
assert d["state"] == "failed", d
assert d["image"].startswith("compute-"), d
# no NVIDIA driver in a VM: the GPU facet fails, its other checks wait on it
assert checks["gpu.driver"]["verdict"] == "fail", checks["gpu.driver"]
assert all(c["verdict"] != "pass" for i, c in checks.items() if i.startswith("gpu.")), checks
# what the image itself brings is in place on the node
assert checks["slurm.conf.present"]["verdict"] == "pass", checks["slurm.conf.present"]
assert checks["kernel.cmdline.running"]["verdict"] == "pass", checks["kernel.cmdline.running"]
' 2>&3
	run node_sh "systemctl is-active slurmd | tr '\\n' ' '"
	echo "$output" | tail -2 >&3
	[[ "$output" == *"inactive :END"* ]]
}
