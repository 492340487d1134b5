#!/usr/bin/env bats
# nodeforge build --inventory: the image's cluster.conf (which every
# slurm.conf includes) lists the inventory's controller, its Slurm nodes by
# role and one partition per slurmd role (stand-in bootstrap tool, as in
# t2000).
load helper

setup() {
	nf_setup
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	export NF_STUB_LOG=$SCRATCH/stub.log
	mkdir -p ov
	cat > racks.yaml <<'YAML'
nodes:
  - name: ctl-01
    mac: 52:54:00:00:00:01
    ip: 10.0.0.2
    role: controller
  - name: login-01
    mac: 52:54:00:00:00:02
    ip: 10.0.0.3
    role: login
  - name: gpu-[005-006]
    mac: 52:54:00:00:02:05+
    ip: 10.0.2.15+
    role: compute
    rack: r02
  - name: gpu-[001-003]
    mac: 52:54:00:00:01:01+
    ip: 10.0.1.11+
    role: compute
    rack: r01
YAML
}

b() { nf build "$1" --cache "$SCRATCH/cache" --overlays "$SCRATCH/ov" "${@:2}"; }

current() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "out/$1/$1.current" "$2"; }

slurm_conf() {
	zstd -dc "out/$1/$(current "$1" rootfs)" | tar -xO "etc/slurm/${2:-slurm.conf}"
}

@test "build --inventory: cluster.conf lists the controller, the nodes by role, a partition per slurmd role and the profiles' partitions" {
	run b controller -q --inventory racks.yaml
	status_is 0
	slurm_conf controller cluster.conf | grep -E '^(SlurmctldHost|AccountingStorageHost|NodeName|PartitionName)=' > got
	cat > want <<'EOF2'
SlurmctldHost=ctl-01(10.0.0.2)
AccountingStorageHost=ctl-01
NodeName=gpu-[001-003,005-006] Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h100:8,nvme:local:1 Feature=h100,ib CpuSpecList=0-1,128-129 State=UNKNOWN
PartitionName=compute Nodes=gpu-[001-003,005-006] MaxTime=INFINITE State=UP
PartitionName=training Nodes=gpu-[001-003,005-006] MaxTime=7-00:00:00 DefaultTime=1-00:00:00 State=UP OverSubscribe=NO PriorityTier=1 TRESBillingWeights=GRES/gpu=100
PartitionName=inference Nodes=gpu-[001-003,005-006] MaxTime=INFINITE DefaultTime=4:00:00 State=UP OverSubscribe=YES:4 PriorityTier=2 TRESBillingWeights=GRES/gpu=50
PartitionName=interactive Nodes=gpu-[001-003,005-006] Default=YES MaxTime=4:00:00 DefaultTime=1:00:00 State=UP OverSubscribe=NO PriorityTier=3
EOF2
	diff -u want got
}

@test "build without --inventory: slurm.conf has no node lines and includes cluster.conf, which the image lacks" {
	run b controller -q
	status_is 0
	! slurm_conf controller | grep -E '^(NodeName|PartitionName=[^D]|SlurmctldHost)'
	slurm_conf controller | grep -qx 'ClusterName=production'
	slurm_conf controller | grep -qx 'Include /etc/slurm/cluster.conf'
	run slurm_conf controller cluster.conf
	[ "$status" -ne 0 ]
}

@test "build --inventory: a changed inventory rebuilds, the same one is a cache hit" {
	run b controller -q --inventory racks.yaml
	status_is 0
	sha=$(current controller rootfs_sha256)
	run b controller --inventory racks.yaml
	status_is 0
	[[ "$output" == *"(unchanged)"* ]]
	sed -i 's/gpu-\[001-003\]/gpu-[001-004]/' racks.yaml
	run b controller -q --inventory racks.yaml
	status_is 0
	[ "$(current controller rootfs_sha256)" != "$sha" ]
	slurm_conf controller cluster.conf | grep -q '^NodeName=gpu-\[001-006\] '
}

@test "build --inventory: a bad inventory fails naming file:line:col, nothing published" {
	sed -i 's/ip: 10.0.0.3/ip: 10.0.0.300/' racks.yaml
	run b controller --inventory racks.yaml
	status_is 1
	[[ "$output" == *"nodeforge build: inventory: racks.yaml:8:5: malformed IP address '10.0.0.300'"* ]]
	[ ! -e out/controller/controller.current ]
	run b controller --inventory nosuch.yaml
	status_is 1
	[[ "$output" == *"nosuch.yaml"* ]]
	[ ! -e out/controller/controller.current ]
}
