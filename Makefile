# flower's two entry points for a newcomer: `make demo` and `make test`.
# Both install what they need themselves (the pinned harness is cached
# outside the repo, under ~/.cache/flower/harness/<version>).

GO      ?= go
BIN     := bin/flower
HARNESS_VERSION := 2.1.328
export FLOWER_HARNESS_VERSION := $(HARNESS_VERSION)
# The Agent SDK the relay is tested with (integration/sdk), cached like the
# harness, under ~/.cache/flower/agent-sdk/<version>: the release that goes
# with the harness (0.3.N with harness 2.1.N).
AGENT_SDK_VERSION := 0.3.$(word 3,$(subst ., ,$(HARNESS_VERSION)))
export FLOWER_AGENT_SDK_VERSION := $(AGENT_SDK_VERSION)

# The Temporal CLI whose dev server the many-machines tests start; built
# from its Go module, cached under ~/.cache/flower/temporal/<version>.
TEMPORAL_VERSION := 1.5.1
export FLOWER_TEMPORAL_VERSION := $(TEMPORAL_VERSION)

# The Codex CLI, the second harness (docs/DESIGN.md «Codex facts»), cached
# under ~/.cache/flower/codex/<version>.
CODEX_VERSION := 0.171.0
export FLOWER_CODEX_VERSION := $(CODEX_VERSION)

# The Gemini CLI, the third harness (docs/DESIGN.md «Gemini facts»), cached
# under ~/.cache/flower/gemini/<version>; it runs on the node on PATH.
GEMINI_VERSION := 0.61.0
export FLOWER_GEMINI_VERSION := $(GEMINI_VERSION)

# aimock, a scripted model server the project did not write (npm's
# @copilotkit/aimock): the Codex CLI runs a job against it as well as
# against scriptedresp. Cached under ~/.cache/flower/aimock/<version>.
AIMOCK_VERSION := 1.43.0
export FLOWER_AIMOCK_VERSION := $(AIMOCK_VERSION)

.PHONY: all build harness agent-sdk temporal codex gemini aimock tools test darwin unit tidy compat compat-harness compat-codex compat-gemini demo demo-codex demo-gemini chaos fuzz bench bench-e2e clean

all: build

# Two binaries from one package (docs/DESIGN.md «Two binaries»): flower, and
# flower-temporal, which has the Temporal client built in and runs the
# many-machines commands flower hands it.
# The build is stamped with its commit where git can say it (flower version),
# whatever GOFLAGS says. Static, and without urfave/cli's man-page generator: each saves a few
# milliseconds of every start, before the harness starts.
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -tags urfave_cli_no_docs -o $(BIN) ./cmd/flower
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -tags temporal,urfave_cli_no_docs -o $(BIN)-temporal ./cmd/flower

# Installs the pinned Claude Code harness (npm, cached) and prints its path.
harness:
	@scripts/install-harness.sh

# Installs the pinned Agent SDK (npm, cached) and prints its node_modules.
agent-sdk:
	@scripts/install-agent-sdk.sh

# Builds the pinned Temporal CLI (minutes the first time, cached) and
# prints its path.
temporal:
	@scripts/install-temporal.sh

# Installs the pinned Codex CLI (npm, cached) and prints its path.
codex:
	@scripts/install-codex.sh

# Installs the pinned Gemini CLI (npm, cached) and prints its path.
gemini:
	@scripts/install-gemini.sh

# Installs the pinned aimock (npm, cached) and prints the path of its CLI.
aimock:
	@scripts/install-aimock.sh

# tmux: the demo's screen is checked under a real terminal. chromium: a
# run's page is checked in a real headless browser (integration/pagecheck).
# bubblewrap and socat: the harness's scrub keeps the API key from the
# model's tools with them (docs/DESIGN.md «Held harness»).
tools:
	@command -v bwrap >/dev/null && command -v socat >/dev/null || { echo "installing bubblewrap and socat"; \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap socat) >/dev/null || \
	  { echo "bubblewrap and socat are required (apt-get install bubblewrap socat)" >&2; exit 1; }; }
	@command -v tmux >/dev/null || { echo "installing tmux"; \
	  (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null || \
	  { echo "tmux is required (apt-get install tmux)" >&2; exit 1; }; }
	@command -v chromium >/dev/null || { echo "installing chromium"; \
	  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null || \
	  { echo "chromium is required (apt-get install chromium)" >&2; exit 1; }; }

# Unit tests, then the integration tests that drive the real harness
# against the scripted Messages API on 127.0.0.1.
# Unit tests only: no harness, no tmux, no network.
unit:
	$(GO) test -count=1 -short ./...

# go.mod and go.sum must say exactly what the code imports.
tidy:
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy" >&2; $(GO) mod tidy -diff; exit 1; }

# The tests of flower-temporal's own commands (-tags temporal) run after the
# rest. The timeout is a hang guard: ./integration took 14.5 minutes under -race
# with the load average near 9 on two cores (both fronts of the campaign and
# of the guarantees table run on the real harness).
test: tidy build tools darwin
	@FLOWER_HARNESS="$$(scripts/install-harness.sh)" && export FLOWER_HARNESS && \
	  echo "harness: $$FLOWER_HARNESS ($$("$$FLOWER_HARNESS" --version))" && \
	  FLOWER_AGENT_SDK="$$(scripts/install-agent-sdk.sh)" && export FLOWER_AGENT_SDK && \
	  echo "agent sdk: $$FLOWER_AGENT_SDK ($(AGENT_SDK_VERSION))" && \
	  FLOWER_TEMPORAL_CLI="$$(scripts/install-temporal.sh)" && export FLOWER_TEMPORAL_CLI && \
	  echo "temporal: $$FLOWER_TEMPORAL_CLI ($$("$$FLOWER_TEMPORAL_CLI" --version))" && \
	  FLOWER_CODEX="$$(scripts/install-codex.sh)" && export FLOWER_CODEX && \
	  echo "codex: $$FLOWER_CODEX ($$("$$FLOWER_CODEX" --version))" && \
	  FLOWER_AIMOCK="$$(scripts/install-aimock.sh)" && export FLOWER_AIMOCK && \
	  echo "aimock: $$FLOWER_AIMOCK ($(AIMOCK_VERSION))" && \
	  FLOWER_GEMINI="$$(scripts/install-gemini.sh)" && export FLOWER_GEMINI && \
	  echo "gemini: $$FLOWER_GEMINI ($$("$$FLOWER_GEMINI" --version))" && \
	  $(GO) vet ./... && $(GO) vet -tags temporal ./cmd/flower && \
	  $(GO) test -race -count=1 -timeout 30m ./... && \
	  $(GO) test -race -count=1 -tags temporal -run 'TestSubmit|TestStepError' ./cmd/flower

# flower builds and vets for macOS (both kinds of Mac), whose platform parts
# sit behind build tags; nothing here runs it there (docs/guide.md «Platforms»).
darwin:
	@for arch in arm64 amd64; do \
	  GOOS=darwin GOARCH=$$arch $(GO) build -o /dev/null ./cmd/flower && \
	  GOOS=darwin GOARCH=$$arch $(GO) build ./... && \
	  GOOS=darwin GOARCH=$$arch $(GO) vet ./... && \
	  GOOS=darwin GOARCH=$$arch $(GO) vet -tags temporal ./cmd/flower || exit 1; \
	done

# The compatibility lanes: flower doctor, then the real-harness suites
# (integration, integration/sdk, and cmd/flower's tests on the real
# harness), on any harness version, with the Agent SDK of the same release:
#   make compat HARNESS_VERSION=2.1.332
# and the same for the Codex CLI (docs/DESIGN.md «Codex facts»): flower
# doctor --harness-kind codex, then the Codex suites (codexrpc,
# scriptedresp, the Codex front, and the Codex tests of checkup, cmd/flower
# and integration), on any Codex version:
#   make compat CODEX_VERSION=0.172.0     (or make compat-codex)
# and for the Gemini CLI (docs/DESIGN.md «Gemini facts»): flower doctor
# --harness-kind gemini, then the Gemini suites (acp, scriptedgen, the
# Gemini front, and the Gemini tests of checkup, cmd/flower and
# integration), on any Gemini CLI version:
#   make compat GEMINI_VERSION=0.62.0     (or make compat-gemini)
# CODEX_VERSION or GEMINI_VERSION on the command line runs that lane
# alone; with HARNESS_VERSION too, the Claude Code lane as well. Each is
# installed and cached by version like the pinned one. Only the facts
# tests name a version, the one asked for. COMPAT_RUN='TestX|TestY' runs
# only the integration and cmd/flower tests it matches (the Codex and
# Gemini lanes': only those of them whose name says Codex, or Gemini).
COMPAT_RUN ?=
compat-lanes := $(if $(filter command line,$(origin CODEX_VERSION)),compat-codex) $(if $(filter command line,$(origin GEMINI_VERSION)),compat-gemini)
compat: $(if $(strip $(compat-lanes)),$(compat-lanes) $(if $(filter command line,$(origin HARNESS_VERSION)),compat-harness),compat-harness)

compat-harness: tidy build tools
	@FLOWER_HARNESS="$$(scripts/install-harness.sh)" && export FLOWER_HARNESS && \
	  echo "harness: $$FLOWER_HARNESS ($$("$$FLOWER_HARNESS" --version))" && \
	  FLOWER_AGENT_SDK="$$(scripts/install-agent-sdk.sh)" && export FLOWER_AGENT_SDK && \
	  echo "agent sdk: $$FLOWER_AGENT_SDK ($(AGENT_SDK_VERSION))" && \
	  FLOWER_TEMPORAL_CLI="$$(scripts/install-temporal.sh)" && export FLOWER_TEMPORAL_CLI && \
	  { $(BIN) doctor; doctor=$$?; \
	    $(GO) test -race -count=1 -timeout 30m $(if $(COMPAT_RUN),-run '$(COMPAT_RUN)') ./integration/... ./cmd/flower; tests=$$?; \
	    [ $$doctor = 0 ] && [ $$tests = 0 ]; }

compat-codex: tidy build
	@FLOWER_CODEX="$$(scripts/install-codex.sh)" && export FLOWER_CODEX && \
	  echo "codex: $$FLOWER_CODEX ($$("$$FLOWER_CODEX" --version))" && \
	  FLOWER_AIMOCK="$$(scripts/install-aimock.sh)" && export FLOWER_AIMOCK && \
	  { $(BIN) doctor --harness-kind codex --harness "$$FLOWER_CODEX"; doctor=$$?; \
	    $(GO) test -race -count=1 -timeout 20m ./codexrpc ./scriptedresp ./codex && \
	    $(GO) test -race -count=1 -timeout 20m -run '$(if $(COMPAT_RUN),$(COMPAT_RUN),Codex)' ./checkup ./cmd/flower ./integration/...; tests=$$?; \
	    [ $$doctor = 0 ] && [ $$tests = 0 ]; }

compat-gemini: tidy build
	@FLOWER_GEMINI="$$(scripts/install-gemini.sh)" && export FLOWER_GEMINI && \
	  echo "gemini: $$FLOWER_GEMINI ($$("$$FLOWER_GEMINI" --version))" && \
	  { $(BIN) doctor --harness-kind gemini --harness "$$FLOWER_GEMINI"; doctor=$$?; \
	    $(GO) test -race -count=1 -timeout 20m ./acp ./scriptedgen ./gemini && \
	    $(GO) test -race -count=1 -timeout 20m -run '$(if $(COMPAT_RUN),$(COMPAT_RUN),Gemini)' ./checkup ./cmd/flower ./integration/...; tests=$$?; \
	    [ $$doctor = 0 ] && [ $$tests = 0 ]; }

# A real supervised job on the real harness and an embedded scripted model:
# no API key, no network.
demo: build
	@FLOWER_HARNESS="$$(scripts/install-harness.sh)" $(BIN) demo

# The same story on the pinned Codex CLI, against a scripted Responses API.
demo-codex: build
	@$(BIN) demo --harness-kind codex --harness "$$(scripts/install-codex.sh)"

# The same story on the pinned Gemini CLI, against a scripted Gemini API.
demo-gemini: build
	@$(BIN) demo --harness-kind gemini --harness "$$(scripts/install-gemini.sh)"

# The seeded fault campaign, longer than the fixed-seed rounds make test
# runs (integration/chaos_test.go), on the fronts CHAOS_FRONT names
# (headless, interactive or both). Round i uses seed CHAOS_SEED+i; a
# failing round prints the command that replays it, e.g.
# CHAOS_FRONT=interactive CHAOS_SEED=123 CHAOS_ROUNDS=1 make chaos.
CHAOS_FRONT  ?= both
CHAOS_SEED   ?= $(shell date +%s)
CHAOS_ROUNDS ?= 12
CHAOS_FAULTS ?= 6
chaos: tools
	@FLOWER_HARNESS="$$(scripts/install-harness.sh)" && export FLOWER_HARNESS && \
	  CHAOS_FRONT=$(CHAOS_FRONT) CHAOS_SEED=$(CHAOS_SEED) CHAOS_ROUNDS=$(CHAOS_ROUNDS) CHAOS_FAULTS=$(CHAOS_FAULTS) \
	  $(GO) test -run 'TestChaos$$' -count=1 -v -timeout 0 ./integration

# Longer fuzzing than CI does; FUZZTIME=10m make fuzz for more.
FUZZTIME ?= 2m
fuzz:
	$(GO) test ./handoffwriter -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME)
	$(GO) test ./workbench -run '^$$' -fuzz FuzzSafeStepName -fuzztime $(FUZZTIME)
	$(GO) test ./transcript -run '^$$' -fuzz FuzzReader -fuzztime $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# What a handoff costs end to end: the real harness and bin/flower against
# the scripted API on 127.0.0.1, one table (cmd/e2ebench). A measurement,
# not a test: it prints the machine's load with the figures.
# E2E_FLAGS="-runs 5 -bare 9 -soak 300" for more samples (go run ./cmd/e2ebench -h).
E2E_FLAGS ?=
bench-e2e: build
	@FLOWER_HARNESS="$$(scripts/install-harness.sh)" && export FLOWER_HARNESS && \
	  $(GO) run ./cmd/e2ebench -flower $(BIN) $(E2E_FLAGS)

clean:
	rm -rf bin
