#!/usr/bin/env bats
# enroll: windows, claims and refusals through 'enroll answer' (the
# transport-independent server entry), the systemd unit.
load enroll_helper

setup() {
	nf_setup
	PIDS=()
	enroll_fixture db-pass
}

# a test that fails before its own stop_pids still stops its server
teardown() {
	stop_pids
	nf_teardown
}

# A claim body with a random public key
claim() {
	printf '{"name":"%s","mac":"%s","pubkey":"%s","nonce":"%s"}' "$1" "$2" \
		"$(openssl rand -base64 32)" "$(openssl rand -base64 16)"
}

answer() { claim "$1" "$2" | nf enroll answer -i racks.yaml --peer "$3"; }

@test "enroll open arms a window; list shows it; state dir is 0700" {
	run nf enroll open 'gpu-01,cp-01' --for 15m -i racks.yaml
	status_is 0
	[[ "$output" == *"opened enrollment for 2 node(s) for 900 s"* ]]
	[ "$(stat -c %a state)" = 700 ]
	run nf enroll list --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert sorted(w["node"] for w in d["windows"])==["cp-01","gpu-01"] and all(w["open"] for w in d["windows"])'
}

@test "enroll open refuses a name not in the inventory, and a bad duration" {
	run nf enroll open gpu-99 --for 15m -i racks.yaml
	status_is 1
	[[ "$output" == *"'gpu-99' is not a node of 'racks.yaml'"* ]]
	run nf enroll open gpu-01 --for soon
	status_is 2
	[[ "$output" == *"'soon' is not a duration"* ]]
	run nf enroll open gpu-01
	status_is 2
	[[ "$output" == *"open needs --for DURATION"* ]]
}

@test "enroll refuses a state dir inside the served tree, and an open one" {
	mkdir tree
	run nf enroll open gpu-01 --for 1m --state tree/state --tree tree
	status_is 1
	[[ "$output" == *"inside the served tree"* ]]
	[ ! -e tree/state ]
	mkdir -m 755 open
	run nf enroll open gpu-01 --for 1m --state open
	status_is 1
	[[ "$output" == *"chmod 0700"* ]]
}

@test "a claim inside the window is answered sealed, without the key" {
	nf enroll open gpu-01 --for 15m >/dev/null
	run answer gpu-01 52:54:00:00:00:02 127.0.0.2
	status_is 0
	echo "$output" | python3 -c '
import json,sys,base64,hashlib
d=json.loads(sys.stdin.read().splitlines()[-1])
key=open("sec/munge.key","rb").read()
assert d["status"]==200 and d["role"]=="compute"
assert d["munge_fingerprint"]=="sha256:"+hashlib.sha256(key).hexdigest()
blob=base64.b64decode(d["sealed"])
assert key[:32] not in blob and base64.b64encode(key).decode()[:40] not in json.dumps(d)'
}

@test "refusals: unknown node, wrong address, no window, second claim" {
	run answer evil-01 "" 127.0.0.2
	status_is 1
	[[ "$output" == *'"reason":"unknown-node"'* ]]
	[[ "$output" == *"REFUSED"* ]]
	nf enroll open gpu-01 --for 15m >/dev/null
	ino=$(stat -c %i state/enroll.json)
	run answer gpu-01 52:54:00:00:00:02 127.0.0.1
	status_is 1
	[[ "$output" == *'"reason":"wrong-address"'* ]]
	[[ "$output" == *"not from its inventory address 127.0.0.2"* ]]
	run answer cp-01 52:54:00:00:00:01 127.0.0.1
	status_is 1
	[[ "$output" == *'"reason":"no-window"'* ]]
	# refusals are appended to their log; the state is not rewritten
	[ "$(stat -c %i state/enroll.json)" = "$ino" ]
	[ "$(jq -r .reason state/refusals.log | paste -sd' ')" = "unknown-node wrong-address no-window" ]
	[ "$(stat -c %a state/refusals.log)" = 600 ]
	jq -e 'has("refusals") | not' state/enroll.json >/dev/null
	run answer gpu-01 52:54:00:00:00:02 127.0.0.2
	status_is 0
	run answer gpu-01 52:54:00:00:00:02 127.0.0.2
	status_is 1
	[[ "$output" == *'"reason":"already-enrolled"'* ]]
	run nf enroll list
	status_is 0
	[[ "$output" == *"unknown-node:"* ]]
	[[ "$output" == *"wrong-address:"* ]]
	[[ "$output" == *"no-window:"* ]]
	[[ "$output" == *"already-enrolled:"* ]]
	[[ "$output" == *"gpu-01"*"from 127.0.0.2 key sha256:"* ]]
}

@test "a claim whose answer was lost is answered again for the same key; another key is refused" {
	nf enroll open gpu-01 --for 15m >/dev/null
	c=$(claim gpu-01 52:54:00:00:00:02)
	# recorded, then the answer is lost (the server stopped before sending it)
	nf enroll answer -i racks.yaml --peer 127.0.0.2 <<<"$c" >/dev/null
	cp state/enroll.json before.json
	# the node's retry: the same claim, the same public key
	run nf enroll answer -i racks.yaml --peer 127.0.0.2 <<<"$c"
	status_is 0
	[[ "$output" == *'"sealed"'* ]]
	[[ "$output" != *'"reason"'* ]]
	# the claim stays as it was recorded, and no refusal is added
	[ "$(jq -c .claims state/enroll.json)" = "$(jq -c .claims before.json)" ]
	[ ! -e state/refusals.log ]
	# the same key from another address is still the wrong address
	run nf enroll answer -i racks.yaml --peer 127.0.0.1 <<<"$c"
	status_is 1
	[[ "$output" == *'"reason":"wrong-address"'* ]]
	# any other key is a second claim
	run answer gpu-01 52:54:00:00:00:02 127.0.0.2
	status_is 1
	[[ "$output" == *'"reason":"already-enrolled"'* ]]
}

@test "a claim after the window closed is refused as outside the window" {
	nf enroll open gpu-01 --for 1m >/dev/null
	# move the window into the past
	python3 -c 'import json; p="state/enroll.json"; d=json.load(open(p)); w=d["windows"]["gpu-01"]; w["opened"]-=3600; w["until"]-=3600; json.dump(d,open(p,"w"))'
	run answer gpu-01 52:54:00:00:00:02 127.0.0.2
	status_is 1
	[[ "$output" == *'"reason":"outside-window"'* ]]
}

@test "re-opening an enrolled node needs --reenroll" {
	nf enroll open gpu-01 --for 15m >/dev/null
	answer gpu-01 52:54:00:00:00:02 127.0.0.2 >/dev/null
	run nf enroll open gpu-01 --for 15m
	status_is 1
	[[ "$output" == *"already enrolled: give --reenroll"* ]]
	run nf enroll open gpu-01 --for 15m --reenroll
	status_is 0
	run answer gpu-01 52:54:00:00:00:02 127.0.0.2
	status_is 0
}

@test "a group- or world-readable server key is refused, nothing sent" {
	chmod 644 sec/munge.key
	nf enroll open gpu-01 --for 15m >/dev/null
	run answer gpu-01 52:54:00:00:00:02 127.0.0.2
	status_is 1
	[[ "$output" == *"readable by others"* ]]
	[[ "$output" != *sealed* ]]
}

@test "node side: server and node from the kernel command line" {
	mkdir -p sys/proc
	echo "quiet nodeforge.server=http://127.0.0.1:9 nodeforge.node=gpu-01 BOOTIF=01-52-54-00-00-00-02" > sys/proc/cmdline
	run nf enroll --sysroot sys --root root --timeout 2
	status_is 1
	[[ "$output" == *"cannot reach 'http://127.0.0.1:9/api/v1/enroll'"* ]]
	echo "quiet" > sys/proc/cmdline
	run nf enroll --sysroot sys
	status_is 2
	[[ "$output" == *"missing --server"* ]]
}

@test "a server's refusal text is shown with its control bytes escaped" {
	python3 - port <<-'PY' 3>&- &
	import http.server, json, sys
	class H(http.server.BaseHTTPRequestHandler):
	    def log_message(self, *a): pass
	    def do_POST(self):
	        self.rfile.read(int(self.headers.get("Content-Length", 0)))
	        b = json.dumps({"error": "no\x1b]0;pwned\x07\nnodeforge enroll: ok\r\u202e"}).encode()
	        self.send_response(403); self.send_header("Content-Length", str(len(b)))
	        self.end_headers(); self.wfile.write(b)
	s = http.server.HTTPServer(("127.0.0.1", 0), H)
	open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
	__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
	s.serve_forever()
	PY
	PIDS+=($!)
	for _ in $(seq 50); do [ -s port ] && break; sleep 0.1; done
	mkdir -p sys/proc
	echo "nodeforge.server=http://127.0.0.1:$(cat port) nodeforge.node=gpu-01" > sys/proc/cmdline
	run nf enroll --sysroot sys --root root --mac 52:54:00:00:00:02 --timeout 5
	stop_pids
	status_is 1
	[[ "$output" == *'server refused the claim (HTTP 403): no\x1b]0;pwned\x07\x0anodeforge enroll: ok\x0d\xe2\x80\xae'* ]]
	if printf '%s' "$output" | LC_ALL=C grep -qE $'[\x01-\x09\x0b-\x1f\x7f]|\xe2\x80\xae'; then
		printf '%s' "$output" | od -c >&2
		return 1
	fi
}

@test "a repeated nodeforge.node=: enroll and verify both take the last" {
	PIDS=()
	start_serve
	nf enroll open 'cp-01,gpu-01' --for 10m >/dev/null
	mkdir -p sys/proc
	echo "nodeforge.node=cp-01 nodeforge.server=$SERVER quiet nodeforge.node=gpu-01" > sys/proc/cmdline
	# gpu-01 claims from 127.0.0.1, not its own 127.0.0.2: refused by name
	run nf enroll --sysroot sys --root root --mac 52:54:00:00:00:02 --bind 127.0.0.1
	stop_pids
	status_is 1
	[[ "$output" == *"'gpu-01'"* || "$output" == *"gpu-01 "* ]]
	[[ "$output" != *"cp-01"* ]]
	nf -C "$NF_SRCDIR/profiles" profile show compute --json > prof.json
	run nf verify --sysroot sys --profile prof.json --only kernel --json
	[ "$(jq -r .node <<<"$output")" = gpu-01 ]
}

@test "a munge key other than the one the image expects is refused, nothing written" {
	PIDS=()
	start_serve
	nf enroll open gpu-01 --for 10m >/dev/null
	node_roots root
	mkdir -p root/etc/nodeforge
	# the image was built for another cluster key (a rogue or wrong server)
	printf '{"site":{"fingerprints":{"munge_key":"sha256:%064d"}}}' 0 > root/etc/nodeforge/profile.json
	run nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root root --bind 127.0.0.2
	status_is 1
	[[ "$output" == *"this image expects sha256:0000"*"nothing written"* ]]
	[ ! -e root/etc/munge/munge.key ]
	# the image that expects the server's key takes it
	fp=sha256:$(sha256sum < sec/munge.key | cut -d" " -f1)
	printf '{"site":{"fingerprints":{"munge_key":"%s"}}}' "$fp" > root/etc/nodeforge/profile.json
	nf enroll open gpu-01 --for 10m --reenroll >/dev/null
	run nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root root --bind 127.0.0.2
	stop_pids
	status_is 0
	cmp sec/munge.key root/etc/munge/munge.key
}

# The key goes where the munge facet checks it: a profile that moves
# munge.key_path (and its mode) gets the key there from enrollment and
# from a rotation, and verify finds it (the owner: test_enroll.c, since
# node_roots makes every user this one)
@test "a profile with its own munge.key_path and mode: enroll and rotate write the key there, verify passes it" {
	PIDS=()
	start_serve
	nf enroll open gpu-01 --for 10m >/dev/null
	node_roots root
	mkdir -p root/etc/nodeforge
	nf -C "$NF_SRCDIR/profiles" profile show compute --json |
		jq '.munge.key_path = "/etc/munge-site/cluster.key" | .munge.mode = "0600"' \
		> root/etc/nodeforge/profile.json
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root root --bind 127.0.0.2
	cmp sec/munge.key root/etc/munge-site/cluster.key
	[ "$(stat -c %a root/etc/munge-site/cluster.key)" = 600 ]
	[ ! -e root/etc/munge/munge.key ]
	# (a sysroot: the key's checks as on the booted node, not an image's)
	run nf verify --root root --sysroot root --only munge.key --json
	for id in munge.key.present munge.key.mode; do
		[ "$(jq -r ".checks[] | select(.id == \"$id\") | .verdict" <<<"$output")" = pass ]
	done

	# a rotation reads the key there and puts the next one there
	"$NF_BIN" keys rotate munge -i racks.yaml --stage-timeout 20 --group-timeout 20 \
		> driver.out 2>&1 &
	DRIVER=$!
	for _ in $(seq 100); do grep -q staging driver.out && break; sleep 0.1; done
	"$NF_BIN" enroll rotate --server "$SERVER" --node gpu-01 --root root --bind 127.0.0.2 \
		--poll 0.2 --wait 30 > agent.out 2>&1 &
	AGENT=$!
	status=0
	wait "$DRIVER" || status=$?
	wait "$AGENT" || { cat agent.out >&2; false; }
	stop_pids
	output=$(cat driver.out)
	status_is 0
	cmp sec/munge.key root/etc/munge-site/cluster.key
	[ "$(stat -c %a root/etc/munge-site/cluster.key)" = 600 ]
	[ ! -e root/etc/munge-site/cluster.key.next ]
	[ ! -e root/etc/munge/munge.key ]
}

# The slurmdbd password comes in the same sealed answer as the key: an
# answer whose key the image does not expect is from a server without the
# cluster's key, and none of it is written (F3)
@test "a controller refuses the whole answer of a server without the cluster's key: no password written either" {
	PIDS=()
	start_serve
	nf enroll open cp-01 --for 10m >/dev/null
	node_roots root
	mkdir -p root/etc/nodeforge root/etc/slurm
	printf 'DbdHost=cp-01\nStorageUser=slurm\n' > root/etc/slurm/slurmdbd.conf
	printf '{"site":{"fingerprints":{"munge_key":"sha256:%064d"}}}' 0 > root/etc/nodeforge/profile.json
	run nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root root --bind 127.0.0.1
	status_is 1
	[[ "$output" == *"this image expects sha256:0000"*"nothing written"* ]]
	[ ! -e root/etc/munge/munge.key ]
	! grep -q StoragePass root/etc/slurm/slurmdbd.conf
	# the image that expects the server's key takes key and password
	fp=sha256:$(sha256sum < sec/munge.key | cut -d" " -f1)
	printf '{"site":{"fingerprints":{"munge_key":"%s"}}}' "$fp" > root/etc/nodeforge/profile.json
	nf enroll open cp-01 --for 10m --reenroll >/dev/null
	run nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root root --bind 127.0.0.1
	stop_pids
	status_is 0
	cmp sec/munge.key root/etc/munge/munge.key
	grep -qx 'StoragePass=db-pass' root/etc/slurm/slurmdbd.conf
}

@test "the enroll unit is accepted by systemd-analyze verify" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	unit=$NF_SRCDIR/overlays/common/etc/systemd/system/nodeforge-enroll.service
	grep -q '^Before=.*munge.service' "$unit"
	grep -q '^Before=.*nodeforge-verify.service' "$unit"
	sed "s|/usr/bin/nodeforge|$NF_BIN|" "$unit" > nodeforge-enroll.service
	run systemd-analyze verify ./nodeforge-enroll.service
	status_is 0
}

@test "the rotation units are accepted by systemd-analyze verify" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	for u in nodeforge-rotate.service nodeforge-rotate.timer; do
		sed "s|/usr/bin/nodeforge|$NF_BIN|" \
			"$NF_SRCDIR/overlays/common/etc/systemd/system/$u" > $u
	done
	run systemd-analyze verify ./nodeforge-rotate.service ./nodeforge-rotate.timer
	status_is 0
}

@test "keys rotate: usage errors and --status without a rotation" {
	run nf keys rotate signing
	status_is 2
	[[ "$output" == *"only 'munge' keys rotate"* ]]
	run nf keys rotate munge --status -i racks.yaml
	status_is 1
	[[ "$output" == *"no munge key rotation"* ]]
	run nf keys rotate munge --bogus
	status_is 2
}

@test "keys rotate munge with no node polling: new server key, old one kept, node reported" {
	nf enroll open gpu-01 --for 15m >/dev/null
	answer gpu-01 52:54:00:00:00:02 127.0.0.2 >/dev/null
	old=$(sha256sum sec/munge.key)
	# nobody polls: the rotation ends with the node not switched
	run nf keys rotate munge -i racks.yaml --stage-timeout 0 --group-timeout 0
	status_is 1
	[[ "$output" == *"1 node(s) did not switch"* ]]
	[ "$(sha256sum sec/munge.key)" != "$old" ]
	[ "$(stat -c %a state/munge.key.previous)" = 400 ]
	[ "$(sha256sum < state/munge.key.previous)" = "$(echo "$old" | cut -d' ' -f1)  -" ]
	run nf keys rotate munge --status -i racks.yaml --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["finished"] and d["not_switched"]==1'
}
