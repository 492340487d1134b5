#!/usr/bin/env bats
# The gate against a real cluster on loopback: munged + slurmctld, and
# slurmd started through `nodeforge gate`.  A failing node never registers;
# a passing one becomes idle.  Health mode drains and resumes through the
# real scontrol.  The node's hardware is a fixture sysroot.
load ../bats/verify_helper

setup_file() {
	for p in munged slurmctld slurmd scontrol sinfo; do
		command -v "$p" >/dev/null || skip "$p not installed (make deps)"
	done
	[ "$(id -u)" = 0 ] || skip "needs root"
	C=$(mktemp -d "${BATS_TMPDIR:-/tmp}/nfslurm.XXXXXX")
	chmod 755 "$C"
	mkdir -p "$C/munge" "$C/state" "$C/spool" "$C/log"
	chown munge "$C/munge"
	dd if=/dev/urandom of="$C/munge/key" bs=1024 count=1 2>/dev/null
	chown munge "$C/munge/key"
	chmod 0400 "$C/munge/key"
	runuser -u munge -- /usr/sbin/munged --socket="$C/munge/sock" --key-file="$C/munge/key" \
		--pid-file="$C/munge/pid" --log-file="$C/munge/log" --seed-file="$C/munge/seed"
	local p=$((20000 + RANDOM % 20000))
	cat > "$C/slurm.conf" <<CONF
ClusterName=nftest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$p
SlurmdPort=$((p + 1))
AuthType=auth/munge
AuthInfo=socket=$C/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$C/state
SlurmdSpoolDir=$C/spool/%n
SlurmctldPidFile=$C/slurmctld.pid
SlurmdPidFile=$C/slurmd-%n.pid
SlurmctldLogFile=$C/log/slurmctld.log
SlurmdLogFile=$C/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
NodeName=nftest1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN
NodeName=nftest2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((p + 2)) CPUs=1 RealMemory=100 State=UNKNOWN
PartitionName=debug Nodes=nftest[1-2] Default=YES State=UP
CONF
	export SLURM_CONF=$C/slurm.conf C
	slurmctld -i 3>&-
	for _ in $(seq 100); do scontrol ping >/dev/null 2>&1 && break; sleep 0.1; done
}

teardown_file() {
	[ -n "${C:-}" ] || return 0
	for f in "$C"/slurmd-*.pid "$C/slurmctld.pid" "$C/munge/pid"; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	sleep 1
	rm -rf "$C"
}

state_of() { sinfo -N -h -n "$1" -o "%T" | head -n1; }

# wait_state NODE GLOB: up to 10 s for the node's state to match
wait_state() {
	for _ in $(seq 100); do
		# shellcheck disable=SC2053
		[[ "$(state_of "$1")" == $2 ]] && return 0
		sleep 0.1
	done
	echo "state of $1: $(state_of "$1"), wanted $2"
	scontrol show node "$1" -o
	return 1
}

# A fixture sysroot for node $1 (variant $2) whose scontrol is the real one
node_fx() {
	vfx "$2"
	echo "$1" > "$SYS/proc/sys/kernel/hostname"
	# the cluster part of slurm.conf names this node (slurm.cluster)
	printf 'SlurmctldHost=localhost(127.0.0.1)\nNodeName=nftest[1-2] State=UNKNOWN\n' \
		> "$SYS/etc/slurm/cluster.conf"
	jq '.passthrough = ["scontrol"]' "$SYS/fixture.json" > "$SCRATCH/f.json"
	mv "$SCRATCH/f.json" "$SYS/fixture.json"
}

@test "e2e gate: a failing node never starts slurmd and never registers" {
	node_fx nftest2 fail-ib
	run "$NF_BIN" gate --sysroot "$SYS" --fixture "$SYS/fixture.json" \
		--verdict "$SCRATCH/v.json" -- slurmd -D -N nftest2
	status_is 3
	[[ "$output" == *"ib.port.state"* ]]
	sleep 2
	[ ! -f "$C/slurmd-nftest2.pid" ]
	st=$(state_of nftest2)
	[[ "$st" == unknown* || "$st" == *"*" || "$st" == down* ]] || { echo "state $st"; false; }
	! scontrol show node nftest2 -o | grep -q "SlurmdStartTime=20"
}

@test "e2e gate: a passing node starts slurmd and becomes idle" {
	node_fx nftest1 pass
	"$NF_BIN" gate --sysroot "$SYS" --fixture "$SYS/fixture.json" \
		--verdict "$SCRATCH/v.json" -q -- slurmd -D -N nftest1 \
		> "$C/log/gate-nftest1.out" 2>&1 3>&- &
	for _ in $(seq 150); do [ "$(state_of nftest1)" = idle ] && break; sleep 0.1; done
	[ "$(state_of nftest1)" = idle ] || { cat "$C/log/gate-nftest1.out"; state_of nftest1; false; }
	[ "$(jq -r .result "$SCRATCH/v.json")" = pass ]
}

@test "e2e health: a failure drains through scontrol, a pass resumes" {
	wait_state nftest1 idle || skip "nftest1 did not come up"
	node_fx nftest1 fail-gpu
	run "$NF_BIN" verify --sysroot "$SYS" --fixture "$SYS/fixture.json" --health -q
	status_is 3
	wait_state nftest1 'drain*'
	scontrol show node nftest1 -o | grep -q "Reason=nodeforge: gpu.ecc"

	node_fx nftest1 pass
	run "$NF_BIN" verify --sysroot "$SYS" --fixture "$SYS/fixture.json" --health --json
	status_is 0
	[ "$(echo "$output" | jq -r .health_action)" = resume ]
	wait_state nftest1 idle
}

@test "e2e health: a node an operator drained stays drained" {
	wait_state nftest1 idle || skip "nftest1 did not come up"
	scontrol update nodename=nftest1 state=drain reason="bad DIMM B2"
	node_fx nftest1 pass
	run "$NF_BIN" verify --sysroot "$SYS" --fixture "$SYS/fixture.json" --health --json
	status_is 0
	[ "$(echo "$output" | jq -r .health_action)" = none ]
	[[ "$(state_of nftest1)" == drain* ]]
	scontrol update nodename=nftest1 state=resume
}
