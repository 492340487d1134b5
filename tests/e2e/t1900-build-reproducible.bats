#!/usr/bin/env bats
# The same source gives the same binary wherever it is checked out: the
# checkout's files (what git tracks or would track) are copied into a
# directory whose path differs from the checkout's in length and name,
# built there with the Makefile (its COMMIT file the checkout's commit,
# as a source tarball carries it), and compared byte for byte with the
# checkout's own build/nodeforge (make all, as CI builds it first).
# Slow-ish: one full build (about 30 s at -j2).
load ../bats/helper

@test "reproducible: build/nodeforge from two checkout paths has one sha256, neither path inside" {
	command -v git >/dev/null || skip "git not installed"
	git -C "$NF_SRCDIR" rev-parse --git-dir >/dev/null 2>&1 || skip "NF_SRCDIR is not a git checkout"
	local a=$NF_SRCDIR b=$SCRATCH/a-second-checkout-with-a-much-longer-path/nodeforge
	# the checkout's binary, current with its sources (in CI: make all
	# built it, nothing to do)
	make -s -C "$a" -j2 build/nodeforge >/dev/null
	mkdir -p "$b"
	git -C "$NF_SRCDIR" ls-files -z -co --exclude-standard \
		| (cd "$NF_SRCDIR" && tar -c --null --ignore-failed-read -T -) | tar -x -C "$b"
	git -C "$NF_SRCDIR" rev-parse --short=12 HEAD > "$b/COMMIT"
	make -s -C "$b" -j2 build/nodeforge >/dev/null
	ha=$(sha256sum < "$a/build/nodeforge")
	hb=$(sha256sum < "$b/build/nodeforge")
	echo "$a: $ha" >&3
	echo "$b: $hb" >&3
	[ "$ha" = "$hb" ]
	# the mechanism, not luck: the debug info names the source relative
	! grep -aq "$NF_SRCDIR" "$a/build/nodeforge"
	! grep -aq "$SCRATCH" "$b/build/nodeforge"
}
