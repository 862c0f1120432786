# Makefile - thin wrapper over Meson for a fresh Debian machine.
#   make run    install what is missing, build, run the main job
#   make tune   tune CLBlast's GEMMs for the device (clgrad-tune, at most about
#               3 minutes); `make run` uses the tuning from then on
#   make test   install what is missing, build, run the tests but the slow ones
#   make test-slow  the minute-long tests make test leaves out (CI runs both)
#   make test-rusticl  the device suites again, on Mesa's rusticl (llvmpipe)
#   make asan   the tests again under AddressSanitizer + UBSan
#   make clean  remove the build directories
# Installing packages needs root or sudo (scripts/install-deps.sh).

BUILD      ?= build
ASAN_BUILD ?= build-asan
MESON_OPTS ?=

# The main job: list the devices, then train an MLP on Fashion-MNIST with
# gradient accumulation (micro-batch 32, 4 micro-steps per update).
RUN_ARGS ?=
RUN_CMD ?= $(BUILD)/tools/clgrad-info && $(BUILD)/tools/train/clgrad-train $(RUN_ARGS)
# clgrad-tune's flags, e.g. TUNE_ARGS="--budget 60 --device 1"
TUNE_ARGS ?=

# On a machine with OpenCL no device test may skip: without a device they
# fail instead of exiting 77 (SKIP).
TEST_ENV = CLGRAD_REQUIRE_DEVICE=1

# intercept_tls_get_addr=0: GCC 12's sanitizer runtime (up to GCC 13 and
# LLVM 16) takes a dynamic TLS block whose start lies 16 bytes into a page
# for one with glibc 2.19's header and reads the two words before it as an
# address and a size; since glibc 2.25 there is no such header, and where
# malloc puts the block there by chance LeakSanitizer's tracer dies at exit
# ("Tracer caught signal 11"), no leak check run, on every try of that
# layout (gpt_dist's 2-rank run failed twice in a row, stop 40's CI). Off,
# the interceptor reads nothing; the threads' static TLS is still scanned.
SANITIZER_ENV = \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:intercept_tls_get_addr=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all deps build run tune test test-slow test-rusticl asan clean

all: build

deps:
	sh scripts/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	meson compile -C $(BUILD)

run: build
	$(RUN_CMD)

tune: build
	$(BUILD)/tools/clgrad-tune $(TUNE_ARGS)

# make test leaves out suite 'slow' (the cases of a minute or more: clgrad-tune,
# the contrastive kernels' 17 builds, the GPT end to end, Oclgrind), which
# make test-slow runs; CI runs both.
test: build
	$(TEST_ENV) meson test -C $(BUILD) --print-errorlogs --no-suite slow

test-slow: build
	$(TEST_ENV) meson test -C $(BUILD) --print-errorlogs --suite slow --logbase testlog-slow

# The device suites of $(BUILD) on rusticl alone (PoCL hidden); it prints the
# device first (scripts/test-rusticl.sh).
test-rusticl: build
	$(TEST_ENV) sh scripts/test-rusticl.sh $(BUILD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) $(MESON_OPTS) -Dbuildtype=debug \
		-Db_sanitize=address,undefined -Db_lundef=false

# The sanitizer run sees PoCL alone (OCL_ICD_VENDORS: a directory with only its
# .icd). The ICD loader loads every installed driver, even one without devices,
# and Mesa's rusticl and Clover (mesa-opencl-icd, for test-rusticl) leave
# allocations at exit, some from libraries already unloaded, which LeakSanitizer
# reports and tests/lsan.supp (PoCL's stack only) cannot name.
ASAN_ICD ?= /etc/OpenCL/vendors/pocl.icd
# Each test runs through scripts/lsan-retry.sh, which runs a test again only
# when LeakSanitizer's own tracer crashed at exit (then no leak check ran).

# The kernels are the same in both builds, so the sanitizer run starts from
# the kernel caches `make test` left (clgrad's binaries and PoCL's, keyed by
# source, options and device; copied, never overwriting): on an empty cache
# the run spends its time compiling programs inside PoCL's LLVM, slower
# still under ASan's allocator, and that is not host code of ours. The miss
# path stays checked: test_program_cache builds into caches of its own.
asan: deps $(ASAN_BUILD)/build.ninja
	meson compile -C $(ASAN_BUILD)
	for c in kernel-cache pocl-cache; do \
		if [ -d $(BUILD)/tests/$$c ]; then \
			mkdir -p $(ASAN_BUILD)/tests/$$c && cp -Rn $(BUILD)/tests/$$c/. $(ASAN_BUILD)/tests/$$c/; \
		fi; \
	done
	rm -rf $(ASAN_BUILD)/icd-vendors
	mkdir -p $(ASAN_BUILD)/icd-vendors
	cp $(ASAN_ICD) $(ASAN_BUILD)/icd-vendors/
	OCL_ICD_VENDORS=$(CURDIR)/$(ASAN_BUILD)/icd-vendors $(TEST_ENV) $(SANITIZER_ENV) \
		meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 4 \
		--wrapper $(CURDIR)/scripts/lsan-retry.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
