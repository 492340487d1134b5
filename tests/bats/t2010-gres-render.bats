#!/usr/bin/env bats
# nodeforge gres render: the first-boot GPU lines of gres.conf, on the
# passing fixture sysroot (/proc/driver/nvidia, NVML's NVLinks, the image's
# gres.auto.json) with gres.conf as the image has it before its first boot
# (apply's, tests/fixtures/apply/compute).
load verify_helper

GRES=tests/fixtures/gres

# The node before its first boot; sets SYS
gfx() {
	vfx pass
	CONF=$SYS/etc/slurm/gres.conf
	cp "$FIXTURES/apply/compute/etc/slurm/gres.conf" "$CONF"
	cp "$CONF" "$SCRATCH/gres.conf.before"
}

grender() {
	run "$NF_BIN" gres render --root "$SYS" --fixture "$SYS/fixture.json" "$@"
}

# gres.conf is still the image's: nothing was written
unchanged_conf() {
	cmp "$SCRATCH/gres.conf.before" "$CONF"
	[ ! -e "$SYS/etc/slurm/.gres.conf.nf-tmp" ]
}

# NVML's NVLinks in the fixture: jq expression for one GPU's list
nvlinks() {
	jq --argjson l "$1" '.nvml.gpus |= map(.nvlink_remote = $l)' \
		"$SYS/fixture.json" > "$SYS/fixture.new"
	mv "$SYS/fixture.new" "$SYS/fixture.json"
}

profile_set() {
	jq "$1" "$SYS/etc/nodeforge/profile.json" > "$SYS/p.new"
	mv "$SYS/p.new" "$SYS/etc/nodeforge/profile.json"
}

@test "fixture nvswitch: render writes the exact gres.conf (Cores per NUMA node, Links all-to-all)" {
	gfx
	grender
	status_is 0
	[[ "$output" == *"/etc/slurm/gres.conf: written (8 GPUs, NVLink)"* ]]
	diff -u "$NF_SRCDIR/$GRES/nvswitch.gres.conf" "$CONF"
	[ "$(stat -c %a "$CONF")" = 644 ]
}

@test "fixture nvswitch: a second render changes nothing and says so" {
	gfx
	grender
	status_is 0
	ino=$(stat -c %i "$CONF")
	grender --json
	status_is 0
	[ "$(echo "$output" | jq -r '.state + " " + (.changed|tostring) + " " + (.gpus|tostring)')" = "unchanged false 8" ]
	[ "$(stat -c %i "$CONF")" = "$ino" ]
	diff -u "$NF_SRCDIR/$GRES/nvswitch.gres.conf" "$CONF"
}

@test "fixture nvswitch: the verifier's slurm.gres.conf fails before rendering and passes after" {
	gfx
	vrun --json
	status_is 3
	[ "$(verdict_of slurm.gres.conf)" = "fail 0 GPUs in 0 lines" ]
	grender
	status_is 0
	vrun --json
	status_is 0
	[ "$(verdict_of slurm.gres.conf)" = "pass 8 GPUs in 8 lines" ]
	[ "$(verdict_of slurm.gres.cores)" = "pass 8 lines match the topology" ]
}

@test "fixture: the passing sysroot's GPU lines are render's own: rendering them again changes nothing" {
	vfx pass
	grender --json
	status_is 0
	[ "$(echo "$output" | jq -r '.state + " " + (.changed|tostring)')" = "unchanged false" ]
	diff -u "$NF_SRCDIR/$GRES/nvswitch.gres.conf" "$SYS/etc/slurm/gres.conf"
}

@test "fixture nvswitch: --dry-run says what would change and writes nothing" {
	gfx
	grender --dry-run
	status_is 0
	[[ "$output" == *"/etc/slurm/gres.conf: would change (8 GPUs, NVLink)"* ]]
	unchanged_conf
}

@test "fixture nvswitch: a changed topology replaces the rendered block, other lines kept" {
	gfx
	grender
	status_is 0
	echo "Name=mps Count=100" >> "$CONF"
	# NVLinks to the switches halve: 9 links to every peer
	nvlinks '["0000:05:00.0","0000:05:00.0","0000:05:00.0","0000:06:00.0","0000:06:00.0","0000:07:00.0","0000:07:00.0","0000:08:00.0","0000:08:00.0"]'
	grender
	status_is 0
	[[ "$output" == *"written"* ]]
	[ "$(grep -c '^Name=gpu' "$CONF")" = 8 ]
	grep -qx 'Name=gpu Type=h100 File=/dev/nvidia3 Cores=0-63 Links=9,9,9,-1,9,9,9,9' "$CONF"
	grep -qx 'Name=mps Count=100' "$CONF"
	grep -qx 'Name=nvme Type=local File=/dev/nvme0n1' "$CONF"
	[ "$(grep -c '^# BEGIN nodeforge gres render' "$CONF")" = 1 ]
}

@test "fixture pcie: a node without NVLink gets no Links=" {
	gfx
	profile_set '.gpu.nvswitch = false | .gpu.nvlink = false'
	nvlinks '[]'
	grender
	status_is 0
	[[ "$output" == *"written (8 GPUs)"* ]]
	diff -u "$NF_SRCDIR/$GRES/pcie.gres.conf" "$CONF"
}

@test "fixture: device minors, not PCI order, decide File= and its Cores=" {
	gfx
	g=$SYS/proc/driver/nvidia/gpus
	sed -i 's/^Device Minor:.*/Device Minor: \t 7/' "$g/0000:18:00.0/information"
	sed -i 's/^Device Minor:.*/Device Minor: \t 0/' "$g/0000:db:00.0/information"
	grender
	status_is 0
	grep -qx 'Name=gpu Type=h100 File=/dev/nvidia0 Cores=64-127 Links=-1,18,18,18,18,18,18,18' "$CONF"
	grep -qx 'Name=gpu Type=h100 File=/dev/nvidia7 Cores=0-63 Links=18,18,18,18,18,18,18,-1' "$CONF"
	vrun --json
	status_is 0
	[ "$(verdict_of slurm.gres.cores)" = "pass 8 lines match the topology" ]
}

@test "fixture: a missing GPU is refused, nothing written" {
	gfx
	rm -rf "$SYS/proc/driver/nvidia/gpus/0000:db:00.0"
	grender
	status_is 1
	[[ "$output" == *"nodeforge gres: this node has 7 GPUs (/dev/nvidia[0-6]) but the profile declares 8: nothing written"* ]]
	unchanged_conf
}

@test "fixture: no driver (no /proc/driver/nvidia) is refused, nothing written" {
	gfx
	rm -rf "$SYS/proc/driver/nvidia"
	grender
	status_is 1
	[[ "$output" == *"this node has 0 GPUs (none) but the profile declares 8 (no /proc/driver/nvidia/gpus: is the driver loaded?)"* ]]
	unchanged_conf
}

@test "fixture: an unreadable GPU is refused, nothing written" {
	gfx
	echo "Model: NVIDIA H100" > "$SYS/proc/driver/nvidia/gpus/0000:5d:00.0/information"
	grender
	status_is 1
	[[ "$output" == *"cannot read GPU '0000:5d:00.0'"*"no Device Minor and Bus Location"* ]]
	unchanged_conf
	gfx
	rm "$SYS/sys/bus/pci/devices/0000:5d:00.0/local_cpulist"
	grender
	status_is 1
	[[ "$output" == *"cannot read '"*"/sys/bus/pci/devices/0000:5d:00.0/local_cpulist'"* ]]
	unchanged_conf
	gfx
	echo "garbage" > "$SYS/sys/bus/pci/devices/0000:5d:00.0/local_cpulist"
	grender
	status_is 1
	[[ "$output" == *"is not a CPU list"* ]]
	unchanged_conf
}

@test "fixture: an NVSwitch profile without NVLink data from NVML is refused" {
	gfx
	nvlinks '[]'
	grender
	status_is 1
	[[ "$output" == *"NVML reports no active NVLink"* ]]
	unchanged_conf
	jq '.nvml = null' "$SYS/fixture.json" > "$SYS/f.new" && mv "$SYS/f.new" "$SYS/fixture.json"
	grender
	status_is 1
	[[ "$output" == *"NVML gives no NVLink data"* ]]
	unchanged_conf
}

@test "fixture: NVML and the driver disagree on the GPUs: refused" {
	gfx
	jq '.nvml.gpus[2].pci_bus_id = "0000:3b:00.0"' "$SYS/fixture.json" > "$SYS/f.new"
	mv "$SYS/f.new" "$SYS/fixture.json"
	grender
	status_is 1
	[[ "$output" == *"NVML reports GPU '0000:3b:00.0' that /proc/driver/nvidia does not list"* ]]
	unchanged_conf
}

@test "fixture: GPU lines already in gres.conf outside the block are refused" {
	gfx
	printf 'Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-63\nName=nvme Type=local File=/dev/nvme0n1\n' > "$CONF"
	cp "$CONF" "$SCRATCH/gres.conf.before"
	grender
	status_is 1
	[[ "$output" == *"already declares GPUs outside the rendered block ('Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-63')"* ]]
	unchanged_conf
}

@test "fixture: gres.auto.json naming a GPU the node lacks is refused" {
	gfx
	jq '.[0].file = "/dev/nvidia[1-8]"' "$SYS/etc/nodeforge/gres.auto.json" > "$SYS/a.new"
	mv "$SYS/a.new" "$SYS/etc/nodeforge/gres.auto.json"
	grender
	status_is 1
	[[ "$output" == *"'/dev/nvidia8' (/etc/nodeforge/gres.auto.json) is not a GPU of this node: nothing written"* ]]
	unchanged_conf
}

@test "fixture: no gres.auto.json: nothing to render (exit 1); usage errors exit 2" {
	vfx pass
	rm "$SYS/etc/nodeforge/gres.auto.json"
	run "$NF_BIN" gres render --root "$SYS"
	status_is 1
	[[ "$output" == *"nothing to render: no '/etc/nodeforge/gres.auto.json'"* ]]
	run "$NF_BIN" gres
	status_is 2
	[[ "$output" == *"missing subcommand"* ]]
	run "$NF_BIN" gres frob
	status_is 2
	[[ "$output" == *"unknown subcommand 'frob'"* ]]
}

@test "fixture: a gres.conf symlinked out of the root is not written through" {
	gfx
	echo "outside" > "$SCRATCH/outside"
	rm -rf "$SYS/etc/slurm"
	ln -s "$SCRATCH" "$SYS/etc/slurm"
	grender
	status_is 1
	[ "$(cat "$SCRATCH/outside")" = outside ]
	[ ! -e "$SCRATCH/gres.conf" ]
}

# An H200 rack: the inventory's gpu_type reaches the node as its
# cluster.conf line's Gres=gpu:h200:8, which gres.conf's Type must match
# (slurmd refuses a node whose gres.conf and slurm.conf types differ)
@test "fixture: an H200 rack's cluster.conf line gives the rendered lines their Type" {
	gfx
	sed -i 's/^NodeName=.*/NodeName=gpu-[001-004] Gres=gpu:h200:8,nvme:local:1 Feature=h200,ib State=UNKNOWN/' \
		"$SYS/etc/slurm/cluster.conf"
	sed -i 's/"NVIDIA H100 80GB HBM3"/"NVIDIA H200"/' "$SYS/fixture.json"
	grender
	status_is 0
	sed -n '/^# BEGIN/,/^# END/p' "$CONF" > "$SCRATCH/block"
	[ "$(grep -c '^Name=gpu Type=h200 File=/dev/nvidia' "$SCRATCH/block")" = 8 ]
	! grep -q 'Type=h100' "$SCRATCH/block"
	sed 's/Type=h100/Type=h200/' "$NF_SRCDIR/$GRES/nvswitch.gres.conf" |
		sed -n '/^# BEGIN/,/^# END/p' | diff -u - "$SCRATCH/block"
}

@test "fixture: a cluster.conf line for other nodes, or with no GPU type, keeps the profile's Type" {
	gfx
	sed -i 's/^NodeName=.*/NodeName=gpu-[005-008] Gres=gpu:h200:8 State=UNKNOWN\nNodeName=gpu-[001-004] Gres=gpu:8 State=UNKNOWN/' \
		"$SYS/etc/slurm/cluster.conf"
	grender
	status_is 0
	diff -u "$NF_SRCDIR/$GRES/nvswitch.gres.conf" "$CONF"
}

@test "the image's nodeforge-gres.service runs after nodeforge-cluster.service (which fetches cluster.conf)" {
	unit=$FIXTURES/apply/compute/etc/systemd/system/nodeforge-gres.service
	grep -qx 'After=nodeforge-cluster.service' "$unit"
	grep -q '^Before=.*slurmd.service' "$unit"
}
