#!/usr/bin/env bats
# Failing fixtures for fabric manager, InfiniBand, services and MariaDB
# (storage: t3013).
load verify_helper

@test "fabric manager: version differs from the driver" {
	expect_root fail-fabric_manager fabric_manager.version "fabric manager 550.54.15"
}

@test "ib: a port down" {
	expect_root fail-ib ib.port.state "mlx5_2/1: 1: DOWN"
}

@test "ib: a port at the wrong rate" {
	vfx pass
	echo "200 Gb/sec (4X HDR)" > "$SYS/sys/class/infiniband/mlx5_1/ports/1/rate"
	vrun --json
	status_is 3
	[[ "$(verdict_of ib.port.rate)" == "fail mlx5_1/1: 200 Gb/sec (4X HDR)" ]]
}

@test "system: a service the profile enables is not running" {
	expect_root fail-system system.services "munge failed"
}

@test "mariadb: the controller's server settings (fixture answers)" {
	vfx pass
	echo "MemTotal:       16384000 kB" > "$SYS/proc/meminfo"
	jq '.commands.mariadb = {rc: 0, out: ("innodb_buffer_pool_size\t8388608000\n" +
		"innodb_lock_wait_timeout\t900\ninnodb_log_file_size\t1073741824\n" +
		"innodb_log_buffer_size\t67108864\nmax_allowed_packet\t67108864\n" +
		"innodb_flush_log_at_trx_commit\t2\nsync_binlog\t0\n")}' "$SYS/fixture.json" > "$SCRATCH/f.json"
	mv "$SCRATCH/f.json" "$SYS/fixture.json"
	vrun --role controller --only mariadb --json
	status_is 0
	[[ "$(verdict_of mariadb.buffer_pool)" == "pass "*"50.0 % of 16000 MiB" ]]
	sed -i 's/innodb_lock_wait_timeout\\t900/innodb_lock_wait_timeout\\t50/' "$SYS/fixture.json"
	vrun --role controller --only mariadb --json
	status_is 3
	[[ "$(verdict_of mariadb.lock_wait_timeout)" == "fail innodb_lock_wait_timeout = 50" ]]
}

@test "mariadb: server down" {
	vfx pass
	vrun --role controller --only mariadb --json
	status_is 3
	[[ "$(verdict_of mariadb.server)" == "fail exit 1"* ]]
	[[ "$(verdict_of mariadb.lock_wait_timeout)" == "skip because mariadb.server failed" ]]
}

# Strings the driver (NVML) reports reach the text report, the login
# banner, the drain reason and remedies: escaped there, and a version that
# is not N.N.N never lands inside a pasteable remedy
@test "fabric manager: a driver version with control bytes and shell syntax is escaped and kept out of the remedy" {
	vfx pass
	jq '.nvml.driver_version = "550.90.07\u001b[2J\n$(reboot)"' "$SYS/fixture.json" > "$SCRATCH/f.json"
	mv "$SCRATCH/f.json" "$SYS/fixture.json"
	vrun --json
	status_is 3
	[[ "$(verdict_of fabric_manager.version)" == "fail the driver reports version '550.90.07\\x1b[2J\\x0a\$(reboot)', which is not a version number" ]]
	echo "$output" | jq -e '.checks[] | select(.id == "fabric_manager.version") |
		(.remedy | contains("reboot") | not)' >/dev/null
	COLUMNS=200 vrun -v
	status_is 3
	[[ "$output" == *'550.90.07\x1b[2J\x0a$(reboot)'* ]]
	if printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]'; then
		printf '%s' "$output" | od -c | head -40 >&2
		return 1
	fi
}
