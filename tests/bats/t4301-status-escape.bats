#!/usr/bin/env bats
# nodeforge status never writes a node's control bytes to the terminal: a
# verdict posted to a real nodeforge serve with ESC, CR, LF, BEL, a C1 CSI
# and a bidi override in its strings is shown escaped as \xNN; --json keeps
# jansson's escapes.
load helper

setup() {
	nf_setup
	nf_status_serve
}

teardown() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	nf_teardown
}

post_hostile_verdict() {
	curl -sf -X POST -d '{"result":"fail","image":"img\u001b]0;pwned\u0007",
		"root_causes":[{"id":"a\u001b[31m\nX","message":"m\r\u009b2J \u202eevil \\x1b"}]}' \
		"$U/api/v1/nodes/gpu-02/verdict" >/dev/null
}

@test "status text has no raw control byte from a node's verdict" {
	post_hostile_verdict
	COLUMNS=200 run nf status --server "$U"
	status_is 3
	# one line per node and the failed one's root cause under it: the LF
	# in the id did not start a forged line
	[ "${#lines[@]}" -eq 9 ]
	[[ "$output" == *$'\n'"    root cause: a"* ]]
	if printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]'; then
		printf '%s' "$output" | od -c >&2
		return 1
	fi
	if printf '%s' "$output" | LC_ALL=C grep -qE $'\xc2[\x80-\x9f]|\xe2\x80\xae'; then
		printf '%s' "$output" | od -c >&2
		return 1
	fi
	[[ "$output" == *'img\x1b]0;pwned\x07'* ]]
	[[ "$output" == *'a\x1b[31m\x0aX: m\x0d\xc2\x9b2J \xe2\x80\xaeevil \\x1b'* ]]
	[[ "$output" == *"6 nodes: 0 verified, 1 failed, 0 booting, 5 not seen"* ]]
}

@test "status --json keeps the strings, escaped by JSON" {
	post_hostile_verdict
	run nf status --server "$U" --json
	status_is 3
	echo "$output" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = {x["name"]: x for x in d["nodes"]}
assert n["gpu-02"]["root_cause"] == "a\x1b[31m\nX: m\r\x9b2J \u202eevil \\x1b", n["gpu-02"]
assert n["gpu-02"]["image"] == "img\x1b]0;pwned\x07", n["gpu-02"]'
	if printf '%s' "$output" | LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]'; then
		printf '%s' "$output" | od -c >&2
		return 1
	fi
}
