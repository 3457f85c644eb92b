# tackle — the action layer of an AI coding agent. `make help` lists the targets.

SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
TOOLS := $(CURDIR)/.bin
PKGS  := ./...

.DEFAULT_GOAL := help

.PHONY: help build run test fuzz lint generate check-generate bench integration deps tools

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# The programs are static (CGO_ENABLED=0): no C library mapped into a daemon
# that stays up, 1.8 MB less RSS (README, benchmark notes).
build: ## build tackled, tackle and tackle-sandbox-exec into bin/ (static)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./daemon/cmd/tackled ./daemon/cmd/tackle-sandbox-exec ./clients/cli/cmd/tackle

run: build ## build, start the daemon (auto-started by the CLI) and run real tool calls
	@echo "== tackle status"; $(BIN)/tackle status
	@echo; echo "== tackle call Read README.md (first 8 lines)"
	@$(BIN)/tackle call Read '{"file_path":"$(CURDIR)/README.md","limit":8}'
	@echo; echo "== tackle call Grep 'func New' in daemon/"
	@$(BIN)/tackle call Grep '{"pattern":"func New\\(","path":"$(CURDIR)/daemon","output_mode":"files_with_matches","head_limit":8}'
	@echo; echo "== tackle call Edit tmp/demo.txt (after a Read; acceptEdits allows edits inside the working directory)"
	@mkdir -p tmp && printf 'hello\nworld\n' > tmp/demo.txt
	@$(BIN)/tackle call Read '{"file_path":"$(CURDIR)/tmp/demo.txt"}' > /dev/null
	@$(BIN)/tackle call Edit '{"file_path":"$(CURDIR)/tmp/demo.txt","old_string":"world","new_string":"tackle"}' --permission-mode acceptEdits
	@echo; echo "== an MCP server for one session (server-everything over stdio, from testpeers/; make deps installs it)"
	@bash scripts/npm-peers.sh
	@printf '{"mcpServers":{"everything":{"command":"%s","args":["stdio"]}}}\n' "$(CURDIR)/testpeers/node_modules/.bin/mcp-server-everything" > tmp/mcp.json
	@sid=$$($(BIN)/tackle sessions new --mcp-config tmp/mcp.json) && \
	  echo "== tackle call mcp__everything__get-sum (session $$sid)" && \
	  $(BIN)/tackle call mcp__everything__get-sum '{"a":2,"b":40}' --session $$sid --permission-mode bypassPermissions && \
	  $(BIN)/tackle mcp list --session $$sid
	@echo
	@if [ -n "$$ANTHROPIC_API_KEY$$ANTHROPIC_AUTH_TOKEN$$OPENAI_BASE_URL$$OPENAI_API_KEY" ]; then \
	  echo "== tackle run: a real prompt to the agent"; \
	  $(BIN)/tackle run "In one sentence: what does the README of this directory say tackle is? Read it first." --max-turns 4 || true; \
	else \
	  echo "== tackle run needs a model: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or OPENAI_BASE_URL and OPENAI_API_KEY) and run make run again"; \
	fi
	@echo; echo "The daemon keeps running; stop it with: $(BIN)/tackle daemon stop"

deps: ## install what the tests need (ripgrep, fd-find as oracles; the npm MCP peers into testpeers/)
	@bash scripts/deps.sh

test: deps tools ## run every test (unit, daemon, CLI, integration, the Neovim plugin), then the fuzz targets for a bounded time
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd internal/modeloracle && $(GO) test -race -count=1 ./...
	@# Allocation counts are the race detector's too under -race, where these skip: once more without it.
	$(GO) test -count=1 -run 'Allocates' ./daemon/tools/search
	bash scripts/nvim-test.sh
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

FUZZTIME ?= 20s
TEST_FUZZTIME ?= 1s
FUZZ ?= .
fuzz: ## run every fuzz target (scripts/fuzz.sh finds them; FUZZ=regexp picks) for FUZZTIME each; make test: TEST_FUZZTIME each
	@GO='$(GO)' FUZZTIME='$(FUZZTIME)' FUZZ='$(FUZZ)' bash scripts/fuzz.sh

integration: deps tools ## run the integration suite against the real binaries
	$(GO) test -count=1 -timeout 10m ./integration/...

tools: ## build buf, the protoc plugins and grpcurl into .bin/ (from tools/go.mod)
	@test -x $(TOOLS)/buf -a -x $(TOOLS)/protoc-gen-go -a -x $(TOOLS)/protoc-gen-go-grpc -a -x $(TOOLS)/grpcurl || \
	  $(GO) build -modfile=tools/go.mod -o $(TOOLS)/ github.com/bufbuild/buf/cmd/buf \
	    google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc \
	    github.com/fullstorydev/grpcurl/cmd/grpcurl

generate: tools ## regenerate gen/ from proto/, and the documented descriptors reflection serves (daemon/server/tackle.binpb)
	PATH=$(TOOLS):$$PATH $(TOOLS)/buf generate
	PATH=$(TOOLS):$$PATH $(TOOLS)/buf build -o daemon/server/tackle.binpb

check-generate: generate ## fail when gen/ or daemon/server/tackle.binpb is not what proto/ generates
	@git diff --exit-code -- gen/ daemon/server/tackle.binpb && test -z "$$(git status --porcelain -- gen/ daemon/server/tackle.binpb)" || \
	  { echo "gen/ is stale: run 'make generate' and commit"; exit 1; }

lint: tools ## buf lint, go vet, gofmt, go mod tidy leaves go.mod and go.sum unchanged
	PATH=$(TOOLS):$$PATH $(TOOLS)/buf lint
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); test -z "$$out" || { echo "gofmt:"; echo "$$out"; exit 1; }
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@cd internal/modeloracle && $(GO) mod tidy -diff || { echo "internal/modeloracle: go.mod/go.sum are not tidy: run go mod tidy there"; exit 1; }

bench: deps build ## benchmarks against the reference tools, printed as ratios
	@bash scripts/bench.sh
