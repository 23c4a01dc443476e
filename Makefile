# The commands a contributor needs. `make test` is the README's test command and what CI runs.
SWIFT ?= swift
SOURCES := Sources Tests Examples Package.swift

.PHONY: build test examples bench format lint clean

build:
	$(SWIFT) build

# The whole suite once per context-switch backend, from one build.
test:
	$(SWIFT) build --build-tests
	COROUTINES_BACKEND=ucontext $(SWIFT) test --skip-build
	COROUTINES_BACKEND=fast $(SWIFT) test --skip-build

examples:
	$(SWIFT) run examples

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
