#!/usr/bin/env bats
# The packages 'make deb' and 'make rpm' build (in NF_PKGDIR, which
# check-e2e sets; build/pkg by default), installed the way an operator
# installs them.  The .deb: apt into a fresh Debian 13 root (the package
# make image-pkgs builds for trixie, in a trixie root, the one Debian 13
# images carry).  The .rpm: its
# requirements against what the binary links, and rpm --root into the EL
# test root, whose packages are stand-ins (el_helper.bash): that root has
# no C library, so the binary is run on the host that built it.
# Needs root, mmdebstrap and Debian's mirror (the Debian 13 bootstrap is
# cached in $NF_E2E_CACHE), rpm, dnf, createrepo_c.
load ../bats/helper
load el_helper

setup_file() {
	export PKGDIR=${NF_PKGDIR:-$NF_SRCDIR/build/pkg}
	V=$(cat "$NF_SRCDIR/VERSION")
	export V DEB=$PKGDIR/trixie/nodeforge_${V}_amd64.deb RPMF=$PKGDIR/nodeforge-$V-1.x86_64.rpm
	export E2E=${NF_E2E_CACHE:-$BATS_FILE_TMPDIR/cache}
}

need_pkg() {
	[ -f "$1" ] || { echo "no package '$1': run 'make image-pkgs rpm' (check-e2e does)"; return 1; }
}

# A Debian 13 minbase root in DIR, bootstrapped once into the e2e cache
# (key: mirror and mmdebstrap's version)
trixie_root() {
	local mirror=${NF_E2E_DEBIAN_MIRROR:-http://deb.debian.org/debian} key tar
	key=$(printf 'trixie minbase amd64\n%s\n%s\n' "$mirror" "$(mmdebstrap --version)" | sha256sum | cut -c1-16)
	tar=$E2E/bootstrap-pkg/trixie-minbase-$key.tar
	if [ ! -f "$tar" ]; then
		mkdir -p "${tar%/*}"
		mmdebstrap --quiet --mode=root --variant=minbase --architectures=amd64 --format=tar \
			trixie "$tar.tmp" "deb $mirror trixie main" || return 1
		mv "$tar.tmp" "$tar"
	fi
	mkdir -p "$1"
	tar -xf "$tar" -C "$1"
}

# The rpm's files in DIR
rpm_payload() {
	mkdir -p "$1"
	rpm2cpio "$RPMF" | (cd "$1" && cpio -idm --quiet)
}

@test "deb: apt installs it into a fresh Debian 13 root; nodeforge version, verify --help and the shipped profiles work there" {
	[ "$(id -u)" = 0 ] || skip "needs root (chroot)"
	command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
	need_pkg "$DEB"
	trixie_root root
	grep -qx 'VERSION_CODENAME=trixie' root/etc/os-release
	! chroot root dpkg-query -W nodeforge 2>/dev/null
	cp /etc/resolv.conf root/etc/resolv.conf
	cp "$DEB" root/tmp/
	run chroot root apt-get update -qq
	status_is 0
	run chroot root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "/tmp/${DEB##*/}"
	status_is 0
	echo "# deb: Depends: $(dpkg-deb -f "$DEB" Depends)" >&3
	echo "# deb: on trixie: $(chroot root dpkg-query -W -f '${Package}=${Version} ' \
		libarchive13t64 libcurl4t64 libefiboot1t64 libefivar1t64 libmicrohttpd12t64 libssl3t64)" >&3
	# built on trixie: it names trixie's t64 libraries and glibc 2.38+
	dpkg-deb -f "$DEB" Depends | grep -q 'libcurl4t64'
	# loaded on first use (dlopen), named by debian/rules
	dpkg-deb -f "$DEB" Depends | grep -q 'libmicrohttpd12t64'
	dpkg-deb -f "$DEB" Depends | grep -q 'libarchive13t64'
	dpkg-deb -f "$DEB" Depends | grep -Eq 'libc6 \(>= 2\.(3[89]|[4-9][0-9])\)'
	[ "$(chroot root dpkg -S /usr/bin/nodeforge)" = "nodeforge: /usr/bin/nodeforge" ]
	run chroot root sh -c 'ldd /usr/bin/nodeforge'
	status_is 0
	[[ "$output" != *"not found"* ]]
	run chroot root nodeforge version
	status_is 0
	echo "# deb: chroot trixie-root nodeforge version: $output" >&3
	[ "$output" = "$("$NF_BIN" version)" ] # the same version and commit
	# libcurl, loaded on first use, is there: the fetch reaches the socket
	run chroot root nodeforge status --server http://127.0.0.1:9
	echo "# deb: chroot trixie-root nodeforge status --server http://127.0.0.1:9: $output" >&3
	[ "$status" = 1 ]
	[[ "$output" == *"Failed to connect to 127.0.0.1 port 9"* ]]
	run chroot root nodeforge verify --help
	status_is 0
	echo "# deb: chroot trixie-root nodeforge verify --help: ${lines[0]}" >&3
	[[ "${lines[0]}" == "usage: nodeforge verify "* ]]
	# built with PREFIX=/usr: the profiles it finds are the packaged ones
	run chroot root nodeforge profile show compute --args
	status_is 0
	[[ "$output" == *"cgroup_memory=1"* ]]
	[ -f root/usr/share/man/man1/nodeforge.1.gz ]
	[ -f root/usr/share/man/man1/nodeforge-verify.1.gz ]
	[ -f root/usr/share/bash-completion/completions/nodeforge ]
	[ -f root/usr/share/doc/nodeforge/copyright ]
	grep -q '^ExecStart=/usr/bin/nodeforge -q serve ' root/lib/systemd/system/nodeforge-serve.service
	# installed, not enabled: the boot server needs its tree and site first
	[ ! -e root/etc/systemd/system/multi-user.target.wants/nodeforge-serve.service ]
}

@test "rpm: Requires holds one soname()(64bit) for each library the payload's binary links or loads on first use (libcurl, libmicrohttpd, libarchive), and no other library" {
	command -v rpm2cpio >/dev/null && command -v readelf >/dev/null || skip "rpm2cpio and readelf are needed"
	need_pkg "$RPMF"
	rpm_payload payload
	run rpm -qpR "$RPMF"
	status_is 0
	echo "$output" | sed 's/^/# rpm -qpR: /' >&3
	req=$(echo "$output" | sed -n 's/^\(lib[^(]*\.so[.0-9]*\)()(64bit)$/\1/p' | sort -u)
	needed=$({ readelf -d payload/usr/bin/nodeforge | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' \
		| grep -v '^ld-linux'; echo libcurl.so.4; echo libmicrohttpd.so.12; echo libarchive.so.13; } | sort -u)
	[ -n "$needed" ]
	echo "requires: $req"
	echo "NEEDED:   $needed"
	[ "$req" = "$needed" ]
	[[ "$output" == *"libyaml-0.so.2()(64bit)"* ]]
}

@test "rpm: rpm --root installs it (--nodeps) into the EL test root: files in EL paths, owned by the package; without --nodeps rpm names the libraries that root lacks" {
	[ "$(id -u)" = 0 ] || skip "needs root (the EL build)"
	need_pkg "$RPMF"
	el_stub_repo repo
	run nf -C "$NF_SRCDIR/tests/fixtures/profiles/el" build elmini --cache "$SCRATCH/cache" --mirror "$SCRATCH/repo"
	status_is 0
	rootfs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rootfs"])' out/elmini/elmini.current)
	mkdir root
	zstd -dc "out/elmini/$rootfs" | tar -x -C root
	# the root's rpm database: where EL's rpm looks (build sees to it)
	db=/var/lib/rpm
	[ -s "root$db/rpmdb.sqlite" ]
	r() { rpm --root "$SCRATCH/root" --dbpath "$db" "$@"; }
	[ "$(r -q kernel)" = kernel-1.0-1.nfstub.noarch ]
	# build copies its own binary into every image: gone first, so what is
	# checked below is the package's file
	rm -f root/usr/bin/nodeforge
	run r -i --test "$RPMF"
	[ "$status" -ne 0 ]
	[[ "$output" == *"libyaml-0.so.2()(64bit) is needed by nodeforge-$V-1.x86_64"* ]]
	[[ "$output" == *"libc.so.6(GLIBC_2.34)(64bit) is needed by nodeforge-$V-1.x86_64"* ]]
	run r -i --nodeps "$RPMF"
	status_is 0
	[ "$(r -q nodeforge)" = "nodeforge-$V-1.x86_64" ]
	[ "$(r -qf /usr/bin/nodeforge)" = "nodeforge-$V-1.x86_64" ]
	rpm_payload payload
	cmp root/usr/bin/nodeforge payload/usr/bin/nodeforge
	[ -x root/usr/bin/nodeforge ]
	# (rpmbuild on EL gzips manual pages; Debian's rpm leaves them as they are)
	ls root/usr/share/man/man1/nodeforge.1* root/usr/share/man/man1/nodeforge-verify.1*
	[ -f root/usr/share/bash-completion/completions/nodeforge ]
	[ -f root/usr/share/nodeforge/profiles/compute.yaml ]
	[ -f "root/usr/share/doc/nodeforge-$V/README.md" ]
	grep -q '^ExecStart=/usr/bin/nodeforge -q serve ' root/usr/lib/systemd/system/nodeforge-serve.service
	# every file as the package says (digest, mode, owner)
	r -V --nodeps nodeforge
	r -ql nodeforge | sed 's/^/# rpm -ql: /' | grep -v '/usr/share/\(nodeforge\|doc\)/' >&3
}

@test "rpm: its binary runs nodeforge version and verify --help on the Debian host that built it (the EL test root has no C library to run it)" {
	need_pkg "$RPMF"
	rpm_payload payload
	run payload/usr/bin/nodeforge version
	status_is 0
	echo "# rpm payload on the build host: nodeforge version: $output" >&3
	[ "$output" = "$("$NF_BIN" version)" ] # the same version and commit
	run payload/usr/bin/nodeforge verify --help
	status_is 0
	echo "# rpm payload on the build host: nodeforge verify --help: ${lines[0]}" >&3
	[[ "${lines[0]}" == "usage: nodeforge verify "* ]]
}
