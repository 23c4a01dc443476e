# The commands a contributor needs. `make test` is the README's test command and what CI runs.
SWIFT ?= swift
SOURCES := Sources Tests Examples Package.swift

.PHONY: build test examples docs bench format lint clean

build:
	$(SWIFT) build

# The whole suite once per context-switch backend, from one build.
test:
	$(SWIFT) build --build-tests
	COROUTINES_BACKEND=ucontext $(SWIFT) test --skip-build
	COROUTINES_BACKEND=fast $(SWIFT) test --skip-build

examples:
	$(SWIFT) run examples

# DocC with the toolchain's docc and symbol graphs of the debug build: no package dependency.
DOCC ?= docc
docs:
	$(SWIFT) package dump-symbol-graph --minimum-access-level public > /dev/null
	rm -rf .build/docs-symbols && mkdir -p .build/docs-symbols
	cp "$$($(SWIFT) build --show-bin-path)"/../symbolgraph/Coroutines*.symbols.json .build/docs-symbols/
	$(DOCC) convert Docs/Coroutines.docc --additional-symbol-graph-dir .build/docs-symbols \
	  --fallback-display-name Coroutines --fallback-bundle-identifier org.swift-coroutines.Coroutines \
	  --output-path .build/docs

# Every figure beside a baseline measured in the same run (release build of Benchmarks/; a few
# minutes; not part of `make test` or CI).
bench:
	cd Benchmarks && $(SWIFT) run -c release bench

format:
	$(SWIFT) format format --in-place --recursive $(SOURCES)

lint:
	$(SWIFT) format lint --strict --recursive $(SOURCES)

clean:
	rm -rf .build
