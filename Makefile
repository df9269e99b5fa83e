# SPDX-License-Identifier: BSD-2-Clause
# kiln: bpf/*.bpf.c -> build/bpf/*.bpf.o -> build/gen/*.skel.h -> build/kiln
#
# make            build build/kiln
# make deps       install the Debian packages building and running need (idempotent)
# make test-deps  those and the packages the tests need (make test runs it)
# make run        build, then run the agent: profiles into ./profiles/ until Ctrl-C
# make test       build, then run every suite (unit, fuzz corpus replays, e2e
#                 (needs root), view/diff, browser, deploy, the test receiver's
#                 self-test, the kernel matrix), whatever fails, then one line
#                 per suite and the total passed, failed and skipped; fails if
#                 anything failed
# make bench      side-by-side benchmark against perf record and bpftrace
#                 (with bench-unwind and bench-per-sample)
# make soak       the agent for SOAK_SECONDS (default 3600) under process churn,
#                 a token rotation and a receiver outage: flat RSS, no profile
#                 lost, no error but the outage's (tests/soak/run.sh)
# make fuzz       each parser's libFuzzer target for FUZZ_SECONDS (default 60; clang,
#                 ASan + UBSan, build-fuzz/); make test replays the corpora
# make valgrind   kiln record of the whole host for 30 s under valgrind memcheck
# make bench-scale  kiln record against N call chains over M processes, a grid
# make bench-unwind  unwind table size and build cost of the largest binaries,
#                 and the rows all running processes need (part of make bench)
# make bench-per-sample  kiln's BPF time a sample against its frame-pointer
#                 path and bpftrace's, all at once (part of make bench)
# make vmlinux    regenerate vmlinux/<arch>/vmlinux.h from this kernel's BTF
# make install    binary, man page kiln(8), systemd unit, /etc/default/kiln
#                 (PREFIX=/usr/local DESTDIR=); make uninstall reverses it
# make test-deploy  the Helm chart, manifests, image and unit, offline
# make test-unwind  how truthful kiln's user stacks are on Debian's python3.11,
#                 ruby, perl, xz, gzip and an FP-less library, against perf
#                 --call-graph dwarf of the same run (tests/unwind/; issue 14's
#                 bars; in make test, not under SANITIZE=1)
# make test-python  Python frames on Debian's python3.11 and pyenv's 3.11-3.13
#                 (tests/unwind/python.sh; in make test, not under SANITIZE=1)
# make test-ruby  Ruby frames on Debian's ruby3.1 (tests/unwind/ruby.sh; in
#                 make test, not under SANITIZE=1)
# make test-hygiene  SPDX lines, license texts, BPF errno compares (tests/hygiene/check.sh)
# make format-check  clang-format on the C files changed since FORMAT_BASE
# make test-kernels  the BPF checks on this host's kernel and on Debian's 6.1
#                 kernels under qemu (tests/kernels/; KERNELS=host narrows it)
# make manifests  regenerate deploy/kubernetes/kiln.yaml from helm/kiln
# make options-doc  regenerate docs/options.md from the option tables
# V=1 shows the commands; SANITIZE=1 builds with ASan + UBSan in build-asan/
# (make test SANITIZE=1: unit, corpus replays, e2e and view tests;
# any sanitizer report fails); EXTRA_CFLAGS / EXTRA_LDFLAGS are appended.

SANITIZE   ?= 0
# ARCH (x86 or arm64; x86_64, amd64 and aarch64 are understood), from the
# command line or the environment, picks the target. A cross build
# (make ARCH=arm64 on x86) uses the aarch64-linux-gnu- toolchain, the :arm64
# libraries (make deps ARCH=arm64 installs both) and its own folder.
HOST_ARCH  := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ARCH       ?= $(HOST_ARCH)
override ARCH := $(patsubst x86_64,x86,$(patsubst amd64,x86,$(patsubst aarch64,arm64,$(ARCH))))
CROSS      := $(filter-out $(HOST_ARCH),$(ARCH))
TRIPLET    := $(if $(filter arm64,$(ARCH)),aarch64-linux-gnu,x86_64-linux-gnu)
# Sanitized builds get their own folder: SANITIZE=1 build-asan, fuzz build-fuzz;
# a cross build adds -<arch> (build-arm64).
OUT        ?= $(if $(filter 1,$(SANITIZE)),build-asan,$(if $(filter fuzz,$(SANITIZE)),build-fuzz,build))$(if $(CROSS),-$(ARCH))
PREFIX     ?= /usr/local
DESTDIR    ?=
UNITDIR    ?= $(PREFIX)/lib/systemd/system
MANDIR     ?= $(PREFIX)/share/man
CLANG      ?= clang
CC         ?= gcc
ifneq ($(CROSS),)
CROSS_COMPILE ?= $(TRIPLET)-
ifeq ($(origin CC),default)
CC         := $(CROSS_COMPILE)gcc
endif
ifeq ($(origin AR),default)
AR         := $(CROSS_COMPILE)ar
endif
endif
# pkg-config of the target's libraries (the multiarch folder when crossing).
PKG_CONFIG ?= $(if $(CROSS),PKG_CONFIG_LIBDIR=/usr/lib/$(TRIPLET)/pkgconfig:/usr/share/pkgconfig )pkg-config
BPFTOOL    ?= bpftool
VERSION    := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GIT_REV    := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

VMLINUX_H  := vmlinux/$(ARCH)/vmlinux.h

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.DEFAULT_GOAL := all

# Debian 12 packages the build, the tests and the benchmarks need. make deps
# (and make run) installs BUILD_DEPS, make test-deps (and make test) adds
# TEST_DEPS (libc6-dbg: the symbols of ld.so and libc, so short-lived
# processes' start-up is named; clang-format: make format-check).
BUILD_DEPS := clang llvm bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev liblzma-dev \
	libcurl4-openssl-dev libprotobuf-c-dev protobuf-c-compiler libjansson-dev \
	libmicrohttpd-dev libdebuginfod-dev libiberty-dev pkg-config make gcc xxd help2man
TEST_DEPS  := libcriterion-dev golang-go python3 python3-seccomp binutils g++ xz-utils util-linux curl \
	python3-protobuf protobuf-compiler python3-prometheus-client chromium clang-format \
	golang-github-masterminds-sprig-dev golang-k8s-sigs-yaml-dev yamllint python3-yaml \
	python3-jsonschema systemd libc6-dbg
# libllvm14, libclang-cpp14, clang-14, chromium, ruby3.1: the largest binaries
# whose unwind tables make bench-unwind builds (tests/bench/unwind_cost.py);
# ruby3.1 also runs in make bench's load.
BENCH_DEPS := linux-perf bpftrace time libllvm14 libclang-cpp14 clang-14 llvm-14 ruby3.1 \
	chromium
# make ARCH=arm64 on another host: the cross compiler and the :arm64 libraries.
CROSS_DEPS := $(if $(CROSS),gcc-$(TRIPLET) libstdc++-12-dev-$(ARCH)-cross $(addsuffix :$(ARCH),libc6-dev libbpf-dev libelf-dev libdw-dev \
	zlib1g-dev liblzma-dev libcurl4-openssl-dev libprotobuf-c-dev libjansson-dev libmicrohttpd-dev \
	libdebuginfod-dev libiberty-dev))
# make test-kernels: qemu for the guests, busybox for their initramfs.
KERNEL_TEST_DEPS := qemu-system-x86 qemu-system-arm busybox-static cpio binutils
TEST_DEPS  += $(KERNEL_TEST_DEPS)
# make test-unwind: perf (the reference) and the programs it profiles
# (make test-python, test-ruby: the interpreters).
UNWIND_DEPS := linux-perf python3.11 ruby3.1 perl xz-utils gzip
TEST_DEPS  += $(UNWIND_DEPS)
# make e2e-symbols: a debuginfod server, and Rust programs to name.
SYMBOLS_DEPS := debuginfod rustc cargo
TEST_DEPS  += $(SYMBOLS_DEPS)
# e2e-record: JIT runtimes writing perf maps and jitdump files (node, the JDK's jcmd).
JIT_DEPS   := nodejs default-jdk-headless
TEST_DEPS  += $(JIT_DEPS)

PKGS       := libbpf libelf libdw zlib liblzma libprotobuf-c jansson
# Loaded at their first call, not linked (user/core/lazy_lib.h): headers only.
LAZY_PKGS  := libcurl libmicrohttpd libdebuginfod
PKG_CFLAGS  = $(shell $(PKG_CONFIG) --cflags $(PKGS) $(LAZY_PKGS) 2>/dev/null)
PKG_LIBS    = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

WARN       := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 \
	-Wno-format-nonliteral
CFLAGS     := -std=gnu11 -g -O2 $(WARN) -fno-omit-frame-pointer -MMD -MP \
	-Iinclude -Iuser -I$(OUT)/gen -D_GNU_SOURCE \
	-DKILN_VERSION='"$(VERSION)"' -DKILN_GIT_REV='"$(GIT_REV)"'
# libstdc++'s callback demangler (__gcclibcxx_demangle_callback), which lets
# symbolize/elf_symtab.c bound a demangled name's size, is exported by the
# static archive only: link that archive after the shared library.
# libiberty (a static archive, no pkg-config file): its Rust demangler
# (symbolize/demangle.c).
LIBSTDCXX_A = $(shell $(CC) -print-file-name=libstdc++.a)
LDLIBS     := -liberty -lpthread -lstdc++ $(LIBSTDCXX_A)
ifeq ($(SANITIZE),1)
CFLAGS     += -fsanitize=address,undefined -fno-sanitize-recover=undefined -O1
LDFLAGS    += -fsanitize=address,undefined
endif
# clang only: everything instrumented for libFuzzer's coverage; the fuzz
# targets add -fsanitize=fuzzer (libFuzzer's main) at link time.
ifeq ($(SANITIZE),fuzz)
CFLAGS     += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -O1
LDFLAGS    += -fsanitize=address,undefined
endif
CFLAGS     += $(EXTRA_CFLAGS)
LDFLAGS    += $(EXTRA_LDFLAGS)

BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Iinclude \
	-I$(dir $(VMLINUX_H)) -Wall -Werror -MMD -MP

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS      := $(patsubst bpf/%.bpf.c,$(OUT)/gen/%.skel.h,$(BPF_SRCS))

PROTOS     := $(wildcard user/proto/*.proto)
PROTO_C    := $(patsubst user/proto/%.proto,$(OUT)/gen/%.pb-c.c,$(PROTOS))
PROTO_OBJS := $(patsubst %.c,%.o,$(PROTO_C))

# The HTML page's template, style and script, compiled in as byte arrays.
HTML_ASSETS := user/profile/html/page.html user/profile/html/flame.css \
	user/profile/html/flame.js
ASSET_OBJS := $(OUT)/gen/html_assets.o

USER_SRCS  := $(shell find user -name '*.c' | sort)
USER_OBJS  := $(patsubst %.c,$(OUT)/%.o,$(USER_SRCS))
LIB_OBJS   := $(filter-out $(OUT)/user/main.o,$(USER_OBJS)) $(PROTO_OBJS) $(ASSET_OBJS)

UNIT_SRCS  := $(wildcard tests/unit/*.c)
UNIT_OBJS  := $(patsubst %.c,$(OUT)/%.o,$(UNIT_SRCS))

# Fuzz targets, one a parser: tests/fuzz/<target>.c, seeds in
# tests/fuzz/corpus/<target>/. FUZZ_TARGETS=... picks some.
FUZZ_TARGETS ?= $(patsubst tests/fuzz/%.c,%,$(filter-out tests/fuzz/replay.c,$(wildcard tests/fuzz/*.c)))
FUZZ_SECONDS ?= 60
FUZZ_DEPS  := libclang-rt-dev

# Test workloads: clang (a cross build: its gcc), frame pointers everywhere,
# leaf functions included, no tail calls, so the expected call chains
# survive frame-pointer unwinding.
WL_CC      ?= $(if $(CROSS),$(CC),$(CLANG))
WL_CFLAGS  := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -fno-inline
WL_SRCS    := $(wildcard tests/workloads/*.c)
WORKLOADS  := $(patsubst tests/workloads/%.c,$(OUT)/workloads/%,$(WL_SRCS))

.PHONY: all deps test-deps run test unit e2e e2e-record e2e-agent e2e-attacks e2e-symbols test-view \
	test-docs options-doc \
	test-hygiene test-layers test-browser test-deploy test-receiver test-kernels manifests bench \
	soak format-check test-unwind \
	vmlinux install uninstall clean workloads fuzz fuzz-replay valgrind bench-scale \
	bench-unwind bench-per-sample

all: $(OUT)/kiln

$(OUT)/kiln: $(USER_OBJS) $(PROTO_OBJS) $(ASSET_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)llvm-strip -g $@.tmp -o $@ 2>/dev/null || mv $@.tmp $@
	$(Q)rm -f $@.tmp

$(OUT)/gen/%.skel.h: $(OUT)/bpf/%.bpf.o | $(OUT)/gen
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

$(OUT)/gen/%.pb-c.c $(OUT)/gen/%.pb-c.h: user/proto/%.proto | $(OUT)/gen
	$(call msg,PROTO,$<)
	$(Q)protoc-c --proto_path=user/proto --c_out=$(OUT)/gen $<

# Each may include the header of a .proto it imports: all are made first.
$(OUT)/gen/%.pb-c.o: $(OUT)/gen/%.pb-c.c $(PROTO_C)
	$(call msg,CC,$@)
	$(Q)$(CC) $(filter-out -Werror -Wshadow,$(CFLAGS)) $(PKG_CFLAGS) -c $< -o $@

$(OUT)/gen/html_assets.c: $(HTML_ASSETS) | $(OUT)/gen
	$(call msg,XXD,$@)
	$(Q)cd $(dir $<) && for f in $(notdir $(HTML_ASSETS)); do \
		xxd -i $$f | sed 's/^unsigned/const unsigned/'; done > $(abspath $@)

$(OUT)/gen/html_assets.o: $(OUT)/gen/html_assets.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Every user object may include a skeleton or a generated proto header.
$(OUT)/user/%.o: user/%.c $(SKELS) $(PROTO_C)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

# kiln version prints the commit it was built from: main.o is rebuilt when
# HEAD moves (the stamp, written as the Makefile is read, changes only then).
GIT_REV_STAMP := $(OUT)/gen/git_rev
$(shell mkdir -p $(OUT)/gen && (echo '$(GIT_REV)' | cmp -s - $(GIT_REV_STAMP) || echo '$(GIT_REV)' >$(GIT_REV_STAMP)))
$(OUT)/user/main.o: $(GIT_REV_STAMP)

# A cached unwind table is stale once the builder changes: the cache stores
# this fingerprint of its sources (user/unwind/table_cache.c).
UNWIND_BUILDER_SRCS := VERSION include/kiln/unwind.h user/unwind/unwind_table.c \
	user/unwind/go_frames.c user/core/gopclntab.c user/core/debug_file.c
$(OUT)/user/unwind/table_cache.o: $(UNWIND_BUILDER_SRCS)
$(OUT)/user/unwind/table_cache.o: CFLAGS += -DKILN_UNWIND_BUILDER=0x$(shell cat \
	$(UNWIND_BUILDER_SRCS) | sha256sum | cut -c1-16)ull
# ... and a cached symbol table once its loader changes (elf_symtab.c).
SYMTAB_LOADER_SRCS := VERSION user/symbolize/elf_symtab.c user/symbolize/demangle.c \
	user/symbolize/sym_names.c user/symbolize/sym_reader.c \
	user/core/elf.c user/core/gopclntab.c user/core/debug_file.c
$(OUT)/user/symbolize/elf_symtab.o: $(SYMTAB_LOADER_SRCS)
$(OUT)/user/symbolize/elf_symtab.o: CFLAGS += -DKILN_SYMTAB_LOADER=0x$(shell cat \
	$(SYMTAB_LOADER_SRCS) | sha256sum | cut -c1-16)ull

$(OUT)/tests/%.o: tests/%.c $(SKELS) $(PROTO_C)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

# The tests' own HTTP servers and clients call libmicrohttpd and libcurl
# directly: linked here (kiln's calls still go through its stubs).
$(OUT)/unit_tests: $(UNIT_OBJS) $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(shell $(PKG_CONFIG) --libs $(LAZY_PKGS)) \
		-lcriterion $(LDLIBS)

# The library the fuzz targets and replays link: only what they use.
$(OUT)/libkiln.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# libFuzzer binaries (SANITIZE=fuzz, clang) and corpus replays (any build).
$(OUT)/fuzz/%: $(OUT)/tests/fuzz/%.o $(OUT)/libkiln.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) $(LDLIBS)

$(OUT)/fuzz-replay/%: $(OUT)/tests/fuzz/%.o $(OUT)/tests/fuzz/replay.o $(OUT)/libkiln.a
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(LDLIBS)

$(OUT)/workloads/%: tests/workloads/%.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(WL_CC) $(WL_CFLAGS) -o $@ $< -lpthread

# nofp_*: built as distributions build (gcc -O2, no frame pointers), for
# the unwinding checks.
$(OUT)/workloads/nofp_%: tests/workloads/nofp_%.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls -o $@ $< -lpthread

workloads: $(WORKLOADS)

# The unwind suite's program of known shares and its library: gcc -O2
# without frame pointers, as distributions build (tests/unwind/run.sh).
UNWIND_CC     ?= $(if $(CROSS),$(CC),gcc)
UNWIND_CFLAGS := -O2 -fomit-frame-pointer
$(OUT)/unwind/libtruth.so: tests/unwind/workloads/libtruth.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(UNWIND_CC) $(UNWIND_CFLAGS) -fPIC -shared -o $@ $<

$(OUT)/unwind/truth_shares: tests/unwind/workloads/truth_shares.c $(OUT)/unwind/libtruth.so
	$(call msg,CC,$@)
	$(Q)$(UNWIND_CC) $(UNWIND_CFLAGS) -o $@ $< -L$(OUT)/unwind -ltruth -Wl,-rpath,'$$ORIGIN'

# The swap check's program and its two plugins (one source, two builds).
$(OUT)/unwind/libplugin_a.so $(OUT)/unwind/libplugin_b.so: $(OUT)/unwind/libplugin_%.so: \
		tests/unwind/workloads/libplugin.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(UNWIND_CC) $(UNWIND_CFLAGS) $(if $(filter b,$*),-DPLUGIN_B) -fPIC -shared -o $@ $<

$(OUT)/unwind/swap_plugins: tests/unwind/workloads/swap_plugins.c $(OUT)/unwind/libplugin_a.so \
		$(OUT)/unwind/libplugin_b.so
	$(call msg,CC,$@)
	$(Q)$(UNWIND_CC) $(UNWIND_CFLAGS) -o $@ $< -ldl

# Its Go program of known shares, stripped as Go services ship and not.
GOTRUTH_SRC := tests/unwind/workloads/gotruth/main.go tests/unwind/workloads/gotruth/go.mod
GOTRUTH_GO  := cd tests/unwind/workloads/gotruth && GOCACHE=$(abspath $(OUT))/go-cache GOFLAGS=-mod=mod go build -trimpath
$(OUT)/unwind/gotruth: $(GOTRUTH_SRC)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(GOTRUTH_GO) -ldflags="-s -w" -o $(abspath $@) .

$(OUT)/unwind/gotruth-symbols: $(GOTRUTH_SRC)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(GOTRUTH_GO) -o $(abspath $@) .

$(OUT)/bpf $(OUT)/gen $(OUT)/workloads:
	$(Q)mkdir -p $@

# install_missing PACKAGES: apt-get install of those not installed yet (and,
# crossing, the target's dpkg architecture first).
define install_missing
	$(if $(CROSS),@dpkg --print-foreign-architectures | grep -qx $(ARCH) || \
		{ dpkg --add-architecture $(ARCH) && apt-get update -qq; })
	@missing=$$(for p in $(1); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

# Building and running (make run); DEPS_EXTRA adds packages to either.
deps:
	$(call install_missing,$(BUILD_DEPS) $(CROSS_DEPS) $(DEPS_EXTRA))

# Building and testing (make test, and the bench, fuzz and valgrind targets).
test-deps:
	$(call install_missing,$(BUILD_DEPS) $(TEST_DEPS) $(CROSS_DEPS) $(DEPS_EXTRA))

# The agent with the embedded default: no server, profiles into ./profiles/
# every 10 s until Ctrl-C (RUN_SECONDS=N stops it after N seconds).
run: deps
	$(MAKE) all
	@echo "kiln agent: writing ./profiles/ every 10 s; Ctrl-C stops"
	$(if $(RUN_SECONDS),timeout -s INT $(RUN_SECONDS)) ./$(OUT)/kiln agent --output-dir profiles \
		|| [ $$? = 124 ]

# Every suite runs through tests/suite.sh, which records its counts in
# $(RESULTS)/ for the summary of make test. SANITIZE=1: ASan and
# LeakSanitizer write their reports into $(OUT)/sanitizer/ and suite.sh
# counts any report as a failure of the suite that made it. Criterion runs
# each test in a forked worker and ignores the worker's exit status once the
# test has passed, so a leak report on stderr alone would go unnoticed.
# UBSan errors abort the process (-fno-sanitize-recover; gcc's UBSan ignores
# log_path), which fails the test that ran it.
RESULTS    := $(OUT)/test-results
ifeq ($(SANITIZE),1)
SAN_DIR    := $(abspath $(OUT))/sanitizer
# A quarantine of 64 MiB (ASan's default is 256): the unwind table builder
# frees a lot, and the memory-cgroup attack tests would measure ASan's
# quarantine instead of kiln's bounds.
SAN_ENV    := KILN_SAN_DIR=$(SAN_DIR) \
	ASAN_OPTIONS=log_path=$(SAN_DIR)/asan:detect_leaks=1:quarantine_size_mb=64 \
	UBSAN_OPTIONS=print_stacktrace=1
endif
SUITE       = $(SAN_ENV) tests/suite.sh $(RESULTS)

unit: $(OUT)/unit_tests
	$(SUITE) unit tests/unit/run.sh ./$(OUT)/unit_tests

# Every fuzz target once on each file of its corpus (seeds and the crashes
# found so far), with the build's compiler and sanitizers.
fuzz-replay: $(addprefix $(OUT)/fuzz-replay/,$(FUZZ_TARGETS))
	$(SUITE) fuzz-replay tests/fuzz/run.sh replay $(OUT) $(FUZZ_TARGETS)

# Each fuzz target for FUZZ_SECONDS under libFuzzer + ASan + UBSan (clang,
# in build-fuzz/); new inputs go to build-fuzz/corpus/, crashes to
# build-fuzz/artifacts/.
fuzz:
	$(MAKE) test-deps DEPS_EXTRA="$(FUZZ_DEPS)"
	$(MAKE) SANITIZE=fuzz CC=$(CLANG) OUT=build-fuzz \
		$(addprefix build-fuzz/fuzz/,$(FUZZ_TARGETS))
	tests/fuzz/run.sh fuzz build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

e2e: e2e-record e2e-agent e2e-attacks e2e-symbols

e2e-record: $(OUT)/kiln workloads
	$(SUITE) e2e-record env KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads tests/e2e/run.sh

e2e-agent: $(OUT)/kiln workloads
	$(SUITE) e2e-agent env KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads tests/e2e/agent.sh

# The attacks a container can try on the files kiln reads (tests/e2e/attacks.sh).
e2e-attacks: $(OUT)/kiln workloads
	$(SUITE) e2e-attacks env KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads tests/e2e/attacks.sh

# Names from a debuginfod server (a real one, and a slow one) and of Rust
# programs (tests/e2e/symbols.sh).
e2e-symbols: $(OUT)/kiln
	$(SUITE) e2e-symbols env KILN=$(OUT)/kiln tests/e2e/symbols.sh

# kiln view / kiln diff on real files; no root needed.
test-view: $(OUT)/kiln
	$(SUITE) view env KILN=$(OUT)/kiln tests/view/run.sh

# docs/options.md: every command's option table, from the tables in the
# source (kiln help-markdown).
options-doc: $(OUT)/kiln
	$(OUT)/kiln help-markdown > docs/options.md

# The docs: docs/options.md is what the option tables say, every relative
# link and #anchor of README.md and docs/*.md resolves, README.md stays
# under 12 KiB. No root needed.
test-docs: $(OUT)/kiln
	$(SUITE) docs env KILN=$(OUT)/kiln tests/docs/run.sh

# Tree hygiene: an SPDX line in every source file, the license texts, the
# BPF programs' GPL-compatible license strings, helpers' errno answers
# compared in 32 bits. No build, no root needed.
test-hygiene:
	$(SUITE) hygiene tests/hygiene/check.sh

# clang-format --dry-run -Werror (.clang-format) on the C files changed since
# FORMAT_BASE (default: the merge-base with main; a commit or branch name).
# Not the whole tree yet: the code predates .clang-format and differs from
# it in places, and reformatting every file at once would conflict with
# every branch in flight, so files come into line as they change. Not in
# make test yet for the same reason.
FORMAT_BASE  ?= $(shell git merge-base HEAD main 2>/dev/null)
CLANG_FORMAT ?= clang-format
format-check:
	@[ -n "$(FORMAT_BASE)" ] || { echo "format-check: no merge-base with main; set FORMAT_BASE=<commit>"; exit 1; }
	@files=$$(git diff --name-only --diff-filter=d $(FORMAT_BASE) -- '*.c' '*.h' ':!vmlinux/'); \
	if [ -z "$$files" ]; then echo "format-check: no C file changed since $(FORMAT_BASE)"; \
	else $(CLANG_FORMAT) --dry-run -Werror $$files && \
		echo "format-check: $$(echo $$files | wc -w) changed C file(s) formatted"; fi

# The HTML pages in headless Chromium; screenshots land in $(OUT)/browser.
test-browser: $(OUT)/kiln
	$(SUITE) browser env KILN=$(OUT)/kiln OUT_DIR=$(OUT)/browser tests/browser/run.sh

# issue 14's bars: kiln's user stacks against perf --call-graph dwarf of the
# same run, on Debian's python3.11, ruby, perl, xz, gzip and a program with
# known shares in an FP-less library (tests/unwind/run.sh; root). UNWIND_HZ,
# UNWIND_SECONDS, UNWIND_ONLY, UNWIND_KEEP, UNWIND_SUBJECT=perf (the harness
# judging perf against perf) pass through.
test-unwind: test-deps $(OUT)/kiln $(OUT)/unwind/truth_shares $(OUT)/unwind/gotruth \
		$(OUT)/unwind/gotruth-symbols $(OUT)/unwind/swap_plugins
	$(SUITE) unwind env KILN=$(OUT)/kiln UNWIND_BIN=$(OUT)/unwind tests/unwind/run.sh

# Python frames on real interpreters: Debian's python3.11 and pyenv's
# builds, known shares, threads, a fake interpreter (tests/unwind/python.sh;
# root). PY_SECONDS, PY_HZ pass through.
test-python: test-deps $(OUT)/kiln workloads
	$(SUITE) python env KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads tests/unwind/python.sh

# Ruby frames on Debian's ruby3.1: known shares, lines, threads, a fake
# interpreter, --no-ruby (tests/unwind/ruby.sh; root). RB_SECONDS, RB_HZ
# pass through.
test-ruby: test-deps $(OUT)/kiln workloads
	$(SUITE) ruby env KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads tests/unwind/ruby.sh

# The include graph of user/: arrows only from a stage to an earlier one on
# the path of a sample, no circles (tests/layers/check.py).
test-layers:
	$(SUITE) layers tests/layers/check.py

# The test receiver against its own protocol rules (the e2e tests trust it).
test-receiver:
	$(SUITE) receiver tests/receiver/selftest.sh

# The kernel matrix: tests/kernels/checks.sh on this host's kernel and, under
# qemu, on the Debian kernels of tests/kernels/kernels.list (fetched into
# build/kernels/). KERNELS="host 6.1-cloud-amd64" narrows it on purpose.
# The arm64 lines boot make ARCH=arm64's build (build-arm64/).
ARM64_KERNELS := $(shell awk '$$3 == "arm64" { print $$1 }' tests/kernels/kernels.list)
test-kernels: $(OUT)/kiln workloads
	$(if $(if $(KERNELS),$(filter $(ARM64_KERNELS),$(KERNELS)),$(ARM64_KERNELS)), \
		$(MAKE) deps ARCH=arm64 && $(MAKE) ARCH=arm64 all workloads)
	$(SUITE) kernels env KERNELS="$(KERNELS)" BUILD_amd64=$(abspath $(OUT)) \
		BUILD_arm64=$(abspath build-arm64) CACHE=$(abspath $(OUT))/kernels tests/kernels/run.sh

# Every suite runs, whatever failed before it; then one line per suite and
# the total, and the verdict. With SANITIZE=1 (ASan + UBSan, build-asan/):
# the unit tests, the corpus replays, the record and agent end-to-end tests
# and the view tests (the kernel matrix runs once, in the plain build).
# The suites are named after their targets, less "test-".
TEST_TARGETS := test-layers test-hygiene test-docs unit fuzz-replay e2e-record e2e-agent \
	e2e-attacks e2e-symbols test-view
ifneq ($(SANITIZE),1)
# (the unwind suite compares shares within 2 points: a sanitized kiln's
# slower start would judge ASan, not the walker)
TEST_TARGETS += test-browser test-deploy test-receiver test-kernels test-unwind test-python \
	test-ruby
endif
test: test-deps
	$(MAKE) all $(OUT)/unit_tests workloads
	@rm -rf $(RESULTS)
	-$(MAKE) -k $(TEST_TARGETS)
	@tests/summary.sh $(RESULTS) $(patsubst test-%,%,$(TEST_TARGETS))

# The agent for SOAK_SECONDS (default 1 h) under process churn, a token
# rotation and a receiver outage: flat RSS, no profile lost, no error logged
# but the outage's (tests/soak/check.py judges).
soak: all workloads
	KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads SOAK_SECONDS=$(or $(SOAK_SECONDS),3600) \
		tests/soak/run.sh

# The CPU cost of exporting one interval (encode, compress, pack), in-process.
$(OUT)/bench/export_cost: tests/bench/export_cost.c tests/bench/cpu_ms.h $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(PKG_LIBS) $(LDLIBS)

# The CPU cost of one drain's naming and aggregating (no BPF), in-process;
# under valgrind --tool=callgrind its instruction counts compare builds.
$(OUT)/bench/drain_cost: tests/bench/drain_cost.c tests/bench/cpu_ms.h $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(PKG_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(PKG_LIBS) $(LDLIBS)

bench:
	$(MAKE) test-deps DEPS_EXTRA="$(BENCH_DEPS)"
	$(MAKE) all workloads $(OUT)/bench/export_cost $(OUT)/bench/drain_cost
	KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads tests/bench/run.sh
	$(MAKE) bench-unwind
	$(MAKE) bench-per-sample
	@echo "export cost of one interval (10 000 unique stacks, 20 label sets, depth 24):"
	@$(OUT)/bench/export_cost 10000 20 24
	@echo "drain cost of one interval's naming (2 000 distinct user stacks of 16 frames, two processes):"
	@$(OUT)/bench/drain_cost 2000 16

# kiln record of the whole host for VALGRIND_SECONDS (30) under valgrind
# memcheck: no error and "definitely lost: 0 bytes", or the target fails.
valgrind:
	$(MAKE) test-deps DEPS_EXTRA="valgrind"
	$(MAKE) all
	KILN=$(OUT)/kiln OUT_DIR=$(OUT)/valgrind VALGRIND_SECONDS=$(or $(VALGRIND_SECONDS),30) \
		tests/valgrind/run.sh

# Unwind tables: rows, bytes, build CPU and peak RSS for libLLVM, clang,
# chromium, libstdc++, libruby, python3.11, libc (rotated rounds, median), and
# the rows every running process needs, as is and with those programs running;
# tests/bench/results/unwind-*.json.
bench-unwind: $(OUT)/kiln
	KILN=$(OUT)/kiln tests/bench/unwind_cost.py

# kiln record (tables), kiln record --unwind-memory 0 and three bpftrace
# programs (a counter, ustack, kstack + ustack + comm) at once, 8 rounds of
# 10 s: BPF ns a sample of each, medians; tests/bench/results/per-sample-*.json.
bench-per-sample: all workloads
	WORKLOADS=$(OUT)/workloads tests/bench/per_sample.sh $(OUT)/kiln 8 10 \
		tests/bench/results/per-sample-$$(date +%Y-%m-%d-%H%M%S).json

# Cost growth: kiln record of N call chains over M processes
# (tests/workloads/scale_gen), a grid of N and M; tests/bench/results/scale-*.json.
bench-scale: all workloads
	KILN=$(OUT)/kiln WORKLOADS=$(OUT)/workloads tests/bench/scale.sh

# Only from a kernel of the target's architecture: this host's BTF never
# overwrites another architecture's header.
vmlinux:
ifneq ($(CROSS),)
	@echo "make vmlinux: this host is $(HOST_ARCH), so its BTF cannot make $(VMLINUX_H) (docs/building.md: make vmlinux)"; exit 1
else
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX_H)
endif

# The chart renderer the deploy tests and `make manifests` use: Go's
# text/template + sprig from Debian, GOPATH mode (helm is not packaged).
$(OUT)/helmrender: tests/deploy/helmrender/main.go
	$(call msg,GO,$@)
	$(Q)GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$(abspath $(OUT))/go-cache \
		go build -o $@ ./tests/deploy/helmrender

# Offline: chart renders, schema, yamllint, the committed manifest, the
# image's libraries, the unit, make install.
test-deploy: $(OUT)/kiln $(OUT)/helmrender
	$(SUITE) deploy env KILN=$(OUT)/kiln HELMRENDER=$(OUT)/helmrender tests/deploy/run.sh

# deploy/kubernetes/kiln.yaml: the chart with its default values.
MANIFEST   ?= deploy/kubernetes/kiln.yaml
manifests: $(OUT)/helmrender
	$(Q){ echo "# kiln for kubectl: helm/kiln rendered with its default values (release kiln,"; \
	  echo "# namespace kiln, no test hook). Generated by make manifests: do not edit."; \
	  echo "# Set --server to your Pyroscope server, then:"; \
	  echo "#   kubectl create namespace kiln && kubectl apply -f deploy/kubernetes/kiln.yaml"; \
	  $(OUT)/helmrender -name kiln -namespace kiln -skip-tests helm/kiln; } > $(MANIFEST)

$(OUT)/kiln.8: $(OUT)/kiln deploy/man/kiln.h2m
	$(call msg,MAN,$@)
	$(Q)help2man --no-info --section 8 --name "system-wide eBPF CPU profiler agent" \
		--help-option "agent --help" --include deploy/man/kiln.h2m --output $@ $(OUT)/kiln

# The unit names the binary under PREFIX; an edited /etc/default/kiln is
# never overwritten, and uninstall keeps it.
install: $(OUT)/kiln $(OUT)/kiln.8
	install -D -m 0755 $(OUT)/kiln $(DESTDIR)$(PREFIX)/bin/kiln
	install -D -m 0644 $(OUT)/kiln.8 $(DESTDIR)$(MANDIR)/man8/kiln.8
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|/usr/local/bin/kiln|$(PREFIX)/bin/kiln|' deploy/systemd/kiln.service \
		> $(DESTDIR)$(UNITDIR)/kiln.service
	[ -e $(DESTDIR)/etc/default/kiln ] || \
		install -D -m 0644 deploy/systemd/kiln.default $(DESTDIR)/etc/default/kiln

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/kiln $(DESTDIR)$(MANDIR)/man8/kiln.8 \
		$(DESTDIR)$(UNITDIR)/kiln.service
	@if cmp -s deploy/systemd/kiln.default $(DESTDIR)/etc/default/kiln; then \
		rm -f $(DESTDIR)/etc/default/kiln; \
	elif [ -e $(DESTDIR)/etc/default/kiln ]; then \
		echo "kept $(DESTDIR)/etc/default/kiln: it was edited"; fi

clean:
	rm -rf $(OUT)

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
