#!/usr/bin/env bash
# make test: every stage of the suite, fastest first, and a table of each
# stage's wall time at the end.
#
#   unit        the cmocka unit tests on the plain build, and the
#               library's layering (make check-layers)
#   asan        the unit tests and the first part of the CLI (bats)
#               tests, built with ASan/UBSan (NF_BATS_PART=early:
#               tests/bats-part.sh)
#   prepare     the images' bootstraps and compiled artifacts (make
#               e2e-prepare: nodeforge build --prepare, which needs no
#               package), started in the background right after the
#               build, the GPU role's driver compile first: the longest
#               chain of the run
#   packages    the nodeforge packages the images install (make
#               image-pkgs rpm): started in the background, niced, before
#               asan, since most of it is downloading and unpacking a
#               build root while the tests above keep the CPUs busy
#   images      then, in the same background job, the six images the
#               e2e and cluster tests share (make e2e-prebuild), each
#               from its prepared root: they build while asan and the
#               e2e files that need no image run; the cluster stage
#               waits for them
#   e2e (no image)
#               the real-component tests that need no shared image
#               (make check-e2e NF_E2E_PART=early)
#   cluster     the cluster the images form (make check-cluster), with
#               beside it, in the CPU time its VMs leave idle:
#   e2e (images, beside)
#               the e2e files that use the images (NF_E2E_PART=late),
#               from the cluster's second boot wave on
#   fuzz (beside)
#               every libFuzzer target for FUZZ_SECONDS (default 10),
#               niced to the last place
#   asan CLI (beside)
#               the second part of the CLI tests under ASan (the files
#               marked "# make test: beside the cluster": long image,
#               build and reimage files), one file at a time, niced 5
#
# A stage that fails stops the run (after the table).  The packages'
# output is in build/pkgs.log, shown when they failed; the images' in
# build/prepare.log and build/prebuild.log (a failed image build fails
# again in its test).
set -uo pipefail
# background jobs in their own process group, to stop the whole job
set -m
cd "$(dirname "$0")/.."

MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
# the sub-makes are ours: no jobserver of a parent make to inherit
unset MAKEFLAGS MFLAGS MAKELEVEL
# the parts are this script's to name, stage by stage: a caller's (or
# an enclosing test run's) would split every stage
unset NF_BATS_PART NF_E2E_PART
# Debian's python3 (with make deps' python3-yaml and python3-requests),
# not a version manager's shim in front of it on PATH: the tests run
# python3 hundreds of times, and a shim (pyenv's is a chain of shell
# scripts) costs each call a dozen processes
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/shims$' | paste -sd: -)
export PATH

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
		stop_background
		table
		exit "$rc"
	fi
}

bg_pid=
bg_t0=
pkgs_done=
prep_pid=
prep_t0=

# the images' bootstraps and compiled artifacts, in the background (its
# own process group): "STATUS SECONDS-SINCE-EPOCH" in prepare.done
start_prepare() {
	mkdir -p "$BUILD"
	rm -f "$BUILD/prepare.done"
	echo "== $(date -u +%T) prepare (in the background: $BUILD/prepare.log)"
	prep_t0=$(date +%s)
	(
		rc=0
		$MAKE e2e-prepare >"$BUILD/prepare.log" 2>&1 || rc=$?
		echo "$rc $(date +%s)" >"$BUILD/prepare.done"
	) &
	prep_pid=$!
}

# its time, once it ended (the builds that needed its roots waited for
# them); a failed prepare fails nothing itself: the build that needs the
# root does the work again and fails with its words
finish_prepare() {
	[ -n "$prep_pid" ] || return 0
	wait "$prep_pid" 2>/dev/null || true
	prep_pid=
	local rc=1 t
	read -r rc t <"$BUILD/prepare.done" 2>/dev/null || return 0
	record "prepare (background)" $((t - prep_t0)) "$rc"
	[ "$rc" = 0 ] || echo "== the prepare failed (exit $rc): $BUILD/prepare.log"
}

# the background job: the packages, then the shared images.  Each writes
# "STATUS SECONDS-SINCE-EPOCH" to its done file when it ends.
background() {
	local rc=0
	$MAKE -j"$JOBS" image-pkgs rpm >"$BUILD/pkgs.log" 2>&1 || rc=$?
	echo "$rc $(date +%s)" >"$BUILD/pkgs.done"
	[ "$rc" = 0 ] || return "$rc"
	rc=0
	$MAKE e2e-prebuild PKGS_READY=1 >"$BUILD/prebuild.log" 2>&1 || rc=$?
	echo "$rc $(date +%s)" >"$BUILD/prebuild.done"
}

start_packages() {
	mkdir -p "$BUILD"
	rm -f "$BUILD/pkgs.done" "$BUILD/prebuild.done"
	echo "== $(date -u +%T) packages, then images (in the background: $BUILD/pkgs.log, $BUILD/prebuild.log)"
	bg_t0=$(date +%s)
	(
		renice -n 5 "$BASHPID" >/dev/null
		background
	) &
	bg_pid=$!
}

# wait for the packages; 0 when they were built
finish_packages() {
	[ -n "$bg_pid" ] && [ -z "$pkgs_done" ] || return 0
	while [ ! -e "$BUILD/pkgs.done" ] && kill -0 "$bg_pid" 2>/dev/null; do sleep 2; done
	local rc=1 t
	read -r rc t <"$BUILD/pkgs.done" 2>/dev/null || t=$(date +%s)
	pkgs_done=$t
	record "packages (background)" $((t - bg_t0)) "$rc"
	if [ "$rc" != 0 ]; then
		echo "== the packages failed (exit $rc); the end of $BUILD/pkgs.log:"
		tail -n 60 "$BUILD/pkgs.log"
	fi
	return "$rc"
}

# a failed stage ends the run: the background job (its own process
# group, set -m) is stopped, not waited for
stop_background() {
	local p
	for p in "$fuzz_pid" "$late_pid" "$cli_pid"; do
		[ -n "$p" ] || continue
		kill -- -"$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	fuzz_pid= late_pid= cli_pid=
	if [ -n "$prep_pid" ]; then
		kill -- -"$prep_pid" 2>/dev/null || true
		wait "$prep_pid" 2>/dev/null || true
		prep_pid=
	fi
	[ -n "$bg_pid" ] || return 0
	[ -n "$pkgs_done" ] || [ ! -e "$BUILD/pkgs.done" ] || finish_packages || true
	kill -- -"$bg_pid" 2>/dev/null || true
	wait "$bg_pid" 2>/dev/null || true
	bg_pid=
}

# the images' time, once the background job has ended (the e2e files
# that need them waited for them)
finish_images() {
	[ -n "$bg_pid" ] || return 0
	finish_packages || true
	wait "$bg_pid" 2>/dev/null || true
	bg_pid=
	local rc=1 t
	read -r rc t <"$BUILD/prebuild.done" 2>/dev/null || return 0
	record "images (background)" $((t - pkgs_done)) "$rc"
	[ "$rc" = 0 ] || echo "== $rc image build(s) failed in the background; $BUILD/prebuild.log and the logs it names"
}

# Beside the cluster test, whose VMs leave the CPUs idle between their
# boots (tests/cluster/cluster_helper.bash): the fuzz targets, niced to
# the last place (each runs for FUZZ_SECONDS of wall time); the second
# part of the CLI tests under ASan, one file at a time, niced 5 (the
# first 30 minutes of the run are CPU-bound: what runs here is not in
# their way); and the e2e files that use the images (t2950, t4920),
# started once the cluster's second boot wave has its verdicts (its line
# in the cluster's timings.log) or the cluster has ended.  Each lane's
# output is in its
# log, printed when the cluster stage is over; "STATUS SECONDS-SINCE-
# EPOCH" in its done file.
E2E_CACHE=${NF_E2E_CACHE:-$(realpath -m "$BUILD/e2e-cache")}
fuzz_pid= fuzz_t0= fuzz_rc=0
late_pid= late_rc=0
cli_pid= cli_rc=0

start_fuzz() {
	rm -f "$BUILD/fuzz.done"
	echo "== $(date -u +%T) fuzz (beside the cluster, niced: $BUILD/fuzz.log)"
	fuzz_t0=$(date +%s)
	(
		rc=0
		nice -n 19 $MAKE -j"$JOBS" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-10}" \
			>"$BUILD/fuzz.log" 2>&1 || rc=$?
		echo "$rc $fuzz_t0 $(date +%s)" >"$BUILD/fuzz.done"
	) &
	fuzz_pid=$!
}

start_late_cli() {
	rm -f "$BUILD/asan-cli.done"
	echo "== $(date -u +%T) asan CLI, second part (beside the cluster: $BUILD/asan-cli.log)"
	(
		t0=$(date +%s)
		rc=0
		NF_BATS_PART=late nice -n 5 $MAKE asan-bats BATS_JOBS=1 \
			>"$BUILD/asan-cli.log" 2>&1 || rc=$?
		echo "$rc $t0 $(date +%s)" >"$BUILD/asan-cli.done"
	) &
	cli_pid=$!
}

start_late_e2e() {
	local timings=$E2E_CACHE/cluster/timings.log seen=0
	[ -f "$timings" ] && seen=$(wc -l <"$timings")
	rm -f "$BUILD/e2e-late.done" "$BUILD/cluster.done"
	echo "== $(date -u +%T) e2e (images): after the cluster's second boot wave ($BUILD/e2e-late.log)"
	(
		until [ -e "$BUILD/cluster.done" ] ||
			tail -n +$((seen + 1)) "$timings" 2>/dev/null | grep -q ' wave 2 '; do
			sleep 5
		done
		t0=$(date +%s)
		rc=0
		NF_E2E_PART=late $MAKE -j"$JOBS" check-e2e PKGS_READY=1 \
			>"$BUILD/e2e-late.log" 2>&1 || rc=$?
		echo "$rc $t0 $(date +%s)" >"$BUILD/e2e-late.done"
	) &
	late_pid=$!
}

# wait for a lane, print its log (all of it when it failed), record its
# time; NAME PID DONE-FILE LOG LINES
finish_lane() {
	local name=$1 pid=$2 done=$3 log=$4 lines=$5 rc=1 t0 t
	wait "$pid" 2>/dev/null || true
	t0=$(date +%s) t=$t0
	[ -e "$done" ] && read -r rc t0 t <"$done"
	echo "== $name: $log"
	if [ "$rc" = 0 ]; then tail -n "$lines" "$log"; else cat "$log"; fi
	record "$name" $((t - t0)) "$rc"
	return "$rc"
}

finish_late_e2e() {
	[ -n "$late_pid" ] || return 0
	finish_lane "e2e (images, beside)" "$late_pid" "$BUILD/e2e-late.done" \
		"$BUILD/e2e-late.log" 100000 || late_rc=$?
	late_pid=
}

finish_late_cli() {
	[ -n "$cli_pid" ] || return 0
	finish_lane "asan CLI (beside)" "$cli_pid" "$BUILD/asan-cli.done" \
		"$BUILD/asan-cli.log" 100000 || cli_rc=$?
	cli_pid=
}

finish_fuzz() {
	[ -n "$fuzz_pid" ] || return 0
	finish_lane "fuzz (beside)" "$fuzz_pid" "$BUILD/fuzz.done" \
		"$BUILD/fuzz.log" 80 || fuzz_rc=$?
	fuzz_pid=
}

stage build $MAKE -j"$JOBS" all
start_prepare
stage unit $MAKE -j"$JOBS" check-unit check-layers
start_packages
stage asan env NF_BATS_PART=early $MAKE -j"$JOBS" asan
echo "== $(date -u +%T) waiting for the packages"
if ! finish_packages; then
	stop_background
	table
	exit 1
fi
stage "e2e (no image)" env NF_E2E_PART=early $MAKE -j"$JOBS" check-e2e PKGS_READY=1
finish_images
finish_prepare
start_fuzz
start_late_e2e
start_late_cli
stage cluster $MAKE -j"$JOBS" check-cluster PKGS_READY=1
touch "$BUILD/cluster.done"
finish_late_cli
finish_late_e2e
finish_fuzz
table
[ "$cli_rc$late_rc$fuzz_rc" = 000 ] || exit 1
