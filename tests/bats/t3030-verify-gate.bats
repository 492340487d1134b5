#!/usr/bin/env bats
# First-boot gate: verdict file, banner, report to the boot server, the
# gate wrapper that execs slurmd only after a pass, and health mode.
load verify_helper

@test "gate: --gate writes the verdict and the login banner under the root" {
	vfx fail-munge
	run nf verify --root "$SYS" --sysroot "$SYS" --fixture "$SYS/fixture.json" --gate -q
	status_is 3
	[ "$(jq -r .result "$SYS/run/nodeforge/verdict.json")" = fail ]
	[ "$(jq -r '.root_causes[0].id' "$SYS/run/nodeforge/verdict.json")" = munge.key.fingerprint ]
	grep -q "nodeforge verify: FAIL: munge.key.fingerprint" "$SYS/run/motd.d/nodeforge"
}

@test "gate: runs the command only after a pass" {
	vfx pass
	run nf gate --sysroot "$SYS" --fixture "$SYS/fixture.json" --verdict "$SCRATCH/v.json" \
		-q -- /bin/echo slurmd started -D
	status_is 0
	[ "${lines[-1]}" = "slurmd started -D" ]
	[ "$(jq -r .result "$SCRATCH/v.json")" = pass ]
}

@test "gate: a failing node never runs the command" {
	vfx fail-ib
	run nf gate --sysroot "$SYS" --fixture "$SYS/fixture.json" --verdict "$SCRATCH/v.json" \
		-- /bin/echo slurmd started
	status_is 3
	[[ "$output" != *"slurmd started"* ]]
	[[ "$output" == *"ib.port.state"* ]]
}

@test "gate: --retry re-checks until a node fixed by hand passes" {
	vfx pass
	chmod 0644 "$SYS/etc/munge/munge.key"
	( sleep 1.5; chmod 0400 "$SYS/etc/munge/munge.key" ) &
	run timeout 20 "$NF_BIN" gate --retry 1 --sysroot "$SYS" --fixture "$SYS/fixture.json" \
		--verdict "$SCRATCH/v.json" -- /bin/echo slurmd started
	wait
	status_is 0
	[[ "$output" == *"munge.key.mode"* ]]
	[ "${lines[-1]}" = "slurmd started" ]
}

@test "gate: the command is required and --retry checked" {
	run nf gate
	status_is 2
	[[ "$output" == *"missing the COMMAND"* ]]
	run nf gate --retry 0 -- true
	status_is 2
	[[ "$output" == *"bad --retry '0'"* ]]
}

@test "gate: the verdict is POSTed to nodeforge.server= of the kernel command line" {
	vfx fail-time
	port=$((20000 + RANDOM % 20000))
	python3 - "$port" "$SCRATCH/posted.json" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        open(sys.argv[2], "wb").write(self.path.encode() + b"\n" + body)
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
open(sys.argv[2] + ".ready", "w").close()
s.timeout = 10
s.handle_request()
PY
	srv=$!
	sed -i "s|\$| nodeforge.server=http://127.0.0.1:$port|" "$SYS/proc/cmdline"
	for _ in $(seq 100); do [ -e "$SCRATCH/posted.json.ready" ] && break; sleep 0.1; done
	vrun --gate --verdict "$SCRATCH/v.json" -q
	wait "$srv"
	status_is 3
	[ "$(head -n1 "$SCRATCH/posted.json")" = /api/v1/nodes/gpu-001/verdict ]
	[ "$(tail -n +2 "$SCRATCH/posted.json" | jq -r '.root_causes[0].id')" = time.sync ]
}

@test "gate: a probe that gave no answer is asked again once, and its second answer counts" {
	vfx pass
	jq --arg once "$SCRATCH/hung-once" \
	    '.commands["enroot version"].hang_once = $once' "$SYS/fixture.json" > "$SCRATCH/f.json"
	mv "$SCRATCH/f.json" "$SYS/fixture.json"
	vrun --gate --verdict "$SCRATCH/v.json" --json
	status_is 0
	[[ "$output" == *"1 check gave no answer; verifying again"* ]]
	[ "$(jq -r .result "$SCRATCH/v.json")" = pass ]
	# outside the gate a hang is the verdict at once
	rm "$SCRATCH/hung-once"
	vrun --json
	status_is 3
	[[ "$(verdict_of containers.enroot.runs)" == "hung no answer within"* ]]
	[[ "$output" != *"verifying again"* ]]
}

@test "gate: a probe that never answers fails the node after one more try" {
	# an in-process probe that blocks: no process of its own is left
	# behind (t3020 counts the hung commands' processes)
	vfx hang-nvml
	vrun --gate --verdict "$SCRATCH/v.json" --budget 1 --only gpu
	status_is 3
	[ "$(grep -c 'verifying again' <<<"$output")" -eq 1 ]
	[ "$(jq -r .result "$SCRATCH/v.json")" = fail ]
	[[ "$output" == *"HUNG gpu.driver: no answer within"* ]]
}

@test "gate: an unreachable boot server is a warning, not a failure" {
	vfx pass
	sed -i 's|$| nodeforge.server=http://127.0.0.1:9|' "$SYS/proc/cmdline"
	vrun --gate --verdict "$SCRATCH/v.json"
	status_is 0
	[[ "$output" == *"warning"*"127.0.0.1:9"* ]]
}

@test "health: a failure drains the node with the root cause" {
	vfx fail-gpu
	jq --arg log "$SCRATCH/exec.log" '.exec_log = $log' "$SYS/fixture.json" > "$SCRATCH/f.json"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" --health --json
	status_is 3
	[ "$(echo "$output" | jq -r .health_action)" = drain ]
	grep -qx "scontrol update nodename=gpu-001 state=drain reason=nodeforge: gpu.ecc: ECC off now but on after a reset: GPUs 5" "$SCRATCH/exec.log"
}

@test "health: a pass resumes only a node nodeforge drained" {
	vfx pass
	jq --arg log "$SCRATCH/exec.log" '.exec_log = $log |
	    .commands["scontrol show node"] = {rc: 0, out: "NodeName=gpu-001 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=2 Reason=nodeforge: gpu.ecc [root@2026-12-02T03:00:00]\n"}' \
		"$SYS/fixture.json" > "$SCRATCH/f.json"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/f.json" --health --json
	status_is 0
	[ "$(echo "$output" | jq -r .health_action)" = resume ]
	grep -qx "scontrol update nodename=gpu-001 state=resume" "$SCRATCH/exec.log"

	: > "$SCRATCH/exec.log"
	jq '.commands["scontrol show node"].out = "NodeName=gpu-001 State=IDLE+DRAIN Reason=bad DIMM [admin@2026-12-01T10:00:00]\n"' \
		"$SCRATCH/f.json" > "$SCRATCH/g.json"
	run nf verify --sysroot "$SYS" --fixture "$SCRATCH/g.json" --health --json
	status_is 0
	[ "$(echo "$output" | jq -r .health_action)" = none ]
	! grep -q resume "$SCRATCH/exec.log"
}
