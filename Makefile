# cbprobe build and test entry points. `make test` is what CI runs (.ci/run).
GO          ?= go
STATICCHECK_VERSION := v0.8.2
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
FUZZTIME    ?= 3s
BENCHTIME   ?= 1x

.PHONY: build test test-deps spring-example conformance-java vet staticcheck unit fuzz bench bench-report fmt clean release-snapshot image docs docs-rerun

build:
	$(GO) build -buildvcs=true -o bin/cbprobe ./cmd/cbprobe

## test: vet, staticcheck, the race-enabled unit tests and every fuzz target for $(FUZZTIME).
## (The unit step's 25 min timeout is a guard per package: examples/spring-commerce, the
## longest, takes about 7 min here.)
test: test-deps spring-example conformance-java vet staticcheck unit fuzz

## spring-example: the real Spring Boot service (examples/spring-commerce) on Boot 3 and Boot 4,
## which the parity tests start; needs a JDK 17+ and Maven (offline when ~/.m2 is warm).
spring-example:
	@scripts/spring-example.sh

## conformance-java: every conformance vector (the public 338 and breaker/conformance/testdata/vectors)
## replayed on the released Resilience4j 2.4.0 jars; needs a JDK 17+ and Maven.
conformance-java:
	@scripts/conformance-java.sh

## test-deps: what some tests need (headless Chromium, Prometheus, shellcheck, actionlint).
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
	$(GO) test -race -timeout 25m ./...

## fuzz: run each Fuzz* target alone for $(FUZZTIME).
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

## bench: the benchmarks whose numbers docs/PERFORMANCE.md records (bench-deps: vegeta's CLI for fault's).
bench:
	@scripts/bench-deps.sh
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## bench-report: regenerate the summary table of docs/PERFORMANCE.md on this machine (scripts/bench.sh:
## every row with its workload, baseline, the range over BENCH_COUNT runs and the load average).
bench-report:
	@scripts/bench.sh

## docs: regenerate the command reference (docs/reference/cli) from the cobra commands, and
## every marked example output in README.md and docs/ (see docs/development.md).
## (A timing example is rewritten only when its shape changed; docs-rerun rewrites them all
## from fresh runs, e.g. after the wording of an indented line changed.)
docs:
	$(GO) test ./cmd/cbprobe -run '^(TestCLIReferenceUpToDate|TestDocExamples)$$' -count=1 -timeout 20m -update-cli-docs -update-doc-examples

docs-rerun:
	$(GO) test ./cmd/cbprobe -run '^(TestCLIReferenceUpToDate|TestDocExamples)$$' -count=1 -timeout 20m -update-cli-docs -update-doc-examples -rerun-doc-examples

fmt:
	gofmt -w $$(git ls-files '*.go')

## release-snapshot: release archives, checksums and SBOMs in dist/ (GoReleaser, nothing published).
release-snapshot:
	@scripts/release.sh

## image: the container image as an OCI archive in dist/, built without a Docker engine.
image:
	@scripts/image.sh

clean:
	rm -rf bin dist
