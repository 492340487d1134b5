#!/usr/bin/env bats
# Munge key rotation across two enrolled nodes with real munged processes:
# controller first, then the compute rack; afterwards both round-trip with
# the new key and not with the old.
load ../bats/enroll_helper

setup() {
	command -v munged >/dev/null || skip "munge is not installed"
	nf_setup
	PIDS=()
	enroll_fixture pw
	cp sec/munge.key old.key
	node_roots cp-01 gpu-01
}

teardown() {
	for f in m-*/pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
	stop_pids
	nf_teardown
}

# A restart script per munged: stop it (pid file), start it on the key
make_munged() {
	mkdir -p -m 700 "m-$1"
	cat > "restart-$1.sh" <<-EOF
	#!/bin/sh
	d=$SCRATCH/m-$1
	[ -f \$d/pid ] && kill \$(cat \$d/pid) 2>/dev/null
	for i in \$(seq 50); do [ -S \$d/sock ] || break; sleep 0.05; done
	rm -f \$d/sock
	munged -f --socket=\$d/sock --key-file=$2 --pid-file=\$d/pid \\
		--log-file=\$d/log --seed-file=\$d/seed || exit 1
	for i in \$(seq 50); do [ -S \$d/sock ] && exit 0; sleep 0.05; done
	exit 1
	EOF
	chmod +x "restart-$1.sh"
	"./restart-$1.sh"
}

roundtrip() { munge -S "m-$1/sock" -s ping | unmunge -S "m-$2/sock" >/dev/null 2>&1; }

@test "keys rotate munge: controller then rack, both nodes end on the new key" {
	start_serve
	start_proxy
	nf enroll open 'cp-01,gpu-01' --for 10m >/dev/null
	nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root cp-01 --bind 127.0.0.1 >/dev/null
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root gpu-01 --bind 127.0.0.2 >/dev/null
	make_munged cp-01 "$SCRATCH/cp-01/etc/munge/munge.key"
	make_munged gpu-01 "$SCRATCH/gpu-01/etc/munge/munge.key"
	make_munged old "$SCRATCH/old.key"
	roundtrip gpu-01 cp-01
	roundtrip gpu-01 old

	# the driver stages, then switches group by group; the node agents
	# (a timer's poll on real nodes) start once it is staging, since a
	# poll with no rotation under way ends at once
	"$NF_BIN" keys rotate munge -i racks.yaml --stage-timeout 30 --group-timeout 30 \
		> driver.out 2>&1 &
	DRIVER=$!
	for _ in $(seq 100); do grep -q staging driver.out && break; sleep 0.1; done
	AGENTS=()
	for n in cp-01:127.0.0.1 gpu-01:127.0.0.2; do
		"$NF_BIN" enroll rotate --server "$SERVER" --node ${n%%:*} --root ${n%%:*} \
			--bind ${n#*:} --poll 0.2 --wait 60 \
			--restart "$SCRATCH/restart-${n%%:*}.sh" > agent-${n%%:*}.out 2>&1 &
		PIDS+=($!)
		AGENTS+=($!)
	done
	status=0
	wait "$DRIVER" || status=$?
	output=$(cat driver.out)
	status_is 0
	[[ "$output" == *"cp-01"*"group 0"*"switched: yes"* ]]
	[[ "$output" == *"gpu-01"*"group 1"*"switched: yes"* ]]
	[[ "$output" == *"set secrets.munge_key.fingerprint to sha256:"* ]]
	wait "${AGENTS[@]}"
	grep -q "switched" agent-cp-01.out
	grep -q "switched" agent-gpu-01.out

	# the server holds the new key; the nodes too, 0400; no staged copy left
	! cmp -s sec/munge.key old.key
	cmp sec/munge.key cp-01/etc/munge/munge.key
	cmp sec/munge.key gpu-01/etc/munge/munge.key
	[ "$(stat -c %a gpu-01/etc/munge/munge.key)" = 400 ]
	[ ! -e gpu-01/etc/munge/munge.key.next ]
	[ ! -e state/munge.key.next ]
	# the controller switched before the compute node
	python3 -c '
import json; d=json.load(open("state/rotation.json"))["nodes"]
assert d["cp-01"]["switched"] <= d["gpu-01"]["switched"], d'
	# real munged: new key both ways, and the old key no longer accepted
	roundtrip gpu-01 cp-01
	roundtrip cp-01 gpu-01
	! roundtrip gpu-01 old
	! roundtrip old cp-01
	# nothing of either key went over the wire in the clear
	python3 -c '
w=open("capture.json","rb").read()
for f in ("old.key","sec/munge.key"):
    k=open(f,"rb").read()
    assert all(k[i:i+16] not in w for i in range(0,1000,50))'
}

@test "a node that does not poll is reported as not switched" {
	start_serve
	nf enroll open 'cp-01,gpu-01' --for 10m >/dev/null
	nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root cp-01 --bind 127.0.0.1 >/dev/null
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root gpu-01 --bind 127.0.0.2 >/dev/null
	# the agent starts once the driver stages: a poll with no rotation
	# under way ends at once
	"$NF_BIN" keys rotate munge -i racks.yaml --stage-timeout 3 --group-timeout 5 \
		> driver.out 2>&1 &
	DRIVER=$!
	for _ in $(seq 100); do grep -q staging driver.out && break; sleep 0.1; done
	"$NF_BIN" enroll rotate --server "$SERVER" --node cp-01 --root cp-01 --bind 127.0.0.1 \
		--poll 0.2 --wait 30 --restart true > agent.out 2>&1 &
	PIDS+=($!)
	status=0
	wait "$DRIVER" || status=$?
	output=$(cat driver.out)
	echo "$output"; cat agent.out
	status_is 1
	[[ "$output" == *"cp-01"*"switched: yes"* ]]
	[[ "$output" == *"gpu-01"*"staged: no switched: no"* ]]
	[[ "$output" == *"1 node(s) did not switch"* ]]
	# the straggler switches when it finally polls, proving the old key
	run nf enroll rotate --server "$SERVER" --node gpu-01 --root gpu-01 --bind 127.0.0.2 --poll 0.2 --wait 10 --restart true
	status_is 0
	[[ "$output" == *"gpu-01 switched"* ]]
	cmp sec/munge.key gpu-01/etc/munge/munge.key
	run nf keys rotate munge --status -i racks.yaml
	status_is 0
	[[ "$output" != *"did not switch"* ]]
}

@test "a rotation answer that does not prove the cluster's key is ignored, nothing written" {
	start_serve
	nf enroll open gpu-01 --for 10m >/dev/null
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root gpu-01 --bind 127.0.0.2 >/dev/null
	cp gpu-01/etc/munge/munge.key before.key
	"$NF_BIN" keys rotate munge -i racks.yaml --stage-timeout 3 --group-timeout 3 > driver.out 2>&1 &
	DRIVER=$!
	PIDS+=($DRIVER)
	for _ in $(seq 100); do grep -q staging driver.out && break; sleep 0.1; done
	# a server on the path that does not hold the key cannot prove it
	start_proxy forge
	run nf enroll rotate --server "$SERVER" --node gpu-01 --root gpu-01 --bind 127.0.0.2 \
		--poll 0.2 --wait 5 --restart true
	status_is 1
	[[ "$output" == *"does not prove the server holds this node's munge key"* ]]
	[ ! -e gpu-01/etc/munge/munge.key.next ]
	cmp before.key gpu-01/etc/munge/munge.key
	wait "$DRIVER" || true
}

@test "a rotation poll with a key the server never issued is refused" {
	start_serve
	nf enroll open gpu-01 --for 10m >/dev/null
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root gpu-01 --bind 127.0.0.2 >/dev/null
	nf keys rotate munge -i racks.yaml --stage-timeout 0 --group-timeout 0 >/dev/null || true
	chmod 600 gpu-01/etc/munge/munge.key
	head -c 1024 /dev/urandom > gpu-01/etc/munge/munge.key
	run nf enroll rotate --server "$SERVER" --node gpu-01 --root gpu-01 --bind 127.0.0.2 --wait 5 --restart true
	status_is 1
	[[ "$output" == *"not part of the rotation"* ]]
}
