#!/bin/bash
# Benchmark: nodeforge pack against its peers, in the same run, on the same
# tree (page cache warm).  Prints wall time, output size and peak RSS (of
# the largest process of each pipeline, from /usr/bin/time -v) and ratios.
#
#   NF_BIN=build/nodeforge bash bench/pack.sh
#   BENCH_TREE=DIR   pack an existing tree instead of building one
#   BENCH_MB=N       size of the built tree (default 500); it is a copy of
#                    parts of /usr: binaries, libraries, headers, docs
#   BENCH_LEVEL=N    zstd level for nodeforge and tar|zstd (default 3)
#   BENCH_RUNS=N     runs per tool, the fastest is kept (default 1)
#   BENCH_XZ=1       also nodeforge tar.xz against tar | xz -T0 -6 (slow)
#
# CPU is user+sys of the whole pipeline: on a shared machine it is steadier
# than wall time, which also measures how much CPU the scheduler lent.
set -euo pipefail

NF_BIN=${NF_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/nodeforge}
LEVEL=${BENCH_LEVEL:-3}
WANT_MB=${BENCH_MB:-500}
RUNS=${BENCH_RUNS:-1}
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

declare -A WALL SIZE RSS CPU
measure() { # NAME OUTPUT COMMAND...
	local name=$1 out=$2 run w; shift 2
	WALL[$name]=
	for run in $(seq "$RUNS"); do
		rm -f "$out"
		/usr/bin/time -f '%e %U %S %M' -o "$WORK/time.$name" bash -c "$*" >/dev/null
		read -r w u s m <"$WORK/time.$name"
		if [ -z "${WALL[$name]}" ] || awk -v a="$w" -v b="${WALL[$name]}" 'BEGIN { exit !(a < b) }'; then
			WALL[$name]=$w
			CPU[$name]=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
			RSS[$name]=$m
		fi
	done
	SIZE[$name]=$(stat -c %s "$out")
	printf '%-12s %8.2f s wall %8.2f s cpu %12d bytes %8d KiB peak RSS\n' "$name" \
		"${WALL[$name]}" "${CPU[$name]}" "${SIZE[$name]}" "${RSS[$name]}"
	rm -f "$out"
}

O=$WORK/out
measure nodeforge "$O.tar.zst" \
	"'$NF_BIN' -q pack '$TREE' -o '$O.tar.zst' --level $LEVEL --epoch 0"
measure tar+zstd "$O.tz" \
	"tar --sort=name --mtime=@0 --numeric-owner -C '$TREE' -cf - . | zstd -q -T0 -$LEVEL >'$O.tz'"
measure cpio+pigz "$O.cpio.gz" \
	"cd '$TREE' && find . | cpio -o -H newc --quiet | pigz >'$O.cpio.gz'"
if command -v mksquashfs >/dev/null; then
	measure mksquashfs "$O.sqfs" \
		"mksquashfs '$TREE' '$O.sqfs' -comp zstd -noappend -quiet -no-progress"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo "ratios (target in brackets):"
echo "  tar+zstd time / nodeforge time:   $(ratio "${WALL[tar+zstd]}" "${WALL[nodeforge]}") [>= 1.00]"
echo "  cpio+pigz time / nodeforge time:  $(ratio "${WALL[cpio+pigz]}" "${WALL[nodeforge]}") [>= 2.00]"
echo "  nodeforge size / tar+zstd size:   $(ratio "${SIZE[nodeforge]}" "${SIZE[tar+zstd]}") [<= 1.00]"
echo "  tar+zstd cpu / nodeforge cpu:     $(ratio "${CPU[tar+zstd]}" "${CPU[nodeforge]}")"
echo "  cpio+pigz cpu / nodeforge cpu:    $(ratio "${CPU[cpio+pigz]}" "${CPU[nodeforge]}")"
echo "  nodeforge RSS / tar+zstd RSS:     $(ratio "${RSS[nodeforge]}" "${RSS[tar+zstd]}")"
if [ -n "${WALL[mksquashfs]:-}" ]; then
	echo "  mksquashfs time / nodeforge time: $(ratio "${WALL[mksquashfs]}" "${WALL[nodeforge]}")"
	echo "  nodeforge size / mksquashfs size: $(ratio "${SIZE[nodeforge]}" "${SIZE[mksquashfs]}")"
fi
if [ -n "${BENCH_XZ:-}" ] && command -v xz >/dev/null; then
	# tar.xz (what EL builds publish for kickstart liveimg), default level 6
	measure nf-tar.xz "$O.tar.xz" \
		"'$NF_BIN' -q pack '$TREE' -o '$O.tar.xz' --epoch 0"
	measure tar+xz "$O.txz" \
		"tar --sort=name --mtime=@0 --numeric-owner -C '$TREE' -cf - . | xz -q -T0 -6 >'$O.txz'"
	echo "  tar+xz time / nodeforge xz time:  $(ratio "${WALL[tar+xz]}" "${WALL[nf-tar.xz]}")"
	echo "  nodeforge xz size / tar+xz size:  $(ratio "${SIZE[nf-tar.xz]}" "${SIZE[tar+xz]}")"
	echo "  nodeforge xz RSS / tar+xz RSS:    $(ratio "${RSS[nf-tar.xz]}" "${RSS[tar+xz]}")"
fi
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "(nodeforge's time includes writing the manifest with every file's sha256)"
