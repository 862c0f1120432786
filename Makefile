# Makefile - thin wrapper over Meson for a fresh Debian machine.
#   make run    install what is missing, build, run the main job
#   make test   install what is missing, build, run every test
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

SANITIZER_ENV = \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all deps build run test asan clean

all: build

deps:
	sh scripts/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	meson compile -C $(BUILD)

run: build
	$(RUN_CMD)

test: build
	meson test -C $(BUILD) --print-errorlogs

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) $(MESON_OPTS) -Dbuildtype=debug \
		-Db_sanitize=address,undefined -Db_lundef=false

asan: deps $(ASAN_BUILD)/build.ninja
	meson compile -C $(ASAN_BUILD)
	$(SANITIZER_ENV) meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 4

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
