#!/usr/bin/env bash
# verify: the whole compute check set on the passing fixture sysroot
# (median wall time over RUNS runs, target < 50 ms), against the cost of
# merely reading the same files with cat; and the total time when one probe
# hangs (target: budget + < 100 ms), for an exec'd probe (killed) and an
# in-process one (NVML, abandoned).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NF_SRCDIR=${NF_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
NF_BIN=${NF_BIN:-$NF_SRCDIR/build/nodeforge}
RUNS=${RUNS:-50}
FX=$NF_SRCDIR/tests/fixtures/sysroot

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mk() {	# mk NAME VARIANT: a fixture node, as the verify tests make it
	"$FX/node.sh" "$W/$1" "${2:-}"
}
mk pass
mk hang-enroot hang-enroot
mk hang-nvml hang-nvml

# warm the page cache
"$NF_BIN" verify --sysroot "$W/pass" --fixture "$W/pass/fixture.json" -q
nchecks=$("$NF_BIN" verify --sysroot "$W/pass" --fixture "$W/pass/fixture.json" --json | jq '.checks | length')
files=$(find "$W/pass" -type f)

for _ in $(seq "$RUNS"); do
	t0=$(now_us)
	"$NF_BIN" verify --sysroot "$W/pass" --fixture "$W/pass/fixture.json" -q
	t1=$(now_us)
	echo $((t1 - t0)) >> "$W/nf.times"
	# shellcheck disable=SC2086
	cat $files > /dev/null
	t2=$(now_us)
	echo $((t2 - t1)) >> "$W/cat.times"
done
nf_med=$(median < "$W/nf.times")
cat_med=$(median < "$W/cat.times")
printf 'compute check set (%s checks, %s runs): median %d.%03d ms   (target < 50 ms)\n' \
	"$nchecks" "$RUNS" $((nf_med / 1000)) $((nf_med % 1000))
printf 'peer: cat of the same %s fixture files: median %d.%03d ms; ratio nodeforge/cat = %s\n' \
	"$(echo "$files" | wc -l)" $((cat_med / 1000)) $((cat_med % 1000)) \
	"$(awk -v a="$nf_med" -v b="$cat_med" 'BEGIN {printf "%.2f", a / b}')"

hang() {	# hang NAME BUDGET_S EXTRA...
	local t0 t1 st=0
	t0=$(now_us)
	"$NF_BIN" verify --sysroot "$W/$1" --fixture "$W/$1/fixture.json" --budget "$2" -q "${@:3}" || st=$?
	t1=$(now_us)
	local over=$(( (t1 - t0) - ${2%.*} * 1000000 ))
	if [ "$over" -ge 0 ]; then
		printf 'one probe hangs (%s), --budget %ss: total %d.%03d ms = budget + %d ms (exit %d; target budget + < 100 ms)\n' \
			"$1" "$2" $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000)) $((over / 1000)) "$st"
	else
		printf 'one probe hangs (%s), --budget %ss: total %d.%03d ms: the probe hung for its own budget, every other check ran (exit %d)\n' \
			"$1" "$2" $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000)) "$st"
	fi
}
hang hang-enroot 1
hang hang-nvml 1
hang hang-enroot 10
