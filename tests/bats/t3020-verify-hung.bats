#!/usr/bin/env bats
# A probe that never answers is reported `hung` by name and the run still
# ends within its budget.
load verify_helper

now_ms() { date +%s%3N; }

# every "sleep 3600" (the fixture's hung probe) is a child of a running
# nodeforge, none left behind by one that ended
no_orphaned_probe() {
	local p pp left=
	for p in $(pgrep -f '^sleep 3600$'); do
		pp=$(ps -o ppid= -p "$p" | tr -d ' ')
		[ -n "$pp" ] || continue
		[ "$(cat "/proc/$pp/comm" 2>/dev/null)" = nodeforge ] || left="$left $p"
	done
	[ -z "$left" ] || { ps -o pid,ppid,lstart,args -p "${left# }"; false; }
}

@test "hung: an exec'd probe (enroot) past the budget is hung, killed, and the run ends in time" {
	vfx hang-enroot
	t0=$(now_ms)
	vrun --budget 0.5 --json
	t1=$(now_ms)
	status_is 3
	[ $((t1 - t0)) -lt 1500 ] || { echo "took $((t1 - t0)) ms"; false; }
	[[ "$(verdict_of containers.enroot.runs)" == "hung no answer within"* ]]
	[ "$(echo "$output" | jq -r '.root_causes[0].id')" = containers.enroot.runs ]
	# checks after the budget are skipped, saying why
	[[ "$(verdict_of system.services)" == "skip run budget of 500 ms spent" ]]
	# the probe's process group was killed: no "sleep 3600" outlived its
	# verifier (reparented to init or a subreaper; another file's
	# verifier may be running one of its own)
	no_orphaned_probe
}

@test "hung: a blocked in-process probe (NVML) is abandoned and named" {
	vfx hang-nvml
	t0=$(now_ms)
	vrun --budget 0.4 --only gpu --json
	t1=$(now_ms)
	status_is 3
	[ $((t1 - t0)) -lt 1500 ] || { echo "took $((t1 - t0)) ms"; false; }
	[[ "$(verdict_of gpu.driver)" == "hung no answer within"* ]]
	[[ "$(verdict_of gpu.count)" == "skip because gpu.driver hung" ]]
}

@test "hung: the human table names the hung probe" {
	vfx hang-nvml
	vrun --budget 0.3 --only gpu
	status_is 3
	[[ "${lines[0]}" == "HUNG gpu.driver: no answer within"* ]]
	[[ "$output" == *"1 hung"* ]]
}
