#!/usr/bin/env bash
# gpu-check-build.sh DIR: the folder `make gpu-check` makes, to copy to a
# machine with a GPU and no Go (under 64 MiB): the static picasso binary and
# the CUDA package's test binary (gzip-compressed), the configs, and run.sh,
# which runs every GPU check there in under ten minutes.
set -euo pipefail
out=${1:-gpu-check}
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"
mkdir -p "$out"
cd "$root"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/picasso" ./cmd/picasso
CGO_ENABLED=0 go test -c -trimpath -ldflags "-s -w" -o "$out/cuda.test" ./pkg/cuda
gzip -9 -f "$out/picasso" "$out/cuda.test"
cp -r configs "$out/configs"
mkdir -p "$out/kernels"
cp pkg/cuda/kernels/emu.h "$out/kernels/" # the test binary's CPU kernel build reads it
cp scripts/gpu-check-run.sh "$out/run.sh"
chmod +x "$out/run.sh"
size=$(du -sm "$out" | cut -f1)
echo "gpu-check: $out is ${size} MiB; on a GPU machine run: $out/run.sh OUT"
if [ "$size" -ge 64 ]; then
  echo "gpu-check: $out is over 64 MiB" >&2
  exit 1
fi
