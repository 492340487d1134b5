#!/usr/bin/env bats
# Enrollment with real components: an HTTP front on loopback, the node-side
# 'nodeforge enroll' over libcurl, and real munged daemons using the
# delivered key.  Needs munge (apt-get install -y munge) and python3.
load ../bats/enroll_helper

setup() {
	command -v munged >/dev/null || skip "munge is not installed"
	nf_setup
	PIDS=()
	enroll_fixture 'Db-Pa55-e2e!'
	node_roots node1 node2 ctl
}

teardown() {
	stop_pids
	nf_teardown
}

# start_munged NAME KEYFILE: a munged on $SCRATCH/NAME.sock
start_munged() {
	mkdir -p -m 700 "m-$1"
	munged -F -f --socket="$SCRATCH/m-$1/sock" --key-file="$2" \
		--pid-file="$SCRATCH/m-$1/pid" --log-file="$SCRATCH/m-$1/log" \
		--seed-file="$SCRATCH/m-$1/seed" 2>"m-$1.err" &
	PIDS+=($!)
	for _ in $(seq 50); do [ -S "m-$1/sock" ] && return 0; sleep 0.1; done
	cat "m-$1.err" >&2
	return 1
}

enroll_gpu01() {
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 \
		--root node1 --bind 127.0.0.2 "$@"
}

@test "a compute node enrolls over HTTP; its munged round-trips with the controller's" {
	start_serve
	start_proxy
	nf enroll open gpu-01 --for 10m >/dev/null
	run enroll_gpu01
	status_is 0
	[[ "$output" == "enrolled gpu-01 (compute): munge key sha256:"* ]]
	cmp node1/etc/munge/munge.key sec/munge.key
	[ "$(stat -c %a node1/etc/munge/munge.key)" = 400 ]
	[ "$(stat -c %u node1/etc/munge/munge.key)" = "$(id -u)" ]
	[ ! -e node1/etc/slurm/slurmdbd.conf ]
	# the answer on the wire does not carry the key, raw or base64
	python3 - <<-'PY'
	import base64
	wire = open("capture.json", "rb").read()
	key = open("sec/munge.key", "rb").read()
	assert b'"sealed"' in wire
	for i in range(0, len(key) - 16, 16):
	    assert key[i:i + 16] not in wire
	assert base64.b64encode(key)[:24] not in wire
	PY
	# real munged: the node's and the controller's share the key
	start_munged node node1/etc/munge/munge.key
	start_munged ctl sec/munge.key
	run bash -c "munge -S m-node/sock -s hello | unmunge -S m-ctl/sock"
	status_is 0
	[[ "$output" == *"STATUS:"*"Success"* ]]
	[[ "$output" == *hello* ]]
	# and a munged with another key does not accept it
	nf keys munge -o other.key >/dev/null
	start_munged other other.key
	run bash -c "munge -S m-node/sock -s hello | unmunge -S m-other/sock"
	[ "$status" -ne 0 ]
}

@test "a controller gets the slurmdbd password, 0600 owner slurm" {
	start_serve
	start_proxy
	mkdir -p ctl/etc/slurm
	printf 'DbdHost=cp-01\nStoragePass=changeme\nStorageUser=slurm\n' > ctl/etc/slurm/slurmdbd.conf
	nf enroll open cp-01 --for 10m >/dev/null
	run nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root ctl --bind 127.0.0.1
	status_is 0
	[[ "$output" == *"slurmdbd password written"* ]]
	[ "$(cat ctl/etc/slurm/slurmdbd.conf)" = "$(printf 'DbdHost=cp-01\nStoragePass=Db-Pa55-e2e!\nStorageUser=slurm')" ]
	[ "$(stat -c %a ctl/etc/slurm/slurmdbd.conf)" = 600 ]
	! grep -q 'Db-Pa55' capture.json
}

@test "a controller whose slurmdbd.conf cannot be written gets no munge key either" {
	start_serve
	mkdir -p ctl/etc/slurm/slurmdbd.conf
	nf enroll open cp-01 --for 10m >/dev/null
	run nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root ctl --bind 127.0.0.1
	status_is 1
	[[ "$output" == *"slurmdbd.conf"*"no munge key was written"*"enroll open cp-01 --reenroll"* ]]
	[ ! -e ctl/etc/munge/munge.key ]
	# the operator re-opens; the node enrolls once its file is fixed
	rmdir ctl/etc/slurm/slurmdbd.conf
	nf enroll open cp-01 --for 10m --reenroll >/dev/null
	run nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root ctl --bind 127.0.0.1
	status_is 0
	[ -s ctl/etc/munge/munge.key ]
	grep -q '^StoragePass=Db-Pa55-e2e!$' ctl/etc/slurm/slurmdbd.conf
}

@test "refusals over HTTP: wrong address, unknown node, no window, second claim" {
	start_serve
	nf enroll open gpu-01 --for 10m >/dev/null
	# gpu-01 is 127.0.0.2 in the inventory; claim from 127.0.0.1
	run nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root node1 --bind 127.0.0.1
	status_is 1
	[[ "$output" == *"HTTP 403"*"came from 127.0.0.1, not from its inventory address 127.0.0.2"* ]]
	run nf enroll --server "$SERVER" --node evil-01 --mac 52:54:00:00:00:09 --root node2 --bind 127.0.0.2
	status_is 1
	[[ "$output" == *"'evil-01' is not a node of the inventory"* ]]
	run nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root node2 --bind 127.0.0.1
	status_is 1
	[[ "$output" == *"no enrollment window for 'cp-01'"* ]]
	run enroll_gpu01
	status_is 0
	run nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root node2 --bind 127.0.0.2
	status_is 1
	[[ "$output" == *"HTTP 409"*"'gpu-01' already enrolled"* ]]
	[ ! -e node2/etc/munge/munge.key ]
	grep -q "REFUSED claim for 'gpu-01' from 127.0.0.2" serve.log
	run nf enroll list --json
	status_is 0
	echo "$output" | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert [r["reason"] for r in d["refusals"]]==["wrong-address","unknown-node","no-window","already-enrolled"], d
assert [c["node"] for c in d["claims"]]==["gpu-01"]'
	# the same through serve: GET /api/v1/enroll
	run curl -sf "$SERVER/api/v1/enroll"
	status_is 0
	echo "$output" | python3 -c '
import json,sys
d=json.load(sys.stdin)
assert [r["reason"] for r in d["refusals"]]==["wrong-address","unknown-node","no-window","already-enrolled"], d
assert "gpu-01" in d["claims"]'
}

@test "a claim after its window is refused" {
	start_serve
	nf enroll open gpu-01 --for 1m >/dev/null
	python3 -c 'import json; p="state/enroll.json"; d=json.load(open(p)); w=d["windows"]["gpu-01"]; w["opened"]-=3600; w["until"]-=3600; json.dump(d,open(p,"w"))'
	run enroll_gpu01
	status_is 1
	[[ "$output" == *"outside its window"* ]]
	[ ! -e node1/etc/munge/munge.key ]
}

@test "a tampered answer is rejected by the node and nothing is written" {
	start_serve
	start_proxy tamper
	nf enroll open gpu-01 --for 10m >/dev/null
	run enroll_gpu01
	status_is 1
	[[ "$output" == *"sealed box does not open"* ]]
	[ ! -e node1/etc/munge ]
}

@test "neither the boot tree, the state, nor shipped trees hold the key or password" {
	start_serve
	start_proxy
	nf enroll open 'gpu-01,cp-01' --for 10m >/dev/null
	enroll_gpu01 >/dev/null
	nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root ctl --bind 127.0.0.1 >/dev/null
	[ -d boot ]
	nf profile show compute --json > profile-compute.json
	python3 - "$NF_SRCDIR" <<-'PY'
	import base64, os, sys
	key = open("sec/munge.key", "rb").read()
	pw = b"Db-Pa55-e2e!"
	needles = [key[i:i + 16] for i in range(0, len(key) - 16, 64)]
	needles += [base64.b64encode(key)[:32], key.hex().encode()[:32], pw]
	roots = ["boot", "state", "profile-compute.json", "capture.json",
	         os.path.join(sys.argv[1], "overlays"),
	         os.path.join(sys.argv[1], "profiles")]
	scanned = 0
	for r in roots:
	    files = [r] if os.path.isfile(r) else [
	        os.path.join(d, f) for d, _, fs in os.walk(r) for f in fs]
	    for p in files:
	        data = open(p, "rb").read()
	        scanned += 1
	        for n in needles:
	            assert n not in data, "secret found in " + p
	assert scanned > 5, scanned
	print("scanned", scanned)
	PY
}
