#!/usr/bin/env bats
# One cluster from the inventory: the controllers, nodes and partitions
# every node's slurm.conf includes (cluster.conf) and the hosts block,
# rendered by 'cluster show' and 'pxe', fetched from a real 'nodeforge
# serve' by 'cluster fetch'; the checks that refuse a site whose
# controllers are not the inventory's and roles that disagree on slurm.conf.
load helper

setup() {
	nf_setup
	INV=$NF_SRCDIR/examples/racks.yaml
}

teardown() {
	[ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
	nf_teardown
}

serve_tree() {
	: > serve.log
	"$NF_BIN" serve --tree "$1" --listen 127.0.0.1:0 --state state \
		> serve.log 2>&1 3>&- &
	SPID=$!
	nf_wait_url serve.log
}

# root/ trusts keys/signing.pub, as an image trusts the key it was built with
trust_root() {
	nf keys signing -o keys -q
	mkdir -p root/etc/nodeforge
	cp keys/signing.pub root/etc/nodeforge/
}

@test "cluster show: the controller, the accounting host, the nodes and partition from the inventory" {
	run nf cluster show -i "$INV"
	status_is 0
	grep -v '^#' <<<"$output" > got
	cat > want <<'EOF'
SlurmctldHost=ctl-01(10.0.0.2)
AccountingStorageHost=ctl-01
NodeName=gpu-[01-04] Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h100:8,nvme:local:1 Feature=h100,ib CpuSpecList=0-1,128-129 State=UNKNOWN
PartitionName=compute Nodes=gpu-[01-04] MaxTime=INFINITE State=UP
PartitionName=training Nodes=gpu-[01-04] MaxTime=7-00:00:00 DefaultTime=1-00:00:00 State=UP OverSubscribe=NO PriorityTier=1 TRESBillingWeights=GRES/gpu=100
PartitionName=inference Nodes=gpu-[01-04] MaxTime=INFINITE DefaultTime=4:00:00 State=UP OverSubscribe=YES:4 PriorityTier=2 TRESBillingWeights=GRES/gpu=50
PartitionName=interactive Nodes=gpu-[01-04] Default=YES MaxTime=4:00:00 DefaultTime=1:00:00 State=UP OverSubscribe=NO PriorityTier=3
EOF
	diff -u want got
	run nf cluster show -i "$INV" --hosts
	status_is 0
	[[ "$output" == *$'10.0.0.2\tctl-01.cluster.internal ctl-01'* ]]
	[[ "$output" == *$'10.0.1.14\tgpu-04.cluster.internal gpu-04'* ]]
}

@test "cluster show: training and inference take the GPU nodes, the default partition interactive every slurmd node" {
	run nf cluster show -i "$NF_SRCDIR/examples/cluster-box.yaml"
	status_is 0
	grep '^PartitionName=' <<<"$output" | cut -d' ' -f1-3 > got
	cat > want <<'EOF'
PartitionName=compute Nodes=gpu-01 MaxTime=INFINITE
PartitionName=cpu Nodes=cpu-[01-02] MaxTime=INFINITE
PartitionName=training Nodes=gpu-01 MaxTime=7-00:00:00
PartitionName=inference Nodes=gpu-01 MaxTime=INFINITE
PartitionName=interactive Nodes=gpu-01,cpu-[01-02] Default=YES
EOF
	diff -u want got
}

@test "cluster show: a site's slurm.partitions replace the embedded ones" {
	cp "$NF_SRCDIR/profiles/site.yaml" site.yaml
	cat >> site.yaml <<'EOF'
slurm:
  partitions:
    - name: long
      roles: [compute]
      options: { Default: "YES", MaxTime: 14-00:00:00 }
    - name: fixed
      nodes: gpu-[01-02]
    - name: nowhere
      roles: [nosuchrole]
EOF
	run nf -s site.yaml cluster show -i "$INV"
	status_is 0
	grep '^PartitionName=\|^# partition' <<<"$output" > got
	cat > want <<'EOF'
PartitionName=compute Nodes=gpu-[01-04] MaxTime=INFINITE State=UP
PartitionName=long Nodes=gpu-[01-04] Default=YES MaxTime=14-00:00:00
PartitionName=fixed Nodes=gpu-[01-02]
# partition nowhere: the inventory has no node of its roles
EOF
	diff -u want got
	run nf -s site.yaml lint -i "$INV"
	status_is 0
}

@test "cluster show: a rack's gpu_type gives its nodes their own NodeName line with Gres=gpu:TYPE" {
	cp "$INV" inv.yaml
	cat >> inv.yaml <<'EOF'
  - name: gpu-[05-06]
    mac: 52:54:00:00:02:01+
    ip: 10.0.2.11+
    role: compute
    rack: r02
    gpu_type: h200
EOF
	run nf cluster show -i inv.yaml
	status_is 0
	grep '^NodeName=\|^PartitionName=training' <<<"$output" > got
	cat > want <<'EOF'
NodeName=gpu-[01-04] Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h100:8,nvme:local:1 Feature=h100,ib CpuSpecList=0-1,128-129 State=UNKNOWN
NodeName=gpu-[05-06] Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=2000000 Gres=gpu:h200:8,nvme:local:1 Feature=h200,ib CpuSpecList=0-1,128-129 State=UNKNOWN
PartitionName=training Nodes=gpu-[01-06] MaxTime=7-00:00:00 DefaultTime=1-00:00:00 State=UP OverSubscribe=NO PriorityTier=1 TRESBillingWeights=GRES/gpu=100
EOF
	diff -u want got
	sed -i 's/gpu_type: h200/gpu_type: "H 200"/' inv.yaml
	run nf cluster show -i inv.yaml
	status_is 3
	[[ "$output" == *"'gpu_type' must be a GRES type such as h100 or h200"* ]]
}

@test "lint --inventory: two controllers without a shared StateSaveLocation are refused; with the site's NFS export they render" {
	cp "$INV" inv.yaml
	cat >> inv.yaml <<'EOF'
  - name: ctl-02
    mac: 52:54:00:00:00:09
    ip: 10.0.0.9
    role: controller
    rack: r00
EOF
	run nf lint -i inv.yaml
	status_is 3
	[[ "$output" == *"has 2 controllers (ctl-01, ctl-02) but"*"names no shared StateSaveLocation"* ]]
	run nf cluster show -i inv.yaml
	status_is 3
	run nf -s "$FIXTURES/site-state-save.yaml" lint -i inv.yaml
	status_is 0
	run nf -s "$FIXTURES/site-state-save.yaml" cluster show -i inv.yaml
	status_is 0
	[[ "$output" == *$'SlurmctldHost=ctl-01(10.0.0.2)\nSlurmctldHost=ctl-02(10.0.0.9)\n'* ]]
}

@test "lint --inventory: the shipped site and the example rack agree" {
	run nf lint -i "$INV"
	status_is 0
}

@test "lint --inventory: a site whose controllers are not the inventory's fails, naming both" {
	run nf -s "$FIXTURES/site-good.yaml" lint -i "$INV"
	status_is 3
	[[ "$output" == *"controllers[0] cp-01 (10.0.0.10) is not a controller node of inventory"* ]]
	[[ "$output" == *"(its controllers: ctl-01 10.0.0.2)"* ]]
	run nf -s "$FIXTURES/site-good.yaml" cluster show -i "$INV"
	status_is 3
}

@test "roles that disagree on a slurm.conf setting are refused, naming both roles and the key" {
	cp -r "$NF_SRCDIR/profiles" p
	printf 'slurm:\n  conf:\n    KillWait: 60\n' >> p/login.yaml
	run nf -C p cluster show -i "$INV"
	status_is 3
	[[ "$output" == *"roles 'compute' and 'login' disagree on slurm.conf KillWait"* ]]
	run nf -C p lint -i "$INV"
	status_is 3
}

@test "an inventory without a controller: pxe warns and writes no cluster files" {
	printf 'nodes:\n  - { name: gpu-01, mac: "52:54:00:00:01:01", ip: 10.0.1.11, role: compute }\n' > inv.yaml
	run nf pxe -i inv.yaml -o tree -u http://10.0.0.1:8080 --images "$FIXTURES/boot/out"
	status_is 0
	[[ "$output" == *"warning: inventory inv.yaml has no controller"*"fail slurm.cluster"* ]]
	[ ! -e tree/cluster/slurm.conf ]
	run nf cluster show -i inv.yaml
	status_is 1
}

@test "cluster fetch: installs cluster.conf and the hosts block from the server, keeps the rest of /etc/hosts, twice the same" {
	trust_root
	run nf pxe -i "$INV" -o tree -u http://10.0.0.1:8080 --images "$FIXTURES/boot/out" --key keys/signing.key
	status_is 0
	cmp tree/cluster/slurm.conf <(nf cluster show -i "$INV")
	serve_tree tree
	mkdir -p root/etc/slurm
	printf '127.0.0.1\tlocalhost\n192.0.2.9\tsite-extra\n' > root/etc/hosts
	run nf cluster fetch --server "$U" --root root
	status_is 0
	cmp root/etc/slurm/cluster.conf tree/cluster/slurm.conf
	grep -qx $'192.0.2.9\tsite-extra' root/etc/hosts
	grep -qx $'10.0.0.3\tlogin-01.cluster.internal login-01' root/etc/hosts
	cp root/etc/hosts hosts.1
	run nf cluster fetch --server "$U" --root root
	status_is 0
	cmp hosts.1 root/etc/hosts
	[ "$(grep -c '^# nodeforge cluster hosts' root/etc/hosts)" = 1 ]
}

@test "cluster fetch: an answer that is not a rendered cluster.conf changes nothing; no server is exit 1" {
	mkdir -p tree/cluster root/etc/slurm
	trust_root
	echo 'SlurmctldHost=evil' > tree/cluster/slurm.conf
	printf '# nodeforge cluster hosts\n# end of nodeforge cluster hosts\n' > tree/cluster/hosts
	echo keep > root/etc/slurm/cluster.conf
	serve_tree tree
	run nf cluster fetch --server "$U" --root root
	status_is 1
	[[ "$output" == *"is not a cluster.conf that nodeforge pxe renders"* ]]
	[ "$(cat root/etc/slurm/cluster.conf)" = keep ]
	run nf cluster fetch --server http://127.0.0.1:1 --root root
	status_is 1
	run nf cluster fetch --root root --sysroot /nonexistent
	[ "$status" -ne 0 ]
}

@test "cluster fetch --wait: a tree without cluster files (404) fails at once; a server that does not answer is retried" {
	mkdir -p tree root/etc/slurm
	trust_root
	serve_tree tree
	SECONDS=0
	run nf cluster fetch --server "$U" --root root --wait 60
	status_is 1
	[ "$SECONDS" -lt 5 ]
	[[ "$output" == *"HTTP 404: the boot tree has no cluster files"* ]]
	[[ "$output" != *"retrying"* ]]
	[ ! -e root/etc/slurm/cluster.conf ]
	SECONDS=0
	run nf cluster fetch --server http://127.0.0.1:1 --root root --wait 5
	status_is 1
	[ "$SECONDS" -ge 5 ]
	[[ "$output" == *"(retrying)"* ]]
}

@test "cluster: usage errors and --help" {
	run nf cluster
	status_is 2
	run nf cluster show
	status_is 2
	run nf cluster frob
	status_is 2
	run nf cluster --help
	status_is 0
	[[ "$output" == *"Include"* ]]
}
