#!/usr/bin/env bats
# The real thing, end to end: 'nodeforge build' makes the small test role
# (tests/fixtures/profiles/e2e/mini.yaml: Debian 12, systemd, munge,
# chrony, sshd, slurmd), 'nodeforge pxe' renders the boot tree for a node
# whose MAC is the VM's, 'nodeforge serve' serves it, and QEMU's iPXE
# boots the image diskless: the kernel and the whole root as initramfs,
# systemd as init.  On the node, nodeforge-verify.service runs the image's
# own verifier, which POSTs its verdict to the server named on the kernel
# command line.  The VM cannot reach the site's time server and has no
# munge key (nothing was enrolled), so the node must fail verification
# (root cause: time.sync, the first failed check; munge.key.present among
# the failures) and slurmd must not start.
# Slow: the build (minutes the first time, cached in $NF_E2E_CACHE) and a
# systemd boot under software emulation (about a minute).
# Needs: mmdebstrap, qemu-system-x86, ipxe-qemu.
load boot_helper

MAC=52:54:00:12:34:57

setup_file() {
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86 not installed"
	[ -f /usr/lib/ipxe/qemu/pxe-virtio.rom ] || skip "ipxe-qemu not installed"
	command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	export PROFS=$NF_SRCDIR/tests/fixtures/profiles/e2e
	export OUT=$BATS_FILE_TMPDIR/out
	"$NF_BIN" -C "$PROFS" build mini --cache "$E2E" --out "$OUT" >&3 2>&1
}

setup() {
	nf_setup
	command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86 not installed"
}

teardown() { boot_teardown; }

cur() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$OUT/mini/mini.current" "$1"; }

@test "QEMU boots the built image over iPXE; its own verifier reports the node failed and slurmd stays down" {
	boot_node "$PROFS" mini e2e-02 "$MAC" "$OUT"
	[ "$STATE" = failed ]
	# the profile's own kernel arguments reached the node
	grep -q 'cgroup.memory=nokmem console=tty0 console=ttyS0,115200n8' tree/ipxe/mac/52-54-00-12-34-57.ipxe

	# it booted this build's kernel and initramfs, from this tree
	grep -q '"GET /ipxe/mac/52-54-00-12-34-57.ipxe" 200' serve.log
	grep -q "\"GET /images/mini/$(cur kernel)\" 200" serve.log
	grep -q "\"GET /images/mini/$(cur initramfs)\" 200" serve.log
	grep -q '"POST /api/v1/nodes/e2e-02/verdict" 200' serve.log

	# the verdict is the image's verifier's, with the node's own findings;
	# the server names the image as image list and reimage --image do
	img=mini@$(cur kernel | sed 's/^mini-//; s/\.vmlinuz$//')
	run curl -sf "$U/api/v1/nodes/e2e-02"
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(json.dumps(d, indent=1)[:3000], file=sys.stderr)
assert d["state"] == "failed", d
assert d["image"] == "'"$img"'", d
assert d["root_cause"].startswith("time.sync: "), d["root_cause"]
checks = {c["id"]: c["verdict"] for c in d["verdict"]["checks"]}
assert checks["munge.key.present"] == "fail", checks
assert checks["slurm.conf.present"] == "pass", checks
assert checks["kernel.cmdline.running"] == "pass", checks
'
	run nf status --server "$U"
	status_is 3
	[[ "$output" =~ e2e-02\ +failed\ +[^\ ]+\ +$img\ .*time\.sync ]]

	# the gate held: ask the node's systemd
	run node_sh "systemctl is-active nodeforge-verify slurmd | tr '\\n' ' '"
	echo "$output" | tail -2 >&3
	[[ "$output" == *"failed inactive :END"* ]]
}
