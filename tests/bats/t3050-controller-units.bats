#!/usr/bin/env bats
# The controller's first boot, from what apply writes for the controller
# role (tests/fixtures/apply/controller, kept equal to apply's output by
# test_apply): the accounting database before slurmdbd, the cluster in
# accounting before slurmctld, both daemons gated by the verifier, state
# directories from slurm.conf, a loud warning for state kept in RAM.
load units_helper
load verify_helper

CTL=$FIXTURES/apply/controller
UNITS=$CTL/etc/systemd/system

# stand-in commands, first in PATH for the scripts under test
stub() {
	mkdir -p "$SCRATCH/bin"
	printf '#!/bin/sh\n%s\n' "$2" > "$SCRATCH/bin/$1"
	chmod 0755 "$SCRATCH/bin/$1"
}

# run SCRIPT ARGS... with the stand-ins
script() {
	run env PATH="$SCRATCH/bin:$PATH" LOG="$SCRATCH/log" "$@"
}

# a mariadb client that logs its arguments, then the SQL it is given
mariadb_stub() {
	stub mariadb 'echo "ARGS: $*" >> "$LOG"; [ -t 0 ] || cat >> "$LOG"'
}

dbd_conf() {
	cat > "$SCRATCH/slurmdbd.conf" <<'C'
# Written by nodeforge build
DbdHost=localhost
SlurmUser=slurm
StorageType=accounting_storage/mysql
StorageUser=slurm StorageLoc=slurm_acct_db # the accounting database
C
}

@test "controller units: systemd-analyze verify accepts the accounting chain, no ordering cycle at boot" {
	unit_root controller
	units_verify nodeforge-verify.service slurmctld.service slurmdbd.service \
		nodeforge-dbinit.service nodeforge-slurm-register.service \
		nodeforge-volatile-state.service chrony-wait.service multi-user.target
}

@test "controller units: an ordering cycle in the chain would be caught" {
	unit_root controller
	sed -i 's/^Before=slurmdbd.service$/&\nAfter=slurmctld.service/' \
		"$R/etc/systemd/system/nodeforge-dbinit.service"
	run systemd-analyze verify --man=no --root="$R" slurmctld.service
	[ "$status" -ne 0 ]
	[[ "$output" == *"ordering cycle"* ]]
}

@test "controller units: slurmctld needs slurmdbd and the registration, slurmdbd its database, both the verifier" {
	d=$UNITS
	grep -qx "Requires=slurmdbd.service nodeforge-slurm-register.service" \
		"$d/slurmctld.service.d/nodeforge-accounting.conf"
	grep -qx "After=slurmdbd.service nodeforge-slurm-register.service" \
		"$d/slurmctld.service.d/nodeforge-accounting.conf"
	grep -qx "Requires=nodeforge-dbinit.service" "$d/slurmdbd.service.d/nodeforge-dbinit.conf"
	grep -qx "After=nodeforge-dbinit.service" "$d/slurmdbd.service.d/nodeforge-dbinit.conf"
	for u in slurmctld slurmdbd; do
		grep -qx "Requires=nodeforge-verify.service" "$d/$u.service.d/nodeforge-verify.conf"
		grep -qx "After=nodeforge-verify.service" "$d/$u.service.d/nodeforge-verify.conf"
		grep -qx "Before=$u.service" "$d/nodeforge-verify.service"
	done
	[ ! -e "$d/slurmd.service.d" ]
	grep -qx "Requires=mariadb.service" "$d/nodeforge-dbinit.service"
	grep -qx "After=mariadb.service nodeforge-enroll.service" "$d/nodeforge-dbinit.service"
	grep -qx "Before=slurmdbd.service" "$d/nodeforge-dbinit.service"
	grep -qx "ExecStart=/usr/lib/nodeforge/slurm-dbinit /etc/slurm/slurmdbd.conf" \
		"$d/nodeforge-dbinit.service"
	grep -qx "Requires=slurmdbd.service" "$d/nodeforge-slurm-register.service"
	grep -qx "Before=slurmctld.service" "$d/nodeforge-slurm-register.service"
	grep -qx "ExecStart=/usr/lib/nodeforge/slurm-register-cluster /etc/slurm/slurm.conf 60" \
		"$d/nodeforge-slurm-register.service"
	# the password is no part of the image
	! grep -rqi "StoragePass=" "$CTL"
}

@test "dbinit: without StoragePass it refuses at error priority and never calls mariadb" {
	mariadb_stub
	dbd_conf
	script "$CTL/usr/lib/nodeforge/slurm-dbinit" "$SCRATCH/slurmdbd.conf"
	status_is 1
	[[ "$output" == "<3>nodeforge-dbinit: no StoragePass in $SCRATCH/slurmdbd.conf: "*"enrollment"* ]]
	[ ! -e "$SCRATCH/log" ]
}

@test "dbinit: database, user and grants through the root socket, the password on stdin only, as slurmdbd reads it" {
	mariadb_stub
	dbd_conf
	# what enrollment appends; Slurm's parser reads "\c" as "c"
	printf '%s\n' "StoragePass=pa'ss\\\\w%sd\\#1" >> "$SCRATCH/slurmdbd.conf"
	script "$CTL/usr/lib/nodeforge/slurm-dbinit" "$SCRATCH/slurmdbd.conf"
	status_is 0
	[[ "$output" == *"database 'slurm_acct_db' and user 'slurm'@'localhost'"* ]]
	grep -q "^ARGS: --batch -e SELECT 1$" "$SCRATCH/log"
	sed -n '/^ARGS: --batch$/,$p' "$SCRATCH/log" > "$SCRATCH/sql"
	cat > "$SCRATCH/want" <<'SQL'
ARGS: --batch
DELETE FROM mysql.global_priv WHERE User='';
DELETE FROM mysql.global_priv WHERE User='root' AND Host NOT IN ('localhost', '127.0.0.1', '::1');
DROP DATABASE IF EXISTS test;
DELETE FROM mysql.db WHERE Db='test' OR Db='test\\_%';
FLUSH PRIVILEGES;
ARGS: --batch
CREATE DATABASE IF NOT EXISTS `slurm_acct_db`;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'pa''ss\\w%sd#1';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY 'pa''ss\\w%sd#1';
GRANT ALL PRIVILEGES ON `slurm_acct_db`.* TO 'slurm'@'localhost';
SQL
	diff -u "$SCRATCH/want" "$SCRATCH/sql"
	! grep "^ARGS:" "$SCRATCH/log" | grep -q "pa"
	# a second boot: the same statements, nothing fails on what exists
	: > "$SCRATCH/log"
	script "$CTL/usr/lib/nodeforge/slurm-dbinit" "$SCRATCH/slurmdbd.conf"
	status_is 0
	sed -n '/^ARGS: --batch$/,$p' "$SCRATCH/log" | diff -u "$SCRATCH/want" -
}

@test "dbinit: a StorageUser of root or a StorageLoc SQL cannot name plainly is refused" {
	mariadb_stub
	printf 'StorageLoc=acct`db\nStorageUser=slurm\nStoragePass=x\n' > "$SCRATCH/a.conf"
	script "$CTL/usr/lib/nodeforge/slurm-dbinit" "$SCRATCH/a.conf"
	status_is 1
	[[ "$output" == "<3>nodeforge-dbinit: StorageLoc 'acct\`db'"* ]]
	printf 'StorageUser=root\nStoragePass=x\n' > "$SCRATCH/b.conf"
	script "$CTL/usr/lib/nodeforge/slurm-dbinit" "$SCRATCH/b.conf"
	status_is 1
	[[ "$output" == *"as root"* ]]
	[ ! -e "$SCRATCH/log" ]
}

@test "dbinit: a failed set-up is the gate's root cause on the controller, not a pass" {
	grep -qx "After=nodeforge-dbinit.service" "$UNITS/nodeforge-verify.service"
	vfx pass
	jq '.commands.mariadb = {rc: 0, out: "innodb_lock_wait_timeout\t900\n"} |
	    .commands["systemctl is-active nodeforge-dbinit"] = {rc: 3, out: "failed\n"}' \
		"$SYS/fixture.json" > "$SCRATCH/f.json"
	# a node that is no nodeforge image: nothing to say
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" --role controller --only mariadb --json
	[ "$(verdict_of mariadb.accounting)" = "skip no nodeforge-dbinit.service on this node" ]
	mkdir -p "$SYS/etc/systemd/system"
	cp "$UNITS/nodeforge-dbinit.service" "$SYS/etc/systemd/system/"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" --role controller --only mariadb --json
	status_is 3
	[ "$(verdict_of mariadb.accounting)" = "fail nodeforge-dbinit.service failed" ]
	[[ "$(echo "$output" | jq -r '.checks[] | select(.id == "mariadb.accounting") | .remedy')" == \
		"journalctl -u nodeforge-dbinit -u nodeforge-enroll"* ]]
	jq 'del(.commands["systemctl is-active nodeforge-dbinit"])' "$SCRATCH/f.json" > "$SCRATCH/g.json"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/g.json" --role controller --only mariadb --json
	[ "$(verdict_of mariadb.accounting)" = "pass nodeforge-dbinit.service active" ]
}

@test "mariadb.secure: an anonymous user, remote root or test database fails the controller, naming each" {
	vfx pass
	mkdir -p "$SYS/etc/systemd/system"
	cp "$UNITS/nodeforge-dbinit.service" "$SYS/etc/systemd/system/"
	jq '.commands.mariadb = {rc: 0, out: "innodb_lock_wait_timeout\t900\n"} |
	    .commands["mariadb --batch --skip-column-names --raw"] = {rc: 0, out: ""}' \
		"$SYS/fixture.json" > "$SCRATCH/f.json"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" --role controller --only mariadb.secure --json
	[ "$(verdict_of mariadb.secure)" = "pass none" ]
	jq '.commands["mariadb --batch --skip-column-names --raw"].out =
	    "anonymous user '"''@'localhost'"'\nroot from another host '"'root'@'%'"'\ndatabase test\n"' \
		"$SCRATCH/f.json" > "$SCRATCH/g.json"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/g.json" --role controller --only mariadb.secure --json
	status_is 3
	[ "$(verdict_of mariadb.secure)" = "fail anonymous user ''@'localhost', root from another host 'root'@'%', database test" ]
	[[ "$(echo "$output" | jq -r '.checks[] | select(.id == "mariadb.secure") | .remedy')" == \
		"systemctl restart nodeforge-dbinit"* ]]
	# a server nodeforge did not set up: not this check's to judge
	rm "$SYS/etc/systemd/system/nodeforge-dbinit.service"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/g.json" --role controller --only mariadb.secure --json
	[ "$(verdict_of mariadb.secure)" = "skip no nodeforge-dbinit.service on this node" ]
}

# sacctmgr that fails its first $FAILS listings, then lists $SCRATCH/clusters
sacctmgr_stub() {
	: > "$SCRATCH/clusters"
	echo "${1:-0}" > "$SCRATCH/fails"
	stub sacctmgr '
echo "sacctmgr $*" >> "$LOG"
case "$*" in
*" add cluster "*) eval "echo \${$#}" >> "${LOG%/*}/clusters"; exit 0 ;;
esac
n=$(cat "${LOG%/*}/fails")
if [ "$n" -gt 0 ]; then
	echo $((n - 1)) > "${LOG%/*}/fails"
	echo "sacctmgr: error: Sending PersistInit msg: Connection refused" >&2
	exit 1
fi
cat "${LOG%/*}/clusters"'
}

@test "register: waits for slurmdbd, then adds the cluster (in lower case) once" {
	sacctmgr_stub 1
	printf 'ClusterName=GpuBox\nSlurmctldHost=ctl-01\n' > "$SCRATCH/slurm.conf"
	script "$CTL/usr/lib/nodeforge/slurm-register-cluster" "$SCRATCH/slurm.conf" 30
	status_is 0
	[[ "$output" == *"cluster 'gpubox' added to accounting"* ]]
	[ "$(grep -c 'list cluster' "$SCRATCH/log")" -eq 2 ]
	grep -qx "sacctmgr -i add cluster gpubox" "$SCRATCH/log"
	script "$CTL/usr/lib/nodeforge/slurm-register-cluster" "$SCRATCH/slurm.conf" 30
	status_is 0
	[[ "$output" == *"cluster 'gpubox' is registered"* ]]
	[ "$(grep -c 'add cluster' "$SCRATCH/log")" -eq 1 ]
}

@test "register: a slurmdbd that never answers fails within the bound, at error priority" {
	sacctmgr_stub 1000
	printf 'ClusterName=gpubox\n' > "$SCRATCH/slurm.conf"
	SECONDS=0
	script timeout 30 "$CTL/usr/lib/nodeforge/slurm-register-cluster" "$SCRATCH/slurm.conf" 1
	status_is 1
	[ "$SECONDS" -lt 10 ]
	[[ "$output" == "<3>nodeforge-slurm-register: slurmdbd did not answer within 1 s: "*"Connection refused"* ]]
	! grep -q "add cluster" "$SCRATCH/log"
}

@test "volatile state: a RAM root is said at warning priority and in the login banner" {
	grep -qx "ExecStart=/usr/lib/nodeforge/volatile-state /run/motd.d/nodeforge-volatile $(jq -r .slurm.conf.StateSaveLocation "$CTL/etc/nodeforge/profile.json") /var/lib/mysql" \
		"$UNITS/nodeforge-volatile-state.service"
	[ -L "$UNITS/multi-user.target.wants/nodeforge-volatile-state.service" ]
	mkdir -p "$SCRATCH/ram/mysql" "$SCRATCH/disk/state"
	stub findmnt 'case "$5" in */ram*) echo rootfs ;; *) echo ext4 ;; esac'
	motd=$SCRATCH/run/motd.d/nodeforge-volatile
	script "$CTL/usr/lib/nodeforge/volatile-state" "$motd" "$SCRATCH/ram/mysql" \
		"$SCRATCH/disk/state" "$SCRATCH/ram/slurm/not-yet"
	status_is 0
	[ "${lines[0]}" = "<4>nodeforge: $SCRATCH/ram/mysql is on rootfs (RAM): its contents are lost at every reboot" ]
	[[ "${lines[1]}" == "<4>nodeforge: $SCRATCH/ram/slurm/not-yet is on rootfs"* ]]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(cat "$motd")" = "nodeforge: WARNING: lost at every reboot (in RAM): $SCRATCH/ram/mysql $SCRATCH/ram/slurm/not-yet" ]
	script "$CTL/usr/lib/nodeforge/volatile-state" "$motd" "$SCRATCH/disk/state"
	status_is 0
	[ -z "$output" ]
	[ ! -e "$motd" ]
}

@test "state directories: from the role's slurm.conf, StateSaveLocation owned by SlurmUser, the spool by root" {
	p=$CTL/etc/nodeforge/profile.json
	state=$(jq -r .slurm.conf.StateSaveLocation "$p")
	user=$(jq -r .slurm.conf.SlurmUser "$p")
	grep -qx "d $state 0700 $user $user -" "$CTL/etc/tmpfiles.d/nodeforge-slurm.conf"
	spool=$(jq -r .slurm.conf.SlurmdSpoolDir "$FIXTURES/apply/compute/etc/nodeforge/profile.json")
	grep -qx "d $spool 0755 root root -" "$FIXTURES/apply/compute/etc/tmpfiles.d/nodeforge-slurm.conf"
	! grep -q "$spool" "$CTL/etc/tmpfiles.d/nodeforge-slurm.conf"
}

@test "state directories: systemd-tmpfiles makes them with their owners" {
	[ "$(id -u)" -eq 0 ] || skip "chown needs root"
	command -v systemd-tmpfiles >/dev/null || skip "no systemd-tmpfiles"
	R=$SCRATCH/tmpfiles-root
	mkdir -p "$R/etc"
	cp -a "$CTL/etc/tmpfiles.d" "$R/etc/"
	echo "slurm:x:4242:4243::/nonexistent:/usr/sbin/nologin" > "$R/etc/passwd"
	echo "slurm:x:4243:" > "$R/etc/group"
	run systemd-tmpfiles --root="$R" --create "$R/etc/tmpfiles.d/nodeforge-slurm.conf"
	status_is 0
	state=$(jq -r .slurm.conf.StateSaveLocation "$CTL/etc/nodeforge/profile.json")
	[ "$(stat -c '%a %u %g' "$R$state")" = "700 4242 4243" ]
}
