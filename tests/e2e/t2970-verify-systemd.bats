#!/usr/bin/env bats
# The verifier asks a booted node's own service manager over its bus: the
# shared cpu image (tests/e2e/images.bash) unpacked, its systemd started
# as PID 1 of new namespaces (tests/e2e/sysns.bash: as a container
# manager starts it, on a build host whose PID 1 is not systemd), and the
# image's own 'nodeforge verify' run inside it.  The units' states in its
# report are those systemctl gives, a unit stopped is seen inactive and
# started again active, and no systemctl runs for any of them.
# Slow: the image build (shared with t2950 and the cluster test).  Needs
# root (namespaces) and mmdebstrap.
load ../bats/helper
load images
load sysns

setup_file() {
	command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
	[ "$(id -u)" = 0 ] || skip "needs root (the namespaces the image's systemd runs in)"
	command -v unshare >/dev/null && command -v nsenter >/dev/null ||
		skip "unshare and nsenter (util-linux) not installed"
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	img_setup "$BATS_FILE_TMPDIR/site"
	local cur=$IMG_OUT/cpu/cpu.current
	# under make test the image is built already (tests/e2e/prebuild.sh)
	# and found current
	img_build cpu "$BATS_FILE_TMPDIR/build.log" || {
		tail -n 30 "$BATS_FILE_TMPDIR/build.log" >&3
		return 1
	}
	export ROOT=$BATS_FILE_TMPDIR/root
	"$NF_BIN" unpack --devices "$IMG_OUT/cpu/$(jq -r .rootfs "$cur")" "$ROOT"
	# a systemctl that logs each call, ahead of the real one on PATH
	cat > "$ROOT/usr/local/sbin/systemctl" <<-'EOF'
	#!/bin/sh
	echo "$*" >> /var/tmp/systemctl.log
	exec /usr/bin/systemctl "$@"
	EOF
	chmod 0755 "$ROOT/usr/local/sbin/systemctl"
	# no network to wait for in its namespace: these would hold the
	# startup for their timeouts (120 s, 180 s)
	sysns_mask "$ROOT" systemd-networkd-wait-online.service chrony-wait.service
	sysns_boot "$ROOT" "$BATS_FILE_TMPDIR/boot.log"
	export SYSNS_PID SYSNS_UNSHARE
}

teardown_file() {
	sysns_stop
}

setup() {
	nf_setup
	rm -f "$ROOT/var/tmp/systemctl.log"
}

teardown() {
	nf_teardown
}

# verify_json: the image's own verify of the node, its JSON report in
# report.json (exit 0, or 3: the container lacks what a node has, such
# as its munge key and its kernel command line)
verify_json() {
	local st=0
	sysns nodeforge verify --json > report.json 2> verify.err || st=$?
	[ "$st" = 0 ] || [ "$st" = 3 ] || { echo "exit $st"; cat verify.err; return 1; }
	jq -e '.checks | length > 0' report.json >/dev/null
}

seen_of() {	# seen_of ID
	jq -r --arg id "$1" '.checks[] | select(.id == $id) | .seen' report.json
}

# what system.services expects from systemctl: each enabled service the
# check covers (not slurm*, nvidia-fabricmanager, chrony*) as 'N active',
# or the others' 'NAME STATE' joined by ', '
services_by_systemctl() {
	local u st n=0 bad=
	for u in $(jq -r '.system.services.enable[]' "$ROOT/etc/nodeforge/profile.json"); do
		case $u in slurm* | nvidia-fabricmanager | chrony*) continue ;; esac
		n=$((n + 1))
		st=$(sysns /usr/bin/systemctl is-active "$u") || true
		[ "$st" = active ] || bad="${bad:+$bad, }$u $st"
	done
	[ -n "$bad" ] && echo "$bad" || echo "$n active"
}

@test "verify in the image's own systemd (container): each unit's state is the one systemctl gives, and no systemctl runs" {
	verify_json
	[ "$(seen_of system.init)" = systemd ]
	want=$(services_by_systemctl)
	[ "$(seen_of system.services)" = "$want" ]
	[ "$(jq -r '.checks[] | select(.id == "system.services") | .verdict' report.json)" != hung ]
	st=$(sysns /usr/bin/systemctl is-active chrony) || true
	if [ "$st" = active ]; then
		[ "$(seen_of time.chronyd)" = active ]
	else
		[ "$(seen_of time.chronyd)" = "chrony $st" ]
	fi
	# nothing of verify asked systemctl (the shim logs every call)
	[ ! -s "$ROOT/var/tmp/systemctl.log" ] || {
		cat "$ROOT/var/tmp/systemctl.log"
		false
	}
}

@test "verify in the image's own systemd (container): a service stopped is seen inactive, and active once started again" {
	sysns /usr/bin/systemctl start ssh
	[ "$(sysns /usr/bin/systemctl is-active ssh)" = active ]
	verify_json
	[[ "$(seen_of system.services)" != *"ssh "* ]]
	sysns /usr/bin/systemctl stop ssh.socket ssh
	verify_json
	[[ "$(seen_of system.services)" == *"ssh inactive"* ]]
	[ "$(jq -r '.checks[] | select(.id == "system.services") | .verdict' report.json)" = fail ]
	sysns /usr/bin/systemctl start ssh
	verify_json
	[[ "$(seen_of system.services)" != *"ssh "* ]]
}
