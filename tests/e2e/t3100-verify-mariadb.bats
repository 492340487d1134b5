#!/usr/bin/env bats
# MariaDB checks against a real mariadbd in a temp datadir (only the tuning
# file written here, never the host's my.cnf; no network; socket in the temp
# dir), started with the controller profile's tuning.  The client finds the
# socket through ~/.my.cnf (HOME is the scratch home).
load ../bats/helper

setup_file() {
	command -v mariadbd >/dev/null || skip "mariadb-server not installed (make deps)"
	[ "$(id -u)" = 0 ] || skip "needs root to run mariadbd as mysql"
	DB=$(mktemp -d "${BATS_TMPDIR:-/tmp}/nfdb.XXXXXX")
	chmod 755 "$DB"
	mkdir -p "$DB/data" "$DB/run"
	chown mysql:mysql "$DB/data" "$DB/run"
	mariadb-install-db --no-defaults --datadir="$DB/data" --user=mysql --skip-test-db \
		> "$DB/install.log" 2>&1
	# the controller's tuning, scaled to a test server: its 50 % of the
	# sysroot's 512 MiB of RAM is 256M
	"$NF_BIN" profile show controller --json |
		jq '.mariadb.log_file_size = "48M" | .mariadb.log_buffer_size = "16M"' \
		> "$DB/profile.json"
	jq -r '.mariadb | "[mariadbd]\ninnodb_buffer_pool_size = 256M\n" +
		"innodb_log_file_size = \(.log_file_size)\ninnodb_log_buffer_size = \(.log_buffer_size)\n" +
		"innodb_lock_wait_timeout = \(.lock_wait_timeout)\nmax_allowed_packet = \(.max_allowed_packet)\n" +
		"innodb_flush_log_at_trx_commit = \(.flush_log_at_trx_commit)\nsync_binlog = \(.sync_binlog)"' \
		"$DB/profile.json" > "$DB/nodeforge.cnf"
	mariadbd --defaults-file="$DB/nodeforge.cnf" --datadir="$DB/data" \
		--socket="$DB/run/mysqld.sock" --skip-networking --user=mysql \
		--pid-file="$DB/run/mysqld.pid" --log-error="$DB/run/error.log" 3>&- &
	for _ in $(seq 200); do [ -S "$DB/run/mysqld.sock" ] && break; sleep 0.1; done
	[ -S "$DB/run/mysqld.sock" ] || { cat "$DB/run/error.log" >&3; return 1; }
	export DB
}

teardown_file() {
	[ -n "${DB:-}" ] || return 0
	[ -f "$DB/run/mysqld.pid" ] && kill "$(cat "$DB/run/mysqld.pid")"
	for _ in $(seq 100); do [ -e "$DB/run/mysqld.pid" ] || break; sleep 0.1; done
	rm -rf "$DB"
}

setup() {
	nf_setup
	mkdir -p "$SCRATCH/sys/proc"
	echo "MemTotal:         524288 kB" > "$SCRATCH/sys/proc/meminfo"
	printf '[client]\nsocket=%s\n' "$DB/run/mysqld.sock" > "$HOME/.my.cnf"
}

mrun() {
	run "$NF_BIN" verify --sysroot "$SCRATCH/sys" --profile "$DB/profile.json" --only mariadb --json
}

verdict_of() {
	echo "$output" | jq -r --arg id "$1" \
		'.checks[] | select(.id == $id) | .verdict + " " + (.seen // .reason // "")'
}

sql() { mariadb --batch -e "$1"; }

@test "e2e mariadb: the running server has the controller's tuning" {
	mrun
	status_is 0
	[ "$(jq .mariadb.buffer_pool_pct "$DB/profile.json")" = 50 ]
	[[ "$(verdict_of mariadb.buffer_pool)" == "pass 268435456 bytes = 50.0 % of 512 MiB" ]]
	[[ "$(verdict_of mariadb.log_file_size)" == "pass innodb_log_file_size = 50331648" ]]
}

@test "e2e mariadb: a changed lock wait timeout fails its own check" {
	sql "SET GLOBAL innodb_lock_wait_timeout = 50"
	mrun
	sql "SET GLOBAL innodb_lock_wait_timeout = 900"
	status_is 3
	[ "$(echo "$output" | jq -c '[.root_causes[].id]')" = '["mariadb.lock_wait_timeout"]' ]
}

@test "e2e mariadb: a buffer pool outside the profile's share of RAM (50 +- 5 %) fails" {
	sql "SET GLOBAL innodb_buffer_pool_size = 134217728"
	for _ in $(seq 50); do
		[ "$(mariadb -N -e "SELECT @@innodb_buffer_pool_size")" = 134217728 ] && break
		sleep 0.1
	done
	mrun
	sql "SET GLOBAL innodb_buffer_pool_size = 268435456"
	status_is 3
	[[ "$(verdict_of mariadb.buffer_pool)" == "fail 134217728 bytes = 25.0 % of 512 MiB" ]]
}

@test "e2e mariadb: no server answering fails mariadb.server, the rest skipped" {
	printf '[client]\nsocket=%s\n' "$SCRATCH/nothing.sock" > "$HOME/.my.cnf"
	mrun
	status_is 3
	[ "$(echo "$output" | jq -c '[.root_causes[].id]')" = '["mariadb.server"]' ]
	[[ "$(verdict_of mariadb.buffer_pool)" == "skip because mariadb.server failed" ]]
}
