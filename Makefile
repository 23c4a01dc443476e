# The commands a contributor needs. `make test` is the README's test command and what CI runs.
SWIFT ?= swift
SOURCES := Sources Tests Examples Package.swift

.PHONY: build test examples format lint clean

build:
	$(SWIFT) build

# The whole suite once per context-switch backend, from one build.
test:
	$(SWIFT) build --build-tests
	COROUTINES_BACKEND=ucontext $(SWIFT) test --skip-build
	COROUTINES_BACKEND=fast $(SWIFT) test --skip-build

examples:
	$(SWIFT) run examples

format:
	$(SWIFT) format format --in-place --recursive $(SOURCES)

lint:
	$(SWIFT) format lint --strict --recursive $(SOURCES)

clean:
	rm -rf .build
