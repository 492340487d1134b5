#!/usr/bin/env bash
# On a machine with real NVIDIA GPUs (not a nodeforge image): what NVML
# says, and what nodeforge's GPU checks and gres render make of it.
#
#   tests/device/gpu-check.sh NODEFORGE OUTDIR
#
# NODEFORGE may be "LOADER --library-path DIR BINARY" (a bundle of the
# binary with its libraries, for a host whose C library is older).  The
# checks run against the compute role as shipped (8x H100 expected), and
# against the same profile declaring this host's GPUs (type from NVML's
# name, their count), which must pass gpu.driver and gpu.count.
set -u
nf=($1)
out=$2
mkdir -p "$out"
run() { echo "\$ $*"; "$@"; echo "(exit $?)"; }

run nvidia-smi -L
run nvidia-smi --query-gpu=name,driver_version,persistence_mode,ecc.mode.current,memory.total,pci.bus_id,mig.mode.current --format=csv
nvidia-smi -q -x > "$out/nvidia-smi-q.xml" 2>&1
nvidia-smi topo -m > "$out/topo.txt" 2>&1
run "${nf[@]}" version

# the compute role as shipped: 8 H100
run "${nf[@]}" -C profiles verify --role compute --only gpu -v 2>&1 | grep -v ": not selected"
"${nf[@]}" -C profiles verify --role compute --only gpu --json > "$out/verify-shipped.json" 2>&1

# the same role declaring what this host has
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
count=$(nvidia-smi -L | grep -c '^GPU ')
type=$(echo "$name" | awk '{ for (i = 1; i <= NF; i++) if ($i != "NVIDIA" && $i != "Tesla") { print tolower($i); exit } }')
echo "== this host: $count x '$name' (type $type)"
"${nf[@]}" -C profiles profile show compute --json > "$out/compute.json"
python3 - "$out/compute.json" "$type" "$count" > "$out/compute-here.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["gpu"]["type"] = sys.argv[2]
p["gpu"]["count"] = int(sys.argv[3])
print(json.dumps(p))
PY
run "${nf[@]}" verify --profile "$out/compute-here.json" --only gpu -v 2>&1 | grep -v ": not selected"
"${nf[@]}" verify --profile "$out/compute-here.json" --only gpu --json > "$out/verify-here.json" 2>&1
exit 0
