#!/usr/bin/env bash
# tests/e2e/prebuild.sh: the six images the slow tests share, built side
# by side in the shared cache: the four Debian 13 roles of the test site
# (tests/e2e/images.bash: controller, login, cpu and the GPU compute role,
# which t2950, t4920 and the cluster test boot or check) and the Debian 12
# example site's controller and cpu role (t2950).  The bootstraps and
# compiles are most of the time and do not depend on each other: the
# downloads of some overlap the compiles of others.
#
# It holds NF_E2E_CACHE/prebuild.lock while it builds: a second caller
# waits for the first, then finds every image current (the same inputs:
# a second or two each).  `make test` starts it in the background once
# the packages are built (tests/run-all.sh); t2950 calls it again.
#
# --prepare: only fill the cache (nodeforge build --prepare: each
# image's bootstrap, then its root after the compiled artifacts), which
# needs no nodeforge package, so `make test` starts it at once, before
# the packages are built; also the small role t2900 builds
# (tests/fixtures/profiles/e2e).  Niceness by when the tests need them:
# the GPU role, whose driver compile is the longest build, 5 (as make
# test's packages); the cpu role (t0900's build) and the small role
# (t2900) 10; the rest, needed last (t2950 and the cluster), 15.  A later
# build of the same inputs starts from the prepared root, or waits for a
# prepare still running (the cache's own locks).
#
# Needs NF_BIN, NF_SRCDIR, NF_E2E_CACHE, NODEFORGE_SELF_PACKAGE and
# NODEFORGE_ARTIFACT_MIRROR (make e2e-prebuild sets them).  Prints one
# line; each build's output is in NF_E2E_CACHE/prebuild/*.log.  Exit
# status: how many builds failed (a build that fails here fails again,
# with its words, in the test that needs it).
set -uo pipefail
: "${NF_BIN:?}" "${NF_SRCDIR:?}" "${NF_E2E_CACHE:?}"
export E2E=$NF_E2E_CACHE
# shellcheck source=tests/e2e/images.bash
. "$NF_SRCDIR/tests/e2e/images.bash"

prepare=
[ "${1:-}" = --prepare ] && prepare=--prepare
mode=${prepare:+prepare-}
mkdir -p "$E2E/prebuild"
exec 9>"$E2E/${mode}prebuild.lock"
flock 9
t0=$SECONDS
img_setup "$E2E/prebuild/${mode}site" >"$E2E/prebuild/${mode}setup.log" 2>&1 || {
	cat "$E2E/prebuild/${mode}setup.log" >&2
	exit 6
}
d12=$NF_SRCDIR/examples/site-debian12.yaml
# the niceness of ROLE's build (added to the caller's): the GPU role's
# first when preparing
nice_of() {
	[ -n "$prepare" ] || { echo 0; return; }
	case $1 in
	compute) echo 5 ;;
	cpu | mini) echo 10 ;;
	*) echo 15 ;;
	esac
}
pids=()
for role in controller compute login cpu; do
	(
		renice -n "$(nice_of "$role")" "$BASHPID" >/dev/null
		img_build "$role" "$E2E/prebuild/${mode}d13-$role.log" $prepare
	) 9>&- &
	pids+=($!)
done
for role in controller cpu; do
	nice -n "$(nice_of "d12-$role")" "$NF_BIN" -C "$NF_SRCDIR/profiles" -s "$d12" build "$role" \
		--cache "$E2E" $prepare --out "$E2E/d12/out" --inventory "$NF_SRCDIR/examples/racks.yaml" \
		>"$E2E/prebuild/${mode}d12-$role.log" 2>&1 9>&- &
	pids+=($!)
done
n=6
if [ -n "$prepare" ]; then
	nice -n "$(nice_of mini)" "$NF_BIN" -C "$NF_SRCDIR/tests/fixtures/profiles/e2e" build mini --cache "$E2E" \
		--prepare >"$E2E/prebuild/prepare-mini.log" 2>&1 9>&- &
	pids+=($!)
	n=7
fi
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
word=prebuilt
[ -z "$prepare" ] || word=prepared
echo "$word $n images in $((SECONDS - t0)) s ($fails failed; logs in $E2E/prebuild)"
exit "$fails"
