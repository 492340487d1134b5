#!/usr/bin/env bats
# verify on a machine that is not a node image (no /etc/nodeforge/profile.json,
# PID 1 not systemd, none of the role's kernel arguments): one root cause that
# says so, on one 80x40 screen; root causes deepest first; -v and --json show
# every value whole; the report goes through a pager only on a terminal.
load verify_helper

setup() {
	nf_setup
	vfx fail-kernel
	jq '.nvml = null' "$SYS/fixture.json" > "$SCRATCH/f.json" && mv "$SCRATCH/f.json" "$SYS/fixture.json"
	echo 0 > "$SYS/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"
	mkdir -p "$SYS/proc/1"
	echo process_api > "$SYS/proc/1/comm"
}

# an 80x40 screen: every line fits, and the whole report too
fits_screen() {
	echo "$output" | awk 'length($0) > 80 { print "too wide: " $0; bad = 1 }
		END { if (NR > 40) { print NR " lines"; bad = 1 } exit bad }'
}

@test "not an image: one root cause, 'this is not a nodeforge compute image', every other failure under it, on one 80x40 screen" {
	rm "$SYS/etc/nodeforge/profile.json"
	COLUMNS=80 vrun --role compute
	status_is 3
	fits_screen
	[[ "${lines[0]}" == "FAIL system.image: this is not a nodeforge compute image"* ]]
	[ "$(echo "$output" | grep -cE '^(FAIL|HUNG) ')" -eq 1 ]
	[[ "$output" == *"1 root cause, "*"more failures follow from them"* ]]
	vrun --role compute --json
	status_is 3
	[ "$(echo "$output" | jq -c '[.root_causes[].id]')" = '["system.image"]' ]
	[ "$(echo "$output" | jq -r '.checks[0].id')" = system.image ]
	# the rest hangs under it, system.init included
	[ "$(echo "$output" | jq '[.checks[] | select(.verdict == "fail" and .id != "system.image" and .cause != "system.image")] | length')" -eq 0 ]
	[ "$(echo "$output" | jq -r '.checks[] | select(.id == "system.init") | .cause')" = system.image ]
}

@test "an image of another role: the one root cause names both roles" {
	COLUMNS=80 vrun --role controller
	status_is 3
	[[ "${lines[0]}" == "FAIL system.image: this is a nodeforge compute image, not controller"* ]]
	[ "$(echo "$output" | grep -cE '^(FAIL|HUNG) ')" -eq 1 ]
}

@test "an image of the role: system.image passes and the root causes come deepest first (PID 1 before what needs it)" {
	vrun --json
	status_is 3
	[ "$(echo "$output" | jq -r '.checks[] | select(.id == "system.image") | .verdict')" = pass ]
	roots=$(echo "$output" | jq -r '.root_causes[].id')
	[ "$(echo "$roots" | head -1)" = system.init ] || { echo "$roots"; false; }
	echo "$roots" | grep -qx kernel.cmdline.running
	COLUMNS=80 vrun
	[[ "${lines[0]}" == "FAIL system.init: PID 1 is 'process_api', not systemd"* ]]
}

@test "-v and --json never shorten: every missing kernel argument, the hugepages ones too" {
	args=$(nf profile show compute --args)
	vrun --json
	seen=$(echo "$output" | jq -r '.checks[] | select(.id == "kernel.cmdline.running") | .seen')
	running=" $(cat "$SYS/proc/cmdline") "
	for a in $args; do
		[[ "$running" == *" $a "* ]] && continue
		[[ " $seen " == *" $a "* ]] || { echo "--json lacks $a: $seen"; false; }
	done
	[[ "$seen" != *"..."* ]]
	COLUMNS=80 vrun -v
	block=$(echo "$output" | awk '/^FAIL kernel.cmdline.running/ { on = 1; print; next } /^[A-Z]|^     ->/ { on = 0 } on')
	[[ "$block" != *"..."* ]]
	flat=$(echo "$block" | tr -s ' \n' '  ')
	for a in hugepagesz=1G hugepages=160 default_hugepagesz=1G; do
		[[ "$flat" == *" $a"* ]] || { echo "-v lacks $a: $flat"; false; }
	done
}

@test "pager: on a terminal through NODEFORGE_PAGER, else PAGER; never with --no-pager or when piped" {
	command -v script >/dev/null || skip "script (util-linux) not installed"
	# a stand-in pager: keeps what it is given
	printf '#!/bin/sh\ncat > "%s/paged.$1"\n' "$SCRATCH" > pager
	chmod +x pager
	export NO_COLOR=1
	cmd="$NF_BIN verify --sysroot $SYS --fixture $SYS/fixture.json"
	NODEFORGE_PAGER="$SCRATCH/pager one" PAGER="$SCRATCH/pager two" \
		script -qec "$cmd" /dev/null > tty.out || true
	grep -q 'FAIL system.init' paged.one
	[ ! -e paged.two ]
	! grep -q 'FAIL system.init' tty.out
	env -u NODEFORGE_PAGER PAGER="$SCRATCH/pager two" script -qec "$cmd" /dev/null > tty.out || true
	grep -q 'FAIL system.init' paged.two
	rm paged.*
	NODEFORGE_PAGER="$SCRATCH/pager one" script -qec "$cmd --no-pager" /dev/null > tty.out || true
	grep -q 'FAIL system.init' tty.out
	NODEFORGE_PAGER="$SCRATCH/pager one" run $cmd
	status_is 3
	[[ "$output" == *"FAIL system.init"* ]]
	[ ! -e paged.one ]
	# a pager that is not there (a minimal node image has no less) is
	# none: the report is on the terminal, not lost with it
	rm -f paged.*
	env -u NODEFORGE_PAGER PAGER="$SCRATCH/nopager one" script -qec "$cmd" /dev/null > tty.out || true
	grep -q 'FAIL system.init' tty.out
	mkdir -p nobin
	env -u NODEFORGE_PAGER -u PAGER PATH="$SCRATCH/nobin" "$(command -v script)" -qec "$cmd" /dev/null > tty.out || true
	grep -q 'FAIL system.init' tty.out
	! grep -q 'not found' tty.out
	# the exit status is verify's, not the pager's
	NODEFORGE_PAGER="$SCRATCH/pager one" script -qec "$cmd; echo rc=\$?" /dev/null > tty.out || true
	grep -q 'rc=3' tty.out
}
