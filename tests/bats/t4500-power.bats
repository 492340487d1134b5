#!/usr/bin/env bats
# make test: beside the cluster
# nodeforge power and bootdev: against ipmi_sim (OpenIPMI's IPMI LAN BMC,
# on loopback, its chassis driven by a script that keeps the power state
# in a file) and against a Redfish stand-in (tests/bats/redfish_standin.py,
# only the resources nodeforge uses; over http, and over https with a
# certificate a test CA signed).
load helper

PROFILES=$FIXTURES/boot/profiles

setup() {
	nf_setup
	SIM_PID= RF_PID=
	umask 077
	printf 's3cret\n' > bmc.password
	cat > bmc.yaml <<-EOF
	default: { user: admin, password_file: $SCRATCH/bmc.password }
	racks:
	  r09: { user: admin, password: wrong }
	EOF
	umask 022
	cat > site.yaml <<-EOF
	cluster: t
	distro: debian12
	networks:
	  provisioning: { cidr: 10.0.0.0/16 }
	bmc: { cipher_suite: 3 }
	secrets:
	  bmc: { path: $SCRATCH/bmc.yaml }
	EOF
}

teardown() {
	[ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null
	[ -n "$RF_PID" ] && kill "$RF_PID" 2>/dev/null
	wait 2>/dev/null
	nf_teardown
}

free_port() {
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if sys.argv[1] == "udp" else socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' "$1"
}

# ipmi_sim on a free loopback UDP port: sets SIM_PORT; the chassis power
# state is in $SCRATCH/chassis/power (0, 1), the boot device in .../boot
start_ipmi_sim() {
	command -v ipmi_sim >/dev/null && command -v ipmitool >/dev/null ||
		skip "ipmi_sim or ipmitool not installed (Debian packages openipmi, ipmitool: make deps)"
	SIM_PORT=$(free_port udp)
	mkdir -p chassis sim-state
	cat > chassis/control <<-'EOF'
	#!/bin/sh
	# ipmi_sim's chassis control: MC get PARM... | MC set PARM VALUE...
	dir=$(dirname "$0")
	echo "$*" >> "$dir/log"
	shift
	op=$1
	shift
	case $op in
	get)
		for p in "$@"; do
			case $p in
			power) echo "power:$(cat "$dir/power" 2>/dev/null || echo 0)" ;;
			boot) echo "boot:$(cat "$dir/boot" 2>/dev/null || echo default)" ;;
			esac
		done ;;
	set)
		while [ $# -ge 2 ]; do
			case $1 in
			# chassis/stuck: the power never follows; chassis/delay:
			# it does after that many seconds
			power) if [ -e "$dir/stuck" ]; then :
			       elif [ -s "$dir/delay" ]; then
				       (sleep "$(cat "$dir/delay")"; echo "$2" > "$dir/power") \
					       </dev/null >/dev/null 2>&1 &
			       else echo "$2" > "$dir/power"; fi ;;
			boot) echo "$2" > "$dir/$1" ;;
			reset) echo 1 >> "$dir/resets" ;;
			esac
			shift 2
		done ;;
	esac
	EOF
	chmod +x chassis/control
	cat > lan.conf <<-EOF
	name "nf-test"
	set_working_mc 0x20
	  startlan 1
	    addr 127.0.0.1 $SIM_PORT
	    priv_limit admin
	    allowed_auths_callback none md2 md5 straight
	    allowed_auths_user none md2 md5 straight
	    allowed_auths_operator none md2 md5 straight
	    allowed_auths_admin none md2 md5 straight
	    guid a123456789abcdefa123456789abcdef
	  endlan
	  chassis_control "$SCRATCH/chassis/control 0x20"
	user 2 true "admin" "s3cret" admin 10 none md2 md5 straight
	EOF
	cat > emu.cmd <<-'EOF'
	mc_setbmc 0x20
	mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
	mc_enable 0x20
	EOF
	ipmi_sim -c lan.conf -f emu.cmd -s "$SCRATCH/sim-state" -n > sim.log 2>&1 3>&- &
	SIM_PID=$!
	for _ in $(seq 50); do
		IPMI_PASSWORD=s3cret ipmitool -I lanplus -H 127.0.0.1 -p "$SIM_PORT" \
			-U admin -E -C 3 -N 1 -R 1 chassis power status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat sim.log
	return 1
}

# The Redfish stand-in on a free loopback port: sets RF_PORT; $1: seconds
# each answer waits, $2: seconds a reset takes to change PowerState, or
# stuck
start_redfish() {
	python3 "$NF_SRCDIR/tests/bats/redfish_standin.py" rf.port admin s3cret rf.log ${1:-0} ${2:-0} 3>&- &
	RF_PID=$!
	for _ in $(seq 100); do
		[ -s rf.port ] && break
		sleep 0.05
	done
	RF_PORT=$(cat rf.port)
	[ -n "$RF_PORT" ]
}

# node NAME N BMC-MAPPING [RACK]: one inventory entry
node() {
	cat >> racks.yaml <<-EOF
	  - name: $1
	    mac: 52:54:00:00:05:$(printf %02x "$2")
	    ip: 10.0.5.$2
	    role: compute
	    rack: ${4:-r01}
	    bmc: $3
	EOF
}

@test "power status, on, off against ipmi_sim read and change the chassis state" {
	start_ipmi_sim
	# ipmitool as nodeforge runs it: its arguments kept
	mkdir bin
	printf '#!/bin/sh\necho "$*" >> "%s/ipmitool.argv"\nexec %s "$@"\n' \
		"$SCRATCH" "$(command -v ipmitool)" > bin/ipmitool
	chmod +x bin/ipmitool
	PATH=$SCRATCH/bin:$PATH
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1, port: $SIM_PORT, protocol: ipmi }"
	run nf -C "$PROFILES" -s site.yaml power status cpu-01
	status_is 0
	[[ "${lines[1]}" =~ ^cpu-01\ +ipmi\ +127\.0\.0\.1:$SIM_PORT\ +status\ +off$ ]]
	run nf -C "$PROFILES" -s site.yaml power on cpu-01
	status_is 0
	[[ "${lines[1]}" == *" on      on" ]]
	[ "$(cat chassis/power)" = 1 ]
	run nf -C "$PROFILES" -s site.yaml --json power status cpu-01
	status_is 0
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = d["nodes"][0]
assert (n["name"], n["protocol"], n["action"], n["ok"], n["state"], n["error"]) == \
    ("cpu-01", "ipmi", "status", True, "on", None), n
assert d["failed"] == 0'
	run nf -C "$PROFILES" -s site.yaml power off cpu-01
	status_is 0
	[ "$(cat chassis/power)" = 0 ]
	run nf -C "$PROFILES" -s site.yaml power status cpu-01
	[[ "${lines[1]}" == *" status  off" ]]
	# the password went through the environment, never a command line
	grep -q -- '-U admin -E ' ipmitool.argv
	! grep -q s3cret ipmitool.argv
}

@test "power on, cycle, off wait until ipmi_sim's chassis has followed (2 s late); --no-wait does not" {
	start_ipmi_sim
	echo 2 > chassis/delay
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1, port: $SIM_PORT }"
	run nf -C "$PROFILES" -s site.yaml power on cpu-01
	status_is 0
	[[ "${lines[1]}" =~ ^cpu-01\ +ipmi\ +127\.0\.0\.1:$SIM_PORT\ +on\ +on$ ]]
	[ "$(cat chassis/power)" = 1 ]
	run nf -C "$PROFILES" -s site.yaml --json power off cpu-01
	status_is 0
	[ "$(cat chassis/power)" = 0 ]
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = d["nodes"][0]
assert (n["action"], n["ok"], n["state"], n["error"]) == ("off", True, "off", None), n
assert d["failed"] == 0'
	run nf -C "$PROFILES" -s site.yaml power on cpu-01 --no-wait
	status_is 0
	[[ "${lines[1]}" == *" on      ok" ]]
	[ "$(cat chassis/power)" = 0 ]
	sleep 3
	[ "$(cat chassis/power)" = 1 ]
	run nf -C "$PROFILES" -s site.yaml --json power cycle cpu-01
	status_is 0
	echo "$output" | jq -e '.nodes[0] | .ok and .state == "on"'
	[ "$(cat chassis/power)" = 1 ]
}

@test "Redfish stand-in (not a BMC) 2 s in PoweringOn/PoweringOff: power on and off wait for On and Off" {
	start_redfish 0 2
	echo "nodes:" > racks.yaml
	node gpu-01 1 "{ address: 127.0.0.1, port: $RF_PORT, protocol: redfish, scheme: http }"
	run nf -C "$PROFILES" -s site.yaml --json power on gpu-01
	status_is 0
	echo "$output" | jq -e '.nodes[0] | .ok and .state == "on" and .error == null'
	# the state was asked while it changed, and until it had
	grep -c '"GET", "path": "/redfish/v1/Systems/1"' rf.log | grep -qvx '[01]'
	run nf -C "$PROFILES" -s site.yaml power status gpu-01
	[[ "${lines[1]}" == *" status  on" ]]
	run nf -C "$PROFILES" -s site.yaml power off gpu-01
	status_is 0
	[[ "${lines[1]}" == *" off     off" ]]
}

@test "a node whose power never follows its BMC fails after --wait-timeout, named with the state it stayed in" {
	start_ipmi_sim
	start_redfish 0 stuck
	touch chassis/stuck
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1, port: $SIM_PORT }"
	node gpu-01 2 "{ address: 127.0.0.1, port: $RF_PORT, protocol: redfish, scheme: http }"
	start=$(date +%s)
	run nf -C "$PROFILES" -s site.yaml power on 'cpu-01,gpu-01' --wait-timeout 2
	status_is 1
	[ $(( $(date +%s) - start )) -lt 15 ]
	[[ "$output" == *"cpu-01 "*" on      failed: not on after 2 s: the BMC says off"* ]]
	[[ "$output" == *"gpu-01 "*" on      failed: not on after 2 s: the BMC says off"* ]]
	[[ "$output" == *"nodeforge power: 2 of 2 node(s) failed"* ]]
	run nf -C "$PROFILES" -s site.yaml --json power cycle gpu-01 --wait-timeout 1
	status_is 1
	echo "$output" | sed '/^nodeforge power:/d' | jq -e '.failed == 1 and (.nodes[0] |
		(.ok | not) and .state == "off" and (.error | startswith("not on after 1 s")))'
	# without the wait the BMC taking the action is all that counts
	run nf -C "$PROFILES" -s site.yaml power on 'cpu-01,gpu-01' --no-wait
	status_is 0
}

@test "bootdev pxe --once and disk through ipmi_sim are accepted" {
	start_ipmi_sim
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1, port: $SIM_PORT }"
	run nf -C "$PROFILES" -s site.yaml bootdev pxe cpu-01 --once
	status_is 0
	[[ "${lines[1]}" == *" pxe     pxe once" ]]
	[ "$(cat chassis/boot)" = pxe ]
	run nf -C "$PROFILES" -s site.yaml bootdev disk cpu-01
	status_is 0
	[[ "${lines[1]}" == *" disk    disk persistent" ]]
	[ "$(cat chassis/boot)" = default ]
}

@test "Redfish stand-in (not a BMC): power status, on, cycle, off and bootdev through ComputerSystem.Reset and Boot" {
	start_redfish
	echo "nodes:" > racks.yaml
	node gpu-01 1 "{ address: 127.0.0.1, port: $RF_PORT, protocol: redfish, scheme: http }"
	run nf -C "$PROFILES" -s site.yaml power status gpu-01
	status_is 0
	[[ "${lines[1]}" =~ ^gpu-01\ +redfish\ +127\.0\.0\.1:$RF_PORT\ +status\ +off$ ]]
	run nf -C "$PROFILES" -s site.yaml power on gpu-01
	status_is 0
	run nf -C "$PROFILES" -s site.yaml power status gpu-01
	[[ "${lines[1]}" == *" status  on" ]]
	run nf -C "$PROFILES" -s site.yaml power cycle gpu-01
	status_is 0
	run nf -C "$PROFILES" -s site.yaml power reset gpu-01
	status_is 0
	run nf -C "$PROFILES" -s site.yaml power off gpu-01
	status_is 0
	run nf -C "$PROFILES" -s site.yaml bootdev pxe gpu-01 --once
	status_is 0
	run nf -C "$PROFILES" -s site.yaml bootdev disk gpu-01
	status_is 0
	python3 - <<-'EOF'
	import json
	log = [json.loads(l) for l in open("rf.log")]
	resets = [r["body"]["ResetType"] for r in log if r["method"] == "POST"]
	assert resets == ["On", "PowerCycle", "ForceRestart", "ForceOff"], resets
	assert all(r["path"] == "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
	           for r in log if r["method"] == "POST")
	boots = [r["body"]["Boot"] for r in log if r["method"] == "PATCH"]
	assert boots == [
	    {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"},
	    {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Continuous"},
	], boots
	EOF
}

@test "Redfish stand-in over https: the site's bmc.ca verifies the BMC's certificate; one it did not sign is refused before any credential is sent; tls_verify: false accepts it" {
	command -v openssl >/dev/null || skip "openssl not installed"
	# a site CA that signs the BMC's certificate (for 127.0.0.1), and
	# another CA that does not
	cert() { openssl "$@" 2>/dev/null; }
	cert req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=site-bmc-ca -keyout ca.key -out ca.pem
	cert req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=other-ca -keyout other.key -out other.pem
	cert req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-subj /CN=127.0.0.1 -keyout bmc.key -out bmc.csr
	printf 'subjectAltName=IP:127.0.0.1\n' > san.ext
	cert x509 -req -in bmc.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile san.ext -out bmc.pem
	[ -s bmc.pem ]
	RF_TLS=$SCRATCH/bmc.pem:$SCRATCH/bmc.key start_redfish
	echo "nodes:" > racks.yaml
	node gpu-01 1 "{ address: 127.0.0.1, port: $RF_PORT, protocol: redfish }"
	site() { sed -i "s|^bmc:.*|bmc: { cipher_suite: 3, $1 }|" site.yaml; }
	site "ca: $SCRATCH/ca.pem"
	run nf -C "$PROFILES" -s site.yaml power on gpu-01
	status_is 0
	[[ "${lines[1]}" =~ ^gpu-01\ +redfish\ +127\.0\.0\.1:$RF_PORT\ +on\ +on$ ]]
	n=$(wc -l < rf.log)
	[ "$n" -gt 0 ]
	# a certificate the site's CA did not sign: refused, named, and the
	# BMC got no request (so no password)
	site "ca: $SCRATCH/other.pem"
	run nf -C "$PROFILES" -s site.yaml power status gpu-01
	status_is 1
	[[ "$output" =~ gpu-01\ +redfish\ +127\.0\.0\.1:$RF_PORT\ +status\ +failed:\ cannot\ fetch\ \'https://127\.0\.0\.1:$RF_PORT/redfish/v1/Systems\':\ SSL\ certificate\ problem ]]
	[ "$(wc -l < rf.log)" = "$n" ]
	# no ca: the system's CAs, which did not sign it either
	site "timeout: 5"
	run nf -C "$PROFILES" -s site.yaml power status gpu-01
	status_is 1
	[[ "$output" == *"gpu-01 "*"failed: cannot fetch 'https://"*"SSL certificate problem"* ]]
	[ "$(wc -l < rf.log)" = "$n" ]
	# tls_verify: false accepts it (a self-signed BMC)
	site "ca: $SCRATCH/other.pem, tls_verify: false"
	run nf -C "$PROFILES" -s site.yaml power off gpu-01
	status_is 0
	[[ "${lines[1]}" == *" off     off" ]]
	[ "$(wc -l < rf.log)" -gt "$n" ]
}

@test "at most --fanout BMCs are asked at once (Redfish stand-in counting requests in flight)" {
	start_redfish 0.3
	echo "nodes:" > racks.yaml
	for i in 1 2 3 4 5 6; do
		node gpu-0$i $i "{ address: 127.0.0.1, port: $RF_PORT, protocol: redfish, scheme: http }"
	done
	run nf -C "$PROFILES" -s site.yaml power status 'gpu-[01-06]' --fanout 2
	status_is 0
	python3 - <<-'EOF'
	import json
	log = [json.loads(l) for l in open("rf.log")]
	assert len(log) == 12, len(log)
	peak = max(r["inflight"] for r in log)
	assert peak == 2, peak
	EOF
}

@test "a dead BMC (closed loopback port) is named with its reason while the others succeed" {
	start_ipmi_sim
	start_redfish
	dead=$(free_port udp)
	deadtcp=$(free_port tcp)
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1, port: $SIM_PORT }"
	node cpu-02 2 "{ address: 127.0.0.1, port: $dead }"
	node gpu-01 3 "{ address: 127.0.0.1, port: $RF_PORT, protocol: redfish, scheme: http }"
	node gpu-02 4 "{ address: 127.0.0.1, port: $deadtcp, protocol: redfish, scheme: http }"
	node gpu-03 5 "{ address: 127.0.0.1, port: $RF_PORT, protocol: redfish, scheme: http }" r09
	run nf -C "$PROFILES" -s site.yaml power on 'cpu-[01-02],gpu-[01-03]' --timeout 3 --fanout 2
	status_is 1
	[[ "$output" == *"cpu-01 "*" on      on"* ]]
	[[ "$output" == *"gpu-01 "*" on      on"* ]]
	[[ "$output" =~ cpu-02\ +ipmi\ +127\.0\.0\.1:$dead\ +on\ +failed:\ (no\ answer\ from\ the\ BMC\ in\ 3\ s|ipmitool:\ .*\(no\ answer,\ or\ the\ user\ or\ password\ was\ refused\)) ]]
	[[ "$output" =~ gpu-02\ +redfish\ +127\.0\.0\.1:$deadtcp\ +on\ +failed:\ cannot\ fetch\ [^$'\n']*(refused|connect) ]]
	[[ "$output" == *"gpu-03 "*"failed: the BMC refused the credentials (HTTP 401"* ]]
	[[ "$output" == *"nodeforge power: 3 of 5 node(s) failed"* ]]
	[ "$(cat chassis/power)" = 1 ]
	run nf -C "$PROFILES" -s site.yaml --json power status 'cpu-[01-02]' --timeout 3
	status_is 1
	echo "$output" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read().split("\nnodeforge power:")[0])
n = {x["name"]: x for x in d["nodes"]}
assert n["cpu-01"]["ok"] and n["cpu-01"]["state"] == "on", n
assert not n["cpu-02"]["ok"] and "no answer" in n["cpu-02"]["error"], n
assert n["cpu-02"]["bmc"].startswith("127.0.0.1:"), n
assert d["failed"] == 1'
}

@test "a node without a BMC address fails alone; the inventory's string bmc: still means IPMI on 623" {
	cat > racks.yaml <<-EOF
	nodes:
	  - name: cpu-01
	    mac: 52:54:00:00:05:01
	    ip: 10.0.5.1
	    role: compute
	    bmc: 127.0.0.1
	  - name: cpu-02
	    mac: 52:54:00:00:05:02
	    ip: 10.0.5.2
	    role: compute
	EOF
	run nf -C "$PROFILES" -s site.yaml --json power status 'cpu-[01-02]' --timeout 1
	status_is 1
	echo "$output" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read().split("\nnodeforge power:")[0])
n = {x["name"]: x for x in d["nodes"]}
assert n["cpu-01"]["bmc"] == "127.0.0.1:623" and n["cpu-01"]["protocol"] == "ipmi", n
assert n["cpu-02"]["error"] == "no BMC address in the inventory (bmc: of node '"'"'cpu-02'"'"')", n
assert n["cpu-02"]["bmc"] is None or n["cpu-02"]["bmc"] == "-", n'
}

@test "credentials: none named, a file others may read, a node without an entry" {
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1, port: 9 }"
	sed -i '/^secrets:/,$d' site.yaml
	run nf -C "$PROFILES" -s site.yaml power status cpu-01
	status_is 1
	[[ "$output" == *"nodeforge power: the site names no BMC credentials: add secrets.bmc.path"* ]]
	printf 'secrets:\n  bmc: { path: %s/bmc.yaml }\n' "$SCRATCH" >> site.yaml
	chmod 0644 bmc.yaml
	run nf -C "$PROFILES" -s site.yaml power status cpu-01
	status_is 1
	[[ "$output" == *"secret '$SCRATCH/bmc.yaml' is readable by others (mode 0644)"* ]]
	chmod 0600 bmc.yaml
	printf 'racks:\n  r02: { user: a, password: b }\n' > bmc.yaml
	run nf -C "$PROFILES" -s site.yaml power status cpu-01
	status_is 1
	[[ "$output" == *"failed: no BMC credentials for node 'cpu-01' in '$SCRATCH/bmc.yaml' (nodes.cpu-01, racks.r01 or default)"* ]]
}

@test "usage errors: action, hostlist, unknown node, --once on power, bad bmc: mapping" {
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1 }"
	run nf -C "$PROFILES" -s site.yaml power stauts cpu-01
	status_is 2
	[[ "$output" == *"nodeforge power: unknown action 'stauts'; did you mean 'status'?"* ]]
	[[ "$output" == *"try 'nodeforge power --help'"* ]]
	run nf -C "$PROFILES" -s site.yaml power on
	status_is 2
	[[ "$output" == *"no nodes named"* ]]
	run nf -C "$PROFILES" -s site.yaml bootdev floppy cpu-01
	status_is 2
	[[ "$output" == *"unknown action 'floppy' (pxe or disk)"* ]]
	run nf -C "$PROFILES" -s site.yaml power on cpu-01 --once
	status_is 2
	run nf -C "$PROFILES" -s site.yaml power on cpu-01 --fanout 0
	status_is 2
	run nf -C "$PROFILES" -s site.yaml power on cpu-01 --wait-timeout 0
	status_is 2
	[[ "$output" == *"invalid --wait-timeout '0' (1 to 3600 seconds)"* ]]
	run nf -C "$PROFILES" -s site.yaml bootdev pxe cpu-01 --no-wait
	status_is 2
	[[ "$output" == *"unknown option '--no-wait'"* ]]
	run nf -C "$PROFILES" -s site.yaml power on cpu-09
	status_is 1
	[[ "$output" == *"nodeforge power: no node 'cpu-09' in 'racks.yaml'"* ]]
	echo "nodes:" > racks.yaml
	node cpu-01 1 "{ address: 127.0.0.1, protocol: snmp, port: 70000 }"
	run nf -C "$PROFILES" -s site.yaml power on cpu-01
	status_is 3
	[[ "$output" == *"racks.yaml:7:"*"'protocol' must be ipmi or redfish"* ]]
	[[ "$output" == *"'port' must be a number from 1 to 65535"* ]]
}

@test "bash completion: power and bootdev actions, then node names from the inventory" {
	PATH=$(dirname "$NF_BIN"):$PATH
	# shellcheck disable=SC1091
	source "$NF_SRCDIR/dist/nodeforge.bash"
	[ "$(comp nodeforge pow)" = power ]
	[ "$(comp nodeforge power '' | paste -sd' ')" = "on off cycle reset status" ]
	[ "$(comp nodeforge bootdev '' | paste -sd' ')" = "pxe disk" ]
	[ "$(comp nodeforge power cycle -i "$NF_SRCDIR/examples/racks.yaml" gpu-0 | paste -sd' ')" = "gpu-01 gpu-02 gpu-03 gpu-04" ]
	comp nodeforge bootdev pxe gpu-01 --on | grep -qx -- --once
	comp nodeforge power on gpu-01 --fan | grep -qx -- --fanout
	comp nodeforge power on gpu-01 --wa | grep -qx -- --wait-timeout
	comp nodeforge power cycle gpu-01 --no | grep -qx -- --no-wait
	! comp nodeforge bootdev pxe gpu-01 --no | grep -qx -- --no-wait
}
