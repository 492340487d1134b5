#!/usr/bin/env bats
# One report for a verdict: the verdict of a failing fixture node, shown by
# 'nodeforge verify' on the node and by 'nodeforge status NODE' once posted
# to a real 'nodeforge serve', gives the same lines below status's header
# (the node's name, state, addresses and times) at 80 columns.
load verify_helper

setup() {
	nf_setup
	nf_status_serve
	vfx fail-kernel
	jq '.nvml = null' "$SYS/fixture.json" > "$SCRATCH/f.json" && mv "$SCRATCH/f.json" "$SYS/fixture.json"
	echo 0 > "$SYS/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"
	mkdir -p "$SYS/proc/1"
	echo bash > "$SYS/proc/1/comm"
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

# same_report [-v]: verify's report and status NODE's, below its header
same_report() {
	COLUMNS=80 vrun "$@"
	status_is 3
	echo "$output" > verify.txt
	COLUMNS=80 run nf status gpu-02 --server "$U" "$@"
	status_is 3
	# the header: up to the first empty line
	echo "$output" | sed '1,/^$/d' > status.txt
	[ "$(sed -n 1p <<<"$output")" = "gpu-02: failed (role compute, rack r01)" ]
	diff -u verify.txt status.txt
	[ "$(grep -c '^FAIL ' verify.txt)" -ge 2 ]
	grep -q '^     -> ' verify.txt
}

@test "verify and status NODE show the same verdict with the same lines at 80 columns" {
	vrun --json
	status_is 3
	echo "$output" | jq '.node = "gpu-02" | del(.host)' > verdict.json
	curl -sf -X POST --data-binary @verdict.json "$U/api/v1/nodes/gpu-02/verdict" >/dev/null
	same_report
	grep -q '^     also: ' verify.txt
	same_report -v
}
