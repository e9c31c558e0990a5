#!/usr/bin/env bash
# regress.sh OLD_BIN NEW_BIN [OUT]: train every placement mode with two picasso
# binaries on the same data and compare what they report: a refactor that
# should change no result must give the same test AUC, log loss and bytes
# moved to the last digit.
#
# Data: the demo preset (one epoch of every mode, raw and classified, SGD and
# Adagrad, packed and unpacked) and the kaggle preset at scale 0.05 (the first
# 300 steps of every mode at batch 128, and 60 steps of raw data at batch
# 1024). Both binaries read the same generated files, made once with OLD_BIN.
#
# SLOT_BYTES=1 accepts bytes_h2d = old + 4 × (rows synchronised either way),
# the int32 slots the hot-row sync sends since the device seam (earlier
# builds emulated the sync by copying rows in shared memory and sent none).
set -euo pipefail
old=${1:?usage: regress.sh OLD_BIN NEW_BIN [OUT]}
new=${2:?usage: regress.sh OLD_BIN NEW_BIN [OUT]}
out=${3:-regress}
cfg=$(cd "$(dirname "$0")/../configs" && pwd)
mkdir -p "$out"
D=$out/data
if [ ! -d "$D/demo-fae" ]; then
  "$old" gen -q --preset demo --seed 1 --out "$D/demo" --force >/dev/null
  "$old" profile -q --data "$D/demo" --config "$cfg/demo.yaml" --out "$D/demo/profile.json" >/dev/null
  "$old" classify -q --data "$D/demo" --config "$cfg/demo.yaml" --profile "$D/demo/profile.json" --out "$D/demo-fae" >/dev/null
fi
if [ ! -d "$D/kaggle-fae" ]; then
  "$old" gen -q --preset kaggle --scale 0.05 --rows 5000000 --seed 11 --out "$D/kaggle" --force >/dev/null
  "$old" profile -q --data "$D/kaggle" --config "$cfg/rmc2-kaggle.yaml" --budget 64MiB --out "$D/kaggle/profile.json" >/dev/null
  "$old" classify -q --data "$D/kaggle" --config "$cfg/rmc2-kaggle.yaml" --profile "$D/kaggle/profile.json" --out "$D/kaggle-fae" >/dev/null
fi
printf 'train:\n  optimizer: sgd\n  learning_rate: 0.1\n  dense_optimizer: sgd\n  dense_learning_rate: 0.1\n' >"$out/sgd.yaml"
printf 'train:\n  packing: false\n  micro_batches: 2\n' >"$out/unpacked.yaml"

runs() { # BIN DIR
  local bin=$1 dir=$2
  for m in fae cpu hybrid device artifact; do
    "$bin" train -q --config "$cfg/demo.yaml" --data "$D/demo-fae" --mode $m --out "$dir/demo-$m" >/dev/null
    "$bin" train -q --config "$cfg/rmc2-kaggle.yaml" --data "$D/kaggle-fae" --mode $m --steps 300 --out "$dir/kaggle-$m" >/dev/null
  done
  "$bin" train -q --config "$cfg/demo.yaml" --data "$D/demo" --mode cpu --out "$dir/demo-raw-cpu" >/dev/null
  "$bin" train -q --config "$cfg/demo.yaml" --config "$out/sgd.yaml" --data "$D/demo-fae" --mode fae --out "$dir/demo-fae-sgd" >/dev/null
  "$bin" train -q --config "$cfg/demo.yaml" --config "$out/unpacked.yaml" --data "$D/demo-fae" --mode fae --out "$dir/demo-fae-unpacked" >/dev/null
  "$bin" train -q --config "$cfg/demo.yaml" --config "$out/sgd.yaml" --config "$out/unpacked.yaml" --data "$D/demo-fae" --mode hybrid --out "$dir/demo-hybrid-sgd-unpacked" >/dev/null
  "$bin" train -q --config "$cfg/rmc2-kaggle.yaml" --config "$out/sgd.yaml" --data "$D/kaggle" --batch-size 1024 --mode hybrid --steps 60 --out "$dir/kaggle-raw-hybrid-sgd1024" >/dev/null
  "$bin" train -q --config "$cfg/rmc2-kaggle.yaml" --data "$D/kaggle" --batch-size 1024 --mode device --steps 60 --out "$dir/kaggle-raw-device-adagrad1024" >/dev/null
}
runs "$old" "$out/old"
runs "$new" "$out/new"

python3 - "$out/old" "$out/new" "${SLOT_BYTES:-0}" <<'PY'
import json, os, sys
old, new, slots = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
bad = 0
for run in sorted(os.listdir(old)):
    if run.startswith("."):  # a run's lock file beside it
        continue
    a = json.load(open(os.path.join(old, run, "summary.json")))
    b = json.load(open(os.path.join(new, run, "summary.json")))
    want_h2d = a["bytes_h2d"]
    if slots:
        want_h2d += 4 * (a["sync_rows_h2d"] + a["sync_rows_d2h"])
    same = (a["test_auc"] == b["test_auc"] and a["test_logloss"] == b["test_logloss"] and
            b["bytes_h2d"] == want_h2d and a["bytes_d2h"] == b["bytes_d2h"] and
            a["sync_rows_h2d"] == b["sync_rows_h2d"] and a["sync_rows_d2h"] == b["sync_rows_d2h"])
    bad += not same
    print("%-4s %-30s AUC %.17g  log loss %.17g  h2d %d -> %d  d2h %d -> %d" % (
        "ok" if same else "DIFF", run, b["test_auc"], b["test_logloss"], a["bytes_h2d"], b["bytes_h2d"],
        a["bytes_d2h"], b["bytes_d2h"]))
print("%d of %d runs differ" % (bad, len(os.listdir(old))))
sys.exit(1 if bad else 0)
PY
