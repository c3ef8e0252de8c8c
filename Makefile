# CoinMech — the two commands that matter: `make demo` and `make test`.
SWIFT ?= swift
BIN := $(shell $(SWIFT) build --show-bin-path 2>/dev/null)
# Release builds in a scratch path of their own: SwiftPM locks a scratch path for a command's
# whole run, so CI builds them beside the debug build's `swift test` (.ci/run).
RELEASE_BUILD := .build-release
RELEASE_FLAGS := -c release --scratch-path $(RELEASE_BUILD)
RELEASE_BIN := $(shell $(SWIFT) build $(RELEASE_FLAGS) --show-bin-path 2>/dev/null)

.PHONY: all hooks build test demo demo-check bench bench-fraud install uninstall check-systemd test-vm vm-prepare clean bootstrap test-crash test-crash-short deb test-deb release-build pluginval model-check \
	fuzz-build fuzz-build-fleet fuzz fuzz-all fuzz-short test-bridge test-fleet test-fleet-long test-ca install-fleet soak \
	test-c-client

# Installation layout (make install PREFIX=/usr DESTDIR=/tmp/stage).
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
UNITDIR := $(PREFIX)/lib/systemd/system
SYSUSERSDIR := $(PREFIX)/lib/sysusers.d
TMPFILESDIR := $(PREFIX)/lib/tmpfiles.d
UDEVDIR := $(PREFIX)/lib/udev/rules.d
DATADIR := $(PREFIX)/share/coinmech
DOCDIR := $(PREFIX)/share/doc/coinmech
SYSCONFDIR ?= /etc
PLUGINS := coin coin-table sanity repeat-guard weight-floor channel-map coin-id
# What the release builds make: the cabinet's programs the package ships, its plugins, and the
# tools that run release builds (pluginval, the crash audit of the VM's power cuts, the bench).
# Not coinmech-fleet: postgres-nio and Hummingbird double a release build's time, and the
# cabinet's package does not ship the fleet (make deb-fleet builds its own).
RELEASE_PRODUCTS := coinmechd coinctl coinsim coinmech-bridge coinmech-plugin-host coinmech-pluginval coinmech-crash \
	$(PLUGINS) example-minimal-swift
release_build = for p in $(1); do $(SWIFT) build $(RELEASE_FLAGS) --product $$p || exit 1; done
# Where make deb writes the package (and make test-deb keeps its Debian root and apt cache).
DEB_DIR ?= .build-deb

all: build

## The commit-msg hook: a subject of at most 72 characters and a blank line before the body,
## the rule CI checks on every new commit (scripts/check-commits).
hooks:
	mkdir -p .git/hooks && ln -sf ../../scripts/check-commits .git/hooks/commit-msg

## The system packages and the Swift toolchain the build needs: installs what is missing when
## run as root, otherwise prints the one `sudo apt-get install` line. Costs nothing when all is there.
bootstrap:
	@SWIFT=$(SWIFT) scripts/bootstrap

build: bootstrap
	$(SWIFT) build

## Checks the module rules (scripts/module-graph: the core depends on the vocabulary alone),
## builds everything (daemon, tools, plugins, tests), checks the demo runs, runs the whole test suite.
## The unit tests (one part at a time, in process) run in parallel; then the integration tests
## serially: they run real daemons and simulators against the mech deadline, and must not
## compete with each other for two cores.
## The tests' scratch directories (ledgers among them) go to TEST_TMPDIR, tmpfs where there is
## one: every ledger commit is synced (docs/LEDGER.md), and the end-to-end tests hold the
## daemon to the mech's 50 ms deadline with 0 misses, which a virtual disk's occasional slow
## sync on a shared two-core machine would break without any fault of the code. The syncs
## are still made there (the strace test checks them); what they cost on a disk is
## `coinmech-bench commit`, and whether they survive a power cut is `make test-vm`.
## Each run's scratch is one directory under that root (scripts/with-scratch), removed when the run
## passes and kept, with its path printed, when it fails; the rigs below keep theirs under TMPDIR.
TEST_TMPDIR ?= $(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm || echo /tmp)
SCRATCH := scripts/with-scratch
RIG_TMPDIR ?= $(or $(TMPDIR),/tmp)
test: bootstrap
	SWIFT=$(SWIFT) scripts/module-graph --check
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory demo-check
	COINMECH_BIN_DIR=$(BIN) $(SCRATCH) $(TEST_TMPDIR) $(SWIFT) test --skip-build --filter CoinMechUnitTests
	COINMECH_BIN_DIR=$(BIN) $(SCRATCH) $(TEST_TMPDIR) $(SWIFT) test --skip-build --no-parallel --filter CoinMechIntegrationTests
	COINMECH_REQUIRE_INTEGRATION=1 $(MAKE) --no-print-directory test-c-client COINMECH_BIN_DIR=$(BIN)
	COINMECH_REQUIRE_INTEGRATION=1 $(MAKE) --no-print-directory test-python-client COINMECH_BIN_DIR=$(BIN)

## The Python client library (clients/python, its README): installed into a venv with pip from
## the system's setuptools and wheel, without the network (--no-build-isolation --no-index), then
## its tests with unittest: unit tests against an in-process fake daemon, and integration tests
## that run coinsim and coinmechd from COINMECH_BIN_DIR (default: this build's binaries; nothing
## is built here) and compare what the client receives with the ledger (coinctl events), across
## cut sockets and a daemon restart. Debian: python3-venv, python3-setuptools, python3-wheel.
PYTHON_CLIENT_PYTHON ?= /usr/bin/python3
PYTHON_CLIENT_VENV ?= .build/python-client-venv
COINMECH_BIN_DIR ?= $(BIN)
.PHONY: test-python-client
test-python-client:
	rm -rf $(PYTHON_CLIENT_VENV)
	$(PYTHON_CLIENT_PYTHON) -m venv --system-site-packages $(PYTHON_CLIENT_VENV)
	$(PYTHON_CLIENT_VENV)/bin/python -m pip install --quiet --no-build-isolation --no-index --no-deps ./clients/python
	cd clients/python && COINMECH_BIN_DIR=$(if $(COINMECH_BIN_DIR),$(abspath $(COINMECH_BIN_DIR))) COINMECH_KEEP_FAILED=1 \
		$(abspath $(SCRATCH)) $(TEST_TMPDIR) $(abspath $(PYTHON_CLIENT_VENV))/bin/python -m unittest discover -s tests -t . -v

## coinsim's MDB changer + coinmechd with the demo configuration (config/coinmechd.demo-changer.yaml),
## watched with coinctl, and examples/kiosk.py selling beside it (scripts/demo.sh).
## DEMO_SECONDS=N stops it by itself after N seconds.
demo: bootstrap
	scripts/demo.sh

## The demo for 8 seconds without rebuilding: it must show a credited coin, the kiosk's sale
## (and coinctl watch's line for it), and change paid from the changer's tubes, and exit 0.
## 8 s, not 5: the changer takes its first coin 1.5 s after the daemon opens it, and a sale
## needs USD 1.50 of coins first.
demo-check:
	@out=$$(DEMO_NO_BUILD=1 DEMO_SECONDS=8 scripts/demo.sh 2>&1) || { echo "$$out"; echo "demo-check: the demo failed"; exit 1; }; \
	echo "$$out" | grep -q " CREDIT " || { echo "$$out"; echo "demo-check: the demo showed no credited coin"; exit 1; }; \
	echo "$$out" | grep -q "^KIOSK: sold A4 for USD 1.50 " || { echo "$$out"; echo "demo-check: the kiosk sold nothing"; exit 1; }; \
	echo "$$out" | grep -q " SALE USD 1.50 for A4 " || { echo "$$out"; echo "demo-check: coinctl watch showed no sale"; exit 1; }; \
	echo "$$out" | grep -Eq "^KIOSK: change USD [0-9]+\.[0-9]{2} paid: [0-9]+ × USD[0-9]+" || { echo "$$out"; echo "demo-check: no change paid from the tubes"; exit 1; }; \
	echo "$$out" | grep -q " PAID USD " || { echo "$$out"; echo "demo-check: coinctl watch showed no payout done"; exit 1; }; \
	echo "demo-check: DEMO_SECONDS=8 make demo shows coins credited, a sale and its change, and exits 0"

## The C client library (clients/c, docs in clients/c/README.md): libcoinmech-client.so built
## with cc -std=c11 -Wall -Wextra -Werror into .build-c-client, then its tests: against a fake
## daemon (every error path), the reader fuzzed under AddressSanitizer and UBSan, and against
## coinsim and coinmechd across two daemon restarts, from COINMECH_BIN_DIR (default: the debug
## build's, when it has coinmechd; without either the integration test is skipped, loudly).
## Needs no Swift build: `SWIFT=true make test-c-client COINMECH_BIN_DIR=...` runs no swift at all.
C_CLIENT_BIN = $(or $(COINMECH_BIN_DIR),$(if $(wildcard $(BIN)/coinmechd),$(BIN)))
test-c-client:
	COINMECH_BIN_DIR=$(if $(C_CLIENT_BIN),$(abspath $(C_CLIENT_BIN))) $(MAKE) --no-print-directory -C clients/c test

## The money proof: coinmechd killed at every failpoint, then at 50 random moments with SIGKILL,
## and paused past the mech's deadline 10 times, while coinsim plays a fast scenario; then
## coinsim's ground truth joined with the ledger. The last line is the verdict as JSON
## (lost, doubled and phantom must be 0). Then the same for a ccTalk coin acceptor
## (coinsim --protocol cctalk; its commit failpoints, kills and stalls). CRASH_ARGS adds
## options to both (coinmech-crash --help).
## Each run takes a new seed and prints it with the command that repeats it; CRASH_SEED=N
## repeats a run (both protocols).
CRASH_SEED ?=
test-crash: bootstrap
	$(SWIFT) build
	$(SCRATCH) $(RIG_TMPDIR) $(BIN)/coinmech-crash --bin $(BIN) $(if $(CRASH_SEED),--seed $(CRASH_SEED)) $(CRASH_ARGS)
	$(SCRATCH) $(RIG_TMPDIR) $(BIN)/coinmech-crash --bin $(BIN) --protocol cctalk $(if $(CRASH_SEED),--seed $(CRASH_SEED)) $(CRASH_ARGS)
	$(SCRATCH) $(RIG_TMPDIR) $(BIN)/coinmech-crash --bin $(BIN) --protocol mdb $(if $(CRASH_SEED),--seed $(CRASH_SEED)) $(CRASH_ARGS)

## The fleet feed under fire (docs/FLEET.md, "Delivery"): coinsim, coinmechd, coinmech-bridge and
## a real mosquitto with persistence, and a consumer that stores by (cabinet, seq) and acks, as the
## fleet does. While coins flow: the bridge killed with -9 20 times, the broker 5 times (with the
## consumer away), the broker down 30 s, the daemon restarted, the broker's sessions cleared, the
## consumer killed 5 times. Then its store against the ledger, seq by seq; the last line is JSON
## with lost, duplicated_after_dedupe and out_of_order, all 0 (about 75 s). BRIDGE_SEED=N repeats
## a run; BRIDGE_ARGS adds options (coinmech-bridge-chaos --help; --acks-off shows a run fail).
BRIDGE_SEED ?=
test-bridge: bootstrap test-ca
	$(SWIFT) build
	$(SCRATCH) $(RIG_TMPDIR) $(BIN)/coinmech-bridge-chaos --bin $(BIN) --ca $(TEST_CA) $(if $(BRIDGE_SEED),--seed $(BRIDGE_SEED)) $(BRIDGE_ARGS)

## The tests' certificate authority and a broker certificate for 127.0.0.1 it signed (openssl,
## scripts/test-ca), in $(TEST_CA): the chaos runs speak TLS to their broker, as shipped.
TEST_CA ?= .build/test-ca
test-ca:
	@scripts/test-ca $(TEST_CA)

## The fleet (docs/FLEET.md): PostgreSQL and mosquitto started by the test, coinmech-fleet, and
## three cabinets (coinsim, coinmechd and coinmech-bridge each; one a ccTalk acceptor). While
## coins flow: coinmech-fleet killed with -9 10 times, PostgreSQL crashed and restarted, the
## broker killed and restarted, one cabinet off line for 60 s. Then every ledger against the
## fleet's database event for event, the totals to the cent, and the dashboard in headless
## Chromium: an operator logs in through the form, each page is saved as a screenshot under
## $$OUT (default .build/fleet-screenshots) and its figures checked; any console message fails.
## Meanwhile a fourth cabinet in hostile hands publishes seqs out of range, oversized and
## malformed payloads, sparse seqs, forged replies and floods, one of them while PostgreSQL is
## down for 20 s: the fleet must never exit, refuse and alert each, and stay within its memory.
## All over TLS, with the tests' CA (make test-ca). The last line is JSON with lost, doubled,
## gaps_left, fleet_exits and series_problems (the shipped rules' and dashboard's series against
## the live /metrics of the fleet and the bridges), all 0 (about 3 minutes). FLEET_SEED=N repeats
## a run; FLEET_ARGS adds options (coinmech-fleet-chaos --help).
## First, in seconds: the shipped Prometheus rules (packaging/prometheus) through `promtool test
## rules`, each alert broken in turn to show its tests fail (scripts/check-prometheus-rules).
FLEET_SEED ?=
OUT ?= .build/fleet-screenshots
test-fleet: bootstrap test-ca
	@SWIFT=$(SWIFT) scripts/bootstrap --fleet
	scripts/check-prometheus-rules
	$(SWIFT) build
	$(SCRATCH) $(RIG_TMPDIR) $(BIN)/coinmech-fleet-chaos --bin $(BIN) --ca $(TEST_CA) --screenshots $(OUT) $(if $(FLEET_SEED),--seed $(FLEET_SEED)) $(FLEET_ARGS)

## The long form: PostgreSQL down 60 s under a 200 MB flood from the hostile cabinet (the
## figure of docs/PERFORMANCE.md, "The fleet under a flood").
test-fleet-long:
	$(MAKE) --no-print-directory test-fleet FLEET_ARGS="--database-down 60 --flood-copies 100 $(FLEET_ARGS)"

## The credit protocol and money out model-checked with spin (model/README.md): the windows of
## the code before 0.5.0 and the holes of the money-out shell before PayoutCore must be found as
## counterexamples, the fixed designs must pass; about a minute.
model-check:
	@SWIFT=$(SWIFT) scripts/bootstrap --model
	model/check.sh

## The short form CI runs: every failpoint once, 10 kills, 3 stalls (about 25 s more for ccTalk).
test-crash-short:
	$(MAKE) --no-print-directory test-crash CRASH_ARGS="--kills 10 --stalls 3 $(CRASH_ARGS)"

## Fuzzing (docs/DECISIONS.md, "Fuzzing"): coinmech-fuzz built in .build-fuzz with coverage
## instrumentation and AddressSanitizer on every module (C ones too: libyaml), and linked with the
## toolchain's libFuzzer without its main (the driver calls LLVMFuzzerRunDriver itself).
FUZZ_TARGETS := frame request config scenario mdb cctalk journal
# The fleet's MQTT payloads: coinmech-fuzz-fleet, a binary of its own (it links the bridge and the
# fleet, SwiftNIO and PostgresNIO: its instrumented build is long, so CI's fuzz-short leaves it).
FUZZ_FLEET_TARGETS := bridge fleet
FUZZ_TARGET ?= frame
FUZZ_RUNS ?= 10000000
FUZZ_SHORT_RUNS ?= 100000
FUZZ_SEED ?= 1
FUZZ_ARGS ?=
FUZZ_BUILD := .build-fuzz
FUZZ_BIN := $(FUZZ_BUILD)/release/coinmech-fuzz
FUZZ_FLEET_BIN := $(FUZZ_BUILD)/release/coinmech-fuzz-fleet
LIBFUZZER = $(firstword $(wildcard $(dir $(realpath $(shell command -v $(SWIFT) 2>/dev/null)))../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-$(shell uname -m).a))
FUZZ_SWIFT_FLAGS = -c release --build-path $(FUZZ_BUILD) \
	-Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table \
	-Xswiftc -DCOINMECH_LIBFUZZER -Xcc -fsanitize=fuzzer-no-link,address -Xswiftc -use-ld=lld \
	-Xlinker --whole-archive -Xlinker $(LIBFUZZER) -Xlinker --no-whole-archive -Xlinker -lstdc++
# Each run: the seeds and regressions are read first (a crash among them fails at once); new
# inputs go to .build-fuzz/corpus/TARGET, a crash to .build-fuzz/crashes/TARGET-*. Inputs stay
# short (a few sentences, a request line, a settings file): longer ones only cost speed.
FUZZ_CORPUS = $(FUZZ_BUILD)/corpus/$$t
FUZZ_RUN = SWIFT_BACKTRACE=enable=no SWIFT_DETERMINISTIC_HASHING=1 $$(case " $(FUZZ_FLEET_TARGETS) " in *" $$t "*) echo $(FUZZ_FLEET_BIN);; *) echo $(FUZZ_BIN);; esac) $$t $(FUZZ_CORPUS) Fuzz/corpus/$$t $$(test -d Fuzz/regressions/$$t && echo Fuzz/regressions/$$t) \
	-dict=Fuzz/dict/$$t.dict -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t- -print_final_stats=1 \
	-max_len=$$(case $$t in frame|mdb|cctalk) echo 512;; request|bridge) echo 1024;; *) echo 2048;; esac)

fuzz-build: bootstrap
	@test -n "$(LIBFUZZER)" || { echo "fuzz-build: the Swift toolchain has no libclang_rt.fuzzer_no_main"; exit 1; }
	$(SWIFT) build $(FUZZ_SWIFT_FLAGS) --product coinmech-fuzz
	@mkdir -p $(FUZZ_BUILD)/crashes $(addprefix $(FUZZ_BUILD)/corpus/,$(FUZZ_TARGETS))

## The fleet's payload targets' binary (bridge, fleet), instrumented the same way.
fuzz-build-fleet: fuzz-build
	$(SWIFT) build $(FUZZ_SWIFT_FLAGS) --product coinmech-fuzz-fleet
	@mkdir -p $(addprefix $(FUZZ_BUILD)/corpus/,$(FUZZ_FLEET_TARGETS))

## One target for FUZZ_RUNS executions (default 10^7): make fuzz FUZZ_TARGET=config [FUZZ_ARGS=-fork=2]
fuzz: fuzz-build $(if $(filter $(FUZZ_TARGET),$(FUZZ_FLEET_TARGETS)),fuzz-build-fleet)
	t=$(FUZZ_TARGET); $(FUZZ_RUN) -runs=$(FUZZ_RUNS) $(FUZZ_ARGS)

## Every target (the fleet's payloads too) for FUZZ_RUNS executions each (10^7: 20-50 minutes of
## one core per target). `make -j2 fuzz-all` runs two at once, one a core. Each target's corpus
## is .build-fuzz/corpus/<target>, its output .build-fuzz/<target>.log; its last lines (executions,
## speed, memory) are printed as it ends, and a crash stops the run with its log's end.
FUZZ_ALL := $(addprefix fuzz-all-,$(FUZZ_TARGETS) $(FUZZ_FLEET_TARGETS))
.PHONY: $(FUZZ_ALL)
fuzz-all: $(FUZZ_ALL)
$(FUZZ_ALL): fuzz-all-%: fuzz-build fuzz-build-fleet
	@t=$*; $(FUZZ_RUN) -runs=$(FUZZ_RUNS) $(FUZZ_ARGS) > $(FUZZ_BUILD)/$$t.log 2>&1; status=$$?; \
		grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' $(FUZZ_BUILD)/$$t.log | sed "s/^/$$t: /"; \
		if [ $$status -ne 0 ]; then tail -40 $(FUZZ_BUILD)/$$t.log; echo "fuzz-all: $$t failed (exit $$status)"; exit 1; fi

## What CI runs: every target for FUZZ_SHORT_RUNS executions (default 100,000) from seed
## FUZZ_SEED, after its seeds and regressions, in a corpus of its own that starts empty, with
## Swift's hashing fixed: close to the same run on every machine (coverage measured 2,910 vs
## 2,955 features for frame in two runs here), so CI checks what was checked before a change
## lands, and a CI failure can be repeated with its seed. Exploring is `fuzz` and `fuzz-all`.
fuzz-short: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
		rm -rf $(FUZZ_BUILD)/short-corpus/$$t && mkdir -p $(FUZZ_BUILD)/short-corpus/$$t; \
		$(FUZZ_RUN:$(FUZZ_CORPUS)=$(FUZZ_BUILD)/short-corpus/$$t) -seed=$(FUZZ_SEED) -runs=$(FUZZ_SHORT_RUNS) $(FUZZ_ARGS) > $(FUZZ_BUILD)/$$t.log 2>&1; status=$$?; \
		if [ $$status -ne 0 ]; then tail -40 $(FUZZ_BUILD)/$$t.log; echo "fuzz-short: $$t failed (exit $$status; reproduce: make fuzz-short FUZZ_SEED=$(FUZZ_SEED))"; exit 1; fi; \
		echo "fuzz-short: $$t: $$(grep -E '^stat::number_of_executed_units' $(FUZZ_BUILD)/$$t.log | awk '{print $$2}') executions, \
	$$(grep -E '^stat::average_exec_per_sec' $(FUZZ_BUILD)/$$t.log | awk '{print $$2}')/s, seed $(FUZZ_SEED), 0 crashes"; \
	done

## Every shipped plugin (and the Swift example) through coinmech-pluginval at the highest
## strictness, as release builds: what `make install` ships. Each plugin's configuration is
## config/pluginval/<plugin>.yaml. PLUGINVAL_ARGS adds options (e.g. --seed N to reproduce).
pluginval: bootstrap
	@$(call release_build,$(RELEASE_PRODUCTS))
	@for p in $(PLUGINS) example-minimal-swift; do \
		echo "== $$p"; \
		$(RELEASE_BIN)/coinmech-pluginval $(RELEASE_BIN)/lib$$p.so --config config/pluginval/$$p.yaml --strictness 10 $(PLUGINVAL_ARGS) || exit 1; \
	done

## A million coins through coinmechd at the protocol's highest rate (coinsim in lockstep), with
## reloads, subscribers coming and going, a control client, a bridge to a real mosquitto and the
## daemon killed and started again every 50,000 coins; prints RSS, descriptors, threads, ledger
## and WAL size and the answer p99 every 100,000 coins; fails on money the audit finds wrong or
## growth that does not level off (about half an hour; not in CI). SOAK_ARGS adds options
## (coinmech-soak --help; --coins 100000 for a shorter one).
SOAK_ARGS ?=
soak: bootstrap
	$(SWIFT) build --product coinmech-soak
	$(SWIFT) build
	$(SCRATCH) $(TEST_TMPDIR) $(BIN)/coinmech-soak --bin $(BIN) $(SOAK_ARGS)

## The fraud bench's long form (docs/PERFORMANCE.md, "Fraud"): 10^6 attempts of each attack class
## per currency and noise level (1, 2, 3 %), with and without the alloy axis, nominal and taught
## windows, through coin-table; its last line is JSON. FRAUD_ARGS adds options (--threads, --seed …).
bench-fraud: bootstrap
	@$(call release_build,coinmech-bench coin-table)
	$(RELEASE_BIN)/coinmech-bench fraud $(FRAUD_ARGS)

## Release build, then every benchmark; figures on stdout.
bench: bootstrap
	@$(call release_build,coinmech-bench)
	$(RELEASE_BIN)/coinmech-bench chain
	$(RELEASE_BIN)/coinmech-bench e2e
	$(RELEASE_BIN)/coinmech-bench commit
	$(RELEASE_BIN)/coinmech-bench reload
	$(RELEASE_BIN)/coinmech-bench isolation
	$(RELEASE_BIN)/coinmech-bench classify
	$(RELEASE_BIN)/coinmech-bench fraud
	$(RELEASE_BIN)/coinmech-bench footprint

## The release build and the manual-page generator packaging/stage runs.
release-build:
	@$(call release_build,$(RELEASE_PRODUCTS) generate-manual)

## Release build, then installs, self-contained (packaging/stage): the commands in
## $(PREFIX)/lib/coinmech/bin (linked from $(PREFIX)/bin), the Swift runtime they need in
## $(PREFIX)/lib/coinmech/swift, plugins (root-owned), units, sysusers, tmpfiles, the udev rule,
## scenarios, docs, man pages, and the default configuration unless one is already there.
install:
	@SWIFT=$(SWIFT) scripts/bootstrap --install
	$(MAKE) --no-print-directory release-build
	RELEASE_BIN=$(RELEASE_BIN) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) SYSCONFDIR=$(SYSCONFDIR) PLUGINS="$(PLUGINS)" packaging/stage

## install, and the fleet service (docs/FLEET.md, "Installing the fleet"): coinmech-fleet, its
## unit (disabled) and user, and an example configuration. Its release build takes as long again
## as the rest (postgres-nio, Hummingbird).
install-fleet:
	@SWIFT=$(SWIFT) scripts/bootstrap --install
	@$(call release_build,$(RELEASE_PRODUCTS) coinmech-fleet generate-manual)
	RELEASE_BIN=$(RELEASE_BIN) DESTDIR=$(DESTDIR) PREFIX=$(PREFIX) SYSCONFDIR=$(SYSCONFDIR) PLUGINS="$(PLUGINS)" FLEET=1 packaging/stage

## Removes what install and install-fleet put there, except the configuration, the ledger and
## the cache (scripts/check-systemd.sh checks that nothing else is left).
INSTALLED_COMMANDS := coinmechd coinctl coinsim coinmech-pluginval coinmech-bridge coinmech-fleet
INSTALLED_UNITS := coinmechd.service coinmechd.socket coinmech-bridge.service coinmech-fleet.service
uninstall:
	for c in $(INSTALLED_COMMANDS); do rm -f $(DESTDIR)$(BINDIR)/$$c $(DESTDIR)$(PREFIX)/share/man/man1/$$c.1.gz; done
	rm -rf $(DESTDIR)$(PREFIX)/lib/coinmech
	for u in $(INSTALLED_UNITS); do rm -f $(DESTDIR)$(UNITDIR)/$$u; done
	rm -f $(DESTDIR)$(SYSUSERSDIR)/coinmech.conf $(DESTDIR)$(SYSUSERSDIR)/coinmech-fleet.conf $(DESTDIR)$(TMPFILESDIR)/coinmech.conf \
		$(DESTDIR)$(UDEVDIR)/99-coinmech.rules
	rm -rf $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR)

## coinmech_<version>_<arch>.deb in $(DEB_DIR) (version: coinmechd --version, Daemon.version),
## checked by lintian (packaging/build-deb).
deb:
	@SWIFT=$(SWIFT) scripts/bootstrap --packaging
	$(MAKE) --no-print-directory release-build
	RELEASE_BIN=$(RELEASE_BIN) DEB_DIR=$(DEB_DIR) packaging/build-deb

## Installs the package into a clean Debian 12 root without Swift (mmdebstrap, cached in
## $(DEB_DIR)), checks it, and runs coinsim against the installed daemon (packaging/test-deb).
test-deb: deb
	RELEASE_BIN=$(RELEASE_BIN) DEB_DIR=$(DEB_DIR) packaging/test-deb

## Installs into a scratch DESTDIR and checks the units with systemd-analyze (verify, security).
check-systemd:
	scripts/check-systemd.sh

## CoinMech in a qemu VM (TCG, no KVM needed) with a real systemd, udevd and the kernel's own
## gpio-sim: builds what it needs under .build-vm/ (only what changed), installs the project into
## a Debian 12 image, boots it and runs every check inside (vm/run.sh). Root: it installs qemu,
## mmdebstrap and the guest kernel's headers and source with apt-get when they are missing.
test-vm:
	RELEASE_BIN=$(RELEASE_BIN) vm/run.sh

## What test-vm builds that does not depend on the project (the host's tools, the gpio-sim
## modules, the Debian base), alone: CI makes it in the background while its tests run.
vm-prepare:
	vm/run.sh --prepare

clean:
	rm -rf .build $(RELEASE_BUILD) $(FUZZ_BUILD)
