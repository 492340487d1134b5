#!/usr/bin/env bats
# The shipped units: systemd-analyze verify accepts them, and the slurmd
# drop-in really makes slurmd require the verifier.
load helper

# A throw-away root with the host's unit library, the overlay and stand-in
# executables, so systemd-analyze checks our units and nothing of the host
unit_root() {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	R=$SCRATCH/root
	mkdir -p "$R/usr/local/bin" "$R/usr/sbin" "$R/usr/bin" "$R/usr/lib/systemd"
	ln -s usr/lib "$R/lib"
	ln -s usr/bin "$R/bin"
	cp -a /usr/lib/systemd/system "$R/usr/lib/systemd/"
	cp -a "$NF_SRCDIR/overlays/common/." "$R/"
	cp "$NF_BIN" "$R/usr/local/bin/nodeforge"
	for x in /usr/sbin/slurmd /usr/bin/kill; do cp /bin/true "$R$x"; done
	if [ ! -f "$R/usr/lib/systemd/system/slurmd.service" ]; then
		printf '[Unit]\nDescription=slurmd\n[Service]\nExecStart=/usr/sbin/slurmd -D\n' \
			> "$R/usr/lib/systemd/system/slurmd.service"
	fi
}

@test "units: systemd-analyze verify accepts nodeforge-verify.service and the slurmd drop-in" {
	unit_root
	run systemd-analyze verify --root="$R" nodeforge-verify.service slurmd.service
	status_is 0
	[ -z "$output" ] || { echo "$output"; false; }
}

@test "units: the drop-in is parsed (a broken dependency in it is caught)" {
	unit_root
	sed -i 's/^Requires=nodeforge-verify.service/Requires=nodeforge-verify-typo.service/' \
		"$R/etc/systemd/system/slurmd.service.d/10-nodeforge-gate.conf"
	run systemd-analyze verify --root="$R" slurmd.service
	[ "$status" -ne 0 ]
	[[ "$output" == *"nodeforge-verify-typo.service"* ]]
}

@test "units: slurmd requires and follows the verifier; the verifier is a gate oneshot" {
	d=$NF_SRCDIR/overlays/common/etc/systemd/system
	grep -qx "Requires=nodeforge-verify.service" "$d/slurmd.service.d/10-nodeforge-gate.conf"
	grep -qx "After=nodeforge-verify.service" "$d/slurmd.service.d/10-nodeforge-gate.conf"
	grep -qx "Type=oneshot" "$d/nodeforge-verify.service"
	grep -qx "RemainAfterExit=yes" "$d/nodeforge-verify.service"
	grep -q "^ExecStart=.*nodeforge verify --gate" "$d/nodeforge-verify.service"
	[ -x "$NF_SRCDIR/overlays/common/usr/local/sbin/nodeforge-health" ]
}
