# Magnetar: the two contract commands are `make run` and `make test`.
# Everything else here is a building block of those two, or an opt-in long run.

JOBS        ?= $(shell nproc)
BUILD_DIR   ?= build/release
ASAN_DIR    ?= build/asan
FUZZ_SECONDS ?= 20
CTEST_FLAGS ?= --output-on-failure -j $(JOBS) --timeout 600
export CCACHE_DIR ?= $(HOME)/.cache/ccache
# Paths under the checkout are hashed relative to it: a clone elsewhere (a CI checkout) hits the
# cache filled by another.
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: all deps configure build build-asan test test-release test-asan fuzz run bench bench-proxy bench-peers chaos clean format

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release

# Line tables only: sanitizer reports name file:line, and the build is not slowed by full
# debug information for every template instantiation. No process-level integration tests:
# test-asan does not run them.
$(ASAN_DIR)/build.ninja: | deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
	  -DMAGNETAR_SANITIZE=ON -DMAGNETAR_FUZZ=ON -DMAGNETAR_BENCH=OFF \
	  -DMAGNETAR_INTEGRATION_TESTS=OFF

configure: $(BUILD_DIR)/build.ninja

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

build-asan: deps $(ASAN_DIR)/build.ninja
	cmake --build $(ASAN_DIR) -j $(JOBS)

# Every test of the release build (unit and integration).
test-release: build
	cd $(BUILD_DIR) && ctest $(CTEST_FLAGS)

# Unit tests, and the integration tests labelled `integration-sanitized`, again under AddressSanitizer +
# UndefinedBehaviorSanitizer, then the bounded fuzz runs of every decoder.
test-asan: build-asan
	cd $(ASAN_DIR) && ctest $(CTEST_FLAGS) -L '^(unit|integration-sanitized)$$'
	@$(MAKE) --no-print-directory fuzz

fuzz: build-asan
	@bash scripts/run-fuzzers.sh $(ASAN_DIR) $(FUZZ_SECONDS)

test: test-release test-asan
	@echo "make test: all suites passed"

run: build
	$(BUILD_DIR)/bin/magnetar standalone

bench: build
	@bash scripts/run-benchmarks.sh $(BUILD_DIR)

# Throughput and latency through `magnetar proxy` beside direct (docs/performance.md).
bench-proxy: build
	@bash scripts/proxy-bench.sh $(BUILD_DIR) 15

# This build beside NATS JetStream, Redis Streams and RabbitMQ: ../shared/peers/run-all.sh
# (its README), driven by the official Pulsar C++ client in PULSAR_CPP_HOME (built outside the
# repository; the script says how when it is missing). PEERS_ARGS go to run-all.sh, e.g.
# PEERS_ARGS='--no-install --peers "redis pulsar"'. docs/performance.md keeps the tables.
PEERS_ARGS ?=
bench-peers: build
	@bash scripts/bench-peers.sh $(BUILD_DIR) $(PEERS_ARGS)

# The whole chaos suite (docs/operations.md, "Chaos suite"): a local cluster of real processes
# under load, every fault in turn, a table of what was acknowledged, lost and duplicated.
# `make test` runs its --quick form.
chaos: build
	$(BUILD_DIR)/bin/magnetar chaos

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf build
