#!/usr/bin/env bats
# The README opens with the two commands a newcomer runs, CI runs the
# second one, and the pages it points to exist (tests/e2e/t0900-readme
# runs the first one as written, in a fresh clone).
load helper

@test "readme: it opens with exactly two commands, setup.sh first" {
	run awk 'NR <= 6' "$NF_SRCDIR/README.md"
	[ "${lines[0]}" = "# nodeforge" ]
	[ "${lines[1]}" = '```sh' ]
	[ "${lines[4]}" = '```' ]
	[[ "$(readme_command 1)" == "./setup.sh && make all image-pkgs && build/nodeforge build cpu --artifact-mirror ../shared/artifacts" ]]
	[[ "$(readme_command 2)" == "./setup.sh && make test" ]]
	[ -x "$NF_SRCDIR/setup.sh" ]
	sh -n "$NF_SRCDIR/setup.sh"
}

@test "readme: .ci/run runs the README's test command as written, taken from the README" {
	# a tree whose setup.sh and make test only say that they ran
	mkdir -p t/.ci && cp "$NF_SRCDIR/.ci/run" t/.ci/run
	printf '#!/bin/sh\necho "setup.sh ran in $PWD"\n' > t/setup.sh
	printf 'test:\n\t@echo make test ran\n' > t/Makefile
	chmod +x t/setup.sh
	sed -n '1,/^```$/p' "$NF_SRCDIR/README.md" > t/README.md
	run t/.ci/run
	status_is 0
	[[ "$output" == *"+ $(readme_command 2)"* ]]
	[[ "$output" == *"setup.sh ran in $PWD/t"*"make test ran"* ]]
	# the README's line is what runs: another second line is refused
	sed -i 's|^\./setup.sh && make test$|./setup.sh \&\& make check|' t/README.md
	run t/.ci/run
	status_is 1
	[[ "$output" == *"README.md's second command is not the test command: './setup.sh && make check'"* ]]
	[[ "$output" != *"make test ran"* ]]
}

@test "readme: every page it names exists, and nothing points at a design file outside the tree" {
	grep -o 'docs/[A-Za-z0-9_./-]*' "$NF_SRCDIR/README.md" | sed 's/[.)]*$//' | grep -v COMMAND | sort -u > pages
	[ -s pages ]
	while read -r p; do
		[ -e "$NF_SRCDIR/$p" ] || { echo "README names '$p', which does not exist"; false; }
	done < pages
	grep -q 'docs/architecture.md' "$NF_SRCDIR/README.md"
	run grep -rln 'DESIGN\.md' "$NF_SRCDIR/README.md" "$NF_SRCDIR/Makefile" "$NF_SRCDIR/docs" "$NF_SRCDIR/tests/cluster"
	[ "$status" -eq 1 ]
}

@test "readme: setup.sh installs make where there is none, then runs make deps" {
	[ "$(id -u)" -eq 0 ] || skip "setup.sh's root path"
	# a PATH with no make: apt-get is a stand-in that logs and
	# installs a make that logs
	mkdir bin
	ln -s "$(command -v id)" "$(command -v dirname)" bin/
	export LOG=$SCRATCH/log BIN=$SCRATCH/bin
	cat > bin/apt-get <<'EOS'
#!/bin/sh
echo "apt-get $*" >> "$LOG"
case "$*" in *install*make*)
	printf '#!/bin/sh\necho "make $*" >> "$LOG"\n' > "$BIN/make"
	/bin/chmod +x "$BIN/make" ;;
esac
EOS
	chmod +x bin/apt-get
	run env PATH="$SCRATCH/bin" "$NF_SRCDIR/setup.sh"
	status_is 0
	grep -qx 'apt-get update -qq' log
	grep -q '^apt-get install .* make$' log
	[ "$(tail -1 log)" = "make deps" ]
	# with make there, straight to make deps
	: > log
	run env PATH="$SCRATCH/bin" "$NF_SRCDIR/setup.sh"
	status_is 0
	[ "$(cat log)" = "make deps" ]
}
