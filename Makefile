# cbprobe build and test entry points. `make test` is what CI runs (.ci/run).
GO          ?= go
STATICCHECK_VERSION := v0.8.2
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
FUZZTIME    ?= 3s
BENCHTIME   ?= 1x

.PHONY: build test test-deps vet staticcheck unit fuzz bench fmt clean

build:
	$(GO) build -o bin/cbprobe ./cmd/cbprobe

## test: vet, staticcheck, the race-enabled unit tests and every fuzz target for $(FUZZTIME).
test: test-deps vet staticcheck unit fuzz

## test-deps: the system packages some tests need (headless Chromium, Prometheus).
test-deps:
	@scripts/test-deps.sh

vet:
	$(GO) vet ./...

## staticcheck: installs the pinned version when it is missing or another version is installed.
staticcheck:
	@$(STATICCHECK) -version 2>/dev/null | grep -qF "($(STATICCHECK_VERSION:v%=%))" || \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(STATICCHECK) ./...

unit:
	$(GO) test -race -timeout 15m ./...

## fuzz: run each Fuzz* target alone for $(FUZZTIME).
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

## bench: the benchmarks whose numbers docs/PERFORMANCE.md records.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
