# An image's own systemd as PID 1 of new namespaces (pid, mount, uts,
# ipc, network, cgroup), as a container manager starts it: the service
# manager the verifier asks on a booted node, on a build host whose own
# PID 1 is not systemd.  /sys is read-only (udev stays off), /dev holds
# only the pseudo devices, the network is a loopback of its own, and the
# image root is written to (unpack it first).  Used by
# tests/e2e/t2970-verify-systemd.bats and bench/verify-nhc.sh.
#
#   sysns_boot ROOT LOG   start it; sets SYSNS_PID (its PID 1 as seen
#                         here); waits until startup has finished
#                         (is-system-running: running or degraded), up
#                         to SYSNS_WAIT seconds (120)
#   sysns CMD...          run CMD inside (its root, namespaces, PATH)
#   sysns_stop            kill everything inside
#   sysns_mask ROOT UNIT...  mask UNITs in ROOT before the boot (those
#                         that wait for a network the namespace lacks)

sysns_boot() {
	local root=$1 log=$2 st i
	SYSNS_PID=
	unshare --pid --fork --mount --uts --ipc --net --cgroup --propagation private \
		sh -euc '
		R=$1
		mount --bind "$R" "$R"
		mount -t proc proc "$R/proc"
		mount --rbind /sys "$R/sys"
		mount -o remount,bind,ro "$R/sys"
		mount -t tmpfs -o mode=0755,nosuid tmpfs "$R/dev"
		for d in null zero full random urandom tty; do
			: > "$R/dev/$d"
			mount --bind "/dev/$d" "$R/dev/$d"
		done
		mkdir -p "$R/dev/pts" "$R/dev/shm"
		mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$R/dev/pts"
		ln -s pts/ptmx "$R/dev/ptmx"
		mount -t tmpfs -o nosuid,nodev tmpfs "$R/dev/shm"
		mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$R/run"
		mount -t tmpfs -o nosuid,nodev tmpfs "$R/tmp"
		ip link set lo up 2>/dev/null || true
		exec chroot "$R" /usr/bin/env -i container=nodeforge-test \
			/lib/systemd/systemd --log-target=console --show-status=no
		' sysns "$root" </dev/null >"$log" 2>&1 3>&- &
	SYSNS_UNSHARE=$!
	for i in $(seq 100); do
		SYSNS_PID=$(pgrep -P "$SYSNS_UNSHARE" | head -n1)
		[ -n "$SYSNS_PID" ] && [ "$(cat "/proc/$SYSNS_PID/comm" 2>/dev/null)" = systemd ] && break
		SYSNS_PID=
		kill -0 "$SYSNS_UNSHARE" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$SYSNS_PID" ] || { echo "systemd did not start in $root:" >&2; cat "$log" >&2; return 1; }
	for i in $(seq "${SYSNS_WAIT:-120}"); do
		st=$(sysns systemctl is-system-running 2>/dev/null) || true
		case $st in running | degraded) return 0 ;; esac
		sleep 1
	done
	echo "systemd in $root: still '$st' after ${SYSNS_WAIT:-120} s; jobs:" >&2
	sysns systemctl list-jobs --no-pager >&2 || true
	return 1
}

sysns() {
	nsenter -t "$SYSNS_PID" -m -u -i -n -p -C -r -w \
		/usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

sysns_stop() {
	[ -n "${SYSNS_PID:-}" ] && kill -KILL "$SYSNS_PID" 2>/dev/null
	[ -n "${SYSNS_UNSHARE:-}" ] && wait "$SYSNS_UNSHARE" 2>/dev/null
	SYSNS_PID= SYSNS_UNSHARE=
	return 0
}

sysns_mask() {
	local root=$1 u
	shift
	mkdir -p "$root/etc/systemd/system"
	for u in "$@"; do
		ln -sfn /dev/null "$root/etc/systemd/system/$u"
	done
}
