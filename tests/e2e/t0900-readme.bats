#!/usr/bin/env bats
# The README's first command run as written, as a newcomer runs it: in a
# fresh clone of this repository (its committed HEAD) with ../shared
# beside it, as root on Debian 12: setup.sh, make all image-pkgs, and a
# real mmdebstrap build of the cpu role with the relative artifact mirror.
# Then the source tarball made without .git, and the package built from
# it (the one make test built, when its tarball has the same files).
# Slow (two compiles, a bootstrap): the build's default cache,
# $XDG_CACHE_HOME/nodeforge, is pointed at $NF_E2E_CACHE when set, so a
# cached bootstrap is reused, and the clone's build/pkg starts as a copy
# of the checkout's ($NF_PKGDIR, make image-pkgs), so the packages of the
# same source are current there (make compares the source tarball's
# sha256: a clone whose tarball differs builds them again); the command
# line itself is the README's, unchanged.
load ../bats/helper

setup_file() {
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
	mkdir -p "$E2E"
}

@test "readme: the first command, as written, in a fresh clone with ../shared beside it" {
	[ "$(id -u)" -eq 0 ] || skip "setup.sh installs packages: run as root"
	shared=$(cd "$NF_SRCDIR/.." && pwd -P)/shared
	[ -d "$shared/artifacts" ] || skip "no ../shared/artifacts beside the checkout"
	cmd=$(readme_command 1)
	[[ "$cmd" == ./setup.sh" && "*"--artifact-mirror ../shared/artifacts"* ]]
	w=$BATS_TEST_TMPDIR
	git clone -q "$NF_SRCDIR" "$w/nodeforge"
	ln -s "$shared" "$w/shared"
	mkdir -p "$w/xdg"
	ln -s "$E2E" "$w/xdg/nodeforge"
	cd "$w/nodeforge"
	if [ -n "${NF_PKGDIR:-}" ] && [ -f "$NF_PKGDIR/.deb-source-sha256" ]; then
		mkdir -p build/pkg
		cp -a "$NF_PKGDIR"/nodeforge_*_amd64.deb "$NF_PKGDIR/.deb-source-sha256" build/pkg/
		for s in "$NF_PKGDIR"/*/.source-sha256; do
			[ -f "$s" ] && cp -a "$(dirname "$s")" build/pkg/
		done
	fi
	t0=$(date +%s)
	# what make check-e2e sets for the other tests stays out of it
	run env -u NODEFORGE_ARTIFACT_MIRROR -u NODEFORGE_SELF_PACKAGE \
		-u NODEFORGE_PROFILES -u NODEFORGE_SITE -u MAKEFLAGS -u MAKELEVEL \
		XDG_CACHE_HOME="$w/xdg" bash -c "$cmd"
	echo "# README's first command: exit $status in $(( $(date +%s) - t0 )) s" >&3
	status_is 0
	[ -f out/cpu/cpu.current ]
	m=$(python3 -c 'import json; print(json.load(open("out/cpu/cpu.current"))["manifest"])')
	run build/nodeforge manifest verify --pubkey out/signing.pub "out/cpu/$m"
	status_is 0
	# the image carries the package built for its release, not a stand-in
	ls build/pkg/trixie/nodeforge_*_amd64.deb
}

# same_source A B: two source tarballs hold the same files, byte for
# byte (a symbolic link as a link), but COMMIT (what a checkout's HEAD
# or a tarball without .git says it is built from)
same_source() {
	local d=$BATS_TEST_TMPDIR/same
	rm -rf "$d" && mkdir -p "$d/a" "$d/b"
	tar -xzf "$1" -C "$d/a" && tar -xzf "$2" -C "$d/b" || return 1
	rm -f "$d"/a/*/COMMIT "$d"/b/*/COMMIT
	diff -r --no-dereference "$d/a" "$d/b" >&2
}

@test "readme: the packages build from a source tarball without .git" {
	command -v dpkg-buildpackage >/dev/null || skip "dpkg-dev is not installed (make deps)"
	w=$BATS_TEST_TMPDIR
	git -C "$NF_SRCDIR" archive --prefix=nodeforge/ -o "$w/src.tar" HEAD
	tar -xf "$w/src.tar" -C "$w"
	[ ! -e "$w/nodeforge/.git" ]
	cd "$w/nodeforge"
	v=$(cat VERSION)
	run env -u MAKEFLAGS -u MAKELEVEL make pkg-src
	status_is 0
	tar -tzf "build/pkg/nodeforge-$v.tar.gz" | grep -qx "nodeforge-$v/debian/changelog"
	# make deb builds from the tarball pkg-src made, unpacked in a
	# directory of its own (no checkout's top there).  When make test
	# built its packages from a tarball with these very files (a clean
	# checkout of HEAD), that build is this one; otherwise (changes not
	# committed, or no NF_PKGDIR) the package is built here
	pk=${NF_PKGDIR:-}
	if [ -n "$pk" ] && [ -f "$pk/nodeforge-$v.tar.gz" ] &&
		[ "$(cat "$pk/.deb-source-sha256" 2>/dev/null)" = "$(sha256sum "$pk/nodeforge-$v.tar.gz" | cut -d' ' -f1)" ] &&
		same_source "$pk/nodeforge-$v.tar.gz" "build/pkg/nodeforge-$v.tar.gz"; then
		echo "# make pkg-src without .git: the files of the tarball make test's deb was built from ($pk)" >&3
		deb=$pk/nodeforge_${v}_amd64.deb
	else
		t0=$(date +%s)
		run env -u MAKEFLAGS -u MAKELEVEL make deb
		echo "# make deb from a source tarball: exit $status in $(( $(date +%s) - t0 )) s" >&3
		status_is 0
		deb=build/pkg/nodeforge_${v}_amd64.deb
	fi
	dpkg-deb -c "$deb" | grep -q ' \./usr/bin/nodeforge$'
}
