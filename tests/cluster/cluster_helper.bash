# The cluster in a box, for tests/cluster/t7000-cluster.bats: every node of
# examples/cluster-box.yaml a QEMU VM on one bridge inside a network
# namespace this test owns, booted the way a site boots a rack (dnsmasq
# from the rendered dnsmasq.conf, `nodeforge serve`, iPXE from the VM's
# NIC ROM), with an NTP server at the site's ntp address.  No interface
# of the namespace leads out of it.  docs/bring-up-a-rack.md is the same
# sequence for a real site.
#
# Layout of the run ($W, kept when a test failed):
#   tree/       `nodeforge pxe` output      state/   `nodeforge serve` state
#   secrets/    munge key, slurmdbd password (0700; never in an image)
#   enroll/     enrollment state (0700)     site.yaml  the server's site
#   log/        console-NODE.log, qemu-NODE.out, serve, dnsmasq, chronyd
#   pids/       one file per process started here
# Images, their overlays and the test's ssh key live in
# $NF_E2E_CACHE/cluster (tests/e2e/images.bash): an unchanged tree
# rebuilds nothing.
load ../bats/helper
load ../e2e/images

SRV_IP=10.0.0.1
SRV_NET=10.0.0.1/16
SRV=http://$SRV_IP:8080
ROM=/usr/lib/ipxe/qemu/pxe-virtio.rom

# Seconds; a slow machine raises NF_CLUSTER_TIMEOUT (all deadlines scale)
cl_scale() { echo $(( $1 * ${NF_CLUSTER_TIMEOUT:-100} / 100 )); }

cl_log() { echo "# $*" >&3; }

# stdin to the test's log, as bats comments
cl_show() { sed 's/^/# /' >&3; }

nsx() { ip netns exec "$NS" "$@"; }

# One line per inventory node: NAME MAC IP ROLE, the inventory's order
cl_nodes() {
	nf -C "$PROFS" inventory show -i "$INV" --json | python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    print(n["name"], n["mac"], n["ip"], n["role"])'
}
cl_node_field() { cl_nodes | awk -v n="$1" -v f="$2" '$1 == n { print $f }'; }
cl_ip() { cl_node_field "$1" 3; }
# The first node of a role
cl_node_of() { cl_nodes | awk -v r="$1" '$4 == r { print $1; exit }'; }
cl_roles() { cl_nodes | awk '{ print $4 }' | awk '!seen[$0]++'; }

# ------------------------------------------------------------ images

cl_build() {
	local role=$1 t0 rc
	t0=$(date +%s)
	img_build "$role" "$W/log/build-$role.log"
	rc=$?
	cl_log "build $role: $(( $(date +%s) - t0 )) s (exit $rc)"
	[ $rc -eq 0 ] || { tail -n 30 "$W/log/build-$role.log" >&2; return 1; }
}

# The CPU role's next build, for the reimage tests: the shipped profiles
# with one more sysctl in cpu.yaml, built in the background from the
# image's cached root into $W/next/out, its exit status in $W/next/rc;
# then a broken build of it into $W/broken/out ($W/broken/rc)
cl_build_next() {
	mkdir -p "$W/next" "$W/broken"
	cp -r "$PROFS" "$W/next/profiles"
	sed -i 's/^  kernel.numa_balancing: 0$/&\n  vm.max_map_count: 262144/' "$W/next/profiles/cpu.yaml"
	grep -q 'vm.max_map_count: 262144' "$W/next/profiles/cpu.yaml" || return 1
	# the broken one: the next with a value its kernel refuses (pid_max
	# above the kernel's limit, 4194304), as a typo in a profile would be
	cp -r "$W/next/profiles" "$W/broken/profiles"
	sed -i 's/^  vm.max_map_count: 262144$/&\n  kernel.pid_max: 99999999/' "$W/broken/profiles/cpu.yaml"
	grep -q 'kernel.pid_max: 99999999' "$W/broken/profiles/cpu.yaml" || return 1
	(
		for b in next broken; do
			rc=0
			"$NF_BIN" -C "$W/$b/profiles" -s "$NF_TEST_SITE" build cpu --cache "$E2E" \
				--out "$W/$b/out" --overlays "$IMG_OVL" >"$W/log/build-$b.log" 2>&1 || rc=$?
			echo "$rc" > "$W/$b/rc"
		done
	) </dev/null 3>&- &
	echo $! > "$W/pids/build-next"
}

# The boot tree, from the server's site (cl_secrets: two controllers need
# its shared StateSaveLocation); each role's kernel arguments plus a
# serial console (the test reads the consoles; a site with serial-over-LAN
# does the same).
# The cluster files are signed with the key the images were built with
# (img_build's cache): each image trusts its public half, and its
# nodeforge-cluster.service refuses files it did not sign
cl_render() {
	local args=() role
	for role in $(cl_roles); do
		args+=(--kernel-args "$role=$(nf -C "$PROFS" profile show "$role" --args) console=ttyS0,115200")
	done
	nf -C "$PROFS" -s "$W/site.yaml" pxe --inventory "$INV" --out "$TREE" --images "$IMG_OUT" \
		--key "$E2E/keys/signing.key" \
		-u "$SRV" "${args[@]}" >"$W/log/pxe.log" 2>&1 ||
		{ cat "$W/log/pxe.log" >&2; return 1; }
}

# The server's secrets (a fresh munge key and slurmdbd password for the
# run) and its site: the embedded site with the secrets' paths and the
# enrollment state pointed into $W, and the controllers' shared
# StateSaveLocation the images mount (images.bash)
cl_secrets() {
	mkdir -m 700 "$W/secrets" "$W/enroll"
	nf keys munge -o "$W/secrets/munge.key" >/dev/null || return 1
	(umask 077; openssl rand -hex 24 > "$W/secrets/slurmdbd.password") || return 1
	# the BMCs' user and password (cl_bmcs)
	(umask 077; openssl rand -hex 8 > "$W/secrets/bmc.password" &&
		echo "default: { user: admin, password_file: $W/secrets/bmc.password }" \
			> "$W/secrets/bmc.yaml") || return 1
	"${CL_PY:-python3}" - "$PROFS/site.yaml" "$W" "$SRV" "$IMG_STATE_NFS" > "$W/site.yaml" <<-'PY' || return 1
	import sys, yaml
	site, w, url, nfs = sys.argv[1:]
	d = yaml.safe_load(open(site))
	d.setdefault("server", {})
	d["server"]["url"] = url
	d["server"]["state_dir"] = w + "/enroll"
	d["secrets"] = {"munge_key": {"path": w + "/secrets/munge.key"},
	                "slurmdbd_password": {"path": w + "/secrets/slurmdbd.password"},
	                "bmc": {"path": w + "/secrets/bmc.yaml"}}
	# ipmi_sim answers no Get Channel Cipher Suites: without one named,
	# ipmitool waits for that answer before every command
	d["bmc"] = {"protocol": "ipmi", "timeout": 20, "cipher_suite": 3}
	d["slurm"] = {"state_save": {"nfs": nfs}}
	print(yaml.safe_dump(d, sort_keys=False), end="")
	PY
}

# ------------------------------------------------------------ processes

# cl_bg NAME CMD...: CMD in the background, its PID in pids/NAME
cl_bg() {
	local name=$1
	shift
	"$@" </dev/null 3>&- &
	echo $! > "$W/pids/$name"
}

cl_pid() { cat "$W/pids/$1" 2>/dev/null; }

# Stop one process of this run (TERM, then KILL), never failing: callers
# run under bats' errexit
cl_stop() {
	local p
	p=$(cl_pid "$1") || return 0
	kill "$p" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
	kill -9 "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	rm -f "$W/pids/$1"
}

# Everything this run started, then the namespace (with its bridge and
# taps).  Safe to call twice, and from the guard after bats is gone.
cl_down() {
	local f p
	[ -n "${W:-}" ] && [ -d "$W/pids" ] || return 0
	for f in "$W"/pids/*; do
		case ${f##*/} in guard|'*') continue ;; esac
		p=$(cat "$f" 2>/dev/null) && kill "$p" 2>/dev/null || true
	done
	sleep 1
	for f in "$W"/pids/*; do
		case ${f##*/} in guard|'*') continue ;; esac
		p=$(cat "$f" 2>/dev/null) && kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
		rm -f "$f"
	done
	if [ -n "${NS:-}" ] && ip netns list | grep -qw "$NS"; then
		# anything still in the namespace was started from here
		for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
		ip netns del "$NS" || true
	fi
	return 0
}

# A guard outside bats: if the bats process dies without teardown_file
# (SIGKILL, a lost terminal), it takes the cluster down
cl_guard() {
	local parent=$BATS_ROOT_PID
	touch "$W/up"
	(
		set +e
		trap '' INT
		while [ -e "$W/up" ] && kill -0 "$parent" 2>/dev/null; do sleep 2; done
		[ -e "$W/up" ] && cl_down
	) </dev/null >/dev/null 2>&1 3>&- &
	echo $! > "$W/pids/guard"
}

# ------------------------------------------------------------ network

# Whether this host lets the test make its network: a namespace with a
# bridge and tap devices (CAP_NET_ADMIN, /dev/net/tun)
cl_can_net() {
	[ -c /dev/net/tun ] || return 1
	unshare -n sh -c 'ip link add nfprobe0 type bridge &&
		ip tuntap add dev nfprobe1 mode tap' >/dev/null 2>&1
}

cl_net() {
	ip netns add "$NS" || return 1
	nsx ip link set lo up
	nsx ip link add br0 type bridge
	nsx ip addr add "$SRV_NET" dev br0
	local name i=0
	for name in $(cl_nodes | awk '{ print $1 }'); do
		nsx ip tuntap add dev "tap$i" mode tap
		nsx ip link set "tap$i" master br0
		nsx ip link set "tap$i" up
		echo "tap$i" > "$W/tap-$name"
		i=$((i + 1))
	done
	nsx ip link set br0 up
}

# The controllers' shared StateSaveLocation (site slurm.state_save, the
# images' IMG_STATE_NFS): $W/statesave exported as SRV_IP:/slurmctld by
# nfs-ganesha, a userspace NFSv4 server (no rpcbind, no kernel nfsd),
# inside the namespace.  Root is not squashed: the controller's
# slurmctld drop-in gives the export's root to SlurmUser.  NFSv4.2 is
# not offered: the images' kernel (6.12) reads with READ_PLUS on 4.2,
# which nfs-ganesha before 6.2 answers wrongly (a file another client
# wrote reads back empty), so the controllers mount 4.1.
cl_nfs() {
	mkdir -p "$W/statesave" "$W/ganesha"
	cat > "$W/ganesha.conf" <<-EOF
	NFS_CORE_PARAM { Protocols = 4; Enable_NLM = false; Enable_RQUOTA = false; }
	NFSV4 {
		Minor_Versions = 0, 1;
		Graceless = true;
		RecoveryBackend = fs;
		RecoveryRoot = "$W/ganesha";
		Allow_Numeric_Owners = true;
		Only_Numeric_Owners = true;
	}
	EXPORT {
		Export_Id = 1;
		Path = "$W/statesave";
		Pseudo = "/${IMG_STATE_NFS#*:/}";
		Protocols = 4;
		Access_Type = RW;
		Squash = No_Root_Squash;
		SecType = sys;
		FSAL { Name = VFS; }
	}
	EOF
	cl_bg ganesha ip netns exec "$NS" ganesha.nfsd -F -f "$W/ganesha.conf" \
		-L "$W/log/ganesha.log" -p "$W/ganesha.pid" -N NIV_EVENT
	for _ in $(seq 100); do
		nsx ss -Hltn 'sport = :2049' | grep -q . && return 0
		kill -0 "$(cl_pid ganesha)" 2>/dev/null || break
		sleep 0.1
	done
	cat "$W/log/ganesha.log" >&2
	return 1
}

# The site's time server (profiles/site.yaml ntp: 10.0.0.1) inside the
# namespace: the verifier's time checks need a source.  -x: serve time,
# never touch the host's clock.
cl_chronyd() {
	cat > "$W/chrony.conf" <<-EOF
	local stratum 8
	allow 10.0.0.0/16
	bindaddress $SRV_IP
	cmdport 0
	pidfile $W/chronyd.pid
	EOF
	cl_bg chronyd ip netns exec "$NS" chronyd -d -x -f "$W/chrony.conf" \
		>"$W/log/chronyd.log" 2>&1
}

cl_dnsmasq() {
	cl_bg dnsmasq ip netns exec "$NS" dnsmasq -k -C "$TREE/dnsmasq.conf" \
		--interface=br0 --pid-file="$W/dnsmasq.pid" \
		--log-facility="$W/log/dnsmasq.log"
}

cl_serve() {
	cl_bg serve ip netns exec "$NS" "$NF_BIN" -C "$PROFS" -s "$W/site.yaml" serve \
		--tree "$TREE" --state "$STATE" --listen "$SRV_IP:8080" \
		-i "$INV" --enroll-state "$W/enroll" >"$W/log/serve.log" 2>&1
	for _ in $(seq 100); do
		grep -q '^listening on' "$W/log/serve.log" && return 0
		kill -0 "$(cl_pid serve)" 2>/dev/null || break
		sleep 0.1
	done
	cat "$W/log/serve.log" >&2
	return 1
}

# ------------------------------------------------------------ VMs

cl_accel() {
	if [ -n "${NF_E2E_KVM:-}" ] && [ -w /dev/kvm ]; then echo kvm; else echo tcg; fi
}

# QEMU's accelerator options.  Under emulation every VM's vCPUs share one
# host thread (thread=single): with one thread per vCPU, a guest kernel
# patching its own text while another vCPU runs it (a static key flipped
# by "sched_clock: Marking stable") can hit a stale int3 and panic at
# boot, which a real CPU never does.
cl_accel_opts() {
	case $(cl_accel) in
	kvm) echo "-machine q35,accel=kvm" ;;
	*) echo "-machine q35 -accel tcg,thread=single" ;;
	esac
}

# The VM of a node.  A diskless node holds its whole image in the
# initramfs's tmpfs, which the kernel caps at half the RAM: the VM gets
# twice the image's content (and of what the node writes there: the
# InnoDB redo log the profile asks for) plus NF_CLUSTER_SLACK_MB (default
# 768) for the running system.  A cpu node gets exactly its profile's slurm.node
# CPUs, and at least real_memory_mb plus the slack (Slurm drains a node
# with less than its NodeName line says).
cl_vm_shape() {
	local role=$1
	nf -C "$PROFS" profile show "$role" --json | python3 -c '
import json, os, sys
role, out = sys.argv[1:]
prof = json.load(sys.stdin)
node = prof.get("slurm", {}).get("node") or {}
cur = json.load(open("%s/%s/%s.current" % (out, role, role)))
man = json.load(open("%s/%s/%s" % (out, role, cur["manifest"])))
image_mb = sum(e.get("size", 0) for e in man["entries"]) >> 20
redo = str(prof.get("mariadb", {}).get("log_file_size", "0"))
units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
image_mb += int(float(redo[:-1]) * units[redo[-1].upper()]) if redo[-1:].isalpha() else int(redo) >> 20
slack = int(os.environ.get("NF_CLUSTER_SLACK_MB", 768))
mem = 2 * image_mb + slack
s = c = t = 1
if role == "cpu":
    s, c, t = node["sockets"], node["cores_per_socket"], node["threads_per_core"]
    mem = max(mem, node["real_memory_mb"] + slack)
print("-smp %d,sockets=%d,cores=%d,threads=%d -m %d" % (s * c * t, s, c, t, mem))
' "$role" "$IMG_OUT"
}

# cl_vm_script NODE: $W/vm/NODE.on, the script that starts NODE's VM (it
# PXE-boots from its inventory MAC) inside the namespace and writes its
# PID to pids/vm-NODE; the node's BMC runs the same script
cl_vm_script() {
	local node=$1 mac role tap shape
	[ -e "$W/vm/$node.on" ] && return 0
	mkdir -p "$W/vm"
	mac=$(cl_node_field "$node" 2)
	role=$(cl_node_field "$node" 4)
	tap=$(cat "$W/tap-$node")
	shape=$(cl_vm_shape "$role") || return 1
	cat > "$W/vm/$node.on" <<-EOF
	#!/bin/sh
	qemu-system-x86_64 $(cl_accel_opts) $shape -display none -no-reboot \\
		-netdev tap,id=n0,ifname=$tap,script=no,downscript=no \\
		-device virtio-net-pci,netdev=n0,mac=$mac,disable-legacy=on,romfile=$ROM \\
		-boot n -serial file:$W/log/console-$node.log -monitor none \\
		</dev/null >>$W/log/qemu-$node.out 2>&1 3>&- &
	echo \$! > $W/pids/vm-$node
	EOF
}

# cl_power_on NODE: start its VM; a node with a BMC (cl_bmcs) through
# `nodeforge power on`, as a site powers a rack
cl_power_on() {
	local node=$1
	cl_vm_script "$node" || return 1
	if [ -e "$W/bmc/$node/lan.conf" ]; then
		cl_nf power on "$node" >>"$W/log/power.log" 2>&1 ||
			{ tail -n 5 "$W/log/power.log" >&2; return 1; }
	else
		nsx sh "$W/vm/$node.on"
	fi
}

cl_power_off() { cl_stop "vm-$1"; }

# nodeforge as the server's operator runs it, inside the namespace: the
# server's site and the test's inventory; scontrol is the cluster's own,
# on the login node ($W/bin/scontrol, cl_scontrol)
cl_nf() {
	local cmd=$1
	shift
	nsx env PATH="$W/bin:$PATH" "$NF_BIN" -C "$PROFS" -s "$W/site.yaml" "$cmd" -i "$INV" "$@"
}

# ------------------------------------------------------------ BMCs

# The BMC of every node whose inventory entry has one (the test gives
# the CPU nodes theirs): an ipmi_sim, OpenIPMI's IPMI 2.0 LAN BMC, at
# the bmc address on the namespace's loopback, port 623, whose chassis
# control ($W/bmc/control) starts and stops the node's VM: power on and
# off, cycle, reset, and the boot device it records.  nodeforge power,
# bootdev and reimage speak IPMI to them as to a server's BMC, with the
# user and password from the site's secrets (cl_secrets).
cl_bmcs() {
	local node addr d
	mkdir -p "$W/bmc"
	cat > "$W/bmc/control" <<-EOF
	#!/bin/sh
	# ipmi_sim's chassis control: NODE get PARM... | NODE set PARM VALUE...
	node=\$1 op=\$2
	shift 2
	echo "\$(date -u +%T) \$op \$*" >> $W/log/bmc-\$node.log
	pidf=$W/pids/vm-\$node
	alive() { p=\$(cat "\$pidf" 2>/dev/null) && [ -n "\$p" ] && kill -0 "\$p" 2>/dev/null; }
	off() {
		p=\$(cat "\$pidf" 2>/dev/null) || return 0
		kill "\$p" 2>/dev/null
		i=0
		while kill -0 "\$p" 2>/dev/null && [ \$i -lt 50 ]; do sleep 0.2; i=\$((i + 1)); done
		kill -9 "\$p" 2>/dev/null
		rm -f "\$pidf"
	}
	on() { alive || sh $W/vm/\$node.on; }
	case \$op in
	get)
		for p in "\$@"; do
			case \$p in
			power) if alive; then echo power:1; else echo power:0; fi ;;
			boot) echo "boot:\$(cat $W/bmc/\$node/boot 2>/dev/null || echo default)" ;;
			esac
		done ;;
	set)
		while [ \$# -ge 2 ]; do
			case \$1 in
			power) if [ "\$2" = 1 ]; then on; else off; fi ;;
			reset) off; on ;;
			boot) echo "\$2" > $W/bmc/\$node/boot ;;
			esac
			shift 2
		done ;;
	esac
	EOF
	chmod +x "$W/bmc/control"
	nf -C "$PROFS" inventory show -i "$INV" --json | "${CL_PY:-python3}" -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    if n.get("bmc"):
        print(n["name"], n["bmc"])' > "$W/bmc/nodes"
	while read -r node addr; do
		d=$W/bmc/$node
		mkdir -p "$d/state"
		cl_vm_script "$node" || return 1
		nsx ip addr add "$addr/32" dev lo
		cat > "$d/lan.conf" <<-EOF
		name "$node"
		set_working_mc 0x20
		  startlan 1
		    addr $addr 623
		    priv_limit admin
		    allowed_auths_callback none md2 md5 straight
		    allowed_auths_user none md2 md5 straight
		    allowed_auths_operator none md2 md5 straight
		    allowed_auths_admin none md2 md5 straight
		    guid a123456789abcdefa123456789abcd$(printf %02x "${addr##*.}")
		  endlan
		  chassis_control "$W/bmc/control $node"
		user 2 true "admin" "$(cat "$W/secrets/bmc.password")" admin 10 none md2 md5 straight
		EOF
		printf 'mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n' > "$d/emu.cmd"
		cl_bg "bmc-$node" ip netns exec "$NS" ipmi_sim -c "$d/lan.conf" -f "$d/emu.cmd" \
			-s "$d/state" -n >"$W/log/ipmi_sim-$node.log" 2>&1
	done < "$W/bmc/nodes"
	# each answers over the network
	while read -r node addr; do
		for _ in $(seq 50); do
			cl_nf power status "$node" >/dev/null 2>&1 && continue 2
			sleep 0.2
		done
		cl_nf power status "$node" >&2
		cat "$W/log/ipmi_sim-$node.log" >&2
		return 1
	done < "$W/bmc/nodes"
}

# scontrol as `nodeforge reimage` runs it: the cluster's own, on the
# login node over ssh (the host's Slurm is another release), each
# argument quoted for the remote shell
cl_scontrol() {
	mkdir -p "$W/bin"
	cat > "$W/bin/scontrol" <<-EOF
	#!/bin/bash
	exec ssh -F /dev/null -i $KEY -o BatchMode=yes -o StrictHostKeyChecking=no \\
		-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=10 \\
		root@$(cl_ip "$LOGIN") "timeout 60 scontrol \$(printf '%q ' "\$@")"
	EOF
	chmod +x "$W/bin/scontrol"
}

# ------------------------------------------------------------ the server's view

cl_status_json() { nsx "$NF_BIN" status --server "$SRV" --json; }

# NAME STATE VERDICT_AT ROOT_CAUSE per node
cl_states() {
	cl_status_json 2>/dev/null | python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    print(n["name"], n.get("state", "-").replace(" ", "-"),
          n.get("time") or "-", n.get("root_cause") or "-")'
}

cl_state() { cl_states | awk -v n="$1" '$1 == n { print $2 }'; }
# the time of the node's last event in nodeforge status: its verdict's,
# else its boot's
cl_verdict_at() { cl_states | awk -v n="$1" '$1 == n { print $3 }'; }

# ------------------------------------------------------------ on the nodes

# cl_ssh NODE 'COMMAND': run it as root on the node, from the namespace
cl_ssh() {
	local ip
	ip=$(cl_ip "$1")
	nsx ssh -F /dev/null -i "$KEY" -o BatchMode=yes -o StrictHostKeyChecking=no \
		-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
		-o ConnectTimeout=10 -o ServerAliveInterval=10 -o ServerAliveCountMax=3 \
		"root@$ip" "$2"
}

# cl_wait SECONDS 'CONDITION': poll every 5 s; gives up at once on ^C
# (bats only marks the interruption)
cl_wait() {
	local end=$(( $(date +%s) + $1 ))
	while [ "$(date +%s)" -lt "$end" ]; do
		[ -z "${BATS_INTERRUPTED:-}" ] || return 130
		eval "$2" && return 0
		sleep 5
	done
	eval "$2"
}

# Slurm's compact state of a node as the login node sees it
cl_sinfo_state() {
	cl_ssh "$LOGIN" "timeout 30 sinfo -h -N -n $1 -o %t" 2>/dev/null | head -n 1
}

# cl_all_idle NAME...: every line sinfo has for each node says idle.  A
# slurm.conf the client refuses does not heal by waiting: that fails at
# once (status 2), with sinfo's words on stderr.
cl_all_idle() {
	local out n
	out=$(cl_ssh "$LOGIN" 'timeout 30 sinfo -h -N -o "%N %t"' 2>&1)
	if [[ "$out" == *"fatal:"* ]]; then
		echo "$out" >&2
		return 2
	fi
	for n in "$@"; do
		echo "$out" | awk -v n="$n" '$1 == n { seen = 1; if ($2 != "idle") bad = 1 }
			END { exit !(seen && !bad) }' || return 1
	done
}

cl_idle() { cl_all_idle "$1"; }

# What a failing test shows: the server's view, Slurm's from the login
# node, and each console's last lines
cl_debug() {
	echo "--- nodeforge status"
	nsx "$NF_BIN" status --server "$SRV" 2>&1
	echo "--- sinfo on $LOGIN"
	cl_ssh "$LOGIN" 'timeout 30 sinfo -N -l; timeout 30 scontrol show nodes | grep -E "NodeName|State|Reason"' 2>&1 | head -n 40
	local f
	for f in "$W"/log/console-*.log; do
		[ -e "$f" ] || continue
		echo "--- ${f##*/} (last lines)"
		tr -d '\r' < "$f" | sed 's/\x1b\[[0-9;]*[a-zA-Z]//g' | grep -v '^\s*$' | tail -n "${NF_CLUSTER_CONSOLE_LINES:-20}"
	done
	echo "--- serve.log (last lines)"
	grep -v '" 200 ' "$W/log/serve.log" | tail -n 15
	echo "--- logs: $W"
}

# ------------------------------------------------------------ timings

cl_time() {
	local line
	line="$(date -u +%FT%TZ) $(cl_accel) $*"
	cl_log "$*"
	echo "$line" >> "$W/timings"
	echo "$line" >> "$E2E/cluster/timings.log"
}

# cl_panicked NODE: its kernel panicked in this boot (QEMU truncates the
# console file at each power-on)
cl_panicked() {
	grep -q 'Kernel panic - not syncing' "$W/log/console-$1.log" 2>/dev/null
}

# cl_check_panic NODE: a VM whose kernel panicked never reports: under
# emulation it is powered on again, once per node, and the run says so
# (the panic's console kept as console-NODE.panic.log); a second panic,
# or any under KVM, stops the VM so that waiting for it ends.  Status 0
# when it powered the node on again.
cl_check_panic() {
	local n=$1
	cl_panicked "$n" && kill -0 "$(cl_pid "vm-$n")" 2>/dev/null || return 1
	if [ "$(cl_accel)" != tcg ] || [ -e "$W/log/console-$n.panic.log" ]; then
		cl_log "$n: kernel panic; its VM is stopped"
		cl_stop "vm-$n"
		return 1
	fi
	cl_stop "vm-$n"
	cp "$W/log/console-$n.log" "$W/log/console-$n.panic.log"
	cl_time "$n: kernel panic under emulation ($(grep -m1 -o 'RIP: [^ ]*' \
		"$W/log/console-$n.panic.log")), console in log/console-$n.panic.log: powered on again"
	cl_power_on "$n"
}

# cl_all_reported NAME...: each node has a verdict, or its VM is gone
# (then waiting is pointless)
cl_all_reported() {
	local states n st
	states=$(cl_states) && [ -n "$states" ] || return 1
	for n in "$@"; do
		st=$(echo "$states" | awk -v n="$n" '$1 == n { print $2 }')
		case $st in verified|failed) continue ;; esac
		cl_check_panic "$n" || true
		kill -0 "$(cl_pid "vm-$n")" 2>/dev/null || continue
		return 1
	done
}
