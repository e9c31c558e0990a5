#!/usr/bin/env bash
# The demo: every picasso stage on the built-in demo preset, then the real
# data samples beside the checkout when they are there.
set -euo pipefail
bin=${1:-bin/picasso}
out=${2:-demo}
shared=${3:-../shared/data}

step() { printf '\n== %s\n' "$*"; }

rm -rf "$out"
step "picasso gen: synthetic skewed click log with a known true model"
"$bin" gen --preset demo --seed 1 --out "$out/data" --force

cfg=(--data "$out/data" --config configs/demo.yaml)
step "picasso profile: sample 5%, count accesses, pick the hot threshold for a 1 MiB budget"
"$bin" profile "${cfg[@]}" --out "$out/data/profile.json"

step "picasso classify: all-hot and all-cold mini-batches"
"$bin" classify "${cfg[@]}" --profile "$out/data/profile.json" --out "$out/fae"
"$bin" classify verify "$out/fae" --data "$out/data"

step "picasso train: one epoch in fae mode (hot rows on the emulated device), then in cpu mode"
"$bin" train --config configs/demo.yaml --data "$out/fae" --mode fae --out "$out/run-fae"
"$bin" train --config configs/demo.yaml --data "$out/fae" --mode cpu --out "$out/run-cpu"

if [ -f "$shared/criteo-1tb-head1000.tsv" ]; then
  step "picasso convert: real Criteo and Avazu samples"
  "$bin" convert --format criteo --in "$shared/criteo-1tb-head1000.tsv" --out "$out/criteo-sample" --ids reindex
  "$bin" convert --format criteo --in "$shared/criteo-kaggle-sample200.csv" --out "$out/kaggle-sample" --ids reindex
  "$bin" convert --format avazu --in "$shared/avazu-sample100.csv" --out "$out/avazu-sample" --ids reindex
else
  step "skipping convert: no samples at $shared"
fi
step "picasso bench: every mode and ablation on the same mini-batches"
"$bin" bench "${cfg[@]}" --out "$out/bench" --repeat 2
printf '\ndemo: outputs under %s/; the bench report is %s/bench/report.md\n' "$out" "$out"
