#!/usr/bin/env bats
# The same source gives the same binary wherever it is checked out: the
# checkout's files (what git tracks or would track) are copied into two
# directories whose paths differ in length and name, built there with the
# Makefile, and the two build/nodeforge compared byte for byte.
# Slow-ish: two full builds (about a minute at -j2).
load ../bats/helper

@test "reproducible: build/nodeforge from two checkout paths has one sha256, neither path inside" {
	command -v git >/dev/null || skip "git not installed"
	git -C "$NF_SRCDIR" rev-parse --git-dir >/dev/null 2>&1 || skip "NF_SRCDIR is not a git checkout"
	local a=$SCRATCH/a b=$SCRATCH/a-second-checkout-with-a-much-longer-path/nodeforge
	mkdir -p "$a" "$b"
	for d in "$a" "$b"; do
		git -C "$NF_SRCDIR" ls-files -z -co --exclude-standard \
			| (cd "$NF_SRCDIR" && tar -c --null --ignore-failed-read -T -) | tar -x -C "$d"
		make -s -C "$d" -j2 build/nodeforge >/dev/null
	done
	ha=$(sha256sum < "$a/build/nodeforge")
	hb=$(sha256sum < "$b/build/nodeforge")
	echo "$a: $ha" >&3
	echo "$b: $hb" >&3
	[ "$ha" = "$hb" ]
	# the mechanism, not luck: the debug info names the source relative
	! grep -aq "$SCRATCH" "$a/build/nodeforge"
	! grep -aq "$SCRATCH" "$b/build/nodeforge"
}
