#!/usr/bin/env bats
# make test: beside the cluster
# keys rotate munge --resume/--abort: a rotation stopped at any write (a
# SIGKILL injected by the NODEFORGE_TEST_CRASH_AT test hook, or SIGTERM)
# is completed by the next run, against the real 'nodeforge serve' with
# two enrolled nodes whose 'nodeforge enroll rotate' keeps polling.
load enroll_helper

setup() {
	nf_setup
	PIDS=()
	AGENTS=()
	enroll_fixture db-pass
}

teardown() {
	touch stop-agents
	PIDS+=("${AGENTS[@]}")
	stop_pids
	nf_teardown
}

# serve, both nodes enrolled (cp-01 in root cp, gpu-01 in root gpu) with
# the site's key; its sha256 in $OLD
enrolled() {
	start_serve
	nf enroll open cp-01,gpu-01 --for 10m >/dev/null
	node_roots cp gpu
	nf enroll --server "$SERVER" --node cp-01 --mac 52:54:00:00:00:01 --root cp --bind 127.0.0.1 >/dev/null
	nf enroll --server "$SERVER" --node gpu-01 --mac 52:54:00:00:00:02 --root gpu --bind 127.0.0.2 >/dev/null
	cmp sec/munge.key cp/etc/munge/munge.key
	cmp sec/munge.key gpu/etc/munge/munge.key
	OLD=$(sha256sum < sec/munge.key)
}

# let the agents' current poll end, then stop them (serve keeps running)
stop_agents() {
	touch stop-agents
	for p in "${AGENTS[@]}"; do wait "$p" 2>/dev/null || true; done
	AGENTS=()
	rm -f stop-agents
}

rotate() {
	"$NF_BIN" keys rotate munge -i racks.yaml --stage-timeout 20 --group-timeout 20 "$@"
}

# the site's key and both nodes' keys are the key of sha256 $1
everyone_holds() {
	[ "$(sha256sum < sec/munge.key)" = "$1" ]
	[ "$(sha256sum < cp/etc/munge/munge.key)" = "$1" ]
	[ "$(sha256sum < gpu/etc/munge/munge.key)" = "$1" ]
}

# a poll of each node is answered 'done' by the server: it takes the key
# the node holds
served() {
	"$NF_BIN" enroll rotate --server "$SERVER" --node cp-01 --root cp --bind 127.0.0.1 --wait 5
	"$NF_BIN" enroll rotate --server "$SERVER" --node gpu-01 --root gpu --bind 127.0.0.2 --wait 5
}

# crash at $1, --resume: the new key everywhere, the old one kept
crash_then_resume() {
	enrolled
	agents
	run env NODEFORGE_TEST_CRASH_AT="$1" "$NF_BIN" keys rotate munge -i racks.yaml \
		--stage-timeout 20 --group-timeout 20
	status_is 137
	run rotate --resume
	status_is 0
	[[ "$output" == *"rotated munge key sha256:"* ]]
	stop_agents
	new=$(sha256sum < sec/munge.key)
	[ "$new" != "$OLD" ]
	everyone_holds "$new"
	[ "$(sha256sum < state/munge.key.previous)" = "$OLD" ]
	[ "$(stat -c %a sec/munge.key)" = 400 ]
	[ ! -e state/munge.key.next ]
	run nf keys rotate munge --status -i racks.yaml --json
	status_is 0
	jq -e '.finished and (.aborted | not) and .not_switched == 0' <<<"$output"
	# a second resume finds it done and changes nothing
	run rotate --resume
	status_is 0
	[ "$(sha256sum < state/munge.key.previous)" = "$OLD" ]
	[ "$(sha256sum < sec/munge.key)" = "$new" ]
	served
}

@test "a kill after the plan is written (begin-plan): --resume completes" {
	crash_then_resume begin-plan
}

@test "a kill after the next key is made (begin-key): --resume completes" {
	crash_then_resume begin-key
}

@test "a kill after the plan names the next key (begin-ready): --resume completes" {
	crash_then_resume begin-ready
}

@test "a kill after the first group is let switch (go): --resume completes" {
	crash_then_resume go
}

@test "a kill after the old key is copied out (finish-previous): --resume completes" {
	crash_then_resume finish-previous
}

@test "a kill after the plan points at the copy (finish-plan): --resume completes" {
	crash_then_resume finish-plan
}

@test "a kill after the site's key is replaced (finish-key): --resume completes, the previous key stays the old one" {
	crash_then_resume finish-key
}

@test "a kill after the plan is marked finished (finish-done): --resume completes" {
	crash_then_resume finish-done
}

@test "a kill after the next key's file goes (finish-cleanup): --resume completes" {
	crash_then_resume finish-cleanup
}

@test "between the key's replacement and the plan's update a node still holding the old key is answered" {
	enrolled
	# no agents: nobody switches; the driver replaces the key, then dies
	run env NODEFORGE_TEST_CRASH_AT=finish-key "$NF_BIN" keys rotate munge -i racks.yaml \
		--stage-timeout 0 --group-timeout 0
	status_is 137
	[ "$(sha256sum < sec/munge.key)" != "$OLD" ]
	[ "$(sha256sum < cp/etc/munge/munge.key)" = "$OLD" ]
	# the old key still proves the node: it is handed the new one
	run "$NF_BIN" enroll rotate --server "$SERVER" --node cp-01 --root cp --bind 127.0.0.1 --poll 0.1 --wait 10
	status_is 0
	cmp sec/munge.key cp/etc/munge/munge.key
}

# crash the rotation at finish-key (both nodes switched, the site's key
# replaced), then abort, crashing at $1 first when given
crash_then_abort() {
	enrolled
	agents
	run env NODEFORGE_TEST_CRASH_AT=finish-key "$NF_BIN" keys rotate munge -i racks.yaml \
		--stage-timeout 20 --group-timeout 20
	status_is 137
	[ "$(sha256sum < cp/etc/munge/munge.key)" != "$OLD" ]
	run rotate
	status_is 1
	[[ "$output" == *"already in progress"*"--resume"*"--abort"* ]]
	if [ -n "${1:-}" ]; then
		run env NODEFORGE_TEST_CRASH_AT="$1" "$NF_BIN" keys rotate munge -i racks.yaml --abort
		status_is 137
	fi
	run rotate "${2:---abort}"
	status_is 0
	[[ "$output" == *"aborted the munge key rotation to sha256:"* ]]
	stop_agents
	everyone_holds "$OLD"
	[ "$(stat -c %a sec/munge.key)" = 400 ]
	run nf keys rotate munge --status -i racks.yaml --json
	status_is 0
	jq -e '.aborted and .finished and .not_switched == 0' <<<"$output"
	served
	# nothing in progress: a new rotation may begin
	run rotate --stage-timeout 0 --group-timeout 0
	status_is 1
	[[ "$output" == *"did not switch"* ]]
}

@test "--abort after the nodes switched: the old key again on the server and the nodes" {
	crash_then_abort
}

@test "a kill after the abort's plan (abort-plan): --abort again completes" {
	crash_then_abort abort-plan
}

@test "a kill after the abort restores the key (abort-key): --resume completes the abort" {
	crash_then_abort abort-key --resume
}

@test "a kill after the abort is marked finished (abort-done): --abort again completes" {
	crash_then_abort abort-done
}

@test "--abort before the next key was handed out removes the plan" {
	enrolled
	run env NODEFORGE_TEST_CRASH_AT=begin-key "$NF_BIN" keys rotate munge -i racks.yaml
	status_is 137
	[ -e state/munge.key.next ]
	run rotate --abort --json
	status_is 0
	jq -e '.aborted and .nodes == []' <<<"$output"
	[ ! -e state/munge.key.next ]
	[ ! -e state/rotation.json ]
	[ "$(sha256sum < sec/munge.key)" = "$OLD" ]
}

@test "a rotation stopped by SIGTERM is resumed" {
	enrolled
	# nobody polls: the driver waits for the nodes to stage
	rotate > driver.out 2>&1 &
	DRIVER=$!
	for _ in $(seq 100); do grep -q staging driver.out && break; sleep 0.1; done
	kill -TERM "$DRIVER"
	status=0
	wait "$DRIVER" || status=$?
	[ "$status" = 143 ]
	run rotate
	status_is 1
	[[ "$output" == *"already in progress"*"'nodeforge keys rotate munge --resume'"*"'nodeforge keys rotate munge --abort'"* ]]
	agents
	run rotate --resume
	status_is 0
	stop_agents
	new=$(sha256sum < sec/munge.key)
	[ "$new" != "$OLD" ]
	everyone_holds "$new"
}

@test "--resume and --abort without a rotation, and with each other" {
	run rotate --resume
	status_is 1
	[[ "$output" == *"no munge key rotation to resume"* ]]
	run rotate --abort
	status_is 1
	[[ "$output" == *"no munge key rotation to abort"* ]]
	run rotate --resume --abort
	status_is 2
	[[ "$output" == *"exclude each other"* ]]
}

@test "--abort of a finished rotation is refused" {
	enrolled
	run rotate --stage-timeout 0 --group-timeout 0
	status_is 1
	new=$(sha256sum < sec/munge.key)
	run rotate --abort
	status_is 1
	[[ "$output" == *"is finished: nothing to abort"* ]]
	[ "$(sha256sum < sec/munge.key)" = "$new" ]
}

@test "a rotation keeps the owner and mode of the site's key (--owner nobody)" {
	[ "$(id -u)" = 0 ] || skip "needs root"
	rm sec/munge.key
	nf keys munge -o sec/munge.key --owner nobody >/dev/null
	[ "$(stat -c %U:%a sec/munge.key)" = nobody:400 ]
	enrolled
	agents
	run rotate
	status_is 0
	[ "$(sha256sum < sec/munge.key)" != "$OLD" ]
	[ "$(stat -c %U:%a sec/munge.key)" = nobody:400 ]
	# an abort's restore keeps them too
	run env NODEFORGE_TEST_CRASH_AT=finish-key "$NF_BIN" keys rotate munge -i racks.yaml \
		--stage-timeout 20 --group-timeout 20
	status_is 137
	run rotate --abort
	status_is 0
	[ "$(stat -c %U:%a sec/munge.key)" = nobody:400 ]
}
