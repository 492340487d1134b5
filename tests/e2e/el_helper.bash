# The EL test root's repository: the rpms are stand-ins the tests build
# with rpmbuild (TEST FIXTURES carrying the real names 'kernel' and
# 'chrony'), in a repository made by createrepo_c; Rocky's own mirror is
# not reachable from here.

stub_rpm() { # name files...
	local name=$1; shift
	{
		echo "Name: $name"
		echo "Version: 1.0"
		echo "Release: 1.nfstub"
		echo "Summary: TEST FIXTURE stand-in for $name"
		echo "License: MIT"
		echo "BuildArch: noarch"
		echo "%description"
		echo "Stand-in package built by nodeforge's tests."
		echo "%install"
		for f in "$@"; do
			echo "mkdir -p %{buildroot}$(dirname "$f")"
			echo "echo '$name stub' > %{buildroot}$f"
		done
		echo "%files"
		for f in "$@"; do echo "$f"; done
	} > "$SCRATCH/$name.spec"
	rpmbuild -bb --define "_topdir $SCRATCH/rpmbuild" "$SCRATCH/$name.spec" >/dev/null 2>&1
}

# el_stub_repo DIR: the stand-in kernel and chrony in a dnf repository at
# $SCRATCH/DIR (skips when dnf, rpmbuild or createrepo_c is missing)
el_stub_repo() {
	command -v dnf >/dev/null && command -v rpmbuild >/dev/null && command -v createrepo_c >/dev/null \
		|| skip "dnf, rpmbuild and createrepo_c are needed (make deps)"
	stub_rpm kernel /boot/vmlinuz-5.14.0-1.nfstub
	stub_rpm chrony /usr/sbin/chronyd /usr/lib/systemd/system/chronyd.service
	mkdir -p "$SCRATCH/$1"
	cp "$SCRATCH"/rpmbuild/RPMS/noarch/*.rpm "$SCRATCH/$1/"
	createrepo_c -q "$SCRATCH/$1"
}

# The stand-in EL roots have no glibc nor rpm of their own: their images
# get the running binary (build --self-package host); a real EL site
# passes the nodeforge rpm built on its release
export NODEFORGE_SELF_PACKAGE=host
