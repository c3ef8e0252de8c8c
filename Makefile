# CoinMech — the two commands that matter: `make demo` and `make test`.
SWIFT ?= swift
BIN := $(shell $(SWIFT) build --show-bin-path 2>/dev/null)
RELEASE_BIN := $(shell $(SWIFT) build -c release --show-bin-path 2>/dev/null)

.PHONY: all build test demo demo-check bench clean

all: build

build:
	$(SWIFT) build

## Builds everything (daemon, tools, plugins, tests), checks the demo runs, runs the whole test suite.
test:
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory demo-check
	COINMECH_BIN_DIR=$(BIN) $(SWIFT) test --skip-build

## coinsim + coinmechd with the shipped demo configuration, watched with coinctl.
## DEMO_SECONDS=N stops it by itself after N seconds.
demo:
	scripts/demo.sh

## The demo for 5 seconds without rebuilding: it must show accepted coins and exit 0.
demo-check:
	@out=$$(DEMO_NO_BUILD=1 DEMO_SECONDS=5 scripts/demo.sh 2>&1) || { echo "$$out"; echo "demo-check: the demo failed"; exit 1; }; \
	echo "$$out" | grep -q " ACCEPT " || { echo "$$out"; echo "demo-check: the demo showed no accepted coin"; exit 1; }; \
	echo "demo-check: DEMO_SECONDS=5 make demo shows coins and exits 0"

## Release build, then every benchmark; figures on stdout.
bench:
	$(SWIFT) build -c release
	$(RELEASE_BIN)/coinmech-bench chain
	$(RELEASE_BIN)/coinmech-bench e2e
	$(RELEASE_BIN)/coinmech-bench reload

clean:
	rm -rf .build
