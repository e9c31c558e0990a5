# picasso: build, test, demo. Run `make help` for the targets.
GO        ?= go
BIN       := bin/picasso
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/picasso-ctr/picasso/internal/cli.Version=$(VERSION)
DEMO      ?= demo
SAMPLES   ?= testdata

.PHONY: help build install test vet lint fmt demo bench fuzz deps ptx gpu-check readme-check onnx-check layout-check clean

help:
	@echo "make demo   generate the demo data and run the pipeline on it (see README)"
	@echo "make test   vet, format check and all tests (what CI runs)"
	@echo "make build  build $(BIN)"
	@echo "make install  install picasso into $$(go env GOPATH)/bin (or GOBIN)"
	@echo "make readme-check  clone the repository and run the README's commands as written"
	@echo "make onnx-check  run an exported ONNX model in onnxruntime-node and compare with predict (needs npm)"
	@echo "make layout-check  read a FAE layout back as its input rows with DuckDB (needs npm)"
	@echo "make bench  run the Go benchmarks"
	@echo "make fuzz   fuzz the text parsers for a while"
	@echo "make deps   install optional system libraries (OpenBLAS, NVRTC) when root"
	@echo "make ptx    recompile the CUDA kernels (needs NVRTC: make deps)"
	@echo "make gpu-check  build gpu-check/, a folder to run the GPU checks on a GPU machine"

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/picasso

# install puts the picasso binary into GOBIN (default $(go env GOPATH)/bin).
install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags "$(LDFLAGS)" ./cmd/picasso

# readme-check clones the repository into a temporary directory, installs
# picasso there and runs the README's commands as written.
readme-check:
	@scripts/readme-check.sh

# onnx-check installs onnxruntime-node (npm, 291 MB, once) and checks that
# an exported ONNX model scores like predict, to 1e-5.
onnx-check:
	@scripts/onnx-check.sh

# layout-check reads a classified layout back as its input rows with
# DuckDB, through hotmap.parquet (docs/layout.md).
layout-check:
	@scripts/layout-check.sh

# deps installs OpenBLAS (a faster GEMM) and NVRTC (the CUDA kernel compiler)
# when it can; picasso builds and runs without them.
deps:
	@scripts/deps.sh

# ptx regenerates the CUDA kernels' PTX and CUBINs with NVRTC (make deps).
ptx:
	$(GO) generate ./pkg/cuda

# gpu-check builds the static binary and the GPU test binaries into
# gpu-check/, to copy to a machine with a GPU and no Go and run there:
#   gpu-check/run.sh OUT   (conformance on the GPU, training, a bench; JSON in OUT)
gpu-check:
	@scripts/gpu-check-build.sh gpu-check

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
	$(GO) test -run '^$$' -fuzz FuzzParseCSV -fuzztime 30s ./pkg/convert/
	$(GO) test -run '^$$' -fuzz FuzzParseSplit -fuzztime 30s ./pkg/convert/
	$(GO) test -run '^$$' -fuzz FuzzPlainChunk -fuzztime 30s ./pkg/dataset/

demo: build
	@scripts/demo.sh "$(BIN)" "$(DEMO)" "$(SAMPLES)"

clean:
	rm -rf bin $(DEMO) gpu-check
