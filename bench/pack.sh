#!/bin/bash
# Benchmark: nodeforge pack against its peers, in the same run, on the same
# tree (page cache warm).  Each run packs with every tool in turn (so a
# change in the machine's load hits all of them alike); medians over the
# runs are printed with the ratios.  Wall time, CPU time (user+sys of the
# whole pipeline), output size and peak RSS (of the largest process of a
# pipeline, from /usr/bin/time).
#
#   NF_BIN=build/nodeforge bash bench/pack.sh
#   BENCH_TREE=DIR   pack an existing tree instead of building one
#   BENCH_MB=N       size of the built tree (default 500); it is a copy of
#                    parts of /usr: binaries, libraries, headers, docs
#   BENCH_LEVEL=N    zstd level for nodeforge and tar|zstd (default 3)
#   BENCH_RUNS=N     runs (default 3)
#   BENCH_XZ=1       also nodeforge tar.xz against tar | xz -T0 -6 (slow)
#
# On a shared machine, CPU time is the steadier figure: wall time also
# measures how much CPU the scheduler lent each tool.  nodeforge's times
# include the manifest (every file's sha256) and the fsync that publishes
# the archive; the peers neither hash nor sync.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NF_BIN=${NF_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/nodeforge}
LEVEL=${BENCH_LEVEL:-3}
WANT_MB=${BENCH_MB:-500}
RUNS=${BENCH_RUNS:-3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nf-bench-pack.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

for t in tar zstd cpio pigz /usr/bin/time; do
	command -v "$t" >/dev/null || { echo "bench/pack.sh: needs '$t'" >&2; exit 1; }
done

if [ -n "${BENCH_TREE:-}" ]; then
	TREE=$BENCH_TREE
else
	TREE=$WORK/tree
	mkdir -p "$TREE"
	for d in /usr/include /usr/lib/python3 /usr/share/perl /usr/share/doc \
		 /usr/share/locale /usr/bin /usr/sbin /usr/lib/x86_64-linux-gnu \
		 /usr/share /usr/lib; do
		[ -d "$d" ] || continue
		cp -a --parents "$d" "$TREE" 2>/dev/null || true
		[ "$(du -sm "$TREE" | cut -f1)" -ge "$WANT_MB" ] && break
	done
fi
MB=$(du -sm "$TREE" | cut -f1)
FILES=$(find "$TREE" | wc -l)
echo "tree: $TREE, ${MB} MB, $FILES entries, $(nproc) CPUs, zstd level $LEVEL"
# Warm the page cache so every tool reads from memory
find "$TREE" -type f -exec cat {} + >/dev/null 2>&1 || true

declare -A WALL SIZE RSS CPU OUT CMD REF
TOOLS=()
tool() { # NAME OUTPUT COMMAND [the nodeforge run it is compared with]
	TOOLS+=("$1")
	OUT[$1]=$2
	CMD[$1]=$3
	REF[$1]=${4:-nodeforge}
}

O=$WORK/out
tool nodeforge "$O.tar.zst" \
	"'$NF_BIN' -q pack '$TREE' -o '$O.tar.zst' --level $LEVEL --epoch 0"
tool tar+zstd "$O.tz" \
	"tar --sort=name --mtime=@0 --numeric-owner -C '$TREE' -cf - . | zstd -q -T0 -$LEVEL >'$O.tz'"
tool cpio+pigz "$O.cpio.gz" \
	"cd '$TREE' && find . | cpio -o -H newc --quiet | pigz >'$O.cpio.gz'"
if command -v mksquashfs >/dev/null; then
	tool mksquashfs "$O.sqfs" \
		"mksquashfs '$TREE' '$O.sqfs' -comp zstd -noappend -quiet -no-progress"
fi
if [ -n "${BENCH_XZ:-}" ] && command -v xz >/dev/null; then
	# tar.xz (what EL builds publish for kickstart liveimg), default level 6
	tool nf-tar.xz "$O.tar.xz" \
		"'$NF_BIN' -q pack '$TREE' -o '$O.tar.xz' --epoch 0" self
	tool tar+xz "$O.txz" \
		"tar --sort=name --mtime=@0 --numeric-owner -C '$TREE' -cf - . | xz -q -T0 -6 >'$O.txz'" \
		nf-tar.xz
fi

declare -A W C M
for run in $(seq "$RUNS"); do
	for t in "${TOOLS[@]}"; do
		rm -f "${OUT[$t]}" "${OUT[$t]}.manifest.json"
		/usr/bin/time -f '%e %U %S %M' -o "$WORK/time" bash -c "${CMD[$t]}" >/dev/null
		read -r w u s m <"$WORK/time"
		W[$t]+=" $w"
		C[$t]+=" $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
		M[$t]+=" $m"
		SIZE[$t]=$(stat -c %s "${OUT[$t]}")
		rm -f "${OUT[$t]}" "${OUT[$t]}.manifest.json"
	done
done
echo "medians of $RUNS runs (each run: every tool in turn)"
for t in "${TOOLS[@]}"; do
	WALL[$t]=$(median <<<"${W[$t]}")
	CPU[$t]=$(median <<<"${C[$t]}")
	RSS[$t]=$(median <<<"${M[$t]}")
	printf '%-12s %7.2f s wall %7.2f s cpu %12d bytes %8d KiB peak RSS   (walls:%s; cpus:%s)\n' \
		"$t" "${WALL[$t]}" "${CPU[$t]}" "${SIZE[$t]}" "${RSS[$t]}" "${W[$t]}" "${C[$t]}"
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo "ratios, peer / nodeforge for time (> 1: nodeforge faster), nodeforge / peer for size and RSS (target in brackets):"
for t in "${TOOLS[@]}"; do
	n=${REF[$t]}
	[ "$t" = nodeforge ] || [ "$n" = self ] && continue
	case $t in
	tar+zstd) tw='[>= 1.00]' ts='[<= 1.00]' ;;
	cpio+pigz) tw='[>= 2.00]' ts='' ;;
	*) tw='' ts='' ;;
	esac
	printf '  %-11s wall %5s %-9s cpu %5s   size %5s %-9s RSS %5s   (against %s)\n' "$t" \
		"$(ratio "${WALL[$t]}" "${WALL[$n]}")" "$tw" \
		"$(ratio "${CPU[$t]}" "${CPU[$n]}")" \
		"$(ratio "${SIZE[$n]}" "${SIZE[$t]}")" "$ts" \
		"$(ratio "${RSS[$n]}" "${RSS[$t]}")" "$n"
done
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "(nodeforge's time includes the manifest with every file's sha256 and the publishing fsync)"
