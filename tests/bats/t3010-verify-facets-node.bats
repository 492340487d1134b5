#!/usr/bin/env bats
# Failing fixtures, one per facet (kernel, memory, cgroup, limits, time,
# munge): each fails with its own id, root cause first.
load verify_helper

@test "kernel: argument configured for the next boot but not running says reboot needed" {
	expect_root fail-kernel kernel.cmdline.running "reboot needed"
	[[ "$(verdict_of kernel.cmdline.pending)" == "fail reboot needed: /etc/kernel/cmdline adds"* ]]
}

@test "kernel: a quoted argument with a space is one argument, as the kernel reads it" {
	vfx pass
	# configured: one argument whose value holds a space; running: the
	# same key with another value and a separate word.  Split at the
	# quotes, both would read as the words dm= a b
	sed -i 's/$/ dm="a b"/' "$SYS/etc/kernel/cmdline"
	sed -i 's/$/ dm="a" b/' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[[ "$(verdict_of kernel.cmdline.pending)" == 'fail reboot needed: /etc/kernel/cmdline adds dm="a b"' ]]
	sed -i 's/ dm="a" b$/ "dm=a b"/' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[[ "$(verdict_of kernel.cmdline.pending)" == "pass no pending change" ]]
}

@test "kernel: a quoted profile argument runs whichever way it is quoted, '-' or '_' in its name" {
	vfx pass
	profile_jq '.boot_args += ["dm-mod.create=\"v,,,ro,0 1 zero\""]'
	sed -i 's/$/ dm-mod.create="v,,,ro,0 1 zero"/' "$SYS/etc/kernel/cmdline"
	# the kernel reads the whole parameter quoted as the same one, and
	# takes '_' for '-' in a name
	sed -i 's/$/ "dm_mod.create=v,,,ro,0 1 zero"/' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[ "$(verdict_of kernel.cmdline.running)" = "pass all 15 present" ]
	[ "$(verdict_of kernel.cmdline.pending)" = "pass no pending change" ]
	# quoted short: the value ends at the space
	sed -i 's/ "dm_mod.create=v,,,ro,0 1 zero"$/ dm-mod.create="v,,,ro,0 1" zero/' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[ "$(verdict_of kernel.cmdline.running)" = 'fail reboot needed: /etc/kernel/cmdline configured but not running: dm-mod.create="v,,,ro,0 1 zero"' ]
	# kernel.isolcpus finds the profile's isolcpus= quoted
	sed -i 's/ isolcpus=\([^ ]*\)/ "isolcpus=\1"/' "$SYS/proc/cmdline"
	echo 1-63 > "$SYS/sys/devices/system/cpu/isolated"
	vrun --json --only kernel
	[[ "$(verdict_of kernel.isolcpus)" == *", which /proc/cmdline's isolcpus= names" ]]
}

@test "kernel: arguments after -- are init's, not the running kernel's" {
	vfx pass
	sed -i 's/ default_hugepagesz=/ -- default_hugepagesz=/' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[[ "$(verdict_of kernel.cmdline.running)" == "fail reboot needed: /etc/kernel/cmdline configured but not running: default_hugepagesz=1G hugepagesz=1G hugepages=160 "* ]]
	# quoted, it is a separator all the same; with a value, it is not one
	sed -i 's/ -- / "--" /' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[[ "$(verdict_of kernel.cmdline.running)" == "fail reboot needed: "* ]]
	sed -i 's/ "--" / --=1 /' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[ "$(verdict_of kernel.cmdline.running)" = "pass all 14 present" ]
	# kernel.isolcpus: an isolcpus= after -- is none the kernel took
	sed -i 's/ isolcpus=/ -- isolcpus=/' "$SYS/proc/cmdline"
	echo 1-63 > "$SYS/sys/devices/system/cpu/isolated"
	vrun --json --only kernel
	[[ "$(verdict_of kernel.isolcpus)" == *", and /proc/cmdline lacks its isolcpus=" ]]
}

@test "kernel: nodeforge.node with a quoted space names the node whole" {
	vfx pass
	sed -i 's/$/ nodeforge.node="rack 4"/' "$SYS/proc/cmdline"
	vrun --json --only kernel
	[ "$(echo "$output" | jq -r .host)" = "rack 4" ]
}

# the compute profile's mask, as the pass tree's kernel isolated it
MASK=1-63,65-127,129-191,193-255

# isolcpus_is STATUS VERDICT [REMEDY]: kernel.isolcpus run alone exits
# STATUS, its verdict and seen text VERDICT, its remedy REMEDY
isolcpus_is() {
	vrun --json --only kernel.isolcpus
	status_is "$1"
	local got remedy
	got=$(verdict_of kernel.isolcpus)
	remedy=$(echo "$output" | jq -r '.checks[] | select(.id == "kernel.isolcpus") | .remedy // ""')
	[ "$got" = "$2" ] || { echo "verdict: $got"; false; }
	[ -z "${3:-}" ] || [ "$remedy" = "$3" ] || { echo "remedy: $remedy"; false; }
}

# the node's profile.json through a jq filter
profile_jq() {
	jq "$1" "$SYS/etc/nodeforge/profile.json" > "$SCRATCH/p.json" &&
		mv "$SCRATCH/p.json" "$SYS/etc/nodeforge/profile.json"
}

@test "kernel: kernel.isolcpus compares /sys/devices/system/cpu/isolated with the mask as CPU sets" {
	vfx pass
	isolcpus_is 0 "pass isolated $MASK of possible 0-255"
	# the same CPUs in another spelling
	echo 1-31,32-63,65-127,129,130-191,193-255 > "$SYS/sys/devices/system/cpu/isolated"
	isolcpus_is 0 "pass isolated $MASK of possible 0-255"
	# without possible, present names the CPUs the node has
	mv "$SYS/sys/devices/system/cpu/possible" "$SYS/sys/devices/system/cpu/present"
	isolcpus_is 0 "pass isolated $MASK of present 0-255"
}

@test "kernel: kernel.isolcpus fails a mask naming CPUs the node lacks, with both lists and the node's" {
	vfx pass
	# a node of 128 CPUs: the kernel dropped the CPUs it does not have
	echo 0-127 > "$SYS/sys/devices/system/cpu/possible"
	echo 0-127 > "$SYS/sys/devices/system/cpu/online"
	echo 1-63,65-127 > "$SYS/sys/devices/system/cpu/isolated"
	isolcpus_is 3 "fail isolated 1-63,65-127 but kernel.isolate_cpus is $MASK: this node has no CPU 129-191,193-255 (possible 0-127)" \
		"on the build host: give kernel.isolate_cpus of role compute only CPUs of 0-127 (this node's possible CPUs), nodeforge build compute, then boot this node from the new image"
}

@test "kernel: kernel.isolcpus fails when the node isolated another set than the mask" {
	vfx pass
	echo 1-63,65-127 > "$SYS/sys/devices/system/cpu/isolated"
	isolcpus_is 3 "fail isolated 1-63,65-127 but kernel.isolate_cpus is $MASK, which /proc/cmdline's isolcpus= names" \
		"journalctl -k -g 'isolcpus|housekeeping'   # the kernel's reason for isolating other CPUs than its isolcpus= names"
	# nothing isolated at all
	: > "$SYS/sys/devices/system/cpu/isolated"
	isolcpus_is 3 "fail isolated none but kernel.isolate_cpus is $MASK, which /proc/cmdline's isolcpus= names"
	# what is no CPU list, or names a CPU past the bound, is refused
	for bad in '(null)' 1-3x 8192 1-63,; do
		echo "$bad" > "$SYS/sys/devices/system/cpu/isolated"
		isolcpus_is 3 "fail /sys/devices/system/cpu/isolated is not a list of CPU ids below 8192"
	done
}

@test "kernel: kernel.isolcpus fails a mask that leaves the OS no online CPU" {
	vfx pass
	profile_jq '.kernel.isolate_cpus = "0-255"'
	# the kernel keeps its boot CPU when isolcpus= would take them all
	echo 1-255 > "$SYS/sys/devices/system/cpu/isolated"
	isolcpus_is 3 "fail kernel.isolate_cpus 0-255 isolates every online CPU (0-255): none is left for the OS and slurmd (isolated 1-255)" \
		"on the build host: take at least one CPU of 0-255 (this node's online CPUs) out of kernel.isolate_cpus of role compute, nodeforge build compute, then boot this node from the new image"
}

@test "kernel: kernel.isolcpus skips a profile without isolate_cpus, and follows from kernel.cmdline.running" {
	vfx pass
	profile_jq 'del(.kernel.isolate_cpus)'
	isolcpus_is 0 "skip the profile sets no kernel.isolate_cpus"
	# booted without the arguments: the kernel isolated nothing, which
	# follows from the command line and is no root cause of its own
	expect_root fail-kernel kernel.cmdline.running "reboot needed"
	[ "$(verdict_of kernel.isolcpus)" = "fail isolated none but kernel.isolate_cpus is $MASK, and /proc/cmdline lacks its isolcpus=" ]
	[ "$(echo "$output" | jq -r '.checks[] | select(.id == "kernel.isolcpus") | .cause')" = kernel.cmdline.running ]
	[ -z "$(echo "$output" | jq -r '.root_causes[] | select(.id == "kernel.isolcpus") | .id')" ]
}

@test "memory: THP not never" {
	expect_root fail-memory memory.thp "always"
}

@test "cgroup: not cgroup2" {
	expect_root fail-cgroup cgroup.v2 "not cgroup2"
}

@test "cgroup: controllers not delegated" {
	expect_root fail-cgroup-delegation cgroup.controllers.delegated "not delegated: cpuset pids"
}

@test "limits: a later drop-in lowers slurmd's LimitNOFILE" {
	expect_root fail-limits limits.unit.nofile "LimitNOFILE=65536"
	[[ "$(verdict_of limits.process)" == "skip because limits.unit.nofile failed" ]]
}

@test "limits: the running slurmd's /proc limits" {
	vfx pass
	sed -i 's/^Max open files .*/Max open files            1024                 4096                 files/' \
		"$SYS/proc/4242/limits"
	vrun --json
	status_is 3
	[[ "$(verdict_of limits.process)" == "fail nofile=1024" ]]
}

@test "limits: a later limits.d file lowering a limit for SSH sessions fails limits.pam, naming it" {
	vfx pass
	vrun --json --only limits
	[ "$(verdict_of limits.pam)" = "pass all 4 limits match" ]
	printf '*  -  nofile  65536\n* soft memlock 64 # a site default\n' \
		> "$SYS/etc/security/limits.d/99-site.conf"
	vrun --json --only limits
	status_is 3
	[ "$(verdict_of limits.pam)" = "fail nofile soft 65536 hard 65536 (/etc/security/limits.d/99-site.conf), memlock soft 64 hard unlimited (/etc/security/limits.d/99-site.conf)" ]
	# limits.conf comes first: the image's limits.d file wins over it
	mv "$SYS/etc/security/limits.d/99-site.conf" "$SYS/etc/security/limits.conf"
	vrun --json --only limits
	[ "$(verdict_of limits.pam)" = "pass all 4 limits match" ]
}

@test "time: clock not synchronised" {
	expect_root fail-time time.sync "unsynchronised"
	[[ "$(verdict_of time.offset)" == "skip because time.sync failed" ]]
}

@test "munge: wrong key fails the fingerprint" {
	expect_root fail-munge munge.key.fingerprint "sha256"
	[[ "$(verdict_of munge.roundtrip)" == "skip because munge.key.fingerprint failed" ]]
}

@test "munge: wrong mode and wrong owner fail with their own ids" {
	vfx pass
	chmod 0644 "$SYS/etc/munge/munge.key"
	sed -i '/^munge:/d' "$SYS/etc/passwd"
	vrun --json
	status_is 3
	[[ "$(verdict_of munge.key.mode)" == "fail mode 0644" ]]
	[[ "$(verdict_of munge.key.owner)" == "fail owner $(id -u)" ]]
	[[ "$(verdict_of munge.key.group)" == "skip because munge.key.owner failed" ]]
}

@test "munge: a key whose group is not its owner's login group fails munge.key.group" {
	vfx pass
	vrun --json --only munge.key
	[ "$(verdict_of munge.key.group)" = "pass group $(id -g)" ]
	# munge's login group is another one now, named in /etc/group
	sed -i "s/^munge:x:\([0-9]*\):[0-9]*:/munge:x:\1:4242:/" "$SYS/etc/passwd"
	printf 'munge:x:4242:\nwheel:x:%s:\n' "$(id -g)" > "$SYS/etc/group"
	vrun --json --only munge.key
	status_is 3
	[ "$(verdict_of munge.key.group)" = "fail group wheel" ]
	[ "$(echo "$output" | jq -r '.checks[] | select(.id == "munge.key.group") | .remedy')" = \
		"chown munge:munge /etc/munge/munge.key && systemctl restart munge" ]
}

@test "munge: missing key" {
	vfx pass
	rm -f "$SYS/etc/munge/munge.key"
	vrun --json
	status_is 3
	[[ "$(verdict_of munge.key.present)" == fail* ]]
	[[ "$(verdict_of munge.key.mode)" == "skip because munge.key.present failed" ]]
}

@test "munge: a node still on the key before a rotation fails with the rotation remedy" {
	vfx fail-munge
	sha=$(sha256sum "$SYS/etc/munge/munge.key" | cut -d' ' -f1)
	jq --arg p "sha256:$sha" '.site.fingerprints["munge_key.previous"] = $p' \
		"$SYS/etc/nodeforge/profile.json" > p.json && mv p.json "$SYS/etc/nodeforge/profile.json"
	vrun --json
	status_is 3
	[[ "$(verdict_of munge.key.fingerprint)" == "fail sha256 "*"(the key before the last rotation)" ]]
	echo "$output" | jq -r '.checks[] | select(.id == "munge.key.fingerprint") | .remedy' | grep -q "nodeforge enroll rotate"
}

@test "munge: a key the site does not know names re-enrollment" {
	expect_root fail-munge munge.key.fingerprint "sha256"
	echo "$output" | jq -r '.checks[] | select(.id == "munge.key.fingerprint") | .remedy' | grep -q "enroll open"
}

@test "sysctl: each key of the profile's sysctl is a check of its own against /proc/sys" {
	vfx pass
	vrun --json --only sysctl
	status_is 0
	[ "$(verdict_of sysctl.kernel.numa_balancing)" = "pass 0" ]
	echo 1 > "$SYS/proc/sys/kernel/numa_balancing"
	vrun --json --only sysctl
	status_is 3
	[ "$(verdict_of sysctl.kernel.numa_balancing)" = "fail 1" ]
	[[ "$(echo "$output" | jq -r '.checks[] | select(.id == "sysctl.kernel.numa_balancing") | .remedy')" == "sysctl -w kernel.numa_balancing='0'"* ]]
}

@test "sysctl: a key added to the profile is checked, a vector compared field by field" {
	vfx pass
	jq '.sysctl["vm.max_map_count"] = 262144 | .sysctl["net.ipv4.tcp_rmem"] = "4096  87380 6291456"' \
		"$SYS/etc/nodeforge/profile.json" > p.json && mv p.json "$SYS/etc/nodeforge/profile.json"
	rm -f "$SYS/proc/sys/vm/max_map_count" "$SYS/proc/sys/net/ipv4/tcp_rmem"
	vrun --json --only sysctl
	status_is 3
	[[ "$(verdict_of sysctl.vm.max_map_count)" == "fail no /proc/sys/vm/max_map_count"* ]]
	mkdir -p "$SYS/proc/sys/vm" "$SYS/proc/sys/net/ipv4"
	echo 262144 > "$SYS/proc/sys/vm/max_map_count"
	printf '4096\t87380\t6291456\n' > "$SYS/proc/sys/net/ipv4/tcp_rmem"
	vrun --json --only sysctl
	status_is 0
	[ "$(verdict_of sysctl.vm.max_map_count)" = "pass 262144" ]
	[ "$(verdict_of sysctl.net.ipv4.tcp_rmem)" = "pass 4096 87380 6291456" ]
	# --only takes a member's id like any check's
	vrun --json --only sysctl.vm.max_map_count
	[ "$(echo "$output" | jq -r '[.checks[] | select(.verdict != "skip")] | length')" = 1 ]
}

@test "time: chrony.conf without the profile's makestep or maxdistance fails time.chrony.conf" {
	vfx pass
	vrun --json
	[[ "$(verdict_of time.chrony.conf)" == "pass /etc/chrony/chrony.conf names every server, maxdistance, makestep and rtcsync" ]]
	sed -i '/^makestep/d; /^maxdistance/d' "$SYS/etc/chrony/chrony.conf"
	vrun --json
	status_is 3
	[[ "$(verdict_of time.chrony.conf)" == "fail /etc/chrony/chrony.conf: 'maxdistance 1' missing, 'makestep 1 3' missing" ]]
}

@test "time: chrony.conf without rtcsync or a server's iburst fails time.chrony.conf" {
	vfx pass
	sed -i '/^rtcsync/d; s/^server 10.0.0.1 iburst$/server 10.0.0.1/' "$SYS/etc/chrony/chrony.conf"
	vrun --json
	status_is 3
	[[ "$(verdict_of time.chrony.conf)" == "fail /etc/chrony/chrony.conf: server 10.0.0.1 without iburst, 'rtcsync' missing" ]]
	# rtcsyncx is not rtcsync; iburst among other options counts
	sed -i 's/^server 10.0.0.1$/server 10.0.0.1 minpoll 4 iburst maxpoll 6/; $a rtcsyncx' \
		"$SYS/etc/chrony/chrony.conf"
	vrun --json
	[[ "$(verdict_of time.chrony.conf)" == "fail /etc/chrony/chrony.conf: 'rtcsync' missing" ]]
	echo rtcsync >> "$SYS/etc/chrony/chrony.conf"
	vrun --json
	[[ "$(verdict_of time.chrony.conf)" == "pass "* ]]
}
