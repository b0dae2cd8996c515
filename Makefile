# make run   — install what is missing, build, and run CodeHydra on this repository
# make test  — install what is missing, then format check, vet, staticcheck, a short run of
#              every fuzzer (fuzz-short) and all tests, the MCP conformance suite among them
#              (TestMCPConformanceSuite)
# make soak  — the long fault, load and race tests with figures (for docs/RELIABILITY.md)
# make bench — measure CodeHydra on this machine; writes the tables into docs/BENCHMARKS.md
# make screenshots — remake the README's screenshots in docs/screenshots/
# make test-windows — the tests of the Windows code paths, run under wine
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

BINARY := codehydra
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

.PHONY: all run test build lint setup icons clean bench screenshots fuzz-short soak cross test-windows

all: build

setup:
	./build/setup.sh

# Two programs side by side: codehydra, the core (the command line, serve,
# and every helper CodeHydra starts), which links no GUI toolkit, and
# codehydra-gui, the tray app and its windows (Fyne), which codehydra's
# default command hands over to.
#
# Both carry one stamp of the sources they were built from (a hash of every
# Go file, go.mod and go.sum), so that the core hands over only to a GUI
# program built from the same sources, or to one built by hand like itself.
SOURCES_STAMP := $(shell { git ls-files -co --exclude-standard 2>/dev/null || find . -type f; } | grep -E '\.go$$|(^|/)go\.(mod|sum)$$' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
STAMP_LDFLAGS = -ldflags=-X=codehydra/internal/cli.SourcesStamp=$(SOURCES_STAMP)
build:
	go build $(STAMP_LDFLAGS) -o $(BINARY) .
	go build $(STAMP_LDFLAGS) -o $(BINARY)-gui ./cmd/codehydra-gui

run: setup build
	./$(BINARY) --project $(CURDIR)

lint:
	@unformatted="$$(gofmt -l .)"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	staticcheck ./...

# make test's setup starts the build of the wine root and git.exe in the
# background (when they are not built yet), so that it overlaps the Linux
# tests; test-windows, last, waits for it.
test: export CODEHYDRA_WINE ?= background
test: setup lint cross fuzz-short
	CODEHYDRA_REQUIRE_OPENCODE=1 CODEHYDRA_REQUIRE_GUI=1 CODEHYDRA_REQUIRE_FAULTS=1 CODEHYDRA_REQUIRE_CONFORMANCE=1 CODEHYDRA_REQUIRE_SANDBOX=1 CODEHYDRA_REQUIRE_PYTHON=1 go test -race -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory test-windows

# Builds the app for Windows (the core without cgo, the GUI program with
# MinGW's gcc: Fyne needs cgo; the tools under build/ are Linux-only) and vets for macOS and Windows (tests too) every package that needs
# no cgo, which is all but those that depend on Fyne (NO_FYNE lists the
# others; e2e's tests import the app); neither is run here (README "Systems"). GOCACHE keeps the
# Windows build of Fyne, so only a first run is slow (about 6 minutes of
# CPU).
NO_FYNE = go list -f '{{.ImportPath}} {{join .Deps " "}}' ./... | grep -v ' fyne\.io/' | cut -d' ' -f1 | grep -vx codehydra/e2e
cross:
	$(WINDOWS_BUILD)
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go vet $$($(NO_FYNE))
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go vet $$($(NO_FYNE) | grep -vx codehydra/build/bench)

# The Windows tests, cross-built and run under wine 10. Its setup builds
# the wine root (build/wine-setup.sh) and a git.exe (build/wine-git.sh)
# once into the tools folder; make test's setup starts that build in the
# background. Each test binary runs in a wine of its own (wine.run, about
# 3 s to start), and every program start under wine is slow (a git command
# takes 0.5-3 s, against milliseconds on Linux): the full mcp, workspace,
# statuscache and prepare suites, which run git hundreds of times, take
# 9 to more than 10 minutes each there. So this is a chosen set, not ./...:
# - whole packages (WINDOWS_TESTS): the lock and the runtime folder
#   (internal/instance), the folders (internal/paths), the job objects
#   (internal/proc), the settings' paths (internal/settings), opencode's
#   binary lookup and agent config (opencode), the log rotation
#   (internal/rotate), the links (wsfs), the gateway's servers (gateway),
#   the mcp-stdio bridge (internal/mcpstdio) and the PATH guard
#   (internal/sandbox; its Landlock tests skip: no sandbox on Windows);
# - chosen tests (WINDOWS_CHOSEN, package:regexp without spaces, | or
#   parentheses, one go test each): the status cache
#   following every kind of change through Windows' file watcher, the
#   token file, a worktree made in Windows paths (the exe test below
#   deletes one). The rest of those suites is the same code on every
#   system and runs on Linux.
#   prepare does not run: its tests need Unix modes, symbolic links
#   (wine's CreateSymbolicLink is a stub) and sh for setup commands, which
#   git.exe here lacks; its process handling is internal/proc's.
# Waits that bound whether something happens at all, not how fast, are
# testenv.Patient's: 10 times longer under wine. WINRUN_BIND makes the
# module root visible to tests that read ../README.md. Then the built
# codehydra.exe end to end (e2e/windows_test.go, from the Linux side):
# serve, status, an MCP call, two workspaces each with a real agent
# (opencode-windows-x64 1.18.32, which setup installs: WINDOWS_OPENCODE)
# that reports ready, one deleted, a stop that ends every agent through its
# job object in time and leaves no process, and the tray app with no display
# running headless. That test takes 19-24 s on a quiet machine, 97-117 s
# at a load average of 16-22 (the agents take 6-21 s to be ready).
# Measured on 2 cores shared with other work (load average 14 to 32): a
# cold wine root took 10 minutes, a cold git.exe (-O0) 31 (at -O2 an
# earlier one took 69 under load, 5-12 on a quiet machine), a warm
# make test-windows 13 (a 168 s test since left out included; the real
# agents were not in it yet). On a quiet machine, with the agents: the
# wine root 88 s, git.exe 169 s, a warm make test-windows 95 s.
WINE_RUN = $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/codehydra/tools/wine.run
WINDOWS_EXE = $(or $(TMPDIR),/tmp)/$(BINARY).exe
# The core needs no cgo on Windows; the GUI program (Fyne) needs MinGW's gcc.
define WINDOWS_BUILD
CGO_ENABLED=0 GOOS=windows GOARCH=amd64 go build $(STAMP_LDFLAGS) -o $(WINDOWS_EXE) .
CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc go build $(STAMP_LDFLAGS) -o $(basename $(WINDOWS_EXE))-gui.exe ./cmd/codehydra-gui
endef
WINDOWS_OPENCODE = $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/codehydra/tools/opencode-windows/node_modules/opencode-windows-x64/bin/opencode.exe
WINDOWS_TESTS ?= ./internal/instance ./internal/paths ./internal/proc ./internal/settings ./opencode \
	./internal/rotate ./wsfs ./gateway ./internal/mcpstdio ./internal/sandbox
WINDOWS_CHOSEN ?= ./workspace/statuscache:^TestCachedStatusFollowsEveryKindOfChange$$ \
	./mcp:^TestLoadOrCreateToken \
	./workspace:^TestCreateMakesAWorktreeOnANewBranchUnderTheRoot$$
test-windows:
	CODEHYDRA_WINE=1 ./build/setup.sh
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 WINRUN_BIND=$(CURDIR) go test -count=1 -timeout 20m \
		-exec $(WINE_RUN) $(WINDOWS_TESTS)
	@for f in $(WINDOWS_CHOSEN); do \
		echo "go test -run '$${f#*:}' $${f%%:*} (under wine)"; \
		GOOS=windows GOARCH=amd64 CGO_ENABLED=0 WINRUN_BIND=$(CURDIR) go test -count=1 -timeout 10m \
			-exec $(WINE_RUN) -run "$${f#*:}" "$${f%%:*}" || exit 1; \
	done
	$(WINDOWS_BUILD)
	CODEHYDRA_WINDOWS_EXE=$(WINDOWS_EXE) CODEHYDRA_WINE_RUN=$(WINE_RUN) CODEHYDRA_WINDOWS_OPENCODE=$(WINDOWS_OPENCODE) go test -count=1 -timeout 15m \
		-run '^TestTheWindowsBuildServesUnderWine$$' ./e2e

# Every fuzzer for FUZZTIME; go test -fuzz takes one package and one fuzzer
# at a time. The seed corpora are in <package>/testdata/fuzz/<fuzzer>/.
# A count of executions, not a duration: with a duration, Go 1.26's fuzz
# coordinator can report a bare "context deadline exceeded" failure when
# the time runs out on a busy machine (golang/go#75804, fixed in Go 1.27);
# a count has no deadline to race. 30000 runs take a few seconds each.
FUZZTIME ?= 30000x
FUZZERS := \
	./workspace:FuzzResolve ./workspace:FuzzValidateName \
	./workspace:FuzzValidateMetadataKey ./workspace:FuzzValidateMetadataValue \
	./internal/settings:FuzzLoad \
	./internal/sse:FuzzReader \
	./opencode:FuzzParseEvent ./opencode:FuzzParseListeningLine \
	./internal/otlp:FuzzPartialSuccess

fuzz-short:
	@for f in $(FUZZERS); do \
		pkg=$${f%%:*}; name=$${f##*:}; \
		echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
		out="$$(go test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=1000x "$$pkg" 2>&1)" || { echo "$$out"; exit 1; }; \
		echo "$$out" | grep -E '^fuzz: elapsed' | tail -n 1; echo "$$out" | tail -n 1; \
	done

# The long versions of the fault, load and race tests (CODEHYDRA_SOAK=1),
# one package at a time and without -race so that the timings mean
# something, then every fuzzer for 200 000 runs. The FIGURE lines are what
# docs/RELIABILITY.md reports.
SOAK_LOG ?= $(or $(TMPDIR),/tmp)/codehydra-soak.log
SOAK_TESTS := TestDeletesKilledAtRandom|TestADeleteKilledAtAnyStep|TestLoadMany|TestCallsInFlightDuringADelete|TestHostileRequests|TestHeldGitLocks|TestAnAgentKilledMidTurn|TestRealOpencodeKilledMidTurn|TestAnAppKilledHard

soak: setup
	CODEHYDRA_SOAK=1 go test -count=1 -p 1 -v -timeout=60m -run '$(SOAK_TESTS)' \
		./workspace ./mcp ./opencode ./e2e 2>&1 | tee $(SOAK_LOG) | grep -E '^(ok|FAIL|--- FAIL)|FIGURE'
	$(MAKE) --no-print-directory fuzz-short FUZZTIME=200000x | tee -a $(SOAK_LOG)
	@echo "figures (full log in $(SOAK_LOG)):"; grep -hoE 'FIGURE.*|^fuzz .*|^fuzz: elapsed.*' $(SOAK_LOG)

# The core figures (go run ./build/bench: status, tools/call, create/delete,
# start-up, memory), then the GUI's (build/bench-gui.sh, when present); each
# rewrites only its own section of docs/BENCHMARKS.md. Without a desktop to
# run the tray app on (Xvfb, xfce4-panel: make setup), only the core figures
# are measured. The generated repositories are kept in
# $TMPDIR/codehydra-bench-cache for the next run.
# BENCH_FLAGS passes more flags, e.g. BENCH_FLAGS='-gc "GOGC=100"' (serve
# with other garbage collector settings, side by side).
bench: build
	go run ./build/bench -out docs/BENCHMARKS.md $(BENCH_FLAGS)
	@if [[ -f build/bench-gui.sh ]]; then bash build/bench-gui.sh || echo "make bench: no GUI figures (build/bench-gui.sh failed; see above)"; fi

# Remakes docs/screenshots/*.png from the real app under Xvfb and
# xfce4-panel (build/screenshots.sh); commit the result.
screenshots: build
	./build/screenshots.sh

# Redraws assets/*.png; commit the result.
icons:
	go run build/genicons/main.go

clean:
	rm -f $(BINARY) $(BINARY)-gui
