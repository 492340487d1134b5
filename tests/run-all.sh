#!/usr/bin/env bash
# make test: every stage of the suite, fastest first, and a table of each
# stage's wall time at the end.
#
#   unit        the cmocka unit tests on the plain build, and the
#               library's layering (make check-layers)
#   asan        the unit and CLI (bats) tests built with ASan/UBSan
#   fuzz        every libFuzzer target for FUZZ_SECONDS (default 10)
#   packages    the nodeforge packages the images install (make
#               image-pkgs rpm): started in the background, niced, before
#               asan, since most of it is downloading and unpacking a
#               build root while the tests above keep the CPUs busy
#   e2e         the real-component tests (make check-e2e)
#   cluster     the cluster the images form (make check-cluster)
#
# A stage that fails stops the run (after the table).  The packages'
# output is in build/pkgs.log, shown when they failed.
set -uo pipefail
cd "$(dirname "$0")/.."

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
# the sub-makes are ours: no jobserver of a parent make to inherit
unset MAKEFLAGS MFLAGS MAKELEVEL

names=() secs=() rcs=()
t_all=$(date +%s)

table() {
	local i
	echo "== stage times"
	for i in "${!names[@]}"; do
		printf '   %-22s %4d:%02d  %s\n' "${names[$i]}" $((secs[i] / 60)) $((secs[i] % 60)) \
			"$([ "${rcs[$i]}" = 0 ] && echo ok || echo "FAILED (exit ${rcs[$i]})")"
	done
	local t=$(($(date +%s) - t_all))
	printf '   %-22s %4d:%02d\n' total $((t / 60)) $((t % 60))
}

record() { names+=("$1"); secs+=("$2"); rcs+=("$3"); }

# stage NAME CMD...: run it, record its time, stop the run if it failed
stage() {
	local name=$1 t0 rc=0
	shift
	echo "== $(date -u +%T) $name"
	t0=$(date +%s)
	"$@" || rc=$?
	record "$name" $(($(date +%s) - t0)) "$rc"
	if [ "$rc" != 0 ]; then
		finish_packages
		table
		exit "$rc"
	fi
}

pkg_pid=
pkg_t0=
start_packages() {
	mkdir -p "$BUILD"
	echo "== $(date -u +%T) packages (in the background: $BUILD/pkgs.log)"
	pkg_t0=$(date +%s)
	nice -n 10 $MAKE -j"$JOBS" image-pkgs rpm > "$BUILD/pkgs.log" 2>&1 &
	pkg_pid=$!
}

# wait for the packages; 0 when they were built
finish_packages() {
	[ -n "$pkg_pid" ] || return 0
	local rc=0
	wait "$pkg_pid" || rc=$?
	pkg_pid=
	record "packages (background)" $(($(date +%s) - pkg_t0)) "$rc"
	if [ "$rc" != 0 ]; then
		echo "== the packages failed (exit $rc); the end of $BUILD/pkgs.log:"
		tail -n 60 "$BUILD/pkgs.log"
	fi
	return "$rc"
}

stage build $MAKE -j"$JOBS" all
stage unit $MAKE -j"$JOBS" check-unit check-layers
start_packages
stage asan $MAKE -j"$JOBS" asan
stage fuzz $MAKE -j"$JOBS" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
echo "== $(date -u +%T) waiting for the packages"
if ! finish_packages; then
	table
	exit 1
fi
stage e2e $MAKE -j"$JOBS" check-e2e
stage cluster $MAKE -j"$JOBS" check-cluster
table
