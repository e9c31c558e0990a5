#!/usr/bin/env bash
# onnx-check: exports a trained DLRM as ONNX, runs it in ONNX Runtime
# (onnxruntime-node 1.30.0, CPU) on a test split and checks every score
# against 'picasso predict' to 1e-5 (internal/cli TestONNXMatchesPredict).
# Needs node and npm; installs onnxruntime-node (291 MB) into DIR once.
#   scripts/onnx-check.sh [DIR]   (default: ${TMPDIR:-/tmp}/picasso-ort)
set -euo pipefail
dir=${1:-${TMPDIR:-/tmp}/picasso-ort}
if [ ! -d "$dir/node_modules/onnxruntime-node" ]; then
  mkdir -p "$dir"
  # --ignore-scripts: the install script only downloads GPU binaries; the
  # CPU runtime is in the package.
  (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30.0)
fi
ONNXRUNTIME_NODE_MODULES="$dir/node_modules" go test -count=1 -run "TestONNXMatchesPredict|TestORTMultiHot" -v ./internal/cli/ ./pkg/onnx/
