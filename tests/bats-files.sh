#!/usr/bin/env bash
# tests/bats-files.sh DIR [bats options...]: every DIR/*.bats file, one
# bats run each and in order, then a table of each file's wall time
# (its setup_file included, which the per-test --timing does not show).
# Every file runs even after one fails; the exit status is the first
# failing file's.  The files that use the shared images (`load images`:
# tests/e2e/images.bash) run last, so that the images that make test
# builds in the background (tests/e2e/prebuild.sh) are built meanwhile.
# NF_E2E_PART=early runs only the files that need no image, late only
# those that do (make test runs the late ones beside the cluster test);
# unset, both.
set -uo pipefail

dir=$1
shift
files=() secs=() rcs=()
early=() late=()
for f in "$dir"/*.bats; do
	if grep -q '^load images' "$f"; then late+=("$f"); else early+=("$f"); fi
done
first=0
t_all=$(date +%s)
case ${NF_E2E_PART:-} in
early) late=() ;;
late) early=() ;;
'') ;;
*) echo "bats-files.sh: NF_E2E_PART is 'early', 'late' or unset, not '$NF_E2E_PART'" >&2
   exit 2 ;;
esac
for f in ${early[@]+"${early[@]}"} ${late[@]+"${late[@]}"}; do
	t0=$(date +%s)
	rc=0
	# the split is this script's: the tests do not see it
	env -u NF_E2E_PART -u NF_BATS_PART bats "$@" "$f" || rc=$?
	files+=("$(basename "$f")")
	secs+=($(($(date +%s) - t0)))
	rcs+=("$rc")
	[ "$rc" = 0 ] || [ "$first" != 0 ] || first=$rc
done
echo "== $dir${NF_E2E_PART:+ ($NF_E2E_PART)}: time per file"
for i in "${!files[@]}"; do
	printf '   %-36s %4d:%02d  %s\n' "${files[$i]}" $((secs[i] / 60)) \
		$((secs[i] % 60)) "$([ "${rcs[$i]}" = 0 ] && echo ok || echo "FAILED (exit ${rcs[$i]})")"
done
t=$(($(date +%s) - t_all))
printf '   %-36s %4d:%02d\n' total $((t / 60)) $((t % 60))
exit "$first"
