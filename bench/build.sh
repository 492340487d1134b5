#!/usr/bin/env bash
# nodeforge build: full build (--no-cache), no-op rebuild and overlay-only
# rebuild, each against the peer: mmdebstrap alone on the same package list
# and mirror (what a build without nodeforge's caches pays every time).
#
#   BENCH_PROFILES=DIR BENCH_ROLE=ROLE bash bench/build.sh
#
# Default: the small e2e role (tests/fixtures/profiles/e2e, role mini).
# Needs root, mmdebstrap and Debian's mirror.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
NF_BIN=${NF_BIN:-$SRC/build/nodeforge}
PROFS=${BENCH_PROFILES:-$SRC/tests/fixtures/profiles/e2e}
ROLE=${BENCH_ROLE:-mini}
W=$(mktemp -d /tmp/nf-bench-build.XXXXXX)
trap 'rm -rf "$W"' EXIT

secs() {
	local s e
	s=$(date +%s%N)
	"$@" >"$W/log" 2>&1 || { cat "$W/log" >&2; exit 1; }
	e=$(date +%s%N)
	awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}

nfb() { "$NF_BIN" -C "$PROFS" build "$ROLE" --cache "$W/cache" --out "$W/out" \
	--overlays "$W/ov" "$@"; }

mkdir -p "$W/ov"
full=$(secs nfb --no-cache)
noop=$(secs nfb)
grep -q unchanged "$W/log"
mkdir -p "$W/ov/$ROLE/etc"
echo "bench $(date +%s%N)" > "$W/ov/$ROLE/etc/motd"
overlay=$(secs nfb)
grep -q cached "$W/log"

pkgs=$("$NF_BIN" -C "$PROFS" profile show "$ROLE" --json | python3 -c '
import json, sys
p = json.load(sys.stdin)
print(",".join(sorted(set(p["system"]["packages"]["install"] + ["linux-image-amd64"]))))')
mirror=$("$NF_BIN" -C "$PROFS" profile show "$ROLE" --json | python3 -c '
import json, sys; print(json.load(sys.stdin)["site"]["mirrors"]["debian"])')
peer=$(secs mmdebstrap --mode=root --variant=minbase --include="$pkgs" \
	bookworm "$W/peer.tar" "deb $mirror bookworm main")

size=$(stat -c %s "$W/out/$ROLE/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rootfs"])' "$W/out/$ROLE/$ROLE.current")")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
printf 'role %s, rootfs.tar.zst %.1f MiB\n' "$ROLE" "$(awk -v s="$size" 'BEGIN { print s / 1048576 }')"
printf '%-34s %8.2f s\n' "peer: mmdebstrap alone" "$peer"
printf '%-34s %8.2f s   ratio vs peer %s\n' "nodeforge full build (--no-cache)" "$full" "$(ratio "$full" "$peer")"
printf '%-34s %8.2f s   ratio vs peer %s\n' "nodeforge no-op rebuild" "$noop" "$(ratio "$noop" "$peer")"
printf '%-34s %8.2f s   ratio vs peer %s\n' "nodeforge overlay-only rebuild" "$overlay" "$(ratio "$overlay" "$peer")"
