#!/usr/bin/env bats
# make pkg-src: the source tarball the packages build from, also made in
# a tree without .git (a release download, git archive): every file but
# what .gitignore names (dist/ls-source.sh).
load helper

# the checkout's source, without .git, into DIR
copy_source() {
	mkdir -p "$1"
	(cd "$NF_SRCDIR" && dist/ls-source.sh) |
		tar -C "$NF_SRCDIR" -c --null -T - | tar -x -C "$1"
	[ ! -e "$1/.git" ]
}

@test "pkg-src: a tree without .git gives the whole source, no build outputs" {
	copy_source src
	# what a build leaves behind stays out
	mkdir -p src/build/x src/build-asan src/out/cpu src/lib/sub
	touch src/build/x/y src/build-asan/z src/out/cpu/cpu.current src/lib/sub/a.o
	run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C src BUILD=build pkg-src
	status_is 0
	tar -tzf src/build/pkg/nodeforge-*.tar.gz | sed 's,^nodeforge-[^/]*/,,' | grep -v '/$' |
		sort > listed
	grep -qx debian/changelog listed
	grep -qx Makefile listed
	grep -qx lib/nodeforge.h listed
	grep -qx COMMIT listed
	! grep -E '^(build|build-asan|out)/|\.o$' listed
	# every file of the source is in it
	(cd "$NF_SRCDIR" && dist/ls-source.sh) | tr '\0' '\n' | sort > source
	comm -23 source listed > missing
	[ ! -s missing ] || { cat missing; false; }
}

@test "pkg-src: the tarball's own tree makes the same tarball again" {
	copy_source src
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C src BUILD=build pkg-src
	mkdir x
	tar -xzf src/build/pkg/nodeforge-*.tar.gz -C x
	run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C x/nodeforge-* BUILD=build pkg-src
	status_is 0
	a=$(tar -tzf src/build/pkg/nodeforge-*.tar.gz | sort | sha256sum)
	b=$(tar -tzf x/nodeforge-*/build/pkg/nodeforge-*.tar.gz | sort | sha256sum)
	[ "$a" = "$b" ]
}

@test "pkg-src: a .gitignore pattern the listing does not understand is an error" {
	copy_source src
	echo 'lib/**/gen' >> src/.gitignore
	cd src
	run dist/ls-source.sh
	status_is 1
	[[ "$output" == *".gitignore pattern 'lib/**/gen': only /DIR/ and NAME are understood"* ]]
}
