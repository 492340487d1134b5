#!/usr/bin/env bats
# Failing fixtures for slurm, containers, pam and GPU checks.
load verify_helper

@test "slurm: gres.conf Cores= does not match the GPUs' NUMA node" {
	expect_root fail-slurm slurm.gres.cores "/dev/nvidia4 (0000:9a:00.0): Cores=0-63 but its NUMA-local cores are 64-127"
}

@test "slurm: a GPU missing from the PCI bus" {
	vfx pass
	rm -rf "$SYS/sys/bus/pci/devices/0000:db:00.0"
	vrun --json
	status_is 3
	[[ "$(verdict_of slurm.gres.hardware)" == "fail 7" ]]
	[[ "$(verdict_of slurm.gres.cores)" == "skip because slurm.gres.hardware failed" ]]
}

@test "slurm: slurm.conf value differs from the profile" {
	vfx pass
	sed -i 's/^SelectType=.*/SelectType=select\/linear/' "$SYS/etc/slurm/slurm.conf"
	vrun --json
	status_is 3
	[[ "$(verdict_of slurm.conf.values)" == "fail SelectType=select/linear" ]]
}

@test "slurm: a slurm.conf that lets a job inherit the submitting shell's limits fails slurm.conf.limits" {
	vfx pass
	vrun --json
	[[ "$(verdict_of slurm.conf.limits)" == "pass PropagateResourceLimits=NONE" ]]
	sed -i 's/^PropagateResourceLimits=.*/PropagateResourceLimitsExcept=MEMLOCK/' "$SYS/etc/slurm/slurm.conf"
	vrun --json
	status_is 3
	[[ "$(verdict_of slurm.conf.limits)" == "fail PropagateResourceLimitsExcept=MEMLOCK: the submitting shell's other limits replace the node's in every job" ]]
	sed -i '/^PropagateResourceLimits/d' "$SYS/etc/slurm/slurm.conf"
	vrun --json
	status_is 3
	[[ "$(verdict_of slurm.conf.limits)" == "fail unset: Slurm propagates ALL of the submitting shell's limits" ]]
}

# H200: NVML names it "NVIDIA H200"; the inventory declares the type of a
# rack (gpu_type), cluster.conf carries it as Gres=gpu:TYPE on the node's line
h200_rack() {
	sed -i 's/^NodeName=.*/NodeName=gpu-[001-004] Gres=gpu:h200:8,nvme:local:1 Feature=h200,ib State=UNKNOWN/' "$SYS/etc/slurm/cluster.conf"
}

@test "gpu: an 8x H200 node (NVML fixture) in an H200 rack passes gpu.count" {
	vfx pass
	sed -i 's/"NVIDIA H100 80GB HBM3"/"NVIDIA H200"/' "$SYS/fixture.json"
	h200_rack
	vrun --json
	[[ "$(verdict_of gpu.count)" == "pass 8 GPUs of type h200" ]]
}

@test "gpu: an 8x H100 node in an H200 rack fails gpu.count, naming both" {
	vfx pass
	h200_rack
	vrun --json
	status_is 3
	[[ "$(verdict_of gpu.count)" == "fail 0 of 8 GPUs are h200; the others are 'NVIDIA H100 80GB HBM3' (h100)" ]]
}

@test "gpu: an 8x H200 node with no type from the inventory fails against its role's h100" {
	vfx pass
	sed -i 's/"NVIDIA H100 80GB HBM3"/"NVIDIA H200"/' "$SYS/fixture.json"
	vrun --json
	status_is 3
	[[ "$(verdict_of gpu.count)" == "fail 0 of 8 GPUs are h100; the others are 'NVIDIA H200' (h200)" ]]
}

@test "slurm: a NodeName= line declaring more CPUs or memory than the node has fails slurm.node.shape" {
	vfx pass
	sed -i 's/^NodeName=.*/NodeName=gpu-[001-004] Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h100:8 State=UNKNOWN/' \
		"$SYS/etc/slurm/cluster.conf"
	mkdir -p "$SYS/sys/devices/system/cpu"
	echo 0-255 > "$SYS/sys/devices/system/cpu/online"
	echo "MemTotal:       2063597568 kB" > "$SYS/proc/meminfo"
	vrun --json --only slurm
	[ "$(verdict_of slurm.node.shape)" = "pass 256 CPUs online, 2015232 MiB of memory" ]
	# a DIMM lost: the node registers less memory than its line
	echo "MemTotal:       1547698176 kB" > "$SYS/proc/meminfo"
	vrun --json --only slurm
	status_is 3
	[ "$(verdict_of slurm.node.shape)" = "fail 256 CPUs online, 1511424 MiB of memory: slurmctld marks the node INVAL (Low RealMemory)" ]
}

@test "slurm: a prolog slurm.conf names that is missing fails slurm.prolog, statically too" {
	vfx pass
	vrun --json --only slurm
	[ "$(verdict_of slurm.prolog)" = "pass 2 scripts, each executable" ]
	rm "$SYS/etc/slurm/prolog.sh"
	run nf verify --root "$SYS" --json --only slurm.prolog
	status_is 3
	[ "$(verdict_of slurm.prolog)" = "fail Prolog=/etc/slurm/prolog.sh: No such file or directory" ]
}

@test "gpu: nvidia-peermem not loaded fails gpu.peermem; the image loads it at boot" {
	vfx pass
	grep -qx nvidia-peermem "$SYS/etc/modules-load.d/nodeforge-gpu.conf"
	vrun --json
	[[ "$(verdict_of gpu.peermem)" == "pass loaded" ]]
	rm -rf "$SYS/sys/module/nvidia_peermem"
	vrun --json
	status_is 3
	[[ "$(verdict_of gpu.peermem)" == "fail not loaded" ]]
}

@test "slurm: the controller's slurmdbd.conf differs from the profile, or archives nowhere, fails slurm.dbd.conf" {
	vfx pass
	install -m 0600 "$FIXTURES/apply/controller/etc/slurm/slurmdbd.conf" "$SYS/etc/slurm/slurmdbd.conf"
	vrun --role controller --only slurm --json
	[[ "$(verdict_of slurm.dbd.conf)" == "pass "*"settings match" ]]
	sed -i '/^ArchiveDir=/d' "$SYS/etc/slurm/slurmdbd.conf"
	vrun --role controller --only slurm --json
	status_is 3
	[[ "$(verdict_of slurm.dbd.conf)" == "fail ArchiveDir=(unset)" ]]
	vrun --json
	[[ "$(verdict_of slurm.dbd.conf)" == "skip this role runs no slurmdbd" ]]
}

@test "containers: pyxis not in plugstack.conf" {
	expect_root fail-containers containers.pyxis.plugstack "not listed"
}

@test "pam: a drop-in turns UsePAM off" {
	expect_root fail-pam pam.sshd.usepam "UsePAM no"
}

@test "gpu: ECC off and a pending row remap" {
	expect_root fail-gpu gpu.ecc "ECC off now but on after a reset: GPUs 5"
	[[ "$(verdict_of gpu.remap)" == "fail row remap pending on GPUs 3" ]]
}

@test "gpu: no driver is one clear failure, the rest skipped because of it" {
	expect_root fail-gpu-nodriver gpu.driver "no NVIDIA driver"
	[[ "$(verdict_of gpu.count)" == "skip because gpu.driver failed" ]]
	[[ "$(verdict_of fabric_manager.version)" == "skip because gpu.driver failed" ]]
	[ "$(echo "$output" | jq -c '[.root_causes[].id]')" = '["gpu.driver"]' ]
}

# what NVML said, as the real adapter records it (verify_ops.c): the node
# with the software and no loaded module (no GPU, or a module for another
# kernel) is told apart from an image without the driver
nvml_error() {
	vfx pass
	jq --arg e "$1" --arg m "$2" '.nvml = {error: $e, missing: $m}' "$SYS/fixture.json" > "$SCRATCH/f.json"
	mv "$SCRATCH/f.json" "$SYS/fixture.json"
	vrun --json
	status_is 3
}

@test "gpu: NVML installed and its module not loaded names the kernel log, not a rebuild of missing software" {
	nvml_error "Driver Not Loaded" driver
	[ "$(verdict_of gpu.driver)" = "fail NVML is installed; the driver is not loaded (NVML: Driver Not Loaded)" ]
	echo "$output" | jq -r '.checks[] | select(.id == "gpu.driver") | .remedy' | grep -q "No NVIDIA GPU found"
	[[ "$(verdict_of gpu.count)" == "skip because gpu.driver failed" ]]
}

@test "gpu: an image without libnvidia-ml is missing driver software" {
	nvml_error "libnvidia-ml.so.1 is not installed" software
	[ "$(verdict_of gpu.driver)" = "fail no NVIDIA driver software: libnvidia-ml.so.1 is not installed" ]
	echo "$output" | jq -r '.checks[] | select(.id == "gpu.driver") | .remedy' | grep -q "profiles/nvidia.yaml"
}

@test "gpu: fewer GPUs than the role" {
	vfx pass
	jq '.nvml.gpus |= .[:7]' "$SYS/fixture.json" > "$SCRATCH/f.json"
	mv "$SCRATCH/f.json" "$SYS/fixture.json"
	vrun --json
	status_is 3
	[[ "$(verdict_of gpu.count)" == "fail 7 GPUs" ]]
}

@test "gpu: no NVML library on a real host is a failure, not a crash" {
	vfx pass
	grep -q libnvidia-ml /etc/ld.so.cache 2>/dev/null && skip "this host has NVML"
	run nf verify --sysroot "$SYS" --only gpu --json
	status_is 3
	[ "$(verdict_of gpu.driver)" = "fail no NVIDIA driver software: libnvidia-ml.so.1 is not installed" ]
}
