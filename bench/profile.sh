#!/usr/bin/env bash
# Profile resolution with large lists: `nodeforge profile show ROLE` on a
# role whose system.packages.install merges 100,000 entries (50,000
# inherited, 50,000 of its own, with removals by name and by key= and
# duplicates), and on one whose slurm.conf merges 100,000 keys; against the
# same entries in one profile with no inheritance (the cost of parsing and
# printing them, without any merge).  Target: < 1 s.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NF_BIN=${NF_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/nodeforge}
SRC=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-100000}
RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-$( [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")}
W=$(mktemp -d "$BENCH_DIR/nf-bench-profile.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
half=$((N / 2))
mkdir p
cp "$SRC/tests/fixtures/site-good.yaml" p/site.yaml
{
	printf 'abstract: true\nsystem:\n  packages:\n    install:\n'
	seq 1 "$half" | awk '{ printf "      - %s\n", ($1 % 2) ? "pkg-" $1 : "opt-" $1 "=1" }'
} > p/base.yaml
{
	printf 'inherits: [base]\nsystem:\n  packages:\n    install:\n'
	printf '      - "!pkg-1"\n      - "!opt-2"\n      - pkg-3\n'
	seq 4 "$half" | awk '{ printf "      - new-%d\n", $1 }'
} > p/role.yaml
{
	printf 'system:\n  packages:\n    install:\n'
	seq 1 "$N" | awk '{ printf "      - pkg-%d\n", $1 }'
} > p/flat.yaml
{
	printf 'abstract: true\nslurm:\n  conf:\n'
	seq 1 "$half" | awk '{ printf "    KeyA%d: %d\n", $1, $1 }'
} > p/mapbase.yaml
{
	printf 'inherits: [mapbase]\nslurm:\n  conf:\n'
	seq 1 "$half" | awk '{ printf "    KeyB%d: %d\n", $1, $1 }'
} > p/maprole.yaml
{
	printf 'slurm:\n  conf:\n'
	seq 1 "$N" | awk '{ printf "    Key%d: %d\n", $1, $1 }'
} > p/mapflat.yaml

timed() {	# timed ROLE -> median microseconds over RUNS
	local t0 t1
	for _ in $(seq "$RUNS"); do
		t0=$(now_us)
		"$NF_BIN" -C p -q profile show "$1" --json > /dev/null
		t1=$(now_us)
		echo $((t1 - t0))
	done | median
}
"$NF_BIN" -C p -q profile show role --json > "$W/role.json" # warm, and check it
n=$(jq '.system.packages.install | length' "$W/role.json")
[ "$n" -eq $((N - 5)) ] || { echo "bench/profile.sh: resolved $n entries, want $((N - 5))"; exit 1; }

list=$(timed role)
flat=$(timed flat)
map=$(timed maprole)
mapflat=$(timed mapflat)
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
printf 'profile show, %d list entries merged (inherits, removals, duplicates): median %s s over %d runs   (target < 1 s)\n' \
	"$N" "$(ms $((list / 1000)))" "$RUNS"
printf 'peer: the same count in one profile, no merge: %s s; ratio merged/unmerged = %s\n' \
	"$(ms $((flat / 1000)))" "$(ratio "$list" "$flat")"
printf 'profile show, %d slurm.conf keys merged: median %s s; unmerged peer %s s; ratio = %s\n' \
	"$N" "$(ms $((map / 1000)))" "$(ms $((mapflat / 1000)))" "$(ratio "$map" "$mapflat")"
awk -v t="$list" 'BEGIN { exit !(t < 1000000) }' && echo "target < 1 s: met" || echo "target < 1 s: MISSED"
