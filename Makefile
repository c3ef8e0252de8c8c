# CoinMech — the two commands that matter: `make demo` and `make test`.
SWIFT ?= swift
BIN := $(shell $(SWIFT) build --show-bin-path 2>/dev/null)
RELEASE_BIN := $(shell $(SWIFT) build -c release --show-bin-path 2>/dev/null)

.PHONY: all build test bench clean

all: build

build:
	$(SWIFT) build

## Builds everything (daemon, tools, plugins, tests) and runs the whole test suite.
test:
	$(SWIFT) build --build-tests
	COINMECH_BIN_DIR=$(BIN) $(SWIFT) test --skip-build

## Release build, then every benchmark; figures on stdout.
bench:
	$(SWIFT) build -c release
	$(RELEASE_BIN)/coinmech-bench chain
	$(RELEASE_BIN)/coinmech-bench e2e

clean:
	rm -rf .build
