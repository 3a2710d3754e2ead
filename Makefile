# The README's two commands are `make run` and `make test`; CI runs `make test` via .ci/run.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
DATA_DIR ?= ./data
JOBS ?= $(shell nproc)
# ccache hits across clones of the repository (CI builds a fresh clone each time).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true

.PHONY: all deps configure build run test test-asan test-tsan bench clean format fuzz fuzz-long

all: build

deps:
	bash scripts/install-deps

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

# Release build of the CLI (build/nereus) and every test binary.
build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/nereus standalone --data-dir $(DATA_DIR)

# Every test; ctest prints its summary line ("100% tests passed, 0 tests failed out of N").
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# The unit tests (tests/unit/<module> -> <module>_unit_tests; ctest names their cases
# "<module>_unit_tests.<Suite>.<Test>") under sanitizers, each in its own build directory.
# -O1 -g1 keeps asserts on and gives line numbers in reports. -Werror stays in the Release build:
# GCC documents false -Wmaybe-uninitialized / -Wstringop-* warnings under -fsanitize.
UNIT_TESTS := $(addsuffix _unit_tests,$(notdir $(wildcard tests/unit/*)))
# Unit-test binaries under tests/unit/ with another name (an in-process broker per test).
UNIT_TESTS += events_delivery_tests
SAN_CMAKE := -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
             -DNEREUS_WERROR=OFF
SAN_CTEST := ctest -R '(_unit_tests|events_delivery_tests)\.' --output-on-failure -j $(JOBS) --timeout 900

# ASan + UBSan (runs in CI after `make test`).
test-asan: deps
	cmake -S . -B build-asan $(SAN_CMAKE) -DNEREUS_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS) --target $(UNIT_TESTS)
	cd build-asan && \
	ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/lsan.supp \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	$(SAN_CTEST)

# TSan (not in CI). tsan.supp: only uninstrumented Debian libraries, a reason per entry.
# TSAN_MODULES="storage base" narrows it to those tests/unit/<module> (default: all of them).
TSAN_MODULES ?= $(notdir $(wildcard tests/unit/*))
TSAN_EMPTY :=
TSAN_REGEX := ^($(subst $(TSAN_EMPTY) $(TSAN_EMPTY),|,$(strip $(TSAN_MODULES))))_unit_tests\.
test-tsan: deps
	cmake -S . -B build-tsan $(SAN_CMAKE) -DNEREUS_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target $(addsuffix _unit_tests,$(TSAN_MODULES))
	cd build-tsan && \
	TSAN_OPTIONS="suppressions=$(CURDIR)/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
	ctest -R '$(TSAN_REGEX)' --output-on-failure -j $(JOBS) --timeout 900

# The storage benchmark (not part of `make test`: speed is measured, not asserted).
bench: build
	$(BUILD_DIR)/nereus storage bench --data-dir $(BUILD_DIR)/bench-data

# libFuzzer targets (clang 14, build-fuzz/; see fuzz/README.md). Not part of `make test`.
# fuzz: each target 60 s (CI); fuzz-long: each target 10M executions. Exit 1 on any finding.
fuzz: deps
	bash scripts/run-fuzz --time 60

fuzz-long: deps
	bash scripts/run-fuzz --runs 10000000

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan build-fuzz build-prod

format:
	git ls-files '*.h' '*.cc' '*.cpp' | xargs clang-format -i

# Crash and power-loss campaigns, long modes (not in CI; `make test` runs the short ones:
# ctest crash.broker_campaign = 20 kills, LedgerPowerLoss = 24 seeds). See doc/testing.md.
.PHONY: crash-long power-loss-long
crash-long: build
	tests/crash/run --kills 1000 --build-dir $(BUILD_DIR)

power-loss-long: build
	NEREUS_LEDGER_POWER_LOSS_SEEDS=200 $(BUILD_DIR)/tests/unit/ledger/ledger_unit_tests \
	    --gtest_filter='LedgerPowerLoss.*'
	NEREUS_POWER_LOSS_SEEDS=400 $(BUILD_DIR)/tests/unit/storage/storage_unit_tests \
	    --gtest_filter='PowerLoss.*'
