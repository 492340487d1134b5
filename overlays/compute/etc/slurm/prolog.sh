#!/bin/bash
# Slurm prolog for GPU compute nodes (installed by nodeforge).
# Runs as root before every job; a non-zero exit drains the node, so only
# real faults fail here. Keep it fast: slurmctld waits on it.
set -uo pipefail
LOG=/var/log/slurm/prolog.log
exec >>"$LOG" 2>&1
echo "$(date -Iseconds) prolog job=${SLURM_JOB_ID:-?} user=${SLURM_JOB_USER:-?} partition=${SLURM_JOB_PARTITION:-?}"

if command -v nvidia-smi >/dev/null 2>&1; then
	# Persistence mode is set at boot by nvidia-persistenced; this only
	# repairs a GPU that lost it.
	nvidia-smi -pm 1 >/dev/null || echo "warning: persistence mode could not be set"

	# Clocks: lock for latency-bound inference, leave boost free for
	# training (locking burns power in bandwidth-bound phases).
	# nvidia-smi -lgc has no per-job scope: the epilog resets it.
	case "${SLURM_JOB_PARTITION:-}" in
	inference) nvidia-smi -lgc 1980,1980 >/dev/null ||
		echo "warning: clock lock failed" ;;
	*) nvidia-smi -rgc >/dev/null 2>&1 || true ;;
	esac

	# NVSwitch systems: without Fabric Manager CUDA cannot initialise.
	if [ -e /dev/nvidia-nvswitchctl ] &&
	   ! systemctl is-active --quiet nvidia-fabricmanager; then
		echo "error: nvidia-fabricmanager is not running"
		exit 1
	fi
fi

# A job must not see the previous job's temporary files.
find /tmp -mindepth 1 -maxdepth 1 -user "${SLURM_JOB_USER:-nobody}" \
	-exec rm -rf -- {} + 2>/dev/null || true
exit 0
