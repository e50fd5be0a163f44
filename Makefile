# ZLink for Go — developer entry points. `make demo` and `make test` are the
# two commands a newcomer needs (see README.md).

GO       ?= go
BIN      := bin/zlink-node
PKGS     := ./...
# -race is on by default; CI keeps it.
RACE     ?= -race
TESTFLAGS ?= -count=1 -timeout 12m

.PHONY: all build test test-short test-long bench bench-compare demo lint clean deps fuzz allocs

all: build

build:
	$(GO) build -o $(BIN) ./cmd/node

# deps installs what the tests need when it is missing (redis-server).
deps:
	@./scripts/ensure-deps.sh

test: deps
	$(GO) vet $(PKGS)
	$(GO) test $(RACE) $(TESTFLAGS) $(PKGS)
	$(MAKE) allocs
	$(MAKE) fuzz

# allocs runs, without -race, the tests that count allocations through a
# sync.Pool (the race detector's Pool drops items at random, so under
# -race they check behaviour only): the heartbeat path end to end.
allocs:
	$(GO) test -count=1 -run 'AllocatesNothing|AllocateNothing' ./routemesh/ ./wire/ ./internal/zguard/

# fuzz runs each fuzz target of the input doors (docs/security.md): the
# YAML config loader and the CLI's flag values, the store's record and
# state decoders around their limits, and the listener's pre-handshake
# path (bytes and connection timings) — FUZZTIME each, without -race (go
# test -fuzz takes one package and one target per run): under 60 s in all,
# building included. `go test ./...` runs their seed corpora; every other
# fuzz target (FuzzListenerGarbage, the wire decoders, …) runs its seeds
# there too, and longer by hand (see each target's doc).
FUZZTIME ?= 3s
FUZZ_TARGETS := \
	./cmd/node:FuzzParseConfig \
	./cmd/node:FuzzFlagValues \
	./location:FuzzParseSpotState \
	./location:FuzzParseSpotRecord \
	./location:FuzzDecodeDescriptor \
	./internal/zguard:FuzzListenerPreHandshake
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# test-long runs a 2-minute soak: mixed traffic through fault proxies with
# random faults, every call accounted for, then 50 Spot drains under load
# per kind (make test runs 5) — not part of make test.
test-long: build deps
	./$(BIN) bench --duration 2m soak
	ZLINK_DRAIN_REPS=50 $(GO) test $(RACE) -count=1 -timeout 30m -run 'TestSpotsDrain_' ./test/

# test-short skips nothing but -race, for a quick local loop.
test-short: deps
	$(GO) test -count=1 $(PKGS)

# bench prints the side-by-side comparisons (facade vs raw protoactor-go, ...)
# and then runs the Go benchmarks once.
bench: build
	./$(BIN) bench
	$(GO) test -run '^$$' -bench . -benchtime 2000x -benchmem ./actors/ ./wire/

# bench-compare runs ZLink against Proto.Actor remote, raw zmq4 and raw TCP
# with every server in a process of its own (about 6 min), writes
# bench/results/<date>.json and regenerates the compare region of
# docs/benchmarks.md and its charts in docs/img/; then a ZLink Spot against a
# Proto.Actor cluster grain, two processes each (about 2 min; <date>-spots.json,
# the spots-compare region). QUICK=1: short runs that leave the docs alone.
# PROFILE=1: CPU and allocation profiles of every process, next to the JSON.
COMPARE_JSON ?= bench/results/$(shell date +%Y-%m-%d).json
bench-compare: build
	PROFILE=$(PROFILE) ./$(BIN) bench compare --json $(COMPARE_JSON) \
		$(if $(QUICK),--quick,--docs docs/benchmarks.md --img docs/img)
	PROFILE=$(PROFILE) ./$(BIN) bench compare --spots --json $(COMPARE_JSON:.json=-spots.json) \
		$(if $(QUICK),--quick,--docs docs/benchmarks.md)

demo: build
	./$(BIN) demo

lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin
	$(GO) clean -testcache
