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

mkdir -p "$E2E/prebuild"
exec 9>"$E2E/prebuild.lock"
flock 9
t0=$SECONDS
img_setup "$E2E/prebuild/site" >"$E2E/prebuild/setup.log" 2>&1 || {
	cat "$E2E/prebuild/setup.log" >&2
	exit 6
}
d12=$NF_SRCDIR/examples/site-debian12.yaml
pids=()
for role in controller compute login cpu; do
	img_build "$role" "$E2E/prebuild/d13-$role.log" 9>&- &
	pids+=($!)
done
for role in controller cpu; do
	"$NF_BIN" -C "$NF_SRCDIR/profiles" -s "$d12" build "$role" --cache "$E2E" \
		--out "$E2E/d12/out" --inventory "$NF_SRCDIR/examples/racks.yaml" \
		>"$E2E/prebuild/d12-$role.log" 2>&1 9>&- &
	pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
echo "prebuilt 6 images in $((SECONDS - t0)) s ($fails failed; logs in $E2E/prebuild)"
exit "$fails"
