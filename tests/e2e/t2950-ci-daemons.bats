#!/usr/bin/env bats
# The image's own daemons accept every file nodeforge wrote into it:
# 'nodeforge ci ROLE --inventory examples/racks.yaml' (static stage) runs
# the image's scontrol, srun --help, slurmdbd, chronyd and
# mariadbd inside the real image root, for controller, compute and login,
# on the embedded default (Debian 13: Slurm 24.11, MariaDB 11.8) and on the
# Debian 12 example site (Slurm 22.05, MariaDB 10.11).  A key the image's Slurm does not
# know fails with Slurm's own words.
# Slow: one real bootstrap per role and distribution (cached in
# $NF_E2E_CACHE, shared with the cluster test).  Needs root and mmdebstrap.
load ../bats/helper

setup_file() {
	command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
	[ "$(id -u)" = 0 ] || skip "needs root (chroot into the image)"
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	export INV=$NF_SRCDIR/examples/racks.yaml
	prebuild
}

D12=examples/site-debian12.yaml

# The six images (three roles, two releases) are built side by side before
# the tests, one release at a time: the bootstraps are most of the time and
# do not depend on each other.  Each test's ci then finds its image
# current (the same inputs) and runs the daemons on it.  A build that fails
# here fails again, with its words, in its test.
prebuild() {
	local t0=$SECONDS site tag role
	for site in "" "$NF_SRCDIR/$D12"; do
		tag=$(outtag ${site:+-s "$site"})
		for role in controller compute login; do
			"$NF_BIN" -C "$NF_SRCDIR/profiles" ${site:+-s "$site"} build "$role" \
				--cache "$E2E" --out "$BATS_FILE_TMPDIR/$tag" --inventory "$INV" -q \
				>"$BATS_FILE_TMPDIR/prebuild-$tag-$role.log" 2>&1 3>&- &
		done
		wait
	done
	echo "# prebuilt 6 images in $((SECONDS - t0)) s" >&3
}

# the output directory of a site's images
outtag() {
	case " $* " in *" -s "*) echo out-d12 ;; *) echo out-d13 ;; esac
}

# ci ROLE [nf options...]: the static.daemons cases as "id verdict message"
daemons() {
	local role=$1
	shift
	"$NF_BIN" "$@" ci "$role" --cache "$E2E" --out "$BATS_FILE_TMPDIR/$(outtag "$@")" \
		--inventory "$INV" --json > "$BATS_TEST_TMPDIR/ci.json" 2>"$BATS_TEST_TMPDIR/ci.err" || true
	# what ci said on stderr (a build that failed names its log): shown
	# with a failing test
	tail -n 20 "$BATS_TEST_TMPDIR/ci.err" >&2
	python3 - "$BATS_TEST_TMPDIR/ci.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    if c["class"] == "static.daemons":
        print(c["id"], c["verdict"], (c.get("message") or "").replace("\n", " ")[:300])
PY
}

# every case passed, and the ones named were run
all_pass() {
	local got=$1
	shift
	echo "$got"
	for id in "$@"; do
		grep -q "^$id pass" <<<"$got" || { echo "no passing case $id" >&2; return 1; }
	done
	! grep -v ' pass' <<<"$got"
}

@test "ci daemons, Debian 13: the controller's scontrol, slurmdbd, chronyd and mariadbd accept its files" {
	got=$(daemons controller -C "$NF_SRCDIR/profiles")
	all_pass "$got" slurm.conf slurmdbd.conf chrony.conf mariadb
}

# The compute and login images carry pyxis, compiled in the image against
# its own Slurm (pyxis.yaml): the image's srun loads it from plugstack.conf
# and its --help lists --container-image (the plugstack.conf case asks for
# it).  enroot, built the same way, answers 'enroot version' as nobody.
enroot_runs() {
	local role=$1 tag=$2 root=$BATS_TEST_TMPDIR/root rootfs
	rootfs=$(jq -r .rootfs "$BATS_FILE_TMPDIR/$tag/$role/$role.current")
	mkdir -p "$root"
	zstd -dc "$BATS_FILE_TMPDIR/$tag/$role/$rootfs" | tar -x -C "$root" --numeric-owner
	# the compilers and headers were there for the build only
	! chroot "$root" dpkg-query -W -f '${Status}' gcc make libslurm-dev 2>/dev/null | grep -q 'install ok installed'
	[ ! -e "$root/usr/src/nodeforge" ]
	# what a node does at boot: the tmpfiles parents, then enroot as a user
	systemd-tmpfiles --root="$root" --create nodeforge-enroot.conf
	run chroot "$root" setpriv --reuid=65534 --regid=65534 --clear-groups enroot version
	echo "$output"
	status_is 0
	[ "$output" = 4.1.2 ]
	# its helpers run in the image (a usage error, not "cannot execute":
	# an ELF interpreter the image lacks makes exec fail, status 127)
	local u
	for u in aufs2ovlfs mksquashovlfs mount nsenter switchroot; do
		run chroot "$root" "/usr/bin/enroot-$u" --help
		echo "enroot-$u: $status $output"
		[ "$status" -ne 127 ]
		[ "$status" -ne 126 ]
	done
}

@test "ci daemons, Debian 13: the compute image's scontrol accepts its files; its srun loads pyxis; enroot runs as a user" {
	got=$(daemons compute -C "$NF_SRCDIR/profiles")
	all_pass "$got" slurm.conf plugstack.conf chrony.conf
	enroot_runs compute out-d13
}

@test "ci daemons, Debian 13: the login image's scontrol accepts its files; its srun lists --container-image" {
	got=$(daemons login -C "$NF_SRCDIR/profiles")
	all_pass "$got" slurm.conf plugstack.conf chrony.conf
}

@test "ci daemons, Debian 12 example site: the controller's Slurm 22.05, slurmdbd and mariadbd accept its files" {
	got=$(daemons controller -C "$NF_SRCDIR/profiles" -s "$NF_SRCDIR/$D12")
	all_pass "$got" slurm.conf slurmdbd.conf chrony.conf mariadb
}

@test "ci daemons, Debian 12 example site: the compute image's scontrol accepts its files; its srun loads pyxis (Slurm 22.05)" {
	got=$(daemons compute -C "$NF_SRCDIR/profiles" -s "$NF_SRCDIR/$D12")
	all_pass "$got" slurm.conf plugstack.conf chrony.conf
	enroot_runs compute out-d12
}

@test "ci daemons, Debian 12 example site: the login image's scontrol accepts its files; its srun lists --container-image" {
	got=$(daemons login -C "$NF_SRCDIR/profiles" -s "$NF_SRCDIR/$D12")
	all_pass "$got" slurm.conf plugstack.conf chrony.conf
}

@test "ci daemons: a slurm.conf key the image's Slurm does not know fails with Slurm's own words" {
	cp -r "$NF_SRCDIR/profiles" "$BATS_TEST_TMPDIR/p"
	cp -r "$NF_SRCDIR/overlays" "$BATS_TEST_TMPDIR/overlays"
	sed -i 's/^    SlurmUser: slurm$/    SlurmUser: slurm\n    NoSuchSlurmKey: 1/' \
		"$BATS_TEST_TMPDIR/p/base.yaml"
	grep -q NoSuchSlurmKey "$BATS_TEST_TMPDIR/p/base.yaml"
	got=$(daemons login -C "$BATS_TEST_TMPDIR/p")
	echo "$got"
	grep -q '^slurm.conf fail .*unrecognized key: NoSuchSlurmKey' <<<"$got"
}
