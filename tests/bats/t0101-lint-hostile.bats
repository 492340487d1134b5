#!/usr/bin/env bats
# Whole-directory lint on profiles that cannot load: each is an error with
# the file named (exit 3), never "lint: no errors"; a FIFO does not hang it.
load helper

# A profiles directory with a good site and one good role
mkprof() {
	mkdir -p p
	cp "$FIXTURES/site-good.yaml" p/site.yaml
	echo "description: ok" > p/role.yaml
}

# lint the whole directory under a timeout; exit 3 with WANT in the output
lint_refuses() {
	local want=$1
	run timeout 10 "$NF_BIN" -C p lint
	output=${output//$SCRATCH\//}
	status_is 3
	[[ "$output" == *"$want"* ]] || { echo "$output" >&2; return 1; }
	[[ "$output" != *"lint: no errors"* ]]
}

@test "a profile over the size cap is an error" {
	mkprof
	{ echo "description: big"; head -c $((5 << 20)) /dev/zero | tr '\0' '#'; echo; } > p/compute.yaml
	lint_refuses "p/compute.yaml:1:1: error: larger than 4194304 bytes"
}

@test "a directory named like a profile is an error" {
	mkprof
	mkdir p/login.yaml
	lint_refuses "p/login.yaml:1:1: error: not a regular file"
}

@test "a profile that is a symlink (to /dev/zero) is an error, not read" {
	mkprof
	ln -s /dev/zero p/login.yaml
	lint_refuses "p/login.yaml:1:1: error: refusing a symbolic link"
}

@test "a FIFO named like a profile is an error and does not hang lint" {
	mkprof
	mkfifo p/login.yaml
	lint_refuses "p/login.yaml:1:1: error: not a regular file"
}

@test "an empty profile is an error, not an empty role" {
	mkprof
	: > p/login.yaml
	lint_refuses "p/login.yaml:1:1: error: empty profile"
	printf '# only a comment\n' > p/login.yaml
	lint_refuses "p/login.yaml:1:1: error: empty profile"
	run nf -C p lint login
	status_is 3
}

@test "inheritance 17 deep names file:line:col and exits 3" {
	mkprof
	for i in $(seq 0 15); do
		printf 'abstract: true\ninherits: [p%d]\n' $((i + 1)) > p/p$i.yaml
	done
	echo "description: end" > p/p16.yaml
	sed -i 1d p/p0.yaml
	lint_refuses "p/p15.yaml:2:12: error: inheritance deeper than 16 profiles: 'p15' inherits 'p16'"
	run nf -C p lint p0
	status_is 3
	[[ "$output" == *"p15.yaml:2:12: error: inheritance deeper than 16"* ]]
	# 16 deep is still fine
	rm p/p0.yaml
	sed -i 1d p/p1.yaml
	run nf -C p lint p1
	status_is 0
}
