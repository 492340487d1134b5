#!/usr/bin/env bats
# The cluster is the unit of proof (docs/architecture.md): the images of every role,
# built from the embedded default, booted together as a site boots a rack,
# must form a working Slurm cluster.  Six QEMU VMs from
# examples/cluster-box.yaml plus a second controller (a controller, login,
# two CPU compute nodes, a GPU compute node that has no GPU, and the backup
# controller) PXE-boot inside a network namespace from the rendered
# dnsmasq.conf and `nodeforge serve`, with the controllers' shared
# StateSaveLocation on an NFS export there; the test then works as a user
# would, over ssh to the login node: sinfo, srun, sbatch, sacct, and a
# takeover by the backup controller.  The CPU nodes have BMCs (ipmi_sim,
# driving their VMs): they are powered on, power-cycled and reimaged with
# nodeforge power and reimage.
#
# Slow: the first run bootstraps four images from Debian's mirror (cached
# in $NF_E2E_CACHE/bootstrap and $NF_E2E_CACHE/cluster), then six systemd
# boots under software emulation (NF_E2E_KVM=1 uses /dev/kvm).  Deadlines
# scale with NF_CLUSTER_TIMEOUT (percent, default 100).
# Needs root, qemu-system-x86, ipxe-qemu, dnsmasq, chrony, mmdebstrap,
# openssh-client, python3-yaml, nfs-ganesha with its VFS backend.
load cluster_helper

setup_file() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespace, image builds)"
	local t
	for t in qemu-system-x86_64 dnsmasq chronyd mmdebstrap ssh ssh-keygen ip openssl ganesha.nfsd \
		ipmi_sim ipmitool jq; do
		command -v "$t" >/dev/null || skip "$t is not installed"
	done
	[ -f "$ROM" ] || skip "ipxe-qemu is not installed"
	# the python3 that has PyYAML: the one on PATH, else Debian's own
	# (python3-yaml, make deps), which a python3 earlier on PATH hides
	export CL_PY=python3
	$CL_PY -c 'import yaml' 2>/dev/null || CL_PY=/usr/bin/python3
	$CL_PY -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"
	cl_can_net || skip "this host cannot make a network namespace with a bridge and tap devices"

	export LC_ALL=C TZ=UTC
	export E2E=${NF_E2E_CACHE:-$NF_SRCDIR/build/e2e-cache}
	export PROFS=$NF_SRCDIR/profiles
	export W INV
	W=$(mktemp -d "${TMPDIR:-/tmp}/nf-cluster.XXXXXX")
	chmod 755 "$W"   # dnsmasq's TFTP runs as nobody
	# the box with a second controller: ctl-02 runs the backup slurmctld,
	# both keep its state on the site's NFS export (cl_nfs)
	INV=$W/inventory.yaml
	cat - "$NF_SRCDIR/examples/cluster-box.yaml" > "$INV" <<-'EOF'
	# examples/cluster-box.yaml and a second controller (t7000-cluster.bats)
	EOF
	cat >> "$INV" <<-'EOF'
	  - name: ctl-02
	    mac: 52:54:00:00:00:04
	    ip: 10.0.0.4
	    role: controller
	    rack: box
	EOF
	export TREE=$W/tree STATE=$W/state NS=nfcl$$
	mkdir -p "$W/log" "$W/pids"
	export LOGIN CTL
	LOGIN=$(cl_node_of login)
	CTL=$(cl_node_of controller)
	cl_log "work dir $W, namespace $NS, $(cl_accel)"

	# the images' site, overlays (with the test's ssh key) and output
	# directory are tests/e2e/images.bash's: the images t2950 built are
	# current here, and a run of this test alone builds them
	img_setup "$W/imgsite" || return 1
	# the roles' images side by side: their bootstraps and compiles do not
	# depend on each other
	local pids=() p
	for t in $(cl_roles); do cl_build "$t" & pids+=($!); done
	for p in "${pids[@]}"; do wait "$p" || return 1; done
	cl_secrets
	cl_render

	cl_guard
	cl_net
	cl_nfs
	cl_chronyd
	cl_dnsmasq
	cl_serve
	cl_bmcs
	cl_scontrol
	# every node may claim its secrets once, during the bring-up
	nf -C "$PROFS" -s "$W/site.yaml" enroll open "$(cl_nodes | awk '{ print $1 }' | paste -sd,)" \
		--for 2h -i "$INV" >/dev/null

	# in waves, as a site sequences power: the controller and the login
	# node, then the CPU nodes, then the GPU node.  The controller is up
	# when the first slurmd registers, and the box's two host CPUs are not
	# shared by five emulated first boots at once
	date +%s > "$W/power-on"
	cp "$W/power-on" "$W/power-on-1"
	for t in $(cl_wave 1); do cl_power_on "$t"; done
}

teardown_file() {
	cl_down
	[ -n "${W:-}" ] || return 0
	rm -f "$W/up"
	if [ -e "$W/failed" ]; then
		cl_log "logs kept in $W"
	else
		rm -rf "$W"
	fi
}

setup() { cd "$W" || return 1; }

teardown() {
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		touch "$W/failed"
		cl_debug
	fi
}

# The nodes of power-on wave 1 (the first controller, login), 2 (the
# rest but the GPU role and the other controllers), 3 (the GPU role,
# which a VM must fail) or 4 (the backup controllers, once the GPU node
# has reported), space-separated
cl_wave() {
	cl_nodes | awk -v w="$1" '{
		if ($4 == "controller") n = ctl++ ? 4 : 1
		else n = ($4 == "login") ? 1 : ($4 == "compute") ? 3 : 2
		if (n == w) print $1 }' | paste -sd' '
}

# Power on NODE... one after the other: each once the one before has
# reported, or NF_CLUSTER_STAGGER seconds after it (default 300).  Under
# emulation, first boots side by side starve each other's verifier probes
# (they have budgets of a few seconds); with KVM a node reports in seconds.
cl_power_on_wave() {
	local n prev=
	for n in "$@"; do
		[ -z "$prev" ] || cl_wait "${NF_CLUSTER_STAGGER:-300}" "cl_all_reported $prev" || true
		date +%s > "$W/power-on-$n"
		cl_power_on "$n"
		prev=$n
	done
}

since() { echo $(( $(date +%s) - $(cat "$W/$1") )); }

# Fail at once when an earlier stage already did, instead of waiting out
# another deadline
needs() {
	local s
	for s in "$@"; do
		[ -e "$W/ok-$s" ] || { echo "not reached: $s (see the earlier failure)"; return 1; }
	done
}

# cl_expect_states NAME...: each node verified, except GPU (compute)
# nodes, which must fail; prints what differs
cl_expect_states() {
	local n role st fails=0
	for n in "$@"; do
		role=$(cl_node_field "$n" 4)
		st=$(cl_state "$n")
		kill -0 "$(cl_pid "vm-$n")" 2>/dev/null || echo "$n: its VM stopped"
		if [ "$role" = compute ]; then
			[ "$st" = failed ] || { echo "$n ($role): $st, expected failed"; fails=1; }
		else
			[ "$st" = verified ] || { echo "$n ($role): $st, expected verified"; fails=1; }
		fi
	done
	return $fails
}

# cl_boot_wave N SECONDS: power on wave N (wave 1 is on since
# setup_file), wait for its verdicts, check them
cl_boot_wave() {
	local wave
	wave=$(cl_wave "$1")
	[ -n "$wave" ] || return 0
	if [ "$1" -gt 1 ]; then
		date +%s > "$W/power-on-$1"
		cl_power_on_wave $wave
	fi
	cl_wait "$(cl_scale "$2")" "cl_all_reported $wave" || true
	cl_time "wave $1 ($wave): power-on -> verdicts: $(since "power-on-$1") s (since the first power-on: $(since power-on) s)"
	cl_states | cl_show
	cl_expect_states $wave
}

@test "the controller and the login node PXE-boot, enroll and pass their checks" {
	cl_boot_wave 1 900
	touch "$W/ok-infra"
}

@test "the CPU nodes PXE-boot, enroll and pass their checks" {
	local rc=0
	cl_boot_wave 2 1200 || rc=$?
	# the GPU node boots while the next tests use the CPU nodes
	date +%s > "$W/power-on-3"
	# shellcheck disable=SC2046
	cl_power_on_wave $(cl_wave 3)
	# the CPU role's next build, for the reimage below, meanwhile
	cl_build_next
	[ $rc -eq 0 ]
	touch "$W/ok-cpus"
}

@test "ssh from the boot network reaches the login node and the controller" {
	cl_wait "$(cl_scale 120)" 'cl_ssh "$LOGIN" true' || { echo "no ssh to $LOGIN"; return 1; }
	run cl_ssh "$LOGIN" 'hostname'
	status_is 0
	[ "$output" = "$LOGIN" ]
	run cl_ssh "$CTL" 'hostname'
	status_is 0
	[ "$output" = "$CTL" ]
	touch "$W/ok-ssh"
}

@test "sinfo on the login node shows the CPU nodes idle" {
	# a node whose gate failed never starts its Slurm daemon
	needs infra cpus ssh
	local cpus rc=0
	cpus=$(cl_wave 2)
	cl_wait "$(cl_scale 600)" "cl_all_idle $cpus 2>'$W/sinfo.err'; [ \$? -ne 1 ]" || rc=$?
	if [ $rc -ne 0 ] || [ -s "$W/sinfo.err" ]; then
		cat "$W/sinfo.err"
		for n in $cpus; do echo "$n: '$(cl_sinfo_state "$n")' in sinfo, not idle"; done
		return 1
	fi
	cl_time "power-on -> every CPU node idle: $(since power-on) s (CPU nodes' power-on -> idle: $(since power-on-2) s)"
	run cl_ssh "$LOGIN" 'sinfo'
	echo "$output" | cl_show
	touch "$W/ok-idle"
}

@test "srun -N2 hostname runs on both CPU nodes" {
	needs idle
	run cl_ssh "$LOGIN" 'out=$(timeout 120 srun -p cpu -N2 hostname) && echo "$out" | sort'
	echo "$output" | cl_show
	status_is 0
	[ "$output" = "$(cl_nodes | awk '$4 == "cpu" { print $1 }' | sort | head -n 2)" ]
}

@test "an sbatch job under a new account writes its output and sacct shows it COMPLETED" {
	needs idle
	# AccountingStorageEnforce=associations: a job needs an association
	cl_wait "$(cl_scale 120)" 'cl_ssh "$CTL" "sacctmgr -n -P show cluster format=Cluster" | grep -q .' ||
		{ echo "slurmctld never registered its cluster with slurmdbd"; return 1; }
	run cl_ssh "$CTL" 'sacctmgr -i add account box Description="cluster test" Organization=nodeforge &&
		sacctmgr -i add user root Account=box'
	echo "$output" | cl_show
	status_is 0
	run cl_ssh "$LOGIN" 'sbatch --parsable -A box -p cpu -N1 -o /var/tmp/nf-job-%j.out --wrap "echo job \$SLURM_JOB_ID on \$(hostname)"'
	status_is 0
	local id=${output%%;*}
	[[ "$id" =~ ^[0-9]+$ ]]
	cl_wait "$(cl_scale 300)" "cl_ssh \"\$LOGIN\" 'sacct -n -X -P -j $id -o State' | grep -qE '^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)'" || true
	run cl_ssh "$LOGIN" "sacct -n -X -P -j $id -o JobID,Account,State,ExitCode,NodeList"
	echo "# sacct: $output" >&3
	status_is 0
	local node
	IFS='|' read -r _ acct state code node <<< "$output"
	[ "$state" = COMPLETED ]
	[ "$acct" = box ]
	[ "$code" = 0:0 ]
	# no shared file system: the output is on the node that ran it (in
	# /var/tmp: the prolog empties /tmp of the user's files before each job)
	run cl_ssh "$LOGIN" "timeout 60 srun -p cpu -w $node cat /var/tmp/nf-job-$id.out"
	status_is 0
	[ "$output" = "job $id on $node" ]
}

# The reference's partitions (profiles/base.yaml, docs/nodeforge-cluster.md):
# interactive, the default, holds every slurmd node; each role keeps its own.
@test "sinfo lists the training, inference and interactive partitions; interactive is the default and holds the CPU nodes" {
	needs idle
	run cl_ssh "$LOGIN" 'timeout 30 sinfo -h -o %P | sort -u'
	echo "$output" | cl_show
	status_is 0
	[ "$output" = "$(printf '%s\n' compute cpu inference 'interactive*' training)" ]
	run cl_ssh "$LOGIN" 'timeout 30 sinfo -h -N -p interactive -o %N | sort -u'
	status_is 0
	local n
	for n in $(cl_nodes | awk '$4 == "cpu" { print $1 }'); do
		grep -qx "$n" <<<"$output" || { echo "$n is not in partition interactive: $output"; return 1; }
	done
}

# EnforcePartLimits=ALL: over MaxTime (4:00:00) is refused at submission
# by slurmctld itself (ESLURM_INVALID_TIME_LIMIT), not left pending
@test "sbatch -p interactive with a time over its MaxTime is refused by Slurm" {
	needs idle
	run cl_ssh "$LOGIN" 'sbatch --test-only -A box -p interactive -N1 --time=3:00:00 --wrap true'
	echo "$output" | cl_show
	status_is 0
	run cl_ssh "$LOGIN" 'sbatch -A box -p interactive -N1 --time=5:00:00 --wrap true'
	echo "$output" | cl_show
	[ "$status" -ne 0 ]
	[[ "$output" == *"Requested time limit is invalid (missing or exceeds some limit)"* ]]
}

# PropagateResourceLimits=NONE: a job gets slurmd's limits (the profile's,
# from the slurmd.service drop-in), not the lower ones of the shell that
# ran srun on the login node
@test "srun ulimit -l -n -s on a CPU node prints the profile's values, not the submitting shell's" {
	needs idle
	local want
	want=$(nf -C "$PROFS" profile show cpu --json | python3 -c '
import json, sys
l = json.load(sys.stdin)["limits"]
for k in ("memlock", "nofile", "stack"):
    print(l[k])')
	run cl_ssh "$LOGIN" 'ulimit -S -l 64; ulimit -S -n 1024; ulimit -S -s 8192;
		timeout 60 srun -A box -p cpu -N1 bash -c "ulimit -l; ulimit -n; ulimit -s"'
	echo "# job's ulimit -l -n -s: $(echo $output)" >&3
	status_is 0
	[ "$output" = "$want" ]
}

# pyxis, compiled in the login image against its Slurm, is loaded by the
# login node's srun: the container options are there for users.
@test "the login node's srun lists pyxis's --container-image" {
	needs ssh
	run cl_ssh "$LOGIN" 'srun --help'
	status_is 0
	[[ "$output" == *"--container-image"* ]]
}

# A container job through Slurm: pyxis (compiled in the login and CPU
# images) takes --container-image on the login node's srun, and enroot
# (compiled in the CPU image, its helpers linked with the image's glibc)
# runs the container on the node, as an unprivileged user under the
# per-user paths the image made for it.  The container is a tiny busybox
# root squashed here; no registry is needed.
@test "an unprivileged user's srun --container-image runs a squashfs container on a CPU node" {
	needs idle
	mkdir -p c/bin c/etc
	cp /bin/busybox c/bin/busybox
	for t in sh cat; do ln -s busybox "c/bin/$t"; done
	printf 'ID=nodeforge-test\nNAME="nodeforge test container"\n' > c/etc/os-release
	mksquashfs c c.sqsh -noappend -quiet -all-root >/dev/null
	local n
	# the user exists wherever Slurm maps its name to its uid: slurmctld's
	# host too, or its association never matches uid 5000
	for n in "$CTL" "$LOGIN" $(cl_nodes | awk '$4 == "cpu" { print $1 }'); do
		cl_ssh "$n" 'id nfuser >/dev/null 2>&1 || useradd -u 5000 -m -s /bin/sh nfuser'
		cl_ssh "$n" 'cat > /var/tmp/nf-container.sqsh && chmod 0644 /var/tmp/nf-container.sqsh' < c.sqsh
	done
	run cl_ssh "$CTL" 'sacctmgr -i add account box Description="cluster test" Organization=nodeforge >/dev/null 2>&1;
		sacctmgr -i add user nfuser Account=box'
	status_is 0
	# slurmdbd tells slurmctld of the new association a moment later
	cl_wait "$(cl_scale 60)" "cl_ssh \"\$CTL\" 'scontrol show assoc_mgr users=nfuser flags=assoc' | grep -q 'UserName=nfuser(5000)'" ||
		{ echo "slurmctld never learned nfuser's association"; return 1; }
	run cl_ssh "$LOGIN" 'cd /tmp && timeout 240 runuser -u nfuser -- srun -A box -p cpu -N1 \
		--container-image=/var/tmp/nf-container.sqsh cat /etc/os-release 2>&1'
	echo "$output" | cl_show
	status_is 0
	[[ "$output" == *"ID=nodeforge-test"* ]]
	[[ "$output" != *"ID=debian"* ]]
}

@test "the GPU node PXE-boots and fails its checks, a GPU check among the root causes; nodeforge status names the first" {
	[ -e "$W/power-on-3" ] || { echo "the GPU node was never powered on"; return 1; }
	local wave
	wave=$(cl_wave 3)
	cl_wait "$(cl_scale 900)" "cl_all_reported $wave" || true
	cl_time "wave 3 ($wave): power-on -> verdicts: $(since power-on-3) s"
	# the backup controller boots while the GPU node's tests run
	date +%s > "$W/power-on-4"
	# shellcheck disable=SC2046
	cl_power_on_wave $(cl_wave 4)
	cl_expect_states $wave
	local gpu
	gpu=$(cl_node_of compute)
	run nsx "$NF_BIN" status --server "$SRV"
	# 3: not every node is verified (the GPU node failed)
	status_is 3
	echo "$output" | cl_show
	# the node's own verdict: a GPU check is among its root causes
	run nsx curl -sf "$SRV/api/v1/nodes/$gpu"
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
causes = d["verdict"].get("root_causes") or []
ids = [c if isinstance(c, str) else c.get("id") for c in causes]
print("# %s: %s; root causes: %s" % (d["name"], d["state"], ", ".join(map(str, ids))))
assert d["state"] == "failed", d["state"]
assert any(str(i).startswith("gpu.") for i in ids), ids
' >&3
	# and nodeforge status shows the first of them (in a VM that is
	# memory.hugepages: no 1G pages for the 160 the profile asks)
	run nsx curl -sf "$SRV/api/v1/nodes/$gpu"
	status_is 0
	echo "$output" > "$W/gpu-verdict.json"
	run cl_status_json
	status_is 3
	echo "$output" | python3 -c '
import json, sys
node, vf = sys.argv[1], sys.argv[2]
n = [x for x in json.load(sys.stdin)["nodes"] if x["name"] == node][0]
causes = json.load(open(vf))["verdict"]["root_causes"]
first = causes[0] if isinstance(causes[0], str) else causes[0]["id"]
assert (n.get("root_cause") or "").startswith(first + ":"), \
    "nodeforge status shows %r as the root cause of %s, not %s" % (n.get("root_cause"), node, first)
' "$gpu" "$W/gpu-verdict.json"
}

@test "the GPU node's gate holds slurmd back" {
	needs ssh
	local gpu
	gpu=$(cl_node_of compute)
	[ "$(cl_state "$gpu")" = failed ] || { echo "$gpu: $(cl_state "$gpu"), no failed verdict"; return 1; }
	run cl_ssh "$gpu" 'systemctl is-active slurmd nodeforge-verify'
	echo "# $gpu: slurmd, nodeforge-verify: ${output//$'\n'/ }" >&3
	[ "$(echo "$output" | sed -n 1p)" != active ]
	[ "$(echo "$output" | sed -n 2p)" = failed ]
}

# Issue part 4, in a VM without a GPU: the image's NVIDIA module is the
# one built for the kernel the node runs (its version magic), so loading
# it fails only because no GPU is there (the driver's own words in the
# kernel log, not a version-magic or symbol error); nvidia-smi runs; the
# verifier's gpu.driver names a driver that is installed but not loaded;
# the container checks pass.
@test "the GPU node's NVIDIA driver is the one built for its running kernel: modprobe fails only on the missing GPU, nvidia-smi runs" {
	needs ssh
	local gpu
	gpu=$(cl_node_of compute)
	run cl_ssh "$gpu" 'uname -r; modinfo -F vermagic nvidia-current-open
		modprobe nvidia; echo "modprobe exit $?"
		dmesg | grep -i -e NVRM -e nvidia | tail -n 20
		nvidia-smi; echo "nvidia-smi exit $?"'
	echo "$output" | cl_show
	[[ "${lines[1]}" == "${lines[0]} SMP "* ]]
	[[ "$output" != *"modprobe exit 0"* ]]
	nv_no_gpu_only "$output"
	[[ "$output" != *"nvidia-smi exit 127"* ]]
	[[ "$output" != *"nvidia-smi exit 126"* ]]
	[ -s "$W/gpu-verdict.json" ] || { echo "no verdict of $gpu"; return 1; }
	python3 - "$W/gpu-verdict.json" <<-'PY'
	import json, sys
	checks = {c["id"]: c for c in json.load(open(sys.argv[1]))["verdict"]["checks"]}
	d = checks["gpu.driver"]
	print("# gpu.driver: %s %s" % (d["verdict"], d.get("seen")))
	assert d["verdict"] == "fail", d
	assert d["seen"].startswith("NVML is installed; the driver is not loaded"), d
	cont = {i: c["verdict"] for i, c in checks.items() if i.startswith("containers.")}
	print("# containers: %s" % cont)
	assert cont and all(v == "pass" for v in cont.values()), cont
	# the site's fabric manager (a STAND-IN deb) is installed and was
	# started: it failed as the real one does without NVSwitch, not as a
	# unit that is not there
	fm = checks["fabric_manager.active"]
	print("# fabric_manager.active: %s %s" % (fm["verdict"], fm.get("seen")))
	assert fm["verdict"] == "fail" and fm.get("seen") == "failed", fm
	PY
}

# GPU containers in a VM without a GPU: an unprivileged user's container
# that asks for GPUs (NVIDIA_VISIBLE_DEVICES, as every NGC image sets)
# runs enroot's NVIDIA hook, which reaches nvidia-container-cli (compiled
# in the image, profiles/nvidia-container.yaml) and stops only where NVML
# finds no loaded driver: not "Command not found", not a missing library
@test "the GPU node's enroot NVIDIA hook reaches nvidia-container-cli, which stops only at the missing GPU driver" {
	needs ssh
	local gpu
	gpu=$(cl_node_of compute)
	if [ ! -s c.sqsh ]; then
		mkdir -p c/bin c/etc
		cp /bin/busybox c/bin/busybox
		for t in sh cat; do ln -sf busybox "c/bin/$t"; done
		printf 'ID=nodeforge-test\n' > c/etc/os-release
		mksquashfs c c.sqsh -noappend -quiet -all-root >/dev/null
	fi
	cl_ssh "$gpu" 'id nfuser >/dev/null 2>&1 || useradd -u 5000 -m -s /bin/sh nfuser'
	cl_ssh "$gpu" 'cat > /var/tmp/nf-container.sqsh && chmod 0644 /var/tmp/nf-container.sqsh' < c.sqsh
	run cl_ssh "$gpu" 'cd /tmp && timeout 240 runuser -u nfuser -- sh -c "
		enroot create -n nvtest /var/tmp/nf-container.sqsh >/dev/null &&
		enroot start -e NVIDIA_VISIBLE_DEVICES=all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility \
			nvtest cat /etc/os-release" 2>&1; echo "exit $?"'
	echo "$output" | cl_show
	[[ "$output" == *"nvidia-container-cli: initialization error: nvml error: driver not loaded"* ]]
	[[ "$output" != *"Command not found"* ]]
	[[ "$output" != *"error while loading shared libraries"* ]]
	[[ "$output" != *"exit 0"* ]]
	# the same container without GPUs starts: only the GPU part stops it
	run cl_ssh "$gpu" 'cd /tmp && timeout 120 runuser -u nfuser -- enroot start nvtest cat /etc/os-release 2>&1'
	echo "$output" | cl_show
	status_is 0
	[[ "$output" == *"ID=nodeforge-test"* ]]
}

@test "the GPU node never becomes idle in Slurm" {
	needs idle
	local gpu
	gpu=$(cl_node_of compute)
	run cl_sinfo_state "$gpu"
	echo "# $gpu in sinfo: ${output:-absent}" >&3
	[ "$output" != idle ]
	run cl_ssh "$CTL" "scontrol show node $gpu"
	echo "$output" | grep -E 'State=|Reason=' | cl_show
	[[ "$output" != *State=IDLE* ]]
}

# scontrol's State= and Reason= of NODE, as the controller sees it
cl_node_reason() {
	cl_ssh "$CTL" "timeout 30 scontrol show node $1" 2>/dev/null |
		grep -oE 'State=[^ ]+|Reason=.*' | paste -sd' '
}

@test "a CPU node whose prerequisite breaks is drained with the root cause by its health check, and resumed when it is fixed" {
	needs idle
	local n
	# the last CPU node (the power-cycle test below takes the first)
	n=$(cl_nodes | awk '$4 == "cpu" { n = $1 } END { print n }')
	# an operator stops chrony on a node in service; slurmd runs its
	# HealthCheckProgram (nodeforge-health) at every start and every
	# HealthCheckInterval: a restart asks now
	run cl_ssh "$n" 'systemctl stop chrony && systemctl restart slurmd'
	status_is 0
	cl_wait "$(cl_scale 300)" "cl_node_reason $n | grep -q 'Reason=nodeforge: time.chronyd'" || {
		echo "$n: not drained by nodeforge: $(cl_node_reason "$n")"
		return 1
	}
	run cl_node_reason "$n"
	echo "# $n broken: $output" >&3
	[[ "$output" == *DRAIN* ]]
	run cl_sinfo_state "$n"
	[[ "$output" == drain* ]]
	# fixed: the next health check resumes what nodeforge drained
	run cl_ssh "$n" 'systemctl start chrony && chronyc waitsync 60 0.1 0 1 >/dev/null && systemctl restart slurmd'
	status_is 0
	cl_wait "$(cl_scale 300)" "cl_idle $n" || {
		echo "$n: not resumed: $(cl_node_reason "$n")"
		return 1
	}
	run cl_node_reason "$n"
	echo "# $n fixed: $output" >&3
	[[ "$output" != *DRAIN* ]]
	run cl_ssh "$LOGIN" "timeout 60 srun -p cpu -w $n hostname"
	status_is 0
	[ "$output" = "$n" ]
	# a node an operator drained stays drained through a passing check
	run cl_ssh "$CTL" "scontrol update nodename=$n state=drain reason='bad DIMM B2'"
	status_is 0
	run cl_ssh "$n" 'timeout 60 /usr/local/sbin/nodeforge-health --json'
	echo "$output" | grep -q '"health_action": *"none"' || { echo "$output"; return 1; }
	run cl_node_reason "$n"
	echo "# $n drained by the operator, after its health check: $output" >&3
	[[ "$output" == *DRAIN*"Reason=bad DIMM B2"* ]]
	run cl_ssh "$CTL" "scontrol update nodename=$n state=resume"
	status_is 0
}

# cl_reimage NODE ROLE@SHA IMAGES: nodeforge reimage of NODE (its events
# in log/reimage-NODE-SHA.json, its errors beside them); its exit status
cl_reimage() {
	local ev=$W/log/reimage-$1-${2#*@}.json
	cl_nf reimage "$1" --image "$2" --images "$3" --tree "$TREE" \
		--server "$SRV" --run-dir "$W/reimage" --poll 5 --boot-timeout "$(cl_scale 900)" \
		--json > "$ev" 2> "${ev%.json}.err"
}

# cl_reimage_show NODE ROLE@SHA: its timeline to the test's log (drain,
# idle, point, enroll, power, verdict, resume or fail), its errors; the
# events in order on stdout
cl_reimage_show() {
	local ev=$W/log/reimage-$1-${2#*@}.json
	jq -r '"\(.time[11:19]) \(.node // "-") \(.event) \(.reason // .state // .image // .action // .result // .status // "")"' \
		"$ev" | cl_show
	sed 's/^/# stderr: /' "${ev%.json}.err" >&3
	jq -r 'select(.event != "warning") | .event' "$ev" | paste -sd' '
}

# a node's state and image in nodeforge status: "STATE IMAGE ROOT-CAUSE"
cl_status_of() {
	cl_status_json | jq -r --arg n "$1" \
		'.nodes[] | select(.name == $n) | "\(.state) \(.image) \(.root_cause // "-")"'
}

# a job on NODE for SECONDS, running when this returns; its id on stdout
cl_job_on() {
	local id
	id=$(cl_ssh "$LOGIN" "sbatch --parsable -A box -p cpu -w $1 -o /var/tmp/nf-reimage-%j.out --wrap 'sleep $2; echo done'") || return 1
	id=${id%%;*}
	cl_wait 120 "[ \"\$(cl_ssh \"\$LOGIN\" 'squeue -h -j $id -o %T')\" = RUNNING ]" ||
		{ echo "job $id on $1 never ran" >&2; return 1; }
	echo "$id"
}

# the job ran to its end, not killed
cl_job_completed() {
	cl_wait 300 "cl_ssh \"\$LOGIN\" 'sacct -n -X -P -j $1 -o State' | grep -qx COMPLETED" || {
		cl_ssh "$LOGIN" "sacct -n -X -P -j $1 -o JobID,State,ExitCode,NodeList"
		return 1
	}
}

# A rolling reimage (docs/nodeforge-reimage.md) of the first CPU node to
# the CPU role's next build (one more sysctl: cl_build_next), while a job
# runs on the other: drained in Slurm, its boot entry pointed at the new
# image, its enrollment opened again, PXE once and a power cycle through
# its BMC, resumed once its verdict passed and its slurmd registered.
# At the same time the other node is given a broken build (a sysctl value
# its kernel refuses): drained at once, cycled only once its job ended,
# and left drained with its root cause as the reason.
@test "reimage: a CPU node moves to its role's next build through its BMC while a job runs on the other, which is not killed; the other, given a broken build, stays drained with its root cause" {
	needs idle
	local n other id new bad old t0 rc=0 brc=0 bpid b
	n=$(cl_node_of cpu)
	other=$(cl_nodes | awk '$4 == "cpu" { m = $1 } END { print m }')
	cl_wait "$(cl_scale 900)" '[ -e "$W/broken/rc" ]' || true
	for b in next broken; do
		[ "$(cat "$W/$b/rc" 2>/dev/null)" = 0 ] || { tail -n 30 "$W/log/build-$b.log"; return 1; }
	done
	new=$(jq -r .rootfs_sha256 "$W/next/out/cpu/cpu.current" | cut -c1-12)
	bad=$(jq -r .rootfs_sha256 "$W/broken/out/cpu/cpu.current" | cut -c1-12)
	old=$(jq -r .rootfs_sha256 "$IMG_OUT/cpu/cpu.current" | cut -c1-12)
	[ "$new" != "$old" ] && [ "$bad" != "$new" ] && [ "$bad" != "$old" ]
	echo "$new" > "$W/next/sha"
	# a job on the other node, running when both reimages start
	id=$(cl_job_on "$other" 60)
	t0=$(date +%s)
	cl_reimage "$other" "cpu@$bad" "$W/broken/out" 3>&- &
	bpid=$!
	cl_reimage "$n" "cpu@$new" "$W/next/out" || rc=$?
	# the timeline: drain, idle, point, enroll, power, verdict, resume
	run cl_reimage_show "$n" "cpu@$new"
	[ "$rc" = 0 ] || { kill "$bpid" 2>/dev/null; return 1; }
	[ "$output" = "start batch drain idle point enroll power verdict resume end" ]
	jq -e 'select(.event == "end") | .resumed == 1 and .failed == 0' "$W/log/reimage-$n-$new.json"
	cl_time "$n reimage to cpu@$new: start -> resumed: $(( $(date +%s) - t0 )) s"
	cl_log "$n BMC: $(tr '\n' ';' < "$W/log/bmc-$n.log" | tail -c 200)"
	# the node booted the new image's kernel and initramfs from the
	# server, and nodeforge status names that image (the kernel of the
	# node's own entry in nodes.json, not its role's), verified
	grep -E "^[^ ]+ $(cl_ip "$n") \"GET /images/cpu/cpu-$new\.vmlinuz\" 200 " "$W/log/serve.log"
	grep -E "^[^ ]+ $(cl_ip "$n") \"GET /images/cpu/cpu-$new\.initramfs\.cpio\.zst\" 200 " "$W/log/serve.log"
	run cl_status_of "$n"
	cl_log "$n in nodeforge status: $output"
	[[ "$output" == "verified cpu@$new "* ]]
	cl_wait 120 "cl_idle $n" || { echo "$n: '$(cl_sinfo_state "$n")' in sinfo after the reimage"; return 1; }
	# the new build's value is the node's
	run cl_ssh "$n" 'sysctl -n vm.max_map_count'
	[ "$output" = 262144 ]
	run cl_ssh "$LOGIN" "timeout 60 srun -p cpu -w $n hostname"
	[ "$output" = "$n" ]
	# the other node's job was not touched: it ran to its end
	cl_job_completed "$id"
	# the other node: drained at once, idle once its job ended, then its
	# broken build's verdict failed; it stays drained with the root cause
	wait "$bpid" || brc=$?
	run cl_reimage_show "$other" "cpu@$bad"
	cl_time "$other reimage to the broken cpu@$bad: start -> failed: $(( $(date +%s) - t0 )) s"
	[ "$brc" = 1 ]
	[ "$output" = "start batch drain idle point enroll power verdict fail end" ]
	jq -e 'select(.event == "end") | .resumed == 0 and .failed == 1' "$W/log/reimage-$other-$bad.json"
	run cl_node_reason "$other"
	cl_log "$other in Slurm: $output"
	[[ "$output" == *DRAIN*"Reason=nodeforge reimage failed: "*sysctl* ]]
	run cl_status_of "$other"
	cl_log "$other in nodeforge status: $output"
	[[ "$output" == "failed cpu@$bad "*sysctl* ]]
	# the value its kernel refused is not the node's
	run cl_ssh "$other" 'sysctl -n kernel.pid_max'
	[ "$output" != 99999999 ]
	touch "$W/ok-reimage"
}

# Two controllers (site slurm.state_save): both mount the boot server's
# NFS export on StateSaveLocation.  With slurmctld stopped on the primary,
# the backup takes over after SlurmctldTimeout (the profile's 120 s) with
# the queue the primary saved there.  The stop comes here; the power cycle
# below (a node that boots and registers during the takeover) runs while
# the backup waits it out, and the test after it checks the takeover.
@test "the backup controller boots, mounts the shared StateSaveLocation and answers; slurmctld stops on the primary with a held job queued" {
	needs idle
	local ctl2 n id
	ctl2=$(cl_wave 4)
	[ -n "$ctl2" ] && [ -e "$W/power-on-4" ] || { echo "the backup controller was never powered on"; return 1; }
	cl_wait "$(cl_scale 900)" "cl_all_reported $ctl2" || true
	cl_time "wave 4 ($ctl2): power-on -> verdict: $(since power-on-4) s"
	cl_expect_states $ctl2
	for n in "$CTL" "$ctl2"; do
		run cl_ssh "$n" 'findmnt -n -o SOURCE,FSTYPE /var/lib/slurm/slurmctld'
		echo "# $n: StateSaveLocation from $output" >&3
		[[ "$output" == "$IMG_STATE_NFS nfs4" ]]
	done
	cl_wait "$(cl_scale 120)" "cl_ssh \"\$LOGIN\" 'scontrol ping' | grep -q 'Slurmctld(backup) at $ctl2 is UP'" || true
	run cl_ssh "$LOGIN" 'scontrol ping'
	echo "$output" | cl_show
	[[ "$output" == *"Slurmctld(primary) at $CTL is UP"* ]]
	[[ "$output" == *"Slurmctld(backup) at $ctl2 is UP"* ]]
	# a job the primary queued, held so that it stays in the queue
	run cl_ssh "$LOGIN" 'sbatch --parsable --hold -A box -p cpu -N1 --wrap true'
	status_is 0
	id=${output%%;*}
	[[ "$id" =~ ^[0-9]+$ ]]
	echo "$id" > "$W/held-job"
	run cl_ssh "$CTL" 'systemctl stop slurmctld'
	status_is 0
	date +%s > "$W/ctld-stopped"
	touch "$W/ok-ha"
}

@test "a CPU node power-cycled through its BMC (nodeforge power cycle) boots again, re-enrolls and rejoins idle" {
	needs idle
	local n before t0
	n=$(cl_nodes | awk '$4 == "cpu" { print $1; exit }')
	before=$(cl_verdict_at "$n")
	# a diskless node comes back without its munge key: the operator
	# lets it claim it once more
	run nf -C "$PROFS" -s "$W/site.yaml" enroll open "$n" --for 30m --reenroll -i "$INV"
	status_is 0
	t0=$(date +%s)
	# through its BMC, as an operator cycles a hung node
	run cl_nf power cycle "$n"
	echo "$output" | cl_show
	status_is 0
	# a new event, and past booting: the new verdict
	cl_wait "$(cl_scale 900)" '{ cl_check_panic "$n" || true; } &&
		[ "$(cl_verdict_at "$n")" != "$before" ] &&
		[ "$(cl_state "$n")" != booting ] || ! kill -0 "$(cl_pid "vm-$n")" 2>/dev/null' ||
		{ echo "$n: no new verdict ($(cl_state "$n") since $(cl_verdict_at "$n"))"; return 1; }
	[ "$(cl_state "$n")" = verified ]
	cl_wait "$(cl_scale 600)" "cl_idle $n" || {
		echo "$n is '$(cl_sinfo_state "$n")' in sinfo after its second boot, not idle"
		return 1
	}
	cl_time "$n power-cycle -> idle: $(( $(date +%s) - t0 )) s"
	run cl_ssh "$LOGIN" "timeout 60 srun -p cpu -w $n hostname"
	status_is 0
	[ "$output" = "$n" ]
}

@test "the backup controller took over: scontrol ping, the held job still known, srun runs under it" {
	needs ha
	local ctl2 id
	ctl2=$(cl_wave 4)
	id=$(cat "$W/held-job")
	cl_wait "$(cl_scale 400)" "cl_ssh \"\$ctl2\" 'grep -q \"taking over\" /var/log/slurm/slurmctld.log'" || {
		echo "$ctl2 never took over:"
		cl_ssh "$ctl2" 'tail -n 20 /var/log/slurm/slurmctld.log'
		return 1
	}
	run cl_ssh "$ctl2" 'grep "taking over" /var/log/slurm/slurmctld.log'
	echo "# $ctl2: $output" >&3
	cl_time "slurmctld stopped on $CTL -> $ctl2 took over (seen at): $(since ctld-stopped) s"
	run cl_ssh "$LOGIN" 'scontrol ping'
	echo "$output" | cl_show
	[[ "$output" == *"Slurmctld(primary) at $CTL is DOWN"* ]]
	[[ "$output" == *"Slurmctld(backup) at $ctl2 is UP"* ]]
	# the queue survived: the held job, read back from the export
	run cl_ssh "$LOGIN" "timeout 120 squeue -h -j $id -o '%i %T %r'"
	echo "# after the takeover: $output" >&3
	status_is 0
	[ "$output" = "$id PENDING JobHeldUser" ]
	# and the backup schedules: a new job runs to completion
	run cl_ssh "$LOGIN" 'timeout 180 srun -A box -p cpu -N1 hostname'
	echo "# srun under $ctl2: $output" >&3
	status_is 0
	cl_nodes | awk '$4 == "cpu" { print $1 }' | grep -qx "$output"
	run cl_ssh "$LOGIN" "scancel $id"
	status_is 0
	touch "$W/ok-takeover"
}

# The node the broken build left drained is reimaged to the next build,
# under the backup controller, while a job runs on the first (which the
# reimage above and the power cycle left on the next build): both CPU
# nodes end idle on it, and nodeforge status names it for both.
@test "reimage under the backup controller: the node its broken build left drained moves to the next build while a job runs on the other; both CPU nodes idle on it" {
	needs reimage takeover
	local n other id new t0 rc=0
	n=$(cl_nodes | awk '$4 == "cpu" { m = $1 } END { print m }')
	other=$(cl_node_of cpu)
	new=$(cat "$W/next/sha")
	id=$(cl_job_on "$other" 45)
	t0=$(date +%s)
	cl_reimage "$n" "cpu@$new" "$W/next/out" || rc=$?
	run cl_reimage_show "$n" "cpu@$new"
	[ "$rc" = 0 ]
	[ "$output" = "start batch drain idle point enroll power verdict resume end" ]
	cl_time "$n reimage to cpu@$new (under the backup controller): start -> resumed: $(( $(date +%s) - t0 )) s"
	cl_job_completed "$id"
	for n in "$n" "$other"; do
		cl_wait 120 "cl_idle $n" || { echo "$n: '$(cl_sinfo_state "$n")' in sinfo"; return 1; }
		run cl_status_of "$n"
		cl_log "$n in nodeforge status: $output"
		[[ "$output" == "verified cpu@$new "* ]]
		run cl_ssh "$n" 'sysctl -n vm.max_map_count'
		[ "$output" = 262144 ]
	done
	run cl_ssh "$LOGIN" 'scontrol ping'
	[[ "$output" == *"Slurmctld(backup) at"*"is UP"* ]]
}
