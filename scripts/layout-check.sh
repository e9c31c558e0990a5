#!/usr/bin/env bash
# layout-check: classifies the demo preset and reads the layout back with
# DuckDB through hotmap.parquet (docs/layout.md's view), checking that the
# layout's rows are exactly the input rows. Needs node and npm; installs
# @duckdb/node-api into DIR once.
#   scripts/layout-check.sh [DIR]   (default: ${TMPDIR:-/tmp}/picasso-duckdb)
set -euo pipefail
dir=${1:-${TMPDIR:-/tmp}/picasso-duckdb}
if [ ! -d "$dir/node_modules/@duckdb/node-api" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund @duckdb/node-api)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/picasso" ./cmd/picasso
"$work/picasso" gen --preset demo --rows 40000 --seed 2 --out "$work/data" -q >/dev/null
"$work/picasso" profile --data "$work/data" --config configs/demo.yaml --out "$work/profile.json" -q >/dev/null
"$work/picasso" classify --data "$work/data" --config configs/demo.yaml --profile "$work/profile.json" --out "$work/fae" -q
NODE_PATH="$dir/node_modules" node scripts/layout-view.js "$work/fae" "$work/data/train"
echo "layout-check: DuckDB read the layout back as exactly its input rows"
