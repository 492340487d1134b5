#!/usr/bin/env bash
# verify against NHC (LBNL Node Health Check) on a booted node: the cpu
# image's own systemd started as PID 1 of new namespaces
# (tests/e2e/sysns.bash, as a container manager starts it), then, one
# after the other in the same run, RUNS times each:
#
#   nodeforge verify -q    the image's whole check set (NF_BIN, copied in)
#   nodeforge verify -q --only (the checks bench/nhc.conf stands for)
#   nhc -a -q              NHC's own driver and scripts, with the 13
#                          checks of bench/nhc.conf: the ones of that set
#                          NHC has a check for, written as NHC's
#                          configuration says them
#   NF_BASE_BIN verify -q  when set: another build, such as the last
#                          release's, on the whole set
#
# and prints each median and the ratios NHC / nodeforge.  NHC is not a
# Debian package: NHC_SRC names a checkout of https://github.com/mej/nhc
# (the bench was measured at NHC_COMMIT below); without one the bench
# says so and exits 0.  Needs root (the namespaces) and an image:
# IMAGE=ROLE-SHA.rootfs.tar.zst, by default the cpu image make test
# builds (build/e2e-cache/cluster/out/cpu).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NF_SRCDIR=${NF_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
NF_BIN=${NF_BIN:-$NF_SRCDIR/build/nodeforge}
RUNS=${RUNS:-30}
NHC_COMMIT=9c4a38c
OUT=${NF_E2E_CACHE:-$NF_SRCDIR/build/e2e-cache}/cluster/out/cpu

skip() { echo "verify-nhc: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "needs root (the namespaces the image's systemd runs in)"
[ -n "${NHC_SRC:-}" ] && [ -x "$NHC_SRC/nhc" ] ||
	skip "NHC_SRC names no NHC checkout (git clone https://github.com/mej/nhc; git -C nhc checkout $NHC_COMMIT)"
if [ -z "${IMAGE:-}" ]; then
	[ -s "$OUT/cpu.current" ] || skip "no cpu image in $OUT (make test builds it; or IMAGE=...)"
	IMAGE=$OUT/$(jq -r .rootfs "$OUT/cpu.current")
fi
# shellcheck source=../tests/e2e/sysns.bash
. "$NF_SRCDIR/tests/e2e/sysns.bash"

W=$(mktemp -d)
trap 'sysns_stop; rm -rf "$W"' EXIT
R=$W/root
"$NF_BIN" unpack --devices "$IMAGE" "$R" >/dev/null
install -m 0755 "$NF_BIN" "$R/usr/local/sbin/nodeforge"
[ -z "${NF_BASE_BIN:-}" ] || install -m 0755 "$NF_BASE_BIN" "$R/usr/local/sbin/nodeforge-base"
install -m 0755 "$NHC_SRC/nhc" "$R/usr/local/sbin/nhc"
mkdir -p "$R/etc/nhc/scripts" "$R/var/run/nhc"
cp "$NHC_SRC"/scripts/*.nhc "$R/etc/nhc/scripts/"
cp "$NF_SRCDIR/bench/nhc.conf" "$R/etc/nhc/nhc.conf"
sysns_mask "$R" systemd-networkd-wait-online.service chrony-wait.service
sysns_boot "$R" "$W/boot.log"

# one run inside: its wall time in µs, measured inside (nsenter's own
# start is not the tool's)
inside() {
	sysns bash -c 't0=${EPOCHREALTIME/./}; "$@" >/dev/null 2>&1; t1=${EPOCHREALTIME/./}; echo $((t1 - t0))' \
		inside "$@"
}

nf=(nodeforge verify -q)
# the checks bench/nhc.conf stands for (its comment lines)
only=$(sed -n 's/^# \([a-z0-9_.]*\)$/\1/p' "$NF_SRCDIR/bench/nhc.conf" | sort -u | paste -sd,)
nf13=(nodeforge verify -q --only "$only")
nhc=(nhc -a -q -t 30 MARK_OFFLINE=0 LOGFILE=- NHC_RM=slurm)
count() { { sysns "$@" --json 2>/dev/null || true; } | jq '[.checks[] | select(.reason != "not selected")] | length'; }
n_all=$(count nodeforge verify)
n_13=$(count nodeforge verify --only "$only")
# warm the page cache
inside "${nf[@]}" >/dev/null
inside "${nhc[@]}" >/dev/null
for _ in $(seq "$RUNS"); do
	inside "${nf[@]}" >> "$W/nf.times"
	inside "${nf13[@]}" >> "$W/nf13.times"
	inside "${nhc[@]}" >> "$W/nhc.times"
	[ -z "${NF_BASE_BIN:-}" ] || inside nodeforge-base verify -q >> "$W/base.times"
done
ms() { local m; m=$(median < "$1"); printf '%d.%03d ms' $((m / 1000)) $((m % 1000)); }
ratio() { awk -v a="$(median < "$1")" -v b="$(median < "$2")" 'BEGIN {printf "%.1f", a / b}'; }
printf 'booted cpu image (%s), %s runs each, inside its systemd:\n' "$(basename "$IMAGE")" "$RUNS"
printf '  nodeforge verify, whole set (%s checks):     median %s\n' "$n_all" "$(ms "$W/nf.times")"
printf '  nodeforge verify --only NHC'"'"'s (%s checks):   median %s\n' "$n_13" "$(ms "$W/nf13.times")"
printf '  NHC %s, bench/nhc.conf (13 checks):     median %s\n' "$NHC_COMMIT" "$(ms "$W/nhc.times")"
[ -z "${NF_BASE_BIN:-}" ] ||
	printf '  NF_BASE_BIN verify, whole set:               median %s\n' "$(ms "$W/base.times")"
printf '  ratio NHC / nodeforge, same checks: %s   whole set: %s   (goal >= 10)\n' \
	"$(ratio "$W/nhc.times" "$W/nf13.times")" "$(ratio "$W/nhc.times" "$W/nf.times")"
