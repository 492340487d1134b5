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
load ../bats/helper

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

teardown() {
	[ -n "${QEMU_PID:-}" ] && kill "$QEMU_PID" 2>/dev/null && wait "$QEMU_PID" 2>/dev/null
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	[ -n "${SOCKDIR:-}" ] && rm -rf "$SOCKDIR"
	nf_teardown
}

cur() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$OUT/mini/mini.current" "$1"; }

@test "QEMU boots the built image over iPXE; its own verifier reports the node failed and slurmd stays down" {
	mkdir -p tree
	nf_serve_bg --tree tree --state state

	printf 'nodes:\n  - name: e2e-02\n    mac: %s\n    ip: 10.0.2.15\n    role: mini\n    rack: qemu\n' "$MAC" > racks.yaml
	# the profile's arguments, plus a root shell on the VM's second serial
	# port for this test to ask systemd what ran (never in a real tree)
	args=$(nf -C "$PROFS" profile show mini --args)
	run nf -C "$PROFS" pxe -i racks.yaml -o tree --images "$OUT" \
		-u "http://10.0.2.2:$PORT" --network 10.0.2.0/24 \
		--kernel-args "mini=$args systemd.debug_shell=ttyS1"
	status_is 0
	# the profile's own kernel arguments reach the node
	grep -q 'cgroup.memory=nokmem console=tty0 console=ttyS0,115200n8' tree/ipxe/mac/52-54-00-12-34-57.ipxe

	SOCKDIR=$(mktemp -d /tmp/nf-vm.XXXXXX)   # a socket path is short
	# TCG, as CI has it; NF_E2E_KVM=1 to use /dev/kvm where it works
	accel=tcg
	[ -n "${NF_E2E_KVM:-}" ] && [ -w /dev/kvm ] && accel=kvm
	start=$(date +%s)
	qemu-system-x86_64 -machine q35,accel=$accel -m 2048 -display none -no-reboot \
		-netdev "user,id=n0,bootfile=http://10.0.2.2:$PORT/ipxe/boot.ipxe" \
		-device "virtio-net-pci,netdev=n0,mac=$MAC,disable-legacy=on,romfile=/usr/lib/ipxe/qemu/pxe-virtio.rom" \
		-boot n -serial file:console.log \
		-serial "unix:$SOCKDIR/ttyS1,server=on,wait=off" 3>&- &
	QEMU_PID=$!

	# the node's verdict arrives when its verifier has run
	state=
	for _ in $(seq 600); do
		state=$(curl -sf "$U/api/v1/nodes/e2e-02" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null) || true
		case $state in verified|failed) break ;; esac
		kill -0 "$QEMU_PID" 2>/dev/null || break
		sleep 1
	done
	echo "verdict after $(( $(date +%s) - start )) s ($accel): ${state:-none}" >&3
	[ "$state" = failed ] || { tr -d '\r' < console.log | tail -60; false; }

	# it booted this build's kernel and initramfs, from this tree
	grep -q '"GET /ipxe/mac/52-54-00-12-34-57.ipxe" 200' serve.log
	grep -q "\"GET /images/mini/$(cur kernel)\" 200" serve.log
	grep -q "\"GET /images/mini/$(cur initramfs)\" 200" serve.log
	grep -q '"POST /api/v1/nodes/e2e-02/verdict" 200' serve.log

	# the verdict is the image's verifier's, with the node's own findings
	run curl -sf "$U/api/v1/nodes/e2e-02"
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(json.dumps(d, indent=1)[:3000], file=sys.stderr)
assert d["state"] == "failed", d
assert d["image"] == "'"$(cur kernel)"'", d
assert d["root_cause"].startswith("time.sync: "), d["root_cause"]
checks = {c["id"]: c["verdict"] for c in d["verdict"]["checks"]}
assert checks["munge.key.present"] == "fail", checks
assert checks["slurm.conf.present"] == "pass", checks
assert checks["kernel.cmdline.running"] == "pass", checks
'
	run nf status --server "$U"
	status_is 0
	[[ "$output" =~ e2e-02\ +failed\ +$(cur kernel).*time\.sync ]]

	# the gate held: ask the node's systemd
	run python3 - "$SOCKDIR/ttyS1" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(2)
s.sendall(b"\nsystemctl is-active nodeforge-verify slurmd | tr '\\n' ' '; echo :E''ND\n")
buf, t = b"", time.time()
while time.time() - t < 60 and b":END\r\n" not in buf and b":END\n" not in buf:
    try:
        buf += s.recv(4096)
    except socket.timeout:
        pass
print(buf.decode(errors="replace"))
PY
	echo "$output" | tail -3 >&3
	[[ "$output" == *"failed inactive :END"* ]]
}
