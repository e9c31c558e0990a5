#!/usr/bin/env bash
# The demo: every picasso stage on the built-in demo preset, then on the
# real Criteo and Avazu samples in testdata/.
set -euo pipefail
bin=${1:-bin/picasso}
out=${2:-demo}
samples=${3:-testdata}

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

step "picasso eval and predict: the fae run on the test split, scores as Parquet"
"$bin" eval --run "$out/run-fae" --data "$out/data"
"$bin" predict --run "$out/run-fae" --data "$out/data" --out "$out/run-fae/scores.parquet"

step "picasso convert: real Criteo and Avazu samples ($samples/README.md says where they come from)"
"$bin" convert --format criteo --in "$samples/criteo-1tb-head1000.tsv" --out "$out/criteo-sample" --ids reindex
"$bin" convert --format criteo --in "$samples/criteo-kaggle-sample200.csv" --out "$out/kaggle-sample" --ids reindex
"$bin" convert --format avazu --in "$samples/avazu-sample100.csv" --out "$out/avazu-sample" --ids reindex

step "picasso train and eval on the real Criteo sample (1,000 rows: a check that real data flows, not a benchmark)"
"$bin" train --data "$out/criteo-sample" --mode cpu --batch-size 100 --epochs 3 --out "$out/run-criteo"
"$bin" eval --run "$out/run-criteo" --data "$samples/criteo-1tb-head1000.tsv" --format criteo

step "picasso bench: every mode and ablation on the same mini-batches"
"$bin" bench "${cfg[@]}" --out "$out/bench" --repeat 2
printf '\ndemo: outputs under %s/; the bench report is %s/bench/report.md\n' "$out" "$out"
