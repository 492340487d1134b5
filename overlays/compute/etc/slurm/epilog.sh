#!/bin/bash
# Slurm epilog for GPU compute nodes (installed by nodeforge).
# Runs as root after every job. Cleanup only: cgroup teardown already
# killed the job's processes (ProctrackType=proctrack/cgroup).
set -uo pipefail
LOG=/var/log/slurm/epilog.log
exec >>"$LOG" 2>&1
echo "$(date -Iseconds) epilog job=${SLURM_JOB_ID:-?}"

if command -v nvidia-smi >/dev/null 2>&1; then
	pids=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)
	[ -n "$pids" ] && echo "warning: GPU processes left after job ${SLURM_JOB_ID:-?}: $pids"
	# undo a prolog clock lock
	nvidia-smi -rgc >/dev/null 2>&1 || true
fi

# NCCL shared-memory segments a crashed job may leave behind
find /dev/shm -maxdepth 1 -user "${SLURM_JOB_USER:-nobody}" \
	\( -name 'nccl-*' -o -name 'sem.*' \) -delete 2>/dev/null || true
exit 0
