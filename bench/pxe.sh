#!/usr/bin/env bash
# nodeforge pxe on a 10,000-node inventory: first render, unchanged
# re-render, one-node change; against `cp -a` of the same tree (the cost of
# just writing that many files).  Target: < 1 s.
set -euo pipefail
NF_BIN=${NF_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/nodeforge}
SRC=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-10000}
# tmpfs by default, so the figure is nodeforge's and not the disk's
# (BENCH_DIR=/var/tmp to measure a disk)
BENCH_DIR=${BENCH_DIR:-$( [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")}
W=$(mktemp -d "$BENCH_DIR/nf-bench-pxe.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
racks=$((N / 40))
{
	echo "nodes:"
	for r in $(seq 1 "$racks"); do
		printf '  - name: r%03dn[01-40]\n    mac: 52:54:%02x:%02x:00:01+\n    ip: 10.%d.%d.1+\n    role: compute\n    rack: r%03d\n' \
			"$r" $((r / 256)) $((r % 256)) $((r / 200 + 1)) $((r % 200)) "$r"
	done
} > racks.yaml
P="$SRC/tests/fixtures/boot"
run() { "$NF_BIN" -C "$P/profiles" pxe -i racks.yaml -o tree -u http://10.0.0.1:8080 \
	--images "$P/out" --kickstart "$SRC/kickstart" --network 10.0.0.0/8 \
	--kernel-args "compute=quiet hugepages=64 nodeforge.x=1" --json; }
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null || exit 1; e=$(date +%s.%N); echo "$e - $s" | bc; }
first=$(t run)
again=$(t run)
sed -i '0,/ip: 10.1.1.1+/s//ip: 10.1.250.1+/' racks.yaml
one=$(t run)
copy=$(t cp -a tree tree.copy)
files=$(find tree -type f | wc -l)
echo "filesystem: $(df -T "$W" | awk 'NR==2{print $2}') ($BENCH_DIR)"
printf 'pxe %d nodes (%d files): first %.3f s, unchanged %.3f s, one rack changed %.3f s\n' \
	"$N" "$files" "$first" "$again" "$one"
printf 'cp -a of the same tree: %.3f s; pxe first render / cp -a = %.2fx\n' "$copy" \
	"$(echo "$first / $copy" | bc -l)"
awk -v f="$first" 'BEGIN { exit !(f < 1.0) }' && echo "target < 1 s: met" || echo "target < 1 s: MISSED"
