# picasso: build, test, demo. Run `make help` for the targets.
GO        ?= go
BIN       := bin/picasso
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/picasso-ctr/picasso/internal/cli.Version=$(VERSION)
DEMO      ?= demo
SHARED    ?= ../shared/data

.PHONY: help build test vet lint fmt demo bench fuzz deps clean

help:
	@echo "make demo   generate the demo data and run the pipeline on it (see README)"
	@echo "make test   vet, format check and all tests (what CI runs)"
	@echo "make build  build $(BIN)"
	@echo "make bench  run the Go benchmarks"
	@echo "make fuzz   fuzz the text parsers for a while"
	@echo "make deps   install optional system libraries (OpenBLAS) when root"

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/picasso

# deps installs OpenBLAS (a faster GEMM) when possible; picasso runs without it.
deps:
	@if [ -e /usr/lib/x86_64-linux-gnu/libopenblas.so.0 ] || [ -e /usr/lib/aarch64-linux-gnu/libopenblas.so.0 ]; then \
		echo "deps: OpenBLAS present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "deps: installing libopenblas0-pthread"; \
		(apt-get install -y -q libopenblas0-pthread >/dev/null 2>&1 || \
		 (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q libopenblas0-pthread >/dev/null 2>&1)) || \
		echo "deps: could not install libopenblas0-pthread; picasso will use its pure-Go GEMM"; \
	else \
		echo "deps: OpenBLAS missing; for faster training run: sudo apt-get install libopenblas0-pthread"; \
	fi

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

lint: vet fmt

test: deps lint
	$(GO) test -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseCriteoLine -fuzztime 30s ./pkg/convert/
	$(GO) test -run '^$$' -fuzz FuzzParseAvazuLine -fuzztime 30s ./pkg/convert/

demo: build
	@scripts/demo.sh "$(BIN)" "$(DEMO)" "$(SHARED)"

clean:
	rm -rf bin $(DEMO)
