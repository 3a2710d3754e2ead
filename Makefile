# The README's two commands are `make run` and `make test`; CI runs `make test` via .ci/run.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
DATA_DIR ?= ./data
JOBS ?= $(shell nproc)
# ccache hits across clones of the repository (CI builds a fresh clone each time).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true

.PHONY: all deps configure build run test bench clean format fuzz fuzz-long

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
	rm -rf $(BUILD_DIR)

format:
	find src apps tests bench examples -name '*.h' -o -name '*.cc' | xargs clang-format -i
