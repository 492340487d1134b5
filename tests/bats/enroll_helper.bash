# Shared set-up for the enrollment tests (tests/bats/t60xx and
# tests/e2e/t60xx): a server-side secrets dir, a site file pointing at it,
# a two-node inventory (cp-01 at 127.0.0.1, gpu-01 at 127.0.0.2), node
# roots, and the real 'nodeforge serve' with an optional recording proxy.
# shellcheck source=helper.bash
source "${BASH_SOURCE[0]%/*}/helper.bash"

# enroll_fixture PASSWORD: sec/munge.key, sec/db, site.yaml, racks.yaml
enroll_fixture() {
	mkdir -m 700 sec
	nf keys munge -o sec/munge.key >/dev/null
	printf '%s\n' "$1" > sec/db && chmod 600 sec/db
	cat > site.yaml <<-EOF
	cluster: test
	distro: debian12
	controllers:
	  - { name: cp-01, address: 127.0.0.1 }
	networks:
	  provisioning:
	    cidr: 127.0.0.0/8
	server:
	  url: http://127.0.0.1:1
	  state_dir: $SCRATCH/state
	secrets:
	  munge_key:
	    path: $SCRATCH/sec/munge.key
	  slurmdbd_password:
	    path: $SCRATCH/sec/db
	EOF
	cat > racks.yaml <<-EOF
	nodes:
	  - { name: cp-01, mac: "52:54:00:00:00:01", ip: 127.0.0.1, role: controller }
	  - { name: gpu-01, mac: "52:54:00:00:00:02", ip: 127.0.0.2, role: compute, rack: r1 }
	EOF
	export NODEFORGE_SITE=$SCRATCH/site.yaml
}

# node_roots DIR...: node root trees whose munge and slurm users are us
node_roots() {
	for n in "$@"; do
		mkdir -p "$n/etc"
		printf 'root:x:0:0::/root:/bin/sh\nmunge:x:%s:%s::/:/bin/false\nslurm:x:%s:%s::/:/bin/false\n' \
			"$(id -u)" "$(id -g)" "$(id -u)" "$(id -g)" > "$n/etc/passwd"
	done
}

# Stop what a test started in the background (PIDS) and reap it
stop_pids() {
	[ "${#PIDS[@]}" -gt 0 ] || return 0
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}

# start_serve: the real 'nodeforge serve' on 127.0.0.1 with enrollment,
# serving the boot tree rendered for the inventory; URL in $SERVER
start_serve() {
	nf pxe --out boot -i racks.yaml --images "$FIXTURES/boot/out" >/dev/null
	"$NF_BIN" serve --tree boot --listen 127.0.0.1:0 --state nodes -i racks.yaml \
		>serve.out 2>serve.log 3>&- &
	PIDS+=($!)
	for _ in $(seq 50); do grep -q '^listening on' serve.out && break; sleep 0.1; done
	SERVER=$(sed -n 's/^listening on //p' serve.out)
	[ -n "$SERVER" ] || { cat serve.log >&2; return 1; }
}

# start_proxy [tamper]: a man in the middle in front of serve, recording
# the answers in capture.json; its URL in $SERVER
start_proxy() {
	python3 "$NF_SRCDIR/tests/e2e/enroll-proxy.py" port "${SERVER##*:}" \
		capture.json ${1:-} 2>proxy.log 3>&- &
	PIDS+=($!)
	for _ in $(seq 50); do [ -s port ] && break; sleep 0.1; done
	SERVER=http://127.0.0.1:$(cat port)
}

# The nodes' rotation agents, polling until ./stop-agents exists (an agent
# ends when there is no rotation or it is done, as the node's timer would
# start it again)
agents() {
	local spec
	for spec in "cp-01 127.0.0.1 cp" "gpu-01 127.0.0.2 gpu"; do
		# shellcheck disable=SC2086
		set -- $spec
		(
			while [ ! -e stop-agents ]; do
				"$NF_BIN" enroll rotate --server "$SERVER" --node "$1" \
					--root "$3" --bind "$2" --poll 0.1 --wait 30 \
					>>"agent-$1.log" 2>&1 || true
				sleep 0.2
			done
		) 3>&- &
		AGENTS+=($!)
	done
}
