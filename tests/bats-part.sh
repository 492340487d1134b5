#!/usr/bin/env bash
# tests/bats-part.sh DIR: the bats files of DIR that NF_BATS_PART names,
# one per line.  make test runs the CLI tests (tests/bats) under ASan in
# two parts: the first in the foreground, before anything slow; the
# second beside the cluster test, in the CPU time its VMs leave idle
# (tests/run-all.sh).  A file is in the second part when it has the line
#
#   # make test: beside the cluster
#
# (the long ones that a first failure does not need: image, build and
# reimage files).  NF_BATS_PART=early prints the others, late those;
# unset, DIR itself (every file).
set -uo pipefail
dir=$1
marker='^# make test: beside the cluster$'
case ${NF_BATS_PART:-} in
'') echo "$dir" ;;
early) grep -L -e "$marker" "$dir"/*.bats ;;
late) grep -l -e "$marker" "$dir"/*.bats || [ $? = 1 ] ;;
*) echo "bats-part.sh: NF_BATS_PART is 'early', 'late' or unset, not '$NF_BATS_PART'" >&2
   exit 2 ;;
esac
