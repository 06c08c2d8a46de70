# SPDX-License-Identifier: GPL-2.0-only
# netstack_exporter: `make` builds, `make run` runs on built-in defaults, `make test` tests.
# V=1 for verbose output.

PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
DESTDIR ?=
BUILD ?= build
CLANG ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c
LLVM_STRIP ?= llvm-strip
# The kernel's name for the compiler's target (bpf_tracing.h): x86_64 -> x86, aarch64 -> arm64.
ARCH ?= $(shell $(CC) -dumpmachine | sed -E 's/-.*//; s/^(x86_64|i.86)$$/x86/; \
	s/^arm.*/arm/; s/^aarch64.*/arm64/; s/^(riscv|loongarch|mips)64.*/\1/; \
	s/^(powerpc|ppc)64.*/powerpc/; s/^s390x$$/s390/')
VERSION ?= 0.1.0
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-7s %s\n' "$(1)" "$(2)";
endif

CFLAGS ?= -O2 -g
# SANITIZE=1: AddressSanitizer + UndefinedBehaviorSanitizer; FUZZ=1 (with CC=clang): objects
# for libFuzzer harnesses. make test builds both variants under $(BUILD)/asan, $(BUILD)/fuzz.
ifeq ($(SANITIZE),1)
CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=address,undefined
endif
# TSAN=1: ThreadSanitizer; make tsan builds it under $(BUILD)/tsan.
ifeq ($(TSAN),1)
CFLAGS += -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS += -fsanitize=thread
endif
ifeq ($(FUZZ),1)
CFLAGS += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
endif
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -MMD -MP -I$(BUILD) -Ibpf -Iexporter -Imetrics
LDLIBS += -pthread -lbpf -lelf -lz -lmicrohttpd -linih -ljson-c -lgnutls -lcrypt -lseccomp \
	  -lprotobuf-c -lm
# -mcpu=v3: atomic fetch-and-add (Linux 5.12+; count_drop_noreason, the program for kernels
# before 5.17, uses none: only plain atomic adds, which every kernel has).
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -Wextra -Werror \
	      -Wno-unused-parameter -Ibpf -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
# The protobuf exposition's C, generated from our .proto by protoc-c (never committed).
PB_GEN := $(BUILD)/metrics/prometheus.pb-c.c $(BUILD)/metrics/prometheus.pb-c.h
METRICS_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard metrics/*.c)) \
	$(BUILD)/metrics/prometheus.pb-c.o
EXPORTER_SRCS := $(wildcard exporter/*.c exporter/*/*.c exporter/*/*/*.c)
EXPORTER_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(EXPORTER_SRCS))
LIB_OBJS := $(METRICS_OBJS) $(filter-out $(BUILD)/exporter/main.o,$(EXPORTER_OBJS))
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
FUZZERS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
# Test tools' BPF programs (tests/tools/*.bpf.c) build as the bench's do.
TOOL_BPF_SRCS := $(wildcard tests/tools/*.bpf.c)
BENCH_SKELS := $(patsubst tests/bench/%.bpf.c,$(BUILD)/%.skel.h,$(wildcard tests/bench/*.bpf.c)) \
	$(patsubst tests/tools/%.bpf.c,$(BUILD)/%.skel.h,$(TOOL_BPF_SRCS))
TOOLS := $(patsubst tests/tools/%.c,$(BUILD)/tests/%, \
	$(filter-out $(TOOL_BPF_SRCS),$(wildcard tests/tools/*.c)))

.PHONY: FORCE all deps test-deps bench-deps run test test-build-asan test-build-fuzz \
	check test-kernels tsan unit tools fuzzers lint \
	bench bench-quick image \
	install uninstall \
	vmlinux format clean
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BUILD)/netstack_exporter

deps:
	$(Q)scripts/deps.sh build
test-deps:
	$(Q)scripts/deps.sh test

$(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/vmlinux.h $(wildcard bpf/*.h) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.bpf.o: tests/bench/%.bpf.c bpf/vmlinux.h | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.bpf.o: tests/tools/%.bpf.c bpf/vmlinux.h $(wildcard bpf/*.h) | $(BUILD)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The skeleton embeds the object: without its DWARF (BTF stays), which would otherwise be most
# of the exporter's binary and of its resident memory.
$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(LLVM_STRIP) -g $< -o $(BUILD)/$*.bpf.stripped.o
	$(Q)$(BPFTOOL) gen skeleton $(BUILD)/$*.bpf.stripped.o name $*_bpf > $@

$(BUILD)/%.o: %.c | $(BUILD)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# User objects include their collector's skeleton (and version.h).
$(EXPORTER_OBJS): $(SKELS) $(BUILD)/version.h

$(PB_GEN) &: metrics/prometheus.proto | $(BUILD)
	$(call msg,PROTOC,$(BUILD)/metrics/prometheus.pb-c.c)
	$(Q)mkdir -p $(BUILD)/metrics
	$(Q)$(PROTOC_C) --c_out=$(BUILD) $<
$(BUILD)/metrics/prometheus.pb-c.o: $(BUILD)/metrics/prometheus.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/metrics/proto.o $(UNIT_TESTS) $(FUZZERS): $(BUILD)/metrics/prometheus.pb-c.h

# Rewritten only when the version or commit changes, so every object agrees on them.
$(BUILD)/version.h: FORCE | $(BUILD)
	$(Q)printf '#define NETSTACK_VERSION "%s"\n#define NETSTACK_COMMIT "%s"\n' \
		'$(VERSION)' '$(COMMIT)' >$@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
FORCE:

$(BUILD)/netstack_exporter: $(BUILD)/exporter/main.o $(LIB_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) $(LDLIBS) -o $@

# test_podfold sees the native buckets the fold renders through a wrapper of its own.
$(BUILD)/tests/test_podfold: LDLIBS += -Wl,--wrap=expo_histogram_native
$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(filter %.c %.o,$^) $(LDLIBS) -o $@

# The test tools drive the tests and are not under test: never built with ThreadSanitizer
# (fake_apiserver _exits with its watch threads running, on purpose).
# tests/tools/nfqdelay.c: libnetfilter-queue (scripts/deps.sh, test packages).
$(BUILD)/tests/nfqdelay: LDLIBS += -lnetfilter_queue
# hist_check compares the kernel's histogram cells with the exporter's; it and rtt_native link
# exporter objects, so they build with the same sanitizer flags.
$(BUILD)/tests/hist_check: tests/tools/hist_check.c $(BUILD)/hist_cell.skel.h \
		$(BUILD)/exporter/collectors/histogram.o $(METRICS_OBJS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -o $@

# rtt_native runs the rtt collector in-process to check what text does not show (native buckets).
$(BUILD)/tests/rtt_native: tests/tools/rtt_native.c $(LIB_OBJS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/tools/%.c $(BENCH_SKELS) | $(BUILD)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(filter-out -fsanitize=thread,$(CFLAGS)) $< $(LDLIBS) -o $@
# The protobuf decoder builds the generated C itself, with its flags (not the library's).
$(BUILD)/tests/pbdecode: tests/tools/pbdecode.c $(PB_GEN)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(filter-out -fsanitize=thread,$(CFLAGS)) $< $(BUILD)/metrics/prometheus.pb-c.c \
		$(LDLIBS) -o $@
# Tools of the exposition library itself, linked as built: its cost per series (docs/cost.md),
# a fixed protobuf exposition for a real Prometheus (tests/integration/protobuf.sh).
$(BUILD)/tests/expobench $(BUILD)/tests/pbsample: $(BUILD)/tests/%: tests/tools/%.c $(METRICS_OBJS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -o $@

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_OBJS)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer,address,undefined $(filter %.c %.o,$^) $(LDLIBS) -o $@

$(BUILD):
	$(Q)mkdir -p $@

run: deps all
	$(BUILD)/netstack_exporter

unit: $(UNIT_TESTS)
tools: $(TOOLS)
fuzzers: $(FUZZERS)

# The suite (tests/run.sh): the three builds side by side (plain, ASan+UBSan under
# $(BUILD)/asan, the fuzzers' under $(BUILD)/fuzz) next to the image's build, then lint, the
# unit and integration tests of both builds, the pod, the fuzzers for FUZZ_SECONDS each and the
# kernel matrix, as parallel jobs; it ends with a time table. TEST_JOBS: integration scripts
# at once.
JOBS ?= $(shell nproc)
test:
	$(Q)t0=$$(date +%s.%N) && $(MAKE) --no-print-directory test-deps && mkdir -p $(BUILD) && \
		echo "deps $$t0 $$(date +%s.%N)" >$(BUILD)/test-times && \
		LINT=1 TEST_T0=$$t0 \
		TEST_TIMES=$(BUILD)/test-times FUZZ_BUILD=$(BUILD)/fuzz/fuzz KERNELS_BUILD=$(BUILD) \
		BUILD_CMD="$(MAKE) --no-print-directory -j$(JOBS) all unit tools" \
		BUILD_CMD2="$(MAKE) --no-print-directory -j$(JOBS) test-build-asan" \
		FUZZ_BUILD_CMD="$(MAKE) --no-print-directory -j$(JOBS) test-build-fuzz" \
		tests/run.sh $(BUILD) $(BUILD)/asan
test-build-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 all unit tools
test-build-fuzz:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz CC=clang FUZZ=1 fuzzers

# The edit-compile-test loop: the plain build, its unit tests and the integration scripts a
# change touches (tests/run.sh --changed; T="drops rtt" names them).
check: test-deps
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) all unit tools
	$(Q)tests/run.sh --changed $(BUILD)

# The kernel matrix (tests/kernels/run.sh): Debian's 6.1, 6.12 and 5.10 kernels (x86_64) and 6.1
# (arm64, cross-built into $(BUILD)/arm64) booted under QEMU, the exporter checked in each as
# root and as shipped. KERNELS="6.1-amd64 ..." picks some.
test-kernels: test-deps all $(UNIT_TESTS) $(TOOLS)
	$(Q)BUILD=$(BUILD) tests/kernels/run.sh

# ThreadSanitizer over the tests where threads meet (tests/tsan.sh): 3 to 7 minutes here, so
# not part of make test.
tsan: test-deps
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan TSAN=1 all tools
	$(Q)tests/tsan.sh $(BUILD)/tsan

LINT_SRCS := $(EXPORTER_SRCS) $(wildcard metrics/*.c) \
	$(filter-out $(TOOL_BPF_SRCS),$(wildcard tests/tools/*.c))
FORMAT_SRCS := $(filter-out bpf/vmlinux.h,$(wildcard bpf/*.[ch])) $(EXPORTER_SRCS) \
	$(wildcard exporter/*.h exporter/*/*.h exporter/*/*/*.h metrics/*.[ch] tests/unit/*.[ch] \
	tests/tools/*.c tests/fuzz/*.c tests/bench/*.bpf.c)
lint: $(SKELS) $(BENCH_SKELS) $(BUILD)/version.h $(BUILD)/netstack_exporter
	$(call msg,FORMAT,$(words $(FORMAT_SRCS)) files)
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS) || \
		{ echo "lint: clang-format drift above: make format fixes it"; exit 1; }
	$(call msg,CPPCHECK,$(words $(LINT_SRCS)) files)
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr --std=c11 -Iexporter -Imetrics -Ibpf --max-configs=1 \
		--suppress=missingIncludeSystem --suppress=missingInclude $(LINT_SRCS)
	$(call msg,TIDY,$(words $(LINT_SRCS)) files)
	@# Findings inside generated skeletons ($(BUILD)/) are libbpf's code, not ours.
	@# One clang-tidy per core, on a few files each; xargs fails if any of them does.
	$(Q)printf '%s\n' $(LINT_SRCS) | xargs -P $(JOBS) -n 4 sh -c 'clang-tidy --quiet "$$@" -- \
		-isystem $(BUILD) $(filter-out -MMD -MP -I$(BUILD),$(CFLAGS)) 2>/dev/null | \
		awk "/: (warning|error): / { show = \$$0 !~ \"^$(BUILD)/\"; bad += show } \
			show { print } END { exit bad > 0 }"' tidy
	$(call msg,LINKS,README.md docs/ exporter/)
	$(Q)scripts/check_links.py README.md $(wildcard docs/*.md docs/*/*.md exporter/README.md \
		exporter/*/README.md)
	$(call msg,MODULES,$(BUILD))
	$(Q)python3 scripts/modcycles.py $(BUILD)

# The peers compared against (bpftrace, node_exporter, wrk) are optional: a missing one is
# reported "not installed" in the table and the bench goes on.
bench-deps: test-deps
	$(Q)scripts/deps.sh bench || echo "bench: some peers could not be installed;" \
		"the table reports them as not installed"
bench: bench-deps all $(TOOLS)
	$(Q)BUILD=$(BUILD) tests/bench/run.sh full
bench-quick: bench-deps all $(TOOLS)
	$(Q)BUILD=$(BUILD) tests/bench/run.sh quick

# The container image (deploy/docker/Dockerfile) with podman, or docker if there is no podman
# (ENGINE=...). PLATFORM=linux/arm64 builds for arm64 on any machine: the build stage
# cross-compiles, nothing runs emulated. IMAGE names it; SOURCE is its source label.
ENGINE ?= $(if $(shell command -v podman),podman,docker)
IMAGE ?= netstack-exporter:$(VERSION)
PLATFORM ?=
SOURCE ?= $(shell git remote get-url origin 2>/dev/null)
# podman (4.3) neither sets BUILDPLATFORM nor reads Dockerfile.dockerignore by itself.
PODMAN_ARGS = --ignorefile deploy/docker/Dockerfile.dockerignore --build-arg \
	BUILDPLATFORM=linux/$(shell uname -m | sed 's/^x86_64$$/amd64/; s/^aarch64$$/arm64/')
image:
	$(call msg,IMAGE,$(IMAGE) $(PLATFORM))
	$(Q)$(ENGINE) build -f deploy/docker/Dockerfile $(if $(PLATFORM),--platform $(PLATFORM)) \
		$(if $(filter podman,$(notdir $(ENGINE))),$(PODMAN_ARGS)) \
		--build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
		$(if $(SOURCE),--build-arg SOURCE=$(SOURCE)) -t $(IMAGE) .

install: all
	install -D -m 0755 $(BUILD)/netstack_exporter $(DESTDIR)$(PREFIX)/bin/netstack_exporter
	@# Never overwrite a configuration the operator may have edited.
	[ -e $(DESTDIR)$(SYSCONFDIR)/netstack_exporter.ini ] || \
		install -D -m 0644 conf/netstack_exporter.ini $(DESTDIR)$(SYSCONFDIR)/netstack_exporter.ini
	@# docs/ beside the README, so that its relative links resolve in the installed copy too.
	for f in README.md $(wildcard docs/*.md docs/*/*.md); do \
		install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/doc/netstack_exporter/$$f || exit 1; \
	done
	install -D -m 0644 deploy/systemd/netstack_exporter.service $(DESTDIR)$(UNITDIR)/netstack_exporter.service
	sed -i 's|@PREFIX@|$(PREFIX)|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		$(DESTDIR)$(UNITDIR)/netstack_exporter.service
	install -D -m 0644 deploy/systemd/netstack_exporter.service.d/syscall-filter.conf \
		$(DESTDIR)$(UNITDIR)/netstack_exporter.service.d/syscall-filter.conf

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/netstack_exporter $(DESTDIR)$(UNITDIR)/netstack_exporter.service
	rm -rf $(DESTDIR)$(UNITDIR)/netstack_exporter.service.d
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/netstack_exporter

# Regenerate the committed BTF header from the running kernel.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > bpf/vmlinux.h

format:
	clang-format -i $(FORMAT_SRCS)

clean:
	rm -rf $(BUILD)

# $(BUILD)/container holds the container tests' images (tests/container/lib.sh), not ours.
-include $(shell find $(BUILD) -path $(BUILD)/container -prune -o -name '*.d' -type f -print \
	2>/dev/null)
