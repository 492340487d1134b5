#!/usr/bin/env bats
# A remedy is a command that works as pasted on the node.  Each fail
# fixture whose root cause has a remedy that edits files (chmod, sed,
# printf, echo, mkdir) gets it run as printed, by a real shell chrooted
# into the fixture sysroot (busybox-static), then the node is verified
# again: that root cause must be gone.  systemctl, which a fixture root
# cannot run, is a no-op script in the chroot; say so in the name.
load verify_helper

setup() {
	nf_setup
	[ "$(id -u)" = 0 ] || skip "needs root (chroot)"
	[ -x /bin/busybox ] || skip "busybox-static not installed"
}

# chroot_ready: busybox as sh and the file tools; systemctl a no-op
chroot_ready() {
	mkdir -p "$SYS/bin" "$SYS/usr/bin"
	cp /bin/busybox "$SYS/bin/busybox"
	for t in sh sed chmod chown mkdir printf echo cat; do
		ln -sf busybox "$SYS/bin/$t"
	done
	printf '#!/bin/sh\nexit 0\n' > "$SYS/usr/bin/systemctl"
	chmod 755 "$SYS/usr/bin/systemctl"
	grep -q '^munge:' "$SYS/etc/group" 2>/dev/null || echo "munge:x:$(id -g):" >> "$SYS/etc/group"
}

# remedies_fix VARIANT [SHELL-CMD]: every file-editing remedy of the root
# causes of the fixture (changed by SHELL-CMD), run in the chroot; then
# each such root cause must pass
remedies_fix() {
	vfx "$1"
	[ -z "${2:-}" ] || eval "$2"
	chroot_ready
	vrun --json
	status_is 3
	echo "$output" | jq -r '.root_causes[].id as $r | .checks[] | select(.id == $r) | .id + "\t" + (.remedy // "")' > remedies
	local n=0 id remedy
	while IFS=$'\t' read -r id remedy; do
		case "${remedy%% *}" in
		chmod|sed|printf|echo|mkdir) ;;
		*) continue ;;
		esac
		echo "# $1: $id: $remedy" >&3
		PATH=/usr/bin:/bin /usr/sbin/chroot "$SYS" /bin/sh -c "$remedy" || { echo "$id: the remedy failed: $remedy"; return 1; }
		echo "$id" >> fixed
		n=$((n + 1))
	done < remedies
	[ "$n" -ge 1 ] || { echo "no file-editing remedy among: $(cat remedies)"; return 1; }
	vrun --json
	while read -r id; do
		[ "$(verdict_of "$id" | cut -d' ' -f1)" = pass ] || { echo "$id after its remedy: $(verdict_of "$id")"; return 1; }
	done < fixed
}

@test "remedies as pasted (systemctl a no-op): slurmd's unit limits" {
	remedies_fix fail-limits
}

@test "remedies as pasted (systemctl a no-op): the munge key's mode" {
	remedies_fix pass 'chmod 0644 "$SYS/etc/munge/munge.key"'
}

@test "remedies as pasted (systemctl a no-op): sshd's UsePAM" {
	remedies_fix fail-pam
}

@test "a limit slurmd's units do not set gets a drop-in of its own, the directory made first" {
	vfx fail-limits
	rm -rf "$SYS/etc/systemd/system/slurmd.service.d"
	chroot_ready
	vrun --json
	remedy=$(echo "$output" | jq -r '.checks[] | select(.id == "limits.unit.nproc") | .remedy')
	[[ "$remedy" == "mkdir -p /etc/systemd/system/slurmd.service.d && printf "*"> /etc/systemd/system/slurmd.service.d/nodeforge-LimitNPROC.conf"* ]]
	PATH=/usr/bin:/bin /usr/sbin/chroot "$SYS" /bin/sh -c "$remedy"
	vrun --json
	[ "$(verdict_of limits.unit.nproc | cut -d' ' -f1)" = pass ]
}

@test "no remedy of any fail fixture names a placeholder (ROLE, NODE) instead of this node's role and name" {
	local v bad=0
	for d in "$FIXTURES"/sysroot/fail-*/; do
		v=$(basename "$d")
		vfx "$v"
		vrun --json
		if echo "$output" | jq -r '.checks[].remedy // empty' | grep -E '\b(ROLE|NODE)\b'; then
			echo "$v: a remedy with a placeholder"
			bad=1
		fi
	done
	[ $bad -eq 0 ]
	vfx fail-munge
	vrun --json
	[[ "$(echo "$output" | jq -r '.checks[] | select(.id == "munge.key.fingerprint") | .remedy')" == *"nodeforge enroll open $(cat "$SYS/proc/sys/kernel/hostname" | cut -d. -f1) --for 15m --reenroll"* ]]
	vfx fail-slurm
	rm -f "$SYS/etc/slurm/slurm.conf"
	vrun --json
	[[ "$(echo "$output" | jq -r '.checks[] | select(.id == "slurm.conf.present") | .remedy')" == "on the build host: nodeforge build compute,"* ]]
}
