# nodeforge — build, check, install, bench, fuzz, asan
#
#   make            build/nodeforge (linked against build/libnodeforge.a)
#   make check      unit tests (cmocka) then CLI tests (bats)
#   make check-e2e  real-component tests (daemons, image builds, QEMU)
#   make asan       build and run the tests under ASan+UBSan
#   make fuzz       libFuzzer targets (clang); FUZZ_SECONDS=N to run each
#   make deps       install the Debian packages the build and tests need
#   make install PREFIX=/usr/local DESTDIR=

VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.1.0)
PREFIX    ?= /usr/local
BUILD     ?= build
CC        ?= cc
PKG_CONFIG ?= pkg-config
PKGS      := yaml-0.1 jansson libarchive libcurl libcrypto blkid efivar efiboot libmicrohttpd libzstd

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
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

LIB_SRC   := $(sort $(wildcard lib/*.c lib/facets/*.c))
CMD_SRC   := $(sort $(wildcard cmd/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ   := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC  := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC  := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN  := $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)

.PHONY: fuzz-lib test all check check-unit check-bats check-e2e asan fuzz fuzz-run deps install \
        clean bench ci-image check-cluster man
all: $(BUILD)/nodeforge man

# Manual pages from docs/ (go-md2man): nodeforge(1) and one per command
man: $(BUILD)/man/nodeforge.1
$(BUILD)/man/nodeforge.1: $(BUILD)/nodeforge docs/man.sh $(wildcard docs/*.md)
	docs/man.sh $(BUILD)/nodeforge $(BUILD)/man $(VERSION)

$(BUILD)/%.o: %.c lib/nodeforge.h lib/internal.h $(wildcard lib/*.h cmd/*.h lib/facets/*.h) cmd/commands.def lib/facets/facets.def
	@mkdir -p $(dir $@)
	@echo "  CC  $<"; $(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/libnodeforge.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/nodeforge: $(CMD_OBJ) $(BUILD)/libnodeforge.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(CMD_OBJ) $(BUILD)/libnodeforge.a $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libnodeforge.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -o $@ $< $(BUILD)/libnodeforge.a \
		$(LDLIBS) $(shell $(PKG_CONFIG) --libs cmocka)

check: check-unit check-bats

# What CI runs (README): fast tests first, then sanitizers, fuzz smoke, the
# slow real-component tests, and last the cluster the images form
test: all
	@date -u +'== %T check'
	$(MAKE) check
	@date -u +'== %T asan'
	$(MAKE) asan
	@date -u +'== %T fuzz'
	$(MAKE) fuzz FUZZ_SECONDS=$${FUZZ_SECONDS:-10}
	@date -u +'== %T check-e2e'
	$(MAKE) check-e2e
	@date -u +'== %T check-cluster'
	$(MAKE) check-cluster
	@date -u +'== %T done'

check-unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; \
		NF_SRCDIR=$(CURDIR) $$t; done

check-bats: $(BUILD)/nodeforge man
	NF_BIN=$(CURDIR)/$(BUILD)/nodeforge NF_SRCDIR=$(CURDIR) \
		bats --timing --print-output-on-failure tests/bats

# the image-building tests share one bootstrap cache
check-e2e: $(BUILD)/nodeforge
	NF_BIN=$(CURDIR)/$(BUILD)/nodeforge NF_SRCDIR=$(CURDIR) \
		NF_E2E_CACHE=$${NF_E2E_CACHE:-$(CURDIR)/$(BUILD)/e2e-cache} \
		bats --timing --print-output-on-failure tests/e2e

# The cluster acceptance test (DESIGN.md, docs/bring-up-a-rack.md): every
# role's image, booted together in QEMU VMs inside a network namespace,
# must form a working Slurm cluster.  Root; slow (NF_E2E_KVM=1 uses KVM)
check-cluster: $(BUILD)/nodeforge
	NF_BIN=$(CURDIR)/$(BUILD)/nodeforge NF_SRCDIR=$(CURDIR) \
		NF_E2E_CACHE=$${NF_E2E_CACHE:-$(CURDIR)/$(BUILD)/e2e-cache} \
		bats --timing --print-output-on-failure tests/cluster

# Golden-image CI of the compute role on this site (docs/nodeforge-ci.md):
# the real bootstrap and a PXE boot in QEMU; CI_ARGS adds options
# (--baseline, --mirror, --accel kvm)
ci-image: $(BUILD)/nodeforge
	$(BUILD)/nodeforge ci compute --boot --junit $(BUILD)/ci-compute.junit.xml $(CI_ARGS)

asan:
	$(MAKE) BUILD=build-asan CC=clang \
		EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		EXTRA_LDLIBS="-fsanitize=address,undefined" \
		CFLAGS="-O1 -g" check-unit check-bats

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
fuzz: fuzz-lib $(FUZZ_BIN)
	@set -e; if [ "$(FUZZ_SECONDS)" -gt 0 ]; then for f in $(FUZZ_BIN); do \
		n=$$(basename $$f); mkdir -p build-fuzz/corpus-$$n; \
		echo "== $$n ($(FUZZ_SECONDS)s)"; \
		$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 build-fuzz/corpus-$$n \
			$$( [ -d fuzz/seeds/$$n ] && echo fuzz/seeds/$$n ) 2>&1 | tail -n 3; \
	done; fi

bench: $(BUILD)/nodeforge
	@set -e; for b in bench/*.sh; do echo "== $$b"; NF_BIN=$(CURDIR)/$(BUILD)/nodeforge bash $$b; done

DEPS_BUILD := build-essential clang pkg-config go-md2man libyaml-dev libjansson-dev libarchive-dev \
	libcurl4-openssl-dev libssl-dev libblkid-dev libefivar-dev libefiboot-dev \
	libmicrohttpd-dev libcmocka-dev libclang-rt-14-dev bats zstd libzstd-dev
DEPS_TEST := cpio pigz jq tar libarchive-tools xz-utils munge slurmd slurmctld slurm-client \
	mariadb-server chrony dnsmasq nginx-light qemu-system-x86 ipxe-qemu mmdebstrap \
	systemd python3 squashfs-tools fakeroot attr libcap2-bin util-linux \
	e2fsprogs dosfstools fdisk curl openssl time busybox-static linux-image-cloud-amd64
DEPS_TEST += dnf rpm createrepo-c
DEPS_TEST += xfsprogs mtools grub-efi-amd64-bin ovmf
# the cluster test: ssh to the VMs, the inventory read in Python, netns
DEPS_TEST += openssh-client python3-yaml iproute2 zstd
# ../shared/tools/ksvalidator (pykickstart) imports requests
DEPS_TEST += python3-requests
# the manual pages rendered in the tests (man -l)
DEPS_TEST += man-db groff-base
# the iPXE binaries pxe copies into the tree for plain PXE firmware
DEPS_TEST += ipxe
deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		$(DEPS_BUILD) $(DEPS_TEST)

install: $(BUILD)/nodeforge man
	install -D -m 0755 $(BUILD)/nodeforge $(DESTDIR)$(PREFIX)/bin/nodeforge
	install -d $(DESTDIR)$(PREFIX)/share/nodeforge $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 dist/nodeforge.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/nodeforge
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's,@BINDIR@,$(PREFIX)/bin,' dist/nodeforge-serve.service.in \
		> $(DESTDIR)$(PREFIX)/lib/systemd/system/nodeforge-serve.service
	cp -R profiles overlays kickstart $(DESTDIR)$(PREFIX)/share/nodeforge/

clean:
	rm -rf build build-asan build-fuzz
