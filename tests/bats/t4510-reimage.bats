#!/usr/bin/env bats
# make test: beside the cluster
# nodeforge reimage against a real slurmctld and slurmd (Debian's slurm
# packages, auth/none, on loopback), a real `nodeforge serve`, and the
# Redfish stand-in of t4500 as each node's BMC.  The machine itself is a
# stand-in too (node_standin below): when its BMC is told to cycle it,
# it restarts its slurmd and posts the verdict of its file to the server,
# as a node booting the new image would.
load helper

PROFILES=$FIXTURES/boot/profiles

free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

setup() {
	command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
		command -v scontrol >/dev/null ||
		skip "slurmctld, slurmd or scontrol not installed (Debian packages slurmctld, slurmd, slurm-client)"
	# slurmd runs jobs as their users and binds its spool as root
	[ "$(id -u)" = 0 ] || skip "slurmd and the test job need root"
	nf_setup
	PIDS=
	umask 077
	printf 's3cret\n' > bmc.password
	printf 'default: { user: admin, password_file: %s/bmc.password }\n' "$SCRATCH" > bmc.yaml
	umask 022
	cat > site.yaml <<-EOF
	cluster: t
	distro: debian12
	networks:
	  provisioning: { cidr: 10.0.0.0/16 }
	secrets:
	  bmc: { path: $SCRATCH/bmc.yaml }
	EOF
	echo "nodes:" > racks.yaml
	for i in 1 2; do
		python3 "$NF_SRCDIR/tests/bats/redfish_standin.py" rf$i.port admin s3cret rf$i.log 3>&- &
		PIDS="$PIDS $!"
		for _ in $(seq 100); do [ -s rf$i.port ] && break; sleep 0.05; done
		cat >> racks.yaml <<-EOF
		  - name: cpu-0$i
		    mac: 52:54:00:00:05:0$i
		    ip: 10.0.5.$i
		    role: compute
		    rack: r01
		    bmc: { address: 127.0.0.1, port: $(cat rf$i.port), protocol: redfish, scheme: http }
		EOF
	done
	nf -C "$PROFILES" -s site.yaml pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 \
		--kernel-args compute=quiet >/dev/null
	cp tree/ipxe/mac/52-54-00-00-05-01.ipxe rendered.ipxe
	cp tree/nodes.json rendered.json
	"$NF_BIN" serve --tree tree --listen 127.0.0.1:0 --state state -q > serve.log 2>&1 3>&- &
	PIDS="$PIDS $!"
	nf_wait_url serve.log
	nf -C "$PROFILES" -s site.yaml power on 'cpu-[01-02]' >/dev/null
	start_slurm
	SHA=$(jq -r .rootfs_sha256 "$FIXTURES/boot/out/compute/compute.current" | cut -c1-12)
}

teardown() {
	local f p pids=() i
	# the jobs first: a job step whose slurmctld is gone keeps retrying
	# its last message, and its slurmd does not end on SIGTERM meanwhile
	if [ -n "${SLURM_CONF:-}" ]; then timeout 5 scancel --full -p p 2>/dev/null || true; fi
	for f in slurmd-cpu-01.pid slurmd-cpu-02.pid sim-cpu-01.pid sim-cpu-02.pid ctld.pid; do
		[ -s "${SCRATCH:-/nonexistent}/$f" ] && pids+=("$(cat "$SCRATCH/$f")")
	done
	for p in ${PIDS:-}; do pids+=("$p"); done
	# this test's slurmstepds (slurmd's double-forked children), by the
	# SLURM_CONF they inherited
	for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
		if [ -n "${SLURM_CONF:-}" ] &&
			tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
			pids+=("$p")
		fi
	done
	[ ${#pids[@]} = 0 ] || kill "${pids[@]}" 2>/dev/null || true
	# what has not ended after 5 s is killed
	for i in $(seq 50); do
		kill -0 "${pids[@]}" 2>/dev/null || break
		sleep 0.1
	done
	[ ${#pids[@]} = 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	nf_teardown
}

# slurmctld and a slurmd per node, each on its own loopback port
start_slurm() {
	local cp dp1 dp2
	cp=$(free_port) dp1=$(free_port) dp2=$(free_port)
	mkdir -p slurm/state slurm/spool
	cat > slurm/slurm.conf <<-EOF
	ClusterName=t
	SlurmctldHost=localhost(127.0.0.1)
	SlurmctldPort=$cp
	AuthType=auth/none
	CredType=cred/none
	SlurmUser=$(id -un)
	StateSaveLocation=$SCRATCH/slurm/state
	SlurmdSpoolDir=$SCRATCH/slurm/spool/%n
	SlurmctldPidFile=$SCRATCH/slurm/ctld.pid
	SlurmdPidFile=$SCRATCH/slurm/slurmd-%n.pid
	SlurmctldLogFile=$SCRATCH/slurm/ctld.log
	SlurmdLogFile=$SCRATCH/slurm/slurmd-%n.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	SchedulerType=sched/builtin
	SelectType=select/linear
	ReturnToService=2
	MpiDefault=none
	SwitchType=switch/none
	NodeName=cpu-01 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$dp1 CPUs=1 RealMemory=100 State=UNKNOWN
	NodeName=cpu-02 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$dp2 CPUs=1 RealMemory=100 State=UNKNOWN
	PartitionName=p Nodes=cpu-0[1-2] Default=YES State=UP
	EOF
	export SLURM_CONF=$SCRATCH/slurm/slurm.conf
	slurmctld -D -i > slurm/ctld.out 2>&1 3>&- &
	echo $! > ctld.pid
	for _ in $(seq 100); do scontrol ping >/dev/null 2>&1 && break; sleep 0.1; done
	start_slurmd cpu-01
	start_slurmd cpu-02
	for _ in $(seq 100); do
		[ "$(sinfo -h -N -o '%N %T' | grep -c ' idle$')" = 2 ] && return 0
		sleep 0.1
	done
	sinfo -N; cat slurm/ctld.log
	return 1
}

start_slurmd() {
	if [ -s "slurmd-$1.pid" ]; then
		kill "$(cat "slurmd-$1.pid")" 2>/dev/null
		while kill -0 "$(cat "slurmd-$1.pid")" 2>/dev/null; do sleep 0.05; done
	fi
	slurmd -D -N "$1" >> "slurm/slurmd-$1.out" 2>&1 3>&- &
	echo $! > "slurmd-$1.pid"
}

# The node NAME (stand-in for the machine, not for Slurm or the server):
# every power cycle or power on its BMC (stand-in $2) takes from now on
# fetches its boot entry from the server (by its MAC, 52:54:00:00:05:0$2),
# restarts its slurmd (unless frozen-NAME exists) and posts
# verdict-NAME.json, as its verifier would
node_standin() {
	(
		seen=$(grep -c '"POST"' "rf$2.log")
		while :; do
			n=$(grep -c '"POST"' "rf$2.log")
			if [ "$n" -gt "$seen" ]; then
				seen=$n
				curl -sf "$U/ipxe/mac/52-54-00-00-05-0$2.ipxe" >/dev/null
				[ -e "frozen-$1" ] || start_slurmd "$1"
				curl -sf -X POST --data-binary "@verdict-$1.json" \
					"$U/api/v1/nodes/$1/verdict" >/dev/null
			fi
			sleep 0.2
		done
	) 3>&- &
	echo $! > "sim-$1.pid"
}

node_field() {
	scontrol show node -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# the node's Slurm state is $2 (within 5 s: a registration in flight
# may show for a moment)
state_is() {
	local s
	for _ in $(seq 50); do
		s=$(node_field "$1" State)
		[ "$s" = "$2" ] && return 0
		sleep 0.1
	done
	echo "node $1: state $s, expected $2" >&2
	return 1
}

reimage() {
	"$NF_BIN" -C "$PROFILES" -s site.yaml reimage --tree tree --images "$FIXTURES/boot/out" \
		--server "$U" --run-dir run --poll 1 --boot-timeout 60 "$@"
}

# ev EVENT: the events of events.json named EVENT, one per line
ev() {
	jq -c "select(.event == \"$1\")" events.json
}

@test "pass: drained, entry pointed, PXE once and cycled, verdict after the cycle, slurmd back, resumed" {
	echo '{"result":"pass"}' > verdict-cpu-01.json
	node_standin cpu-01 1
	before=$(node_field cpu-01 SlurmdStartTime)
	printf '#!ipxe\n# the old image\n' > tree/ipxe/mac/52-54-00-00-05-01.ipxe
	sleep 1
	run reimage cpu-01 --image "compute@$SHA"
	status_is 0
	# one line per step: time, node, event, what it did
	echo "$output" | grep -Eqx "[0-9]{2}:[0-9]{2}:[0-9]{2} cpu-01 +drain +nodeforge reimage to compute@$SHA"
	echo "$output" | grep -Eqx "[0-9]{2}:[0-9]{2}:[0-9]{2} cpu-01 +power +cycle"
	[[ "$output" == *"cpu-01"*"verdict"*"pass"* ]]
	[[ "$output" == *"cpu-01"*"resume"* ]]
	[[ "$output" == *"finished: 1 resumed, 0 failed, 0 pending"* ]]
	# back in service, with a slurmd started after the cycle
	state_is cpu-01 IDLE
	[ "$(node_field cpu-01 SlurmdStartTime)" != "$before" ]
	# the entry names the role's current image again, and the index is
	# as rendered: no kernel of the node's own
	cmp rendered.ipxe tree/ipxe/mac/52-54-00-00-05-01.ipxe
	cmp rendered.json tree/nodes.json
	# the BMC: boot from the network once, then a cycle
	python3 - <<-'EOF'
	import json
	log = [json.loads(l) for l in open("rf1.log")]
	acts = [("PATCH", r["body"]["Boot"]) if r["method"] == "PATCH" else ("POST", r["body"]["ResetType"])
	        for r in log if r["method"] in ("PATCH", "POST")]
	assert acts[-2:] == [("PATCH", {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}),
	                     ("POST", "PowerCycle")], acts
	EOF
	# cpu-02 was not touched
	state_is cpu-02 IDLE
	jq -e '.nodes[0].step == "done" and .status == "finished"' run/*.json
}

# two real builds of compute into out/ (the stand-in bootstrap of t2000
# and t2020; everything after it is the real build): sets OLD and NEW,
# the current one, and renders the tree from out/
two_images() {
	export NODEFORGE_MMDEBSTRAP=$FIXTURES/bin/mmdebstrap
	export NODEFORGE_DNF=$FIXTURES/bin/dnf
	export NF_STUB_LOG=$SCRATCH/stub.log
	mkdir -p ov
	local e
	for e in 1000 2000; do
		nf -C "$PROFILES" -s site.yaml build compute --cache "$SCRATCH/cache" \
			--overlays "$SCRATCH/ov" --epoch $e -q
		[ $e = 1000 ] && OLD=$(jq -r .rootfs_sha256 out/compute/compute.current | cut -c1-12)
	done
	NEW=$(jq -r .rootfs_sha256 out/compute/compute.current | cut -c1-12)
	[ "$OLD" != "$NEW" ]
	nf -C "$PROFILES" -s site.yaml pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images out --network 10.0.0.0/16 --kernel-args compute=quiet >/dev/null
}

@test "rollback: --image compute@OLDER boots a node into an older image still published; prune keeps it, and a pruned one is refused" {
	two_images
	echo '{"result":"pass"}' > verdict-cpu-01.json
	node_standin cpu-01 1
	sleep 1
	run reimage cpu-01 --image "compute@$OLD" --images out
	status_is 0
	echo "$output" | grep -Eqx "[0-9]{2}:[0-9]{2}:[0-9]{2} cpu-01 +point +compute@$OLD"
	[[ "$output" == *"finished: 1 resumed, 0 failed, 0 pending"* ]]
	state_is cpu-01 IDLE
	# the node's entries name the older image's files, placed in the tree
	grep -q "compute-$OLD.vmlinuz" tree/ipxe/mac/52-54-00-00-05-01.ipxe
	grep -q "compute-$OLD.initramfs.cpio.zst" tree/grub/grub.cfg-01-52-54-00-00-05-01
	! grep -q "compute-$NEW" tree/ipxe/mac/52-54-00-00-05-01.ipxe
	cmp out/compute/compute-$OLD.rootfs.tar.zst tree/images/compute/compute-$OLD.rootfs.tar.zst
	# the other node still boots the current one
	grep -q "compute-$NEW.vmlinuz" tree/ipxe/mac/52-54-00-00-05-02.ipxe
	# the server names the kernel each node fetched its entry for: the
	# older one for cpu-01, its role's current one for cpu-02 (booted
	# now, by the same stand-in's fetch)
	curl -sf "$U/ipxe/mac/52-54-00-00-05-02.ipxe" >/dev/null
	run nf status 'cpu-[01-02]' --server "$U" --json
	status_is 3
	echo "$output" | jq -e --arg old "compute@$OLD" --arg new "compute@$NEW" \
		'[.nodes[] | {(.name): [.state, .image]}] | add ==
		 {"cpu-01": ["verified", $old], "cpu-02": ["booting", $new]}' ||
		{ echo "$output"; return 1; }
	# from the node's entry in the index; the other's is as rendered
	jq -e --arg old "compute-$OLD.vmlinuz" \
		'[.nodes[] | {(.name): .kernel}] | add == {"cpu-01": $old, "cpu-02": null}' tree/nodes.json
	jq -e '.roles.compute | startswith("'"$OLD"'")' run/*.json
	# prune honours the rolled-back entry: both images stay
	run nf image prune compute --keep 0 --tree tree --images out
	status_is 0
	[[ "$output" == *"keep"*"compute@$OLD"*"booted"* ]]
	[ -e "out/compute/compute-$OLD.rootfs.tar.zst" ]
	# without the tree the older image goes, and is refused from then on
	run nf image prune compute --keep 0 --images out
	status_is 0
	[ ! -e "out/compute/compute-$OLD.rootfs.tar.zst" ]
	run reimage cpu-02 --image "compute@$OLD" --images out
	status_is 1
	[[ "$output" == *"image compute@$OLD is not published in 'out' (pruned, or never built): the images of role 'compute' are compute@$NEW (current)"* ]]
	state_is cpu-02 IDLE
	# a render points every node at its role's image again: no node's
	# own kernel stays in the index
	nf -C "$PROFILES" -s site.yaml pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
		--images out --network 10.0.0.0/16 --kernel-args compute=quiet >/dev/null
	grep -q "compute-$NEW.vmlinuz" tree/ipxe/mac/52-54-00-00-05-01.ipxe
	jq -e '[.nodes[] | has("kernel")] == [false, false]' tree/nodes.json
}

@test "two reimages of other nodes at once: each waits for the boot tree's lock to point its node (nodes.json is rewritten by one at a time)" {
	local n
	for n in 1 2; do
		echo '{"result":"pass"}' > verdict-cpu-0$n.json
		node_standin cpu-0$n $n
	done
	sleep 1
	# another point holds the tree for 4 s
	flock tree -c 'sleep 4; date +%s > released' &
	holder=$!
	for _ in $(seq 50); do [ ! -e released ] && flock -n tree true 2>/dev/null || break; sleep 0.1; done
	for n in 1 2; do
		reimage cpu-0$n --image "compute@$SHA" --json > events-$n.json 2> err-$n &
		eval "pid$n=\$!"
	done
	wait "$pid1" || { cat err-1; return 1; }
	wait "$pid2" || { cat err-2; return 1; }
	wait "$holder"
	# neither pointed its node before the holder let go of the tree
	for n in 1 2; do
		p=$(jq -r 'select(.event == "point") | .time' events-$n.json)
		[ -n "$p" ]
		[ "$(date -d "$p" +%s)" -ge "$(cat released)" ] ||
			{ echo "cpu-0$n pointed at $p, before the lock was released at $(date -d @"$(cat released)")"; return 1; }
	done
	state_is cpu-01 IDLE
	state_is cpu-02 IDLE
	cmp rendered.json tree/nodes.json
}

@test "a running job is not killed: the node is drained, and cycled only once the job ended" {
	echo '{"result":"pass"}' > verdict-cpu-01.json
	node_standin cpu-01 1
	job=$(sbatch --parsable -w cpu-01 -o /dev/null --wrap 'sleep 6')
	for _ in $(seq 100); do
		[ "$(squeue -h -j "$job" -o %T)" = RUNNING ] && break
		sleep 0.1
	done
	[ "$(squeue -h -j "$job" -o %T)" = RUNNING ]
	reimage cpu-01 --image current --json > events.json
	# the job ran to its end
	scontrol show job "$job" | grep -q "JobState=COMPLETED"
	end=$(date -d "$(scontrol show job "$job" | sed -n 's/.*EndTime=\([^ ]*\).*/\1/p')" +%s)
	drain=$(date -d "$(ev drain | jq -r .time)" +%s)
	idle=$(date -d "$(ev idle | jq -r .time)" +%s)
	[ "$drain" -lt "$end" ]
	[ "$idle" -ge "$end" ]
	ev end | jq -e '.resumed == 1'
}

@test "--drain-timeout: a node whose job outlives it fails, still drained, the job still running" {
	job=$(sbatch --parsable -w cpu-01 -o /dev/null --wrap 'sleep 60')
	for _ in $(seq 100); do
		[ "$(squeue -h -j "$job" -o %T)" = RUNNING ] && break
		sleep 0.1
	done
	run reimage cpu-01 --image current --drain-timeout 2
	status_is 1
	[[ "$output" =~ cpu-01\ +fail\ +jobs\ still\ running\ after\ 2\ s\ \(state\ (ALLOCATED|MIXED)\+DRAIN\) ]]
	[ "$(squeue -h -j "$job" -o %T)" = RUNNING ]
	[ "$(grep -c PowerCycle rf1.log)" = 0 ]
	scontrol show node -o cpu-01 | grep -q "Reason=nodeforge reimage failed: jobs still running after 2 s"
	scancel "$job"
}

@test "--json: one event per line, in order, that jq reads" {
	echo '{"result":"pass"}' > verdict-cpu-02.json
	node_standin cpu-02 2
	sleep 1
	reimage cpu-02 --image current --json > events.json
	jq -e . events.json >/dev/null
	[ "$(jq -r .event events.json | paste -sd' ')" = \
	  "start batch drain idle point power verdict resume end" ]
	ev end | jq -e '.resumed == 1 and .failed == 0 and .status == "finished"'
	ev point | jq -e '.image == "compute@'"$SHA"'" and .node == "cpu-02"'
	ev power | jq -e '.action == "cycle"'
	ev start | jq -e '.roles.compute | startswith("'"$SHA"'")'
}

# the site hands out munge keys (secrets.munge_key), as a site whose boot
# server enrolls its nodes does
site_with_keys() {
	( umask 077 && head -c 1024 /dev/urandom > munge.key )
	sed -i "s|^secrets:\$|secrets:\n  munge_key: { path: $SCRATCH/munge.key }|" site.yaml
	grep -q munge_key site.yaml
}

@test "a site that hands out munge keys: each node's enrollment is opened again just before its power cycle, for --boot-timeout" {
	site_with_keys
	mkdir -m 0700 enroll
	# an earlier window of another node stays as it was
	nf -s site.yaml enroll open cpu-02 --for 1h --enroll-state enroll -i racks.yaml >/dev/null
	echo '{"result":"pass"}' > verdict-cpu-01.json
	node_standin cpu-01 1
	sleep 1
	run reimage cpu-01 --image "compute@$SHA" --enroll-state enroll --json
	status_is 0
	echo "$output" > events.json
	# between the boot entry and the power cycle
	[ "$(jq -r .event events.json | grep -E '^(point|enroll|power)$' | paste -sd' ')" = "point enroll power" ]
	[ "$(ev enroll | jq -r '"\(.node) \(.seconds)"')" = "cpu-01 60" ]
	# the boot server's state: cpu-01 may claim its key for 60 s
	jq -e '(.windows["cpu-01"] | .until - .opened == 60) and (.windows["cpu-02"] | .until - .opened == 3600)' enroll/enroll.json
	state_is cpu-01 IDLE
	# as a line on a terminal
	run reimage cpu-01 --image "compute@$SHA" --enroll-state enroll
	status_is 0
	echo "$output" | grep -Eqx "[0-9]{2}:[0-9]{2}:[0-9]{2} cpu-01 +enroll +open for 60 s"
}

@test "an enrollment state the run cannot use fails before any node is touched; a site without munge keys opens none" {
	echo '{"result":"pass"}' > verdict-cpu-01.json
	node_standin cpu-01 1
	sleep 1
	# no secrets.munge_key: no enroll step, and no state written
	run reimage cpu-01 --image "compute@$SHA" --enroll-state enroll --json
	status_is 0
	[ -z "$(jq -r 'select(.event == "enroll")' <<< "$output")" ]
	[ ! -e enroll ]
	site_with_keys
	: > notadir
	run reimage cpu-01 --image "compute@$SHA" --enroll-state notadir
	echo "$output"
	status_is 1
	[[ "$output" == *notadir* ]]
	[[ "$output" != *drain* ]]
	state_is cpu-01 IDLE
}

@test "--batch 2 --max-down 1: batches shrink to one node at a time; --batch 2 alone drains both together" {
	echo '{"result":"pass"}' > verdict-cpu-01.json
	cp verdict-cpu-01.json verdict-cpu-02.json
	node_standin cpu-01 1
	node_standin cpu-02 2
	sleep 1
	reimage 'cpu-[01-02]' --image current --batch 2 --max-down 1 --json > events.json
	[ "$(ev batch | jq -c .nodes | paste -sd' ')" = '["cpu-01"] ["cpu-02"]' ]
	# cpu-02 was drained only after cpu-01 was back
	[ "$(jq -r 'select(.node) | .node + ":" + .event' events.json | grep -E 'cpu-01:resume|cpu-02:drain' | paste -sd' ')" = \
	  "cpu-01:resume cpu-02:drain" ]
	ev end | jq -e '.resumed == 2'
	sleep 1
	reimage 'cpu-[01-02]' --image current --batch 2 --json > events.json
	[ "$(ev batch | jq -c .nodes)" = '["cpu-01","cpu-02"]' ]
	ev end | jq -e '.resumed == 2'
	state_is cpu-01 IDLE
	state_is cpu-02 IDLE
}

@test "fail: the node stays drained with its root cause as the reason" {
	echo '{"result":"fail","root_causes":[{"id":"gpu.count","message":"expected 8, seen 0"}]}' > verdict-cpu-01.json
	node_standin cpu-01 1
	sleep 1
	run reimage cpu-01 --image "compute@$SHA"
	status_is 1
	[[ "$output" == *"cpu-01"*"fail"*"gpu.count: expected 8, seen 0"* ]]
	[[ "$output" == *"1 of 1 node(s) failed; they stay drained"* ]]
	state_is cpu-01 IDLE+DRAIN
	scontrol show node -o cpu-01 | grep -q "Reason=nodeforge reimage failed: gpu.count: expected 8, seen 0"
	jq -e '.nodes[0].step == "failed"' run/*.json
}

@test "a tree rendered without the node: its point fails naming nodes.json, before any power cycle; it stays drained" {
	{ echo "nodes:"; sed -n '/name: cpu-02/,$p' racks.yaml; } > racks-02.yaml
	[ "$(grep -c 'name: cpu-0' racks-02.yaml)" = 1 ]
	nf -C "$PROFILES" -s site.yaml pxe -i racks-02.yaml -o tree -u http://10.0.0.1:8080 \
		--images "$FIXTURES/boot/out" --network 10.0.0.0/16 --kernel-args compute=quiet >/dev/null
	cp tree/nodes.json rendered.json
	run reimage cpu-01 --image current
	status_is 1
	[[ "$output" == *"cpu-01"*"fail"*"'tree/nodes.json' has no node 'cpu-01': render the tree with 'nodeforge pxe' for this inventory first"* ]]
	[[ "$output" != *"cpu-01"*"power"* ]]
	state_is cpu-01 IDLE+DRAIN
	[ ! -e tree/ipxe/mac/52-54-00-00-05-01.ipxe ]
	cmp rendered.json tree/nodes.json
}

@test "a passing verdict is not enough: without a slurmd registered after the cycle the node stays drained" {
	echo '{"result":"pass"}' > verdict-cpu-01.json
	touch frozen-cpu-01
	node_standin cpu-01 1
	sleep 1
	run reimage cpu-01 --image current --boot-timeout 4
	status_is 1
	[[ "$output" == *"cpu-01"*"verdict"*"pass"* ]]
	[[ "$output" == *"cpu-01"*"fail"*"slurmd did not register within 4 s of the power cycle (state IDLE+DRAIN)"* ]]
	[[ "$output" != *"cpu-01"*" resume "* ]]
	state_is cpu-01 IDLE+DRAIN
	scontrol show node -o cpu-01 | grep -q "Reason=nodeforge reimage failed: slurmd did not register"
}

@test "a BMC that does not answer: the node fails with the BMC's error and stays drained; no scontrol: nothing starts" {
	kill "$(echo $PIDS | cut -d' ' -f2)"
	sleep 0.5
	run reimage cpu-02 --image current
	status_is 1
	[[ "$output" =~ cpu-02\ +fail\ +BMC\ pxe:\ cannot\ fetch\ [^$'\n']*(refused|connect) ]]
	state_is cpu-02 IDLE+DRAIN
	scontrol show node -o cpu-02 | grep -q "Reason=nodeforge reimage failed: BMC pxe: "
	run env PATH=/nonexistent "$NF_BIN" -C "$PROFILES" -s site.yaml reimage --tree tree \
		--images "$FIXTURES/boot/out" --server "$U" --run-dir run2 cpu-01 --image current
	status_is 1
	[[ "$output" == *"nodeforge reimage: cannot run 'scontrol': No such file or directory"* ]]
	state_is cpu-01 IDLE
	jq -e '.nodes[0].step == "pending" and .status == "error"' run2/*.json
}

@test "a node whose power does not come on after the BMC took the cycle fails within --boot-timeout, still drained" {
	nf -C "$PROFILES" -s site.yaml power off cpu-01 >/dev/null
	touch rf1.log.stuck
	start=$(date +%s)
	run reimage cpu-01 --image current --boot-timeout 3
	status_is 1
	[ $(( $(date +%s) - start )) -lt 30 ]
	[[ "$output" =~ cpu-01\ +fail\ +BMC\ on:\ not\ on\ after\ 3\ s:\ the\ BMC\ says\ off ]]
	state_is cpu-01 IDLE+DRAIN
	scontrol show node -o cpu-01 | grep -q "Reason=nodeforge reimage failed: BMC on: not on after 3 s: the BMC says off"
}

@test "--max-failed 1: the run stops after the first failure, the next node untouched" {
	echo '{"result":"fail","root_causes":[{"id":"ib.link","message":"down"}]}' > verdict-cpu-01.json
	cp verdict-cpu-01.json verdict-cpu-02.json
	node_standin cpu-01 1
	node_standin cpu-02 2
	sleep 1
	run reimage 'cpu-[01-02]' --image current --max-failed 1 --json
	status_is 1
	echo "$output" | grep '^{' > events.json
	ev stop | jq -e '.why == "max-failed" and .failed == 1'
	ev end | jq -e '.failed == 1 and .pending == 1 and .status == "stopped"'
	! grep -q '"node":"cpu-02"' events.json
	state_is cpu-01 IDLE+DRAIN
	state_is cpu-02 IDLE
	# cpu-02's BMC was never asked to cycle
	! grep -q PowerCycle rf2.log
}

@test "a second reimage of a node in flight is refused; an interrupted run resumes where it stopped" {
	echo '{"result":"pass"}' > verdict-cpu-01.json
	# no node stand-in yet: the first run waits for a verdict
	"$NF_BIN" -C "$PROFILES" -s site.yaml reimage --tree tree --images "$FIXTURES/boot/out" \
		--server "$U" --run-dir run --poll 1 --boot-timeout 60 \
		cpu-01 --image current --json > first.json 2> first.err 3>&- &
	first=$!
	for _ in $(seq 300); do
		grep -q '"event":"power"' first.json 2>/dev/null && break
		sleep 0.1
	done
	grep -q '"event":"power"' first.json
	run reimage 'cpu-[01-02]' --image current
	status_is 1
	[[ "$output" == *"nodeforge reimage: node 'cpu-01' is being reimaged by another run (process $first holds 'run/locks/cpu-01.lock')"* ]]
	# refused before anything was done to cpu-02
	state_is cpu-02 IDLE
	kill -INT "$first"
	rc=0
	wait "$first" || rc=$?
	[ "$rc" = 4 ]
	grep -q "interrupted: run '.*' saved in 'run/.*.json'; 'nodeforge reimage --resume .*' continues it" first.err
	jq -e '.status == "interrupted" and .nodes[0].step == "cycled"' run/*.json
	state_is cpu-01 IDLE+DRAIN
	# the machine comes up; the resumed run takes it from the verdict on
	node_standin cpu-01 1
	sleep 0.5
	curl -sf -X POST -d '{"result":"pass"}' "$U/api/v1/nodes/cpu-01/verdict" >/dev/null
	start_slurmd cpu-01
	cycles=$(grep -c PowerCycle rf1.log)
	run nf -C "$PROFILES" -s site.yaml reimage --resume --run-dir run --poll 1 --json
	status_is 0
	[ "$(echo "$output" | jq -r .event | paste -sd' ')" = "resume-run verdict resume end" ]
	[ "$(grep -c PowerCycle rf1.log)" = "$cycles" ]
	state_is cpu-01 IDLE
	# nothing left to resume
	run nf -C "$PROFILES" -s site.yaml reimage --resume --run-dir run
	status_is 1
	[[ "$output" == *"no unfinished run in 'run' to resume"* ]]
}

@test "usage errors: no image, a bad image, a role that is not the node's, an image that is not published" {
	run reimage cpu-01
	status_is 2
	[[ "$output" == *"no image named"* ]]
	run reimage --image current
	status_is 2
	[[ "$output" == *"no nodes named"* ]]
	run reimage cpu-01 --image current --batch 0
	status_is 2
	[[ "$output" == *"invalid --batch '0'"* ]]
	run reimage cpu-01 --image compute
	status_is 1
	[[ "$output" == *"invalid image 'compute': ROLE@SHA, ROLE@current or current"* ]]
	run reimage cpu-01 --image login@current
	status_is 1
	[[ "$output" == *"node 'cpu-01' has role 'compute' in 'racks.yaml', not 'login'"* ]]
	run reimage cpu-01 --image compute@0123456789ab
	status_is 1
	[[ "$output" == *"image compute@0123456789ab is not published in '$FIXTURES/boot/out' (pruned, or never built): the images of role 'compute' are compute@$SHA (current)"* ]]
	run reimage cpu-01 --image compute@XYZ
	status_is 1
	[[ "$output" == *"SHA must be 12 to 64 lower-case hex digits"* ]]
	run reimage cpu-01,cpu-01 --image current
	status_is 1
	[[ "$output" == *"node 'cpu-01' is named twice"* ]]
	run reimage cpu-09 --image current
	status_is 1
	[[ "$output" == *"no node 'cpu-09' in 'racks.yaml'"* ]]
	# nothing was drained
	state_is cpu-01 IDLE
	run nf reimage --help
	status_is 0
	[[ "$output" == "usage: nodeforge reimage HOSTLIST --image"* ]]
}

@test "bash completion: reimage and its options" {
	PATH=$(dirname "$NF_BIN"):$PATH
	# shellcheck disable=SC1091
	source "$NF_SRCDIR/dist/nodeforge.bash"
	[ "$(comp nodeforge reim)" = reimage ]
	comp nodeforge reimage --max | grep -qx -- --max-failed
	comp nodeforge reimage --res | grep -qx -- --resume
	[ "$(comp nodeforge reimage -i "$NF_SRCDIR/examples/racks.yaml" gpu-0 | paste -sd' ')" = "gpu-01 gpu-02 gpu-03 gpu-04" ]
	[ "$(comp nodeforge -C "$NF_SRCDIR/profiles" reimage gpu-01 --image cont)" = controller@current ]
	[ "$(comp nodeforge reimage gpu-01 --image cur)" = current ]
}
