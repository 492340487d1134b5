# Shared by the e2e tests that network-boot a built image in QEMU, exactly
# as a rack node boots: `nodeforge pxe` for one node, `nodeforge serve`,
# QEMU's iPXE ROM on a virtio NIC, the whole image as initramfs.
load ../bats/helper

boot_teardown() {
	[ -n "${QEMU_PID:-}" ] && kill "$QEMU_PID" 2>/dev/null && wait "$QEMU_PID" 2>/dev/null
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	[ -n "${SOCKDIR:-}" ] && rm -rf "$SOCKDIR"
	nf_teardown
}

# boot_node PROFILES ROLE NODE MAC IMAGES: render the tree, serve it, boot
# the VM and wait for the node's verdict; sets U (the server), STATE
# (verified, failed or what the server last said) and QEMU_PID.  The
# profile's kernel arguments get a root shell on the VM's second serial
# port, for node_sh (a test's window into the node; never in a real tree)
boot_node() {
	local profs=$1 role=$2 node=$3 mac=$4 images=$5 args accel start
	mkdir -p tree
	nf_serve_bg --tree tree --state state
	printf 'nodes:\n  - name: %s\n    mac: %s\n    ip: 10.0.2.15\n    role: %s\n    rack: qemu\n' \
		"$node" "$mac" "$role" > racks.yaml
	args=$(nf -C "$profs" profile show "$role" --args)
	nf -C "$profs" pxe -i racks.yaml -o tree --images "$images" \
		-u "http://10.0.2.2:$PORT" --network 10.0.2.0/24 \
		--kernel-args "$role=$args systemd.debug_shell=ttyS1" >/dev/null
	SOCKDIR=$(mktemp -d /tmp/nf-vm.XXXXXX)   # a socket path is short
	# TCG, as CI has it; NF_E2E_KVM=1 to use /dev/kvm where it works
	accel=tcg
	[ -n "${NF_E2E_KVM:-}" ] && [ -w /dev/kvm ] && accel=kvm
	start=$(date +%s)
	qemu-system-x86_64 -machine q35,accel=$accel -m "${NF_E2E_VM_MB:-2048}" \
		-display none -no-reboot \
		-netdev "user,id=n0,bootfile=http://10.0.2.2:$PORT/ipxe/boot.ipxe" \
		-device "virtio-net-pci,netdev=n0,mac=$mac,disable-legacy=on,romfile=/usr/lib/ipxe/qemu/pxe-virtio.rom" \
		-boot n -serial file:console.log \
		-serial "unix:$SOCKDIR/ttyS1,server=on,wait=off" 3>&- &
	QEMU_PID=$!
	STATE=
	for _ in $(seq 600); do
		STATE=$(curl -sf "$U/api/v1/nodes/$node" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null) || true
		case $STATE in verified|failed) break ;; esac
		kill -0 "$QEMU_PID" 2>/dev/null || break
		sleep 1
	done
	echo "$node: verdict after $(( $(date +%s) - start )) s ($accel): ${STATE:-none}" >&3
	[ "$STATE" = verified ] || [ "$STATE" = failed ] ||
		{ tr -d '\r' < console.log | tail -60; return 1; }
}

# node_sh 'COMMAND': run it in the booted node's root shell, print its
# output (the node's own view of itself)
node_sh() {
	python3 - "$SOCKDIR/ttyS1" "$1" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(2)
s.sendall(b"\n" + sys.argv[2].encode() + b"; echo :E''ND\n")
buf, t = b"", time.time()
while time.time() - t < 60 and b":END\r\n" not in buf and b":END\n" not in buf:
    try:
        buf += s.recv(4096)
    except socket.timeout:
        pass
print(buf.decode(errors="replace"))
PY
}
