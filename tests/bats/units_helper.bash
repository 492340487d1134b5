# Shared set-up for the unit tests (t3040, t3050): a throw-away root with
# the host's unit library, stand-ins for the units Debian 13 packages
# (tests/fixtures/units/debian13), the common overlay, what apply writes
# for a role (tests/fixtures/apply/ROLE, which test_apply keeps equal to
# apply's output) and stand-in executables, so systemd-analyze checks our
# units and nothing of the host.
# shellcheck source=helper.bash
source "${BASH_SOURCE[0]%/*}/helper.bash"

# unit_root ROLE: the root in $R
unit_root() {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	R=$SCRATCH/root
	mkdir -p "$R/usr/bin" "$R/usr/sbin" "$R/usr/lib/systemd/system"
	ln -s usr/lib "$R/lib"
	ln -s usr/bin "$R/bin"
	ln -s usr/sbin "$R/sbin"
	cp -a /usr/lib/systemd/system/. "$R/usr/lib/systemd/system/"
	cp "$FIXTURES"/units/debian13/*.service "$R/usr/lib/systemd/system/"
	cp -a "$NF_SRCDIR/overlays/common/." "$R/"
	cp -a "$FIXTURES/apply/$1/." "$R/"
	chmod 0755 "$R"
	for x in /usr/bin/nodeforge /usr/bin/sh /usr/bin/kill /usr/bin/chronyc \
		/usr/sbin/chronyd /usr/sbin/munged /usr/sbin/mariadbd /usr/sbin/slurmd \
		/usr/sbin/slurmctld /usr/sbin/slurmdbd /etc/mysql/debian-start; do
		[ -e "$R$x" ] && continue
		mkdir -p "$R${x%/*}"
		cp /bin/true "$R$x"
	done
}

# systemd-analyze verify UNIT... in $R: no finding at all
units_verify() {
	run systemd-analyze verify --man=no --root="$R" "$@"
	status_is 0
	[ -z "$output" ] || { echo "$output"; false; }
}
