#!/usr/bin/env bats
# A real network boot: QEMU's iPXE fetches ipxe/boot.ipxe from
# 'nodeforge serve', chains to the per-MAC script rendered by
# 'nodeforge pxe', boots a kernel and a busybox initramfs built here, and
# the guest POSTs a verdict that 'nodeforge status' then shows.
# Needs: qemu-system-x86, ipxe-qemu, busybox-static, linux-image-cloud-amd64.
load ../bats/helper

MAC=52:54:00:12:34:56

setup() {
	nf_setup
	QEMU=$(command -v qemu-system-x86_64) || skip "qemu-system-x86 not installed"
	ROM=/usr/lib/ipxe/qemu/pxe-virtio.rom
	[ -f "$ROM" ] || skip "ipxe-qemu not installed"
	BUSYBOX=/bin/busybox
	[ -x "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1 ||
		skip "busybox-static not installed"
	KERNEL=$(ls /boot/vmlinuz-*-cloud-amd64 2>/dev/null | sort -V | tail -1)
	[ -n "$KERNEL" ] || skip "linux-image-cloud-amd64 not installed"
	KVER=${KERNEL#/boot/vmlinuz-}
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

# A busybox initramfs whose /init brings up the virtio NIC, "verifies" the
# node (NVIDIA GPUs on PCI), POSTs the verdict and powers off
build_initramfs() {
	local r=initramfs.d m
	mkdir -p $r/bin $r/proc $r/sys $r/dev $r/lib/modules
	cp "$BUSYBOX" $r/bin/busybox
	for m in virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev \
		virtio_pci failover net_failover virtio_net; do
		f=$(find "/lib/modules/$KVER" -name "$m.ko*" | head -1)
		[ -n "$f" ] || continue
		case $f in
		*.xz) xz -dc "$f" > $r/lib/modules/$m.ko ;;
		*.zst) zstd -qdc "$f" > $r/lib/modules/$m.ko ;;
		*) cp "$f" $r/lib/modules/$m.ko ;;
		esac
	done
	cat > $r/init <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# dependencies first; a second pass catches any order this list got wrong
for _ in 1 2; do
	for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev \
		virtio_pci failover net_failover virtio_net; do
		[ -f /lib/modules/$m.ko ] && ! grep -q "^$m " /proc/modules &&
			insmod /lib/modules/$m.ko 2>/dev/null
	done
done
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -e /sys/class/net/eth0 ] && break; sleep 0.5; done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
arg() { for w in $(cat /proc/cmdline); do case $w in "$1"=*) echo "${w#*=}" ;; esac; done; }
S=$(arg nodeforge.server)
N=$(arg nodeforge.node)
n=0
for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor)" = 0x10de ] && n=$((n + 1))
done
if [ "$n" -ge 1 ]; then
	body="{\"node\":\"$N\",\"result\":\"pass\"}"
else
	body="{\"node\":\"$N\",\"result\":\"fail\",\"root_causes\":[{\"id\":\"gpu.count\",\"message\":\"expected NVIDIA GPUs, seen $n\"}]}"
fi
echo "nodeforge-e2e: verdict for $N to $S"
wget -q -O - --header 'Content-Type: application/json' --post-data "$body" "$S/api/v1/nodes/$N/verdict"
echo
echo "nodeforge-e2e: done"
poweroff -f
INIT
	chmod 755 $r/init
	(cd $r && find . | sort | cpio -o -H newc --quiet | gzip -9n) > initramfs.cpio.gz
}

@test "QEMU boots over iPXE from nodeforge serve and reports a failed GPU check" {
	build_initramfs
	mkdir -p tree out/compute
	nf_serve_bg --tree tree --state state

	# the image, content-addressed as a build would publish it
	kh=$(sha256sum "$KERNEL" | cut -c1-12)
	ih=$(sha256sum initramfs.cpio.gz | cut -c1-12)
	cp "$KERNEL" "out/compute/compute-$kh.vmlinuz"
	cp initramfs.cpio.gz "out/compute/compute-$ih.initramfs.cpio.gz"
	cp initramfs.cpio.gz "out/compute/compute-$ih.rootfs.tar.zst"
	printf '{"kernel":"compute-%s.vmlinuz","initramfs":"compute-%s.initramfs.cpio.gz","rootfs":"compute-%s.rootfs.tar.zst","rootfs_sha256":"%s"}\n' \
		"$kh" "$ih" "$ih" "$(sha256sum initramfs.cpio.gz | cut -c1-64)" > out/compute/compute.current
	printf 'nodes:\n  - name: e2e-01\n    mac: %s\n    ip: 10.0.2.15\n    role: compute\n    rack: qemu\n' "$MAC" > racks.yaml
	run nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree --images out \
		-u "http://10.0.2.2:$PORT" --network 10.0.2.0/24 \
		--kernel-args "compute=console=ttyS0 panic=-1 loglevel=4"
	status_is 0

	# TCG, as CI has it; NF_E2E_KVM=1 to use /dev/kvm where it works
	accel=tcg
	[ -n "${NF_E2E_KVM:-}" ] && [ -w /dev/kvm ] && accel=kvm
	start=$(date +%s)
	run timeout 180 "$QEMU" -machine q35,accel=$accel -m 512 -nographic -no-reboot \
		-netdev "user,id=n0,bootfile=http://10.0.2.2:$PORT/ipxe/boot.ipxe" \
		-device "virtio-net-pci,netdev=n0,mac=$MAC,disable-legacy=on,romfile=$ROM" \
		-boot n
	echo "QEMU ($accel) finished in $(( $(date +%s) - start )) s" >&3
	[[ "$output" == *"nodeforge-e2e: done"* ]] || { echo "$output" | tail -40; false; }

	grep -q '"GET /ipxe/boot.ipxe" 200' serve.log
	grep -q '"GET /ipxe/mac/52-54-00-12-34-56.ipxe" 200' serve.log
	grep -q "\"GET /images/compute/compute-$kh.vmlinuz\" 200" serve.log
	grep -q '"POST /api/v1/nodes/e2e-01/verdict" 200' serve.log
	run curl -sf "$U/api/v1/nodes/e2e-01"
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["state"] == "failed", d
assert d["image"] == "compute@'"$kh"'", d
assert d["root_cause"] == "gpu.count: expected NVIDIA GPUs, seen 0", d'
	run nf status --server "$U"
	status_is 3
	[[ "$output" =~ e2e-01\ +failed\ +[^\ ]+\ +compute@$kh\ .*gpu\.count ]]
}
