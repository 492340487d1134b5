#!/usr/bin/env bats
# The command-line skeleton: dispatch, help, version, exit codes.
load helper

@test "no arguments is a usage error (exit 2)" {
	run nf
	status_is 2
	[[ "$output" == *"usage: nodeforge"* ]]
}

@test "--help lists every command and exits 0" {
	run nf --help
	status_is 0
	[[ "$output" == *"Commands:"* ]]
	[[ "$output" == *"version"* ]]
}

@test "--version prints the version from VERSION and the commit it was built from" {
	run nf --version
	status_is 0
	c=$(git -C "$NF_SRCDIR" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
	[ "$output" = "nodeforge $(cat "$NF_SRCDIR/VERSION") (commit $c)" ]
}

@test "unknown command is a usage error naming it" {
	run nf frobnicate
	status_is 2
	[[ "$output" == *"unknown command 'frobnicate'"* ]]
	[[ "$output" == *"try 'nodeforge --help'"* ]]
}

@test "every command answers --help with a usage line and exit 0" {
	cmds=$(nf --help | awk '/^Commands:/{f=1;next} f && /^  [a-z]/{print $1}')
	[ -n "$cmds" ]
	for c in $cmds; do
		run nf "$c" --help
		status_is 0
		[[ "${lines[0]}" == "usage: nodeforge $c"* ]] || { echo "$c: ${lines[0]}"; false; }
	done
}

@test "every command has a docs page" {
	cmds=$(nf --help | awk '/^Commands:/{f=1;next} f && /^  [a-z]/{print $1}')
	for c in $cmds; do
		[ -f "$NF_SRCDIR/docs/nodeforge-$c.md" ] || { echo "missing docs/nodeforge-$c.md"; false; }
	done
}

@test "unknown option of a command is a usage error" {
	run nf version --bogus
	status_is 2
	[[ "$output" == *"try 'nodeforge version --help'"* ]]
}

@test "one argument too many is a usage error naming it, before or after the options" {
	run nf version extra
	status_is 2
	[[ "$output" == *"nodeforge version: unexpected argument 'extra'"* ]]
	run nf sign --key k m1 m2
	status_is 2
	[[ "$output" == *"nodeforge sign: unexpected argument 'm2'"* ]]
	run nf unpack a.tar --max-entries 5 dir third
	status_is 2
	[[ "$output" == *"nodeforge unpack: unexpected argument 'third'"* ]]
	[[ "$output" == *"try 'nodeforge unpack --help'"* ]]
	run nf status gpu-01 gpu-02
	status_is 2
	[[ "$output" == *"unexpected argument 'gpu-02' (name several nodes as one hostlist"* ]]
}

@test "version --json is valid JSON" {
	run nf version --json
	status_is 0
	echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["name"]=="nodeforge"'
}

@test "every command's --help ends with its exit status" {
	local c bad=0
	for c in $(nf --help | awk '/^  [a-z]/ { print $1 }'); do
		out=$(nf "$c" --help) || { echo "$c --help failed"; bad=1; continue; }
		grep -q '^Exit status: ' <<<"$out" || { echo "$c: no exit status in --help"; bad=1; }
	done
	[ $bad -eq 0 ]
}

@test "man pages: nodeforge(1) and one per command, rendered by man with NAME and SYNOPSIS" {
	command -v man >/dev/null || skip "man-db not installed (make deps)"
	local d c
	d=$(dirname "$NF_BIN")/man
	[ -f "$d/nodeforge.1" ]
	for c in $(nf --help | awk '/^  [a-z]/ { print $1 }'); do
		[ -f "$d/nodeforge-$c.1" ] || { echo "no man page for $c"; return 1; }
	done
	run env MANWIDTH=100 man -l "$d/nodeforge-verify.1"
	status_is 0
	[[ "$output" == *"NODEFORGE-VERIFY(1)"*"NAME"*"nodeforge-verify - check a node"*"SYNOPSIS"*"nodeforge verify [--role R"* ]]
	run env MANWIDTH=100 man -l "$d/nodeforge.1"
	status_is 0
	[[ "$output" == *"COMMANDS"*"verify"*"nodeforge-verify(1)"*"EXIT STATUS"* ]]
}

@test "man pages: groff takes no line of text for a request (a wrapped line starting with '.')" {
	command -v man >/dev/null || skip "man-db not installed (make deps)"
	local f w bad=0
	for f in "$(dirname "$NF_BIN")"/man/*.1; do
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" 2>&1 >/dev/null)
		if grep 'not defined' <<<"$w"; then echo "in $f"; bad=1; fi
	done
	[ $bad -eq 0 ]
}

@test "did you mean: a mistyped command, role or profile key names the closest valid one" {
	run nf biuld
	status_is 2
	[[ "$output" == *"unknown command 'biuld' (did you mean 'build'?)"* ]]
	run nf frobnicate
	status_is 2
	[[ "$output" != *"did you mean"* ]]
	run nf build comptue
	status_is 1
	[[ "$output" == *"no profile 'comptue' in"*"(did you mean 'compute'?)"* ]]
	mkdir p
	cp "$FIXTURES/site-good.yaml" p/site.yaml
	printf 'memory:\n  thpp: never\nsytem:\n  x: 1\n' > p/role.yaml
	run nf -C p lint
	status_is 3
	[[ "$output" == *"role.yaml:2:3: error: unknown key 'thpp' in 'memory' (did you mean 'thp'?)"* ]]
	[[ "$output" == *"role.yaml:3:1: error: unknown key 'sytem' in 'profile' (did you mean 'system'?)"* ]]
}
