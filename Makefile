# The commands a contributor needs. `make test` is the README's test command and what CI runs.
SWIFT ?= swift
SOURCES := Sources Tests Examples Package.swift

.PHONY: build test examples format lint clean

build:
	$(SWIFT) build

test:
	$(SWIFT) test

examples:
	$(SWIFT) run examples

format:
	$(SWIFT) format format --in-place --recursive $(SOURCES)

lint:
	$(SWIFT) format lint --strict --recursive $(SOURCES)

clean:
	rm -rf .build
