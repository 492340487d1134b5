#!/usr/bin/env bats
# munge checks against a real munged on a private socket: the good key
# passes with a real credential round trip; a wrong key, a wrong mode and a
# wrong owner each fail with their own id.
load ../bats/helper

setup() {
	nf_setup
	command -v munged >/dev/null || skip "munge not installed (make deps)"
	id munge >/dev/null 2>&1 || skip "no munge user"
	[ "$(id -u)" = 0 ] || skip "needs root to run munged as munge"
	chmod 755 "$SCRATCH"
	SYS=$SCRATCH/sys
	mkdir -p "$SYS/etc/munge" "$SYS/etc/nodeforge" "$SCRATCH/run"
	chmod -R 755 "$SYS" "$SCRATCH/run"
	cp /etc/passwd "$SYS/etc/passwd"
	dd if=/dev/urandom of="$SYS/etc/munge/munge.key" bs=1024 count=1 2>/dev/null
	chown munge:munge "$SYS/etc/munge/munge.key" "$SCRATCH/run"
	chmod 0400 "$SYS/etc/munge/munge.key"
	SOCK=$SCRATCH/run/munge.socket
	runuser -u munge -- /usr/sbin/munged --socket="$SOCK" \
		--key-file="$SYS/etc/munge/munge.key" --pid-file="$SCRATCH/run/munged.pid" \
		--log-file="$SCRATCH/run/munged.log" --seed-file="$SCRATCH/run/seed"
	fp=$(sha256sum "$SYS/etc/munge/munge.key" | cut -d' ' -f1)
	"$NF_BIN" profile show compute --json |
		jq --arg s "$SOCK" --arg fp "$fp" \
			'.munge.socket = $s | .site.fingerprints.munge_key = $fp' \
			> "$SYS/etc/nodeforge/profile.json"
}

teardown() {
	[ -f "$SCRATCH/run/munged.pid" ] && kill "$(cat "$SCRATCH/run/munged.pid")" 2>/dev/null
	nf_teardown
}

verdict_of() {
	echo "$output" | jq -r --arg id "$1" \
		'.checks[] | select(.id == $id) | .verdict + " " + (.seen // .reason // "")'
}

@test "e2e munge: the right key passes, with a real round trip through munged" {
	run "$NF_BIN" verify --sysroot "$SYS" --only munge --json
	status_is 0
	[[ "$(verdict_of munge.roundtrip)" == "pass STATUS:"*"Success (0)" ]]
}

@test "e2e munge: a wrong key fails munge.key.fingerprint" {
	dd if=/dev/urandom of="$SCRATCH/other.key" bs=1024 count=1 2>/dev/null
	install -o munge -g munge -m 0400 "$SCRATCH/other.key" "$SYS/etc/munge/munge.key"
	run "$NF_BIN" verify --sysroot "$SYS" --only munge --json
	status_is 3
	[ "$(echo "$output" | jq -c '[.root_causes[].id]')" = '["munge.key.fingerprint"]' ]
}

@test "e2e munge: a wrong mode fails munge.key.mode" {
	chmod 0644 "$SYS/etc/munge/munge.key"
	run "$NF_BIN" verify --sysroot "$SYS" --only munge --json
	status_is 3
	[ "$(echo "$output" | jq -c '[.root_causes[].id]')" = '["munge.key.mode"]' ]
}

@test "e2e munge: a wrong owner fails munge.key.owner" {
	chown root:root "$SYS/etc/munge/munge.key"
	run "$NF_BIN" verify --sysroot "$SYS" --only munge --json
	status_is 3
	[ "$(echo "$output" | jq -c '[.root_causes[].id]')" = '["munge.key.owner"]' ]
	[[ "$(verdict_of munge.key.owner)" == "fail owner root" ]]
}

@test "e2e munge: munged down fails the round trip with munge's own error" {
	kill "$(cat "$SCRATCH/run/munged.pid")"
	for _ in $(seq 50); do [ -S "$SOCK" ] || break; sleep 0.1; done
	run "$NF_BIN" verify --sysroot "$SYS" --only munge --json
	status_is 3
	[[ "$(verdict_of munge.roundtrip)" == "fail munge exited"* ]]
}
