#!/usr/bin/env bats
# The gate units apply writes for a compute role: systemd-analyze verify
# accepts them, the slurmd drop-in really makes slurmd require the
# verifier, nothing lets a daemon start unverified (a missing profile.json,
# a clock read before chrony's first sync), and the health check runs the
# image's nodeforge.
load units_helper
load verify_helper

UNITS=$FIXTURES/apply/compute/etc/systemd/system

@test "units: systemd-analyze verify accepts nodeforge-verify.service and the slurmd drop-in" {
	unit_root compute
	units_verify nodeforge-verify.service slurmd.service chrony-wait.service
}

@test "units: the drop-in is parsed (a broken dependency in it is caught)" {
	unit_root compute
	sed -i 's/^Requires=nodeforge-verify.service/Requires=nodeforge-verify-typo.service/' \
		"$R/etc/systemd/system/slurmd.service.d/nodeforge-verify.conf"
	run systemd-analyze verify --man=no --root="$R" slurmd.service
	[ "$status" -ne 0 ]
	[[ "$output" == *"nodeforge-verify-typo.service"* ]]
}

@test "units: slurmd requires and follows the verifier; the verifier is a gate oneshot" {
	d=$UNITS
	grep -qx "Requires=nodeforge-verify.service" "$d/slurmd.service.d/nodeforge-verify.conf"
	grep -qx "After=nodeforge-verify.service" "$d/slurmd.service.d/nodeforge-verify.conf"
	grep -qx "Before=slurmd.service" "$d/nodeforge-verify.service"
	grep -qx "Type=oneshot" "$d/nodeforge-verify.service"
	grep -qx "RemainAfterExit=yes" "$d/nodeforge-verify.service"
	grep -q "^ExecStart=/usr/bin/nodeforge verify --gate" "$d/nodeforge-verify.service"
	[ -x "$NF_SRCDIR/overlays/common/usr/local/sbin/nodeforge-health" ]
}

@test "units: one definition of the gate (apply's), none in the overlays" {
	run find "$NF_SRCDIR/overlays" -name 'nodeforge-verify.service' -o \
		-path '*slurm*.service.d/*'
	status_is 0
	[ -z "$output" ] || { echo "$output"; false; }
}

@test "gate: a missing profile.json fails the verifier instead of skipping it" {
	! grep -q "^Condition" "$UNITS/nodeforge-verify.service"
	mkdir -p "$SCRATCH/r/etc"
	run nf verify --gate --root "$SCRATCH/r" --profile "$SCRATCH/r/etc/nodeforge/profile.json"
	status_is 1
	[[ "$output" == *"profile.json"* ]]
}

@test "gate: the verifier waits for chrony's first sync, bounded, and a wait that gave up is said" {
	grep -qx "Wants=chrony-wait.service" "$UNITS/nodeforge-verify.service"
	grep -qx "After=chrony-wait.service" "$UNITS/nodeforge-verify.service"
	[ -L "$UNITS/multi-user.target.wants/chrony-wait.service" ]
	drop=$UNITS/chrony-wait.service.d/nodeforge.conf
	grep -qx "TimeoutStartSec=180" "$drop"
	# the timeout message systemd's ExecStopPost= gives the journal
	cmd=$(sed -n "s/^ExecStopPost=\/bin\/sh -c '\(.*\)'$/\1/p" "$drop" | sed 's/\$\$/$/g')
	[ -n "$cmd" ]
	run env SERVICE_RESULT=timeout sh -c "$cmd"
	[ "$output" = "<4>chrony-wait: no time sync within 180 s: the first-boot verifier fails time.sync (chronyc sources -v)" ]
	run env SERVICE_RESULT=success sh -c "$cmd"
	[ -z "$output" ]
	# the verifier's reading after a wait that gave up
	vfx fail-time
	jq '.commands["systemctl is-active chrony-wait"] = {rc: 3, out: "failed\n"}' \
		"$SYS/fixture.json" > "$SCRATCH/f.json"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" --json
	status_is 3
	[ "$(verdict_of time.sync)" = "fail unsynchronised: chrony-wait.service gave up (no sync within 180 s)" ]
}

@test "health: HealthCheckProgram runs the image's nodeforge and drains a failing node" {
	h=$NF_SRCDIR/overlays/common/usr/local/sbin/nodeforge-health
	[ -x "$h" ]
	bin=$(sed -n 's/^exec \([^ ]*\) verify --health.*/\1/p' "$h")
	[ "$bin" = /usr/bin/nodeforge ]
	grep -q "^ExecStart=$bin verify --gate" "$UNITS/nodeforge-verify.service"
	vfx fail-gpu
	jq --arg log "$SCRATCH/exec.log" '.exec_log = $log' "$SYS/fixture.json" > "$SCRATCH/f.json"
	sed "s|$bin|$NF_BIN|" "$h" > "$SCRATCH/health"
	run sh "$SCRATCH/health" --sysroot "$SYS" --fixture "$SCRATCH/f.json"
	status_is 3
	[ -z "$output" ]
	grep -q "^scontrol update nodename=gpu-001 state=drain reason=nodeforge: gpu.ecc" "$SCRATCH/exec.log"
}
