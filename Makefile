# nodeforge — build, check, install, bench, fuzz, asan
#
#   make            build/nodeforge (linked against build/libnodeforge.a)
#   make check      unit tests (cmocka) then CLI tests (bats)
#   make check-e2e  real-component tests (daemons, image builds, QEMU)
#   make asan       build and run the tests under ASan+UBSan
#   make fuzz       libFuzzer targets (clang); FUZZ_SECONDS=N to run each
#   make deps       install the Debian packages the build and tests need
#   make install PREFIX=/usr/local DESTDIR=
#   make deb        build/pkg/nodeforge_VERSION_amd64.deb (dpkg-buildpackage, lintian)
#   make rpm        build/pkg/nodeforge-VERSION-1.x86_64.rpm (rpmbuild)
#   make image-pkgs build/pkg/SUITE/nodeforge_VERSION_amd64.deb for each
#                   Debian release images are built for (IMAGE_SUITES)

VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.1.0)
# git, when this tree is a checkout's top (a source tarball extracted
# inside another checkout is not that checkout)
GIT       := $(if $(filter $(CURDIR),$(shell git rev-parse --show-toplevel 2>/dev/null)),git,false)
# The commit it is built from: the COMMIT file a source tarball carries
# (make pkg-src writes it), else git's, else "unknown"
COMMIT    := $(or $(shell cat COMMIT 2>/dev/null),$(shell $(GIT) rev-parse --short=12 HEAD 2>/dev/null),unknown)
PREFIX    ?= /usr/local
UNITDIR   ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
BUILD     ?= build
CC        ?= cc
PKG_CONFIG ?= pkg-config
PKGS      := yaml-0.1 jansson libcrypto blkid efivar efiboot libzstd libsystemd
# loaded on the first call (lib/adapters/lazy.c): their headers only
PKGS_LAZY := libcurl libmicrohttpd libarchive

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) $(PKGS_LAZY) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

WARN      := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral \
             -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers
CFLAGS    ?= -O2 -g
# gcc warns about snprintf truncation we rely on (bounded paths); clang lacks the flag
WARN      += $(shell $(CC) -Werror -Wno-format-truncation -E -x c /dev/null >/dev/null 2>&1 && echo -Wno-format-truncation)
# The checkout's path stays out of the binary (debug info, __FILE__): the
# same commit gives the same build/nodeforge wherever it is checked out
REPRO     := -ffile-prefix-map=$(CURDIR)=.
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) $(CPPFLAGS) $(REPRO) -D_GNU_SOURCE -DNF_VERSION='"$(VERSION)"' \
             -DNF_DATADIR='"$(PREFIX)/share/nodeforge"' -Ilib $(PKG_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS    := $(PKG_LIBS) -ldl -lpthread $(EXTRA_LDLIBS)

LIB_SRC   := $(sort $(wildcard lib/*.c lib/adapters/*.c lib/facets/*.c))
CMD_SRC   := $(sort $(wildcard cmd/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/commit.o
CMD_OBJ   := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC  := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC  := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN  := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)

.PHONY: FORCE deb rpm rpm-build pkg-src image-pkgs fuzz-lib test all check check-unit check-bats check-layers check-e2e e2e-prebuild e2e-prepare asan asan-bats fuzz fuzz-run deps install \
        clean bench ci-image check-cluster man
all: $(BUILD)/nodeforge man

# Manual pages from docs/ (go-md2man): nodeforge(1) and one per command
man: $(BUILD)/man/nodeforge.1
$(BUILD)/man/nodeforge.1: $(BUILD)/nodeforge docs/man.sh $(wildcard docs/*.md)
	docs/man.sh $(BUILD)/nodeforge $(BUILD)/man $(VERSION)

$(BUILD)/%.o: %.c lib/nodeforge.h lib/internal.h $(wildcard lib/*.h lib/internal/*.h lib/nodeforge/*.h lib/adapters/*.h cmd/*.h lib/facets/*.h) cmd/commands.def lib/facets/facets.def
	@mkdir -p $(dir $@)
	@echo "  CC  $<"; $(CC) $(ALL_CFLAGS) -c -o $@ $<

# nf_commit: rewritten only when the commit changed, so an unchanged tree
# relinks nothing (a temporary file of its own: make test runs two makes
# of one tree side by side)
$(BUILD)/commit.c: FORCE
	@mkdir -p $(dir $@)
	@t=$@.tmp.$$$$; printf '#include "nodeforge.h"\nconst char nf_commit[] = "%s";\n' '$(COMMIT)' > $$t; \
	if cmp -s $$t $@; then rm -f $$t; else mv $$t $@; fi
$(BUILD)/commit.o: $(BUILD)/commit.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
FORCE:

$(BUILD)/libnodeforge.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/nodeforge: $(CMD_OBJ) $(BUILD)/libnodeforge.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(CMD_OBJ) $(BUILD)/libnodeforge.a $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libnodeforge.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -o $@ $< $(BUILD)/libnodeforge.a \
		$(LDLIBS) $(shell $(PKG_CONFIG) --libs cmocka)

check: check-unit check-layers check-bats

# What CI runs (README): the unit tests first, then the unit and CLI
# tests again under ASan/UBSan (the CLI tests run once, there: `make
# check` runs them on the plain build), fuzz smoke, the slow
# real-component tests (on the plain build), and last the cluster the
# images form; the packages the images install are built in the
# background meanwhile.  tests/run-all.sh prints each stage's time
test:
	MAKE="$(MAKE)" BUILD=$(BUILD) tests/run-all.sh

check-unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; \
		NF_SRCDIR=$(CURDIR) $$t; done

# The library's parts call only down (tests/layers/parts.txt, the
# exceptions with their reasons in tests/layers/allow.txt); SCCS=1 prints
# the cycles that remain
check-layers: $(BUILD)/nodeforge
	CC="$(CC)" sh tests/layers/selftest.sh
	python3 tests/layers/check-layers.py --build $(BUILD) $(if $(SCCS),--sccs)

# the stand-in bootstrap roots of these tests have no package manager:
# their images get this binary (build --self-package host).  BATS_JOBS
# files run side by side (GNU parallel; the tests of one file in order).
# NF_BATS_PART=early or late: one of the two parts make test runs apart
# (tests/bats-part.sh); unset, every file.  The tests never see it: one
# of them runs make test's schedule, whose parts it names
BATS_JOBS ?= 2
BATS_PAR  := $(if $(filter-out 1,$(BATS_JOBS)),$(if $(shell command -v parallel),--jobs $(BATS_JOBS) --no-parallelize-within-files))
check-bats: $(BUILD)/nodeforge man
	@files=$$(tests/bats-part.sh tests/bats) || exit 2; \
	[ -n "$$files" ] || { echo "check-bats: no file in part '$$NF_BATS_PART'"; exit 0; }; set -x; \
	env -u NF_BATS_PART -u NF_E2E_PART \
		NODEFORGE_SELF_PACKAGE=host NF_BIN=$(CURDIR)/$(BUILD)/nodeforge NF_SRCDIR=$(CURDIR) \
		bats --timing --print-output-on-failure $(BATS_PAR) $$files

# the image-building tests share one bootstrap cache; the package install
# tests take the packages from $(PKG); the pinned sources (enroot, pyxis)
# come from the workspace's artifact mirror beside the checkout.  t0900
# runs the README's first command as written in a fresh clone (root,
# network: setup.sh, make all image-pkgs, the cpu role's build; its
# default cache is NF_E2E_CACHE) and builds the deb from a source
# tarball without .git
ARTIFACT_MIRROR ?= $(abspath $(wildcard $(CURDIR)/../shared/artifacts))
# make test builds the packages once, in the background, then runs these
# with PKGS_READY=1 (tests/run-all.sh): two makes that both remade them
# at once would rewrite the packages an image build is reading
PKG_DEPS = $(if $(PKGS_READY),,image-pkgs $(1))
E2E_ENV = NODEFORGE_SELF_PACKAGE=$(CURDIR)/$(PKG) NODEFORGE_ARTIFACT_MIRROR=$(ARTIFACT_MIRROR) \
	NF_BIN=$(CURDIR)/$(BUILD)/nodeforge NF_SRCDIR=$(CURDIR) NF_PKGDIR=$(CURDIR)/$(PKG) \
	NF_E2E_CACHE=$${NF_E2E_CACHE:-$(CURDIR)/$(BUILD)/e2e-cache}
check-e2e: $(BUILD)/nodeforge $(call PKG_DEPS,rpm)
	$(E2E_ENV) tests/bats-files.sh tests/e2e --timing --print-output-on-failure

# the images the e2e and cluster tests share, built side by side into
# their cache (tests/e2e/prebuild.sh); make test runs it in the
# background while the e2e tests that need no image run
e2e-prebuild: $(BUILD)/nodeforge $(call PKG_DEPS)
	$(E2E_ENV) tests/e2e/prebuild.sh

# their bootstraps and compiled artifacts only (build --prepare), and the
# small role's t2900 builds: no package needed, so make test starts it
# first, beside everything else
e2e-prepare: $(BUILD)/nodeforge
	$(E2E_ENV) tests/e2e/prebuild.sh --prepare

# The cluster acceptance test (docs/architecture.md, docs/bring-up-a-rack.md): every
# role's image, booted together in QEMU VMs inside a network namespace,
# must form a working Slurm cluster.  Root; slow (NF_E2E_KVM=1 uses KVM)
check-cluster: $(BUILD)/nodeforge $(call PKG_DEPS)
	$(E2E_ENV) bats --timing --print-output-on-failure tests/cluster

# Golden-image CI of the compute role on this site (docs/nodeforge-ci.md):
# the real bootstrap and a PXE boot in QEMU; CI_ARGS adds options
# (--baseline, --mirror, --accel kvm)
ci-image: $(BUILD)/nodeforge
	$(BUILD)/nodeforge ci compute --boot --junit $(BUILD)/ci-compute.junit.xml $(CI_ARGS)

# The unit and CLI tests built with ASan/UBSan; asan-bats: the CLI tests
# alone (make test runs their second part beside the cluster, on the
# build asan made)
ASAN_MAKE = $(MAKE) BUILD=build-asan CC=clang \
	EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	EXTRA_LDLIBS="-fsanitize=address,undefined" CFLAGS="-O1 -g"
asan:
	$(ASAN_MAKE) check-unit check-bats
asan-bats:
	$(ASAN_MAKE) check-bats

# One fuzz-instrumented library, linked into every target
FUZZ_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer
fuzz-lib:
	$(MAKE) BUILD=build-fuzz CC=clang CFLAGS="-O1 -g" \
		EXTRA_CFLAGS="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link" build-fuzz/libnodeforge.a

build-fuzz/%: fuzz/%.c fuzz-lib
	clang -std=gnu11 -g -O1 $(FUZZ_FLAGS) -fsanitize=fuzzer -D_GNU_SOURCE \
		-DNF_VERSION='"$(VERSION)"' -Ilib $(PKG_CFLAGS) -o $@ $< \
		build-fuzz/libnodeforge.a $(LDLIBS)

FUZZ_SECONDS ?= 0
# the targets side by side, FUZZ_JOBS at a time (each is one process on
# one core); each one's last lines printed once it is done
FUZZ_JOBS ?= 2
fuzz: fuzz-lib $(FUZZ_BIN)
	@set -e; if [ "$(FUZZ_SECONDS)" -gt 0 ]; then \
		printf '%s\n' $(FUZZ_BIN) | xargs -P $(FUZZ_JOBS) -I{} sh -c \
		'n=$$(basename {}); mkdir -p build-fuzz/corpus-$$n; \
		 s=; [ -d fuzz/seeds/$$n ] && s=fuzz/seeds/$$n; \
		 rc=0; {} -max_total_time=$(FUZZ_SECONDS) -max_len=65536 build-fuzz/corpus-$$n $$s \
			> build-fuzz/$$n.log 2>&1 || rc=$$?; \
		 echo "== $$n ($(FUZZ_SECONDS)s, exit $$rc)"; tail -n 3 build-fuzz/$$n.log; exit $$rc'; \
	fi

bench: $(BUILD)/nodeforge
	@set -e; for b in bench/*.sh; do echo "== $$b"; NF_BIN=$(CURDIR)/$(BUILD)/nodeforge bash $$b; done

DEPS_BUILD := build-essential clang pkg-config go-md2man libyaml-dev libjansson-dev libarchive-dev \
	libcurl4-openssl-dev libssl-dev libblkid-dev libefivar-dev libefiboot-dev \
	libmicrohttpd-dev libcmocka-dev libclang-rt-14-dev bats zstd libzstd-dev libsystemd-dev
DEPS_TEST := cpio pigz jq tar libarchive-tools xz-utils munge slurmd slurmctld slurm-client \
	mariadb-server chrony dnsmasq nginx-light qemu-system-x86 ipxe-qemu mmdebstrap eatmydata \
	systemd python3 squashfs-tools fakeroot attr libcap2-bin util-linux \
	e2fsprogs dosfstools fdisk curl openssl time busybox-static linux-image-cloud-amd64
DEPS_TEST += dnf rpm createrepo-c
DEPS_TEST += xfsprogs mtools grub-efi-amd64-bin ovmf
# the cluster test: ssh to the VMs, the inventory read in Python, netns
DEPS_TEST += openssh-client python3-yaml iproute2 zstd
# the cluster test's NFS export for the two controllers' StateSaveLocation
DEPS_TEST += nfs-ganesha nfs-ganesha-vfs
# ../shared/tools/ksvalidator (pykickstart) imports requests
DEPS_TEST += python3-requests
# the manual pages rendered in the tests (man -l)
DEPS_TEST += man-db groff-base
# the iPXE binaries pxe copies into the tree for plain PXE firmware
DEPS_TEST += ipxe
# the CLI test files side by side (bats --jobs)
DEPS_TEST += parallel
# power and bootdev: ipmitool runs them, ipmi_sim (openipmi) is the BMC
# of their tests
DEPS_TEST += ipmitool openipmi
# the packages (make deb, make rpm) and their install tests; the source
# tarball is the list git gives (dist/ls-source.sh)
DEPS_PKG := debhelper dpkg-dev lintian rpm git
deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		$(DEPS_BUILD) $(DEPS_TEST) $(DEPS_PKG)

install: $(BUILD)/nodeforge man
	install -D -m 0755 $(BUILD)/nodeforge $(DESTDIR)$(PREFIX)/bin/nodeforge
	install -d $(DESTDIR)$(PREFIX)/share/nodeforge $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 dist/nodeforge.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/nodeforge
	install -d $(DESTDIR)$(UNITDIR)
	sed 's,@BINDIR@,$(PREFIX)/bin,' dist/nodeforge-serve.service.in \
		> $(DESTDIR)$(UNITDIR)/nodeforge-serve.service
	install -D -m 0644 dist/nodeforge.sysusers \
		$(DESTDIR)$(SYSUSERSDIR)/nodeforge.conf
	cp -R profiles overlays kickstart $(DESTDIR)$(PREFIX)/share/nodeforge/

# Packages (docs/packages.md), under $(PKG)/.  Both build from one source
# tarball of the checkout's files (what git tracks or would track; in a
# tree without .git, every file but what .gitignore names:
# dist/ls-source.sh), so nothing of a local build/ enters them; debian/rules and dist/nodeforge.spec
# build and install with this Makefile (make install DESTDIR= PREFIX=/usr)
PKG       := $(BUILD)/pkg
PKG_JOBS  ?= 2
PKG_TAR   := $(PKG)/nodeforge-$(VERSION).tar.gz
# the last commit's time stamps the tarball and the rpm (dpkg takes
# debian/changelog's date); without git, debian/changelog's
SOURCE_DATE_EPOCH ?= $(or $(shell $(GIT) log -1 --format=%ct 2>/dev/null),$(shell dpkg-parsechangelog -STimestamp 2>/dev/null),0)

pkg-src:
	@mkdir -p $(PKG)
	rm -rf $(PKG)/src && mkdir -p $(PKG)/src/nodeforge-$(VERSION)
	dist/ls-source.sh > $(PKG)/src/files
	tar -c --null --ignore-failed-read -T $(PKG)/src/files | tar -x -C $(PKG)/src/nodeforge-$(VERSION)
	test -f $(PKG)/src/nodeforge-$(VERSION)/debian/changelog
	echo '$(COMMIT)' > $(PKG)/src/nodeforge-$(VERSION)/COMMIT
	tar -c --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
		-C $(PKG)/src nodeforge-$(VERSION) | gzip -n > $(PKG_TAR)

deb: pkg-src
	@set -e; sum=$$(sha256sum $(PKG_TAR) | cut -d' ' -f1); \
	if [ -f $(PKG)/nodeforge_$(VERSION)_amd64.deb ] && \
	   [ "$$(cat $(PKG)/.deb-source-sha256 2>/dev/null)" = "$$sum" ]; then \
		echo "deb: $(PKG)/nodeforge_$(VERSION)_amd64.deb is this source's"; exit 0; fi; \
	rm -rf $(PKG)/deb && mkdir -p $(PKG)/deb; \
	tar -xzf $(PKG_TAR) -C $(PKG)/deb; \
	(cd $(PKG)/deb/nodeforge-$(VERSION) && dpkg-buildpackage -us -uc -b -j$(PKG_JOBS)); \
	mv $(PKG)/deb/*.deb $(PKG)/deb/*.buildinfo $(PKG)/deb/*.changes $(PKG)/; \
	lintian --fail-on error,warning --info $(PKG)/nodeforge_$(VERSION)_amd64.changes; \
	echo "$$sum" > $(PKG)/.deb-source-sha256

rpm: pkg-src
	@set -e; sum=$$(sha256sum $(PKG_TAR) | cut -d' ' -f1); \
	if ls $(PKG)/nodeforge-$(VERSION)-*.rpm >/dev/null 2>&1 && \
	   [ "$$(cat $(PKG)/.rpm-source-sha256 2>/dev/null)" = "$$sum" ]; then \
		echo "rpm: $$(ls $(PKG)/nodeforge-$(VERSION)-*.rpm) is this source's"; exit 0; fi; \
	$(MAKE) --no-print-directory rpm-build; echo "$$sum" > $(PKG)/.rpm-source-sha256

rpm-build:
	rm -rf $(PKG)/rpmbuild $(PKG)/.rpm-source-sha256
	@# --nodeps: on a Debian host the build dependencies are dpkg's (make deps),
	@# not in an rpm database
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) rpmbuild -bb --nodeps --define '_topdir $(abspath $(PKG))/rpmbuild' \
		--define '_sourcedir $(abspath $(PKG))' --define '_smp_mflags -j$(PKG_JOBS)' \
		--define 'source_date_epoch_from_changelog 0' \
		--define 'use_source_date_epoch_as_buildtime 1' \
		--define 'clamp_mtime_to_source_date_epoch 1' --define '_buildhost nodeforge' \
		dist/nodeforge.spec
	mv $(PKG)/rpmbuild/RPMS/*/*.rpm $(PKG)/

# The package each image's nodeforge comes from (nodeforge build
# --self-package, default build/pkg): built for the image's release, the
# build host's own release from make deb, the others in a throw-away root
# of that release (dist/deb-for-suite.sh, from DEB_MIRROR); rebuilt only
# when the source tarball changed
IMAGE_SUITES ?= trixie bookworm
DEB_MIRROR   ?= http://deb.debian.org/debian
HOST_SUITE   := $(shell . /etc/os-release 2>/dev/null && echo $$VERSION_CODENAME)
image-pkgs: deb
	@set -e; for s in $(IMAGE_SUITES); do \
		if [ "$$s" = "$(HOST_SUITE)" ]; then \
			rm -rf $(PKG)/$$s; mkdir -p $(PKG)/$$s; \
			cp $(PKG)/nodeforge_$(VERSION)_amd64.deb $(PKG)/$$s/; \
		else PKG_JOBS=$(PKG_JOBS) dist/deb-for-suite.sh $$s $(PKG_TAR) $(PKG)/$$s $(DEB_MIRROR); fi; \
	done

clean:
	rm -rf build build-asan build-fuzz
