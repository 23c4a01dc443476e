# The commands a contributor needs. `make test` is the README's test command and what CI runs.
SWIFT ?= swift
SOURCES := Sources Tests Examples Package.swift

.PHONY: build test examples docs bench format lint clean
.PHONY: sanitize sanitize-address sanitize-thread leaks

build:
	$(SWIFT) build

# The whole suite once per context-switch backend, from one build. The I/O suites (IOTests) run
# in a process of their own, one test at a time: each checks that the process's open descriptors
# are back where they started, which tests opening loops in parallel would blur. The
# stop-messages program is built in release too: StopMessageTests checks that an optimised build
# still prints each programming error's message (it skips, saying why, when that build is
# missing).
IO_SUITES := IOTests
# The examples' I/O suites run in a third process: Swift Testing runs the suites of different
# test targets side by side, and the library's I/O suites count every descriptor of the process.
EXAMPLES_IO := ExamplesTests.+IOTests
# Swift Testing only (there are no XCTest tests). Scripts/run-tests.py keeps the output short:
# a progress line every 15 seconds, failures in full, one summary per run.
# `make test SHOW=--all` prints every test.
TEST_FLAGS ?= --disable-xctest
SHOW ?=
RUN_TESTS := python3 Scripts/run-tests.py
test:
	@$(SWIFT) build --build-tests --quiet
	@$(SWIFT) build -c release --product stop-messages --quiet
	@for backend in ucontext fast; do \
	  echo "== $$backend backend"; \
	  COROUTINES_BACKEND=$$backend $(RUN_TESTS) $$backend $(SHOW) \
	    $(SWIFT) test --skip-build $(TEST_FLAGS) --skip $(IO_SUITES) || exit 1; \
	  COROUTINES_BACKEND=$$backend $(RUN_TESTS) "$$backend, I/O" $(SHOW) \
	    $(SWIFT) test --skip-build $(TEST_FLAGS) --filter $(IO_SUITES) --skip ExamplesTests \
	    || exit 1; \
	  COROUTINES_BACKEND=$$backend $(RUN_TESTS) "$$backend, examples' I/O" $(SHOW) \
	    $(SWIFT) test --skip-build $(TEST_FLAGS) --filter '$(EXAMPLES_IO)' || exit 1; \
	done

examples:
	$(SWIFT) run examples

# DocC with the toolchain's docc: the library's symbol graphs come from a build of its own
# (a scratch path apart, so the usual builds keep their flags, which writes the graphs again
# whenever the sources change), so it works on a fresh clone.
# Warnings (a broken link, an undocumented parameter) fail it. View the result with
# `python3 -m http.server -d .build/docs 8000` and http://localhost:8000/documentation/coroutines/
DOCC ?= docc
docs:
	mkdir -p .build/docs-build/symbols
	$(SWIFT) build --scratch-path .build/docs-build --target Coroutines \
	  -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir \
	  -Xswiftc $(CURDIR)/.build/docs-build/symbols \
	  -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
	$(DOCC) convert Docs/Coroutines.docc --additional-symbol-graph-dir .build/docs-build/symbols \
	  --fallback-display-name Coroutines --fallback-bundle-identifier org.swift-coroutines.Coroutines \
	  --output-path .build/docs --transform-for-static-hosting --warnings-as-errors

# Every figure beside a baseline measured in the same run (release build of Benchmarks/; a few
# minutes; not part of `make test` or CI).
bench:
	cd Benchmarks && $(SWIFT) run -c release bench

format:
	$(SWIFT) format format --in-place --recursive $(SOURCES)

# Formatting, and the floors of Sources/Coroutines only looking down (Scripts/check-floors.py).
lint:
	$(SWIFT) format lint --strict --recursive $(SOURCES)
	python3 Scripts/check-floors.py

# The Swift Testing suite under AddressSanitizer and ThreadSanitizer, once per context-switch
# backend. Each sanitizer builds in its own scratch path so the builds never invalidate each
# other; the first report stops the run and fails it. XCTest is left out: it leaks under ASan.
# -DCOROUTINES_TSAN swaps Synchronization.Mutex, which TSan cannot see on Linux, for a pthread
# one (Sources/Coroutines/Runtime/SanitizerMutex.swift). TSan runs the tests one at a time: it
# maps a context and a shadow stack per coroutine, so tests that keep thousands of coroutines
# alive would together pass vm.max_map_count (65 530) if they overlapped. Before Linux 6.13 each
# stack adds two mappings of its own (no guard markers), so a test that keeps about 10 000 alive
# comes close to the limit even alone (4 or more mappings each); TSan skips those listed in
# TSAN_SKIP, and ASan runs them. From 6.13 on, 64 stacks share one mapping: the one listed peaked
# at 21 000 mappings and passed under TSan on both backends, so the skip is for older kernels.
SANITIZE_BACKENDS ?= ucontext fast
TSAN_SKIP ?= tenThousandCoroutinesDelayTogetherNotOneAfterAnother
# The stress tests (1 000 000 messages elsewhere) run with fewer messages under TSan, which
# is 10-20 times slower, but again and again: interleavings differ from run to run.
TSAN_STRESS_MESSAGES ?= 200000
TSAN_STRESS_REPEATS ?= 3
# The long-chain tests (DeepChainTests: a million future links, 100 000 nested coroutines) run
# shorter under the sanitizers, which check them for races and memory errors, not for depth:
# under ASan 100 000 nested coroutines took 4.9 GB, and under TSan they ran out of memory.
SANITIZE_DEEP = COROUTINES_DEEP_LINKS=100000 COROUTINES_DEEP_NESTING=2000

sanitize: sanitize-address sanitize-thread

sanitize-address:
	@for backend in $(SANITIZE_BACKENDS); do \
	  echo "== AddressSanitizer, $$backend backend"; \
	  for suites in "--skip $(IO_SUITES)" "--filter $(IO_SUITES) --skip ExamplesTests" \
	    "--filter $(EXAMPLES_IO)"; do \
	    COROUTINES_BACKEND=$$backend $(SANITIZE_DEEP) ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
	      LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt \
	      $(SWIFT) test --scratch-path .build/sanitize-address --sanitize=address --disable-xctest \
	      $$suites || exit 1; \
	  done; \
	done

sanitize-thread:
	@for backend in $(SANITIZE_BACKENDS); do \
	  echo "== ThreadSanitizer, $$backend backend"; \
	  COROUTINES_BACKEND=$$backend $(SANITIZE_DEEP) TSAN_OPTIONS=halt_on_error=1 \
	    COROUTINES_STRESS_MESSAGES=$(TSAN_STRESS_MESSAGES) \
	    $(SWIFT) test --scratch-path .build/sanitize-thread --sanitize=thread --disable-xctest \
	    --no-parallel --skip '$(TSAN_SKIP)' -Xswiftc -DCOROUTINES_TSAN || exit 1; \
	  for run in $$(seq $(TSAN_STRESS_REPEATS)); do \
	    echo "== ThreadSanitizer, $$backend backend, stress run $$run"; \
	    COROUTINES_BACKEND=$$backend TSAN_OPTIONS=halt_on_error=1 \
	      COROUTINES_STRESS_MESSAGES=$(TSAN_STRESS_MESSAGES) \
	      $(SWIFT) test --scratch-path .build/sanitize-thread --sanitize=thread --disable-xctest \
	      --skip-build --filter StressTests || exit 1; \
	  done; \
	done

# LeakSanitizer on the examples binary (built with ASan beside `make sanitize-address`): any
# leak fails the run, except Swift's weak-reference side tables (Tests/lsan-suppressions.txt).
# (valgrind cannot read the DWARF that Swift 6.3 emits, so LSan it is.) Quiet when it passes:
# the build's output and the examples' output go to logs beside the build, printed in full
# only when a step fails. ld.gold warns "Cannot export local symbol '__asan_report_…_asm'"
# about 140 times whenever it links an ASan binary (the runtime's assembly stubs are hidden on
# purpose; harmless), so those lines are left out; any other warning or error is printed.
LEAKS_DIR := .build/sanitize-address
leaks:
	@mkdir -p $(LEAKS_DIR)
	@echo "== LeakSanitizer on the examples (logs: $(LEAKS_DIR)/leaks-build.log, leaks-run.log)"
	@$(SWIFT) build --scratch-path $(LEAKS_DIR) --sanitize=address --product examples \
	  > $(LEAKS_DIR)/leaks-build.log 2>&1 \
	  || { cat $(LEAKS_DIR)/leaks-build.log; echo "make leaks: the ASan build failed"; exit 1; }
	@grep -E 'warning:|error:' $(LEAKS_DIR)/leaks-build.log \
	  | grep -v "Cannot export local symbol '__asan_" || true
	@ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt \
	  $(LEAKS_DIR)/debug/examples > $(LEAKS_DIR)/leaks-run.log 2>&1 \
	  || { cat $(LEAKS_DIR)/leaks-run.log; echo "make leaks: the examples leaked or failed"; \
	       exit 1; }
	@echo "make leaks: no leaks"

clean:
	rm -rf .build
