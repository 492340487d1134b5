#!/usr/bin/env bats
# serve as its own unprivileged user, the way nodeforge-serve.service runs
# it: the secrets come as credentials ($CREDENTIALS_DIRECTORY, the unit's
# LoadCredential=) while the files on disk stay root's 0400, the state is
# that user's, and only a file that user could read by itself is served.
load enroll_helper

setup() {
	nf_setup
	PIDS=()
	AGENTS=()
	[ "$(id -u)" = 0 ] || skip "needs root to start serve as another user"
	command -v setpriv >/dev/null || skip "no setpriv"
	enroll_fixture db-pass
	# the serving user: nobody, in its own group only
	U=nobody
	G=$(id -gn nobody)
	chmod 0711 "$SCRATCH"
	chmod 0644 site.yaml racks.yaml
	install -d -m 0700 -o "$U" -g "$G" u u/creds
	install -m 0400 -o "$U" -g "$G" sec/munge.key u/creds/munge.key
	install -m 0400 -o "$U" -g "$G" sec/db u/creds/slurmdbd.password
	# the serving user reads the shipped profiles and runs the binary
	# from where it can: a checkout under root's 0700 home is not that
	cp -r "$NF_SRCDIR/profiles" profiles
	export NODEFORGE_PROFILES=$SCRATCH/profiles
	if ! as_user test -x "$NF_BIN"; then
		install -D -m 0755 "$NF_BIN" bin/nodeforge
		NF_BIN=$SCRATCH/bin/nodeforge
	fi
	as_user "$NF_BIN" profile list >/dev/null
}

teardown() {
	touch stop-agents
	PIDS+=("${AGENTS[@]}")
	stop_pids
	nf_teardown
}

as_user() {
	setpriv --reuid="$U" --regid="$G" --clear-groups --inh-caps=-all -- "$@"
}

# the same in a background job (cmd &): the job's process becomes the
# command, so that $! is the server's pid and teardown's kill reaches it
as_user_exec() {
	exec setpriv --reuid="$U" --regid="$G" --clear-groups --inh-caps=-all -- "$@"
}

# start_serve_as_user: the real serve as $U with enrollment, the
# credentials in u/creds; URL in $SERVER
start_serve_as_user() {
	nf pxe --out boot -i racks.yaml --images "$FIXTURES/boot/out" >/dev/null
	CREDENTIALS_DIRECTORY=$SCRATCH/u/creds as_user_exec "$NF_BIN" serve \
		--tree boot --listen 127.0.0.1:0 --state u/nodes \
		--enroll-state u/enroll -i racks.yaml \
		>serve.out 2>serve.log 3>&- &
	PIDS+=($!)
	wait_listening
	# the job is the server itself, which teardown's kill stops
	[ "$(cat "/proc/${PIDS[-1]}/comm")" = nodeforge ]
}

# wait_listening: the URL the server started in the background prints,
# in $SERVER
wait_listening() {
	for _ in $(seq 50); do grep -q '^listening on' serve.out && break; sleep 0.1; done
	SERVER=$(sed -n 's/^listening on //p' serve.out)
	[ -n "$SERVER" ] || { cat serve.log >&2; return 1; }
}

# enroll_gpu01: gpu-01 enrolls from its address into root/ and gets the
# server's key
enroll_gpu01() {
	node_roots root
	run nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root root --bind 127.0.0.2
	echo "$output"; cat serve.log
	status_is 0
	cmp sec/munge.key root/etc/munge/munge.key
}

@test "serve as an unprivileged user: the munge key from CREDENTIALS_DIRECTORY reaches an enrolling node" {
	# the key on disk is root's 0400 in a root 0700 directory
	run as_user cat sec/munge.key
	[ "$status" -ne 0 ]
	start_serve_as_user
	as_user "$NF_BIN" enroll open gpu-01 --for 10m -i racks.yaml --state u/enroll >/dev/null
	enroll_gpu01
	# the state is the serving user's
	[ "$(stat -c %U u/enroll/enroll.json)" = "$U" ]
	[ "$(stat -c %U u/nodes)" = "$U" ]
}

@test "serve as an unprivileged user: the slurmdbd password from CREDENTIALS_DIRECTORY reaches the controller" {
	start_serve_as_user
	as_user "$NF_BIN" enroll open cp-01 --for 10m -i racks.yaml --state u/enroll >/dev/null
	node_roots root
	mkdir -p root/etc/slurm
	printf 'StoragePass=old\n' > root/etc/slurm/slurmdbd.conf
	run nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root root --bind 127.0.0.1
	echo "$output"; cat serve.log
	status_is 0
	cmp sec/munge.key root/etc/munge/munge.key
	grep -qx 'StoragePass=db-pass' root/etc/slurm/slurmdbd.conf
}

@test "serve as an unprivileged user: only a file that user could read by itself, with one link, is served" {
	start_serve_as_user
	# its own 0400 file; a group-readable file of its group; a world-readable one
	install -m 0400 -o "$U" -g "$G" /dev/null boot/own
	install -m 0640 -o root -g "$G" /dev/null boot/group
	install -m 0644 /dev/null boot/world
	# root's 0600 file (readable to root only) and root's 0640 of another group
	install -m 0600 /dev/null boot/rootonly
	install -m 0640 -o root -g root /dev/null boot/rootgroup
	# its own file with a second link elsewhere
	install -m 0400 -o "$U" -g "$G" /dev/null u/private
	ln u/private boot/linked
	for f in own group world; do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER/$f")" = 200 ]
	done
	for f in rootonly rootgroup linked; do
		code=$(curl -s -o /dev/null -w '%{http_code}' "$SERVER/$f")
		echo "$f: $code"
		[ "$code" = 403 ]
	done
}

@test "the unit's own ExecStart, as an unprivileged user with the credential the unit loads, enrolls a node" {
	unit=$NF_SRCDIR/dist/nodeforge-serve.service.in
	# the credential under the name the unit gives it
	id=$(sed -n 's/^LoadCredential=\([^:]*\):.*/\1/p' "$unit")
	[ "$id" = munge.key ]
	install -d -m 0700 -o "$U" -g "$G" u/unitcreds state
	install -m 0400 -o "$U" -g "$G" sec/munge.key "u/unitcreds/$id"
	nf pxe --out boot -i racks.yaml --images "$FIXTURES/boot/out" >/dev/null
	# the unit's command line, its variables set as an EnvironmentFile would
	export NODEFORGE_TREE=$SCRATCH/boot NODEFORGE_STATE=$SCRATCH/state/nodes
	export NODEFORGE_LISTEN=127.0.0.1:0 NODEFORGE_INVENTORY=$SCRATCH/racks.yaml
	cmd=$(sed -n 's/^ExecStart=@BINDIR@\/nodeforge //p' "$unit")
	[ -n "$cmd" ]
	eval "set -- $cmd"
	CREDENTIALS_DIRECTORY=$SCRATCH/u/unitcreds as_user_exec "$NF_BIN" "$@" \
		>serve.out 2>serve.log 3>&- &
	PIDS+=($!)
	wait_listening
	# the site's state_dir is the enrollment state, as /var/lib/nodeforge is
	as_user "$NF_BIN" enroll open gpu-01 --for 10m -i racks.yaml >/dev/null
	enroll_gpu01
	[ "$(stat -c %U state/nodes)" = "$U" ]
}

@test "root's enroll open and keys rotate munge work in the serve user's state directory: what they write stays that user's, and the nodes end on the new key" {
	start_serve_as_user
	# root opens the window in the directory the serving user owns
	run nf enroll open cp-01,gpu-01 --for 10m -i racks.yaml --state u/enroll
	echo "$output"
	status_is 0
	node_roots cp gpu
	nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root cp --bind 127.0.0.1 >/dev/null
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root gpu --bind 127.0.0.2 >/dev/null
	old=$(sha256sum < sec/munge.key)
	agents
	run "$NF_BIN" keys rotate munge -i racks.yaml --enroll-state u/enroll \
		--stage-timeout 20 --group-timeout 20
	touch stop-agents
	echo "$output"; cat serve.log
	status_is 0
	new=$(sha256sum < sec/munge.key)
	[ "$new" != "$old" ]
	[ "$(sha256sum < cp/etc/munge/munge.key)" = "$new" ]
	[ "$(sha256sum < gpu/etc/munge/munge.key)" = "$new" ]
	# nothing root wrote there is root's
	find u/enroll ! -user "$U"
	[ -z "$(find u/enroll ! -user "$U")" ]
	# the site's key on disk stays root's 0400
	[ "$(stat -c '%U %a' sec/munge.key)" = "root 400" ]
}
