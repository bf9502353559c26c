# Entry points. Each target installs what it needs, configures and builds before it runs.
#   make demo       the main job on its built-in default: trains a small model on generated addition
#                   problems, generates, and scores it on held-out problems (about a minute)
#   make test       all unit tests (Release build; builds the library, the CLI and the tests only)
#   make check-clang  that the library and the CLI compile with Debian's clang 14 (make fuzz's compiler)
#   make install PREFIX=/usr/local   the program, libnanoformer.{so,a}, the headers, the CMake package,
#                   nanoformer.pc and the presets (docs/c-api.md); then `pip install ./python` for Python
#   make test-asan  all unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      kernel benchmarks (against direct CBLAS calls), then training and inference
#                   benchmarks beside PyTorch and the machine's measured limits (scripts/run-bench.sh);
#                   BASELINE=<rev>: that commit's benchmarks built beside (build-baseline/) and measured
#                   alternating with this build's: prefill, decode, batched decode and training before/after
#   make study-extrapolation / study-norms / study-quant   rerun a study of docs/studies/ (one core, ~15 minutes;
#                   study-quant: docs/quantisation.md's accuracy table)
#   make post-training-pipeline   pretrain -> SFT -> DPO -> GRPO -> eval on generated word problems, 3 seeds
#   make tool-use-pipeline        SFT -> GRPO with nanochat's calculator; exact match with and without it, 3 seeds
#                   (TOOL_SYNTAX=hermes: a chat-template model's <tool_call>s through its template)
#                   (one core, ~20 minutes; docs/post-training.md's table and chart; tools/post_training/)
#   make golden     regenerate tests/golden/*.safetensors from PyTorch (needs PyPI)
#   make quant-fixtures  regenerate tests/fixtures/quant/quants.bin from gguf.quants (and llama.cpp's
#                   reference where tools/llamacpp/install.sh has built it; tools/quant/make_quant_fixtures.py)
#   make fuzz       every libFuzzer target for FUZZ_SECONDS (default 60) each, clang + ASan + UBSan
#                   (FUZZ_TARGETS="safetensors ..." for some only; docs/FUZZING.md)
JOBS ?= $(shell nproc)
NATIVE ?= ON
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
CMAKE_FLAGS ?=
# CTEST_ARGS="-R Grammar": some tests only
CTEST_ARGS ?=
PREFIX ?= /usr/local

.PHONY: all deps configure build demo test check-clang install test-asan bench golden quant-fixtures fuzz clean study-extrapolation study-norms study-quant post-training-pipeline tool-use-pipeline

all: build

deps:
	@bash scripts/install-deps.sh

# ccache, where installed (Debian's ccache), makes a rebuild of unchanged sources a cache hit
LAUNCHER := $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache,)

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DNF_NATIVE=$(NATIVE) $(LAUNCHER) $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target nanoformer_cli
	@$(BUILD)/nanoformer demo

# The tests' OpenMP threads wait as the CLI's do (apps/nanoformer/openmp_defaults.cpp; a value of
# your own stands): ctest -j runs tests of two threads side by side on as many cores, where
# libgomp's default spinning held a sampling test that takes 1.5 s alone at 85 s beside another
# (2.8 s with this).
TEST_ENV := GOMP_SPINCOUNT=$${GOMP_SPINCOUNT:-10000}

test: configure
	@cmake --build $(BUILD) -j $(JOBS) --target nf_tests
	@cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) -LE clang $(CTEST_ARGS)

install: configure
	@cmake --build $(BUILD) -j $(JOBS) --target nanoformer_cli nanoformer nanoformer_shared
	@cmake --install $(BUILD) --prefix $(PREFIX)

check-clang: configure
	@cmake --build $(BUILD) -j $(JOBS) --target nanoformer
	@cd $(BUILD) && ctest --output-on-failure -L clang

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNF_SANITIZE=ON -DNF_NATIVE=$(NATIVE) -DNF_BUILD_BENCH=OFF $(LAUNCHER) $(CMAKE_FLAGS) > /dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS) --target nf_tests
	@cd $(ASAN_BUILD) && $(TEST_ENV) ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS) -LE clang $(CTEST_ARGS)

# BASELINE=<rev>: also that commit's benchmarks, built in build-baseline/, before/after
BASELINE ?=
bench: build
	@NF_BENCH_BASELINE_COMMIT=$(BASELINE) bash scripts/run-bench.sh $(BUILD)

fuzz:
	@bash scripts/install-fuzz-deps.sh
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNF_FUZZ=ON -DNF_BUILD_TESTS=OFF -DNF_BUILD_BENCH=OFF -DNF_NATIVE=$(NATIVE) $(LAUNCHER) $(CMAKE_FLAGS) > /dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_TARGETS)

study-extrapolation: build
	@bash tools/studies/extrapolation.sh $(BUILD)

study-norms: build
	@bash tools/studies/norm_placement.sh $(BUILD)

study-quant: build
	@bash tools/studies/quantisation.sh $(BUILD)

post-training-pipeline: build
	@bash tools/post_training/pipeline.sh $(BUILD)

TOOL_SYNTAX ?= nanochat
tool-use-pipeline: build
	@TOOL_SYNTAX=$(TOOL_SYNTAX) bash tools/post_training/tool_pipeline.sh $(BUILD)

golden:
	@bash scripts/install-python.sh
	@.venv/bin/python tools/golden/generate_all.py tests/golden

quant-fixtures:
	@bash scripts/install-python.sh
	@.venv/bin/python tools/quant/make_quant_fixtures.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
