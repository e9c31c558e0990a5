#!/usr/bin/env bash
# run.sh OUT: picasso's GPU checks, on a machine with an NVIDIA GPU and no Go
# (the folder `make gpu-check` builds). Writes into OUT:
#   devices.json      the driver, the GPUs and the libraries found
#   tests.txt         the conformance suites on the GPU (and on the kernels
#                     built for the CPU), the kernels' NVRTC check, and every
#                     mode trained on the GPU against the emulated device
#   step.txt          DLRM's training step on the RMC2 shapes on the GPU
#   kaggle-*/         fae, hybrid and device trained on the kaggle preset on
#                     the GPU and with the emulated device (summary.json each)
#   bench/            picasso bench on the kaggle preset on the GPU
#   dlrm.txt          the reference DLRM's step on the same GPU (when DLRM_DIR
#                     names a copy of facebookresearch/dlrm and torch imports)
#   results.json      the figures above in one file
# It takes about five minutes; every step has a time limit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { echo "gpu-check: $*" | tee -a "$out/log.txt"; }
for f in picasso cuda.test; do
  [ -x "$here/$f" ] || { gunzip -c "$here/$f.gz" >"$here/$f" && chmod +x "$here/$f"; }
done
P=$here/picasso

# cuBLAS and NVRTC may come from Python wheels or a CUDA toolkit off the
# loader's path: point picasso at them.
find_lib() { # NAME-GLOB
  for d in /usr/local/cuda/lib64 /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu \
           $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    for f in $(ls -d $d/$1 $d/nvidia/*/lib/$1 2>/dev/null | sort -r); do echo "$f"; return; done
  done
}
[ -n "${PICASSO_LIBCUBLAS:-}" ] || { l=$(find_lib 'libcublas.so.1[0-9]*'); [ -n "$l" ] && export PICASSO_LIBCUBLAS=$l; }
[ -n "${PICASSO_LIBNVRTC:-}" ] || { l=$(find_lib 'libnvrtc.so.1[0-9]*'); [ -n "$l" ] && export PICASSO_LIBNVRTC=$l; }
if [ -n "${PICASSO_LIBCUBLAS:-}" ]; then
  # cuBLAS needs its sibling libraries (cublasLt) on the loader's path.
  export LD_LIBRARY_PATH=$(dirname "$PICASSO_LIBCUBLAS")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
log "cuBLAS ${PICASSO_LIBCUBLAS:-on the loader's path}, NVRTC ${PICASSO_LIBNVRTC:-on the loader's path}"

"$P" devices --json >"$out/devices.json" 2>&1
"$P" devices | tee -a "$out/log.txt"

log "tests: conformance on the GPU and the CPU build of the kernels, modes on the GPU against the emulated device"
(cd "$here" && timeout 240 ./cuda.test -test.v -test.timeout 230s \
  -test.run 'GPUConformance|TrainOnGPU|TrainOnEmulatedGPU|KernelsUpToDate|KernelNames|ArgsLayout' >"$out/tests.txt" 2>&1)
log "tests: exit $? ($(grep -c -- '--- PASS' "$out/tests.txt") passed, $(grep -c -- '--- FAIL' "$out/tests.txt") failed, $(grep -c -- '--- SKIP' "$out/tests.txt") skipped)"

log "step time of DLRM (RMC2 shapes) on the GPU"
(cd "$here" && timeout 120 ./cuda.test -test.run '^$' -test.bench GPUTrainStep -test.benchtime 300x >"$out/step.txt" 2>&1)
grep -E '^Benchmark' "$out/step.txt" | tee -a "$out/log.txt"

log "kaggle preset: gen, profile, classify"
cfg=$here/configs/rmc2-kaggle.yaml
timeout 120 "$P" gen -q --preset kaggle --scale 0.05 --rows 2000000 --seed 11 --out "$work/kaggle" &&
  timeout 60 "$P" profile -q --data "$work/kaggle" --config "$cfg" --budget 64MiB --out "$work/kaggle/profile.json" &&
  timeout 90 "$P" classify -q --data "$work/kaggle" --config "$cfg" --profile "$work/kaggle/profile.json" --out "$work/kaggle/fae"
log "kaggle preset: exit $?"
for mode in fae hybrid device; do
  for dev in cuda emulated; do
    timeout 150 "$P" train -q --config "$cfg" --data "$work/kaggle/fae" --mode $mode --device $dev --steps 4000 \
      --out "$out/kaggle-$mode-$dev" >"$out/kaggle-$mode-$dev.txt" 2>&1
    log "train $mode on $dev: exit $? $(grep -h 'test AUC' "$out/kaggle-$mode-$dev.txt")"
  done
done

log "bench on the GPU"
timeout 200 "$P" bench -q --data "$work/kaggle" --config "$cfg" --budget 64MiB --prep "$work/prep" --device cuda \
  --modes fae,hybrid,device,cpu --ablate none --steps 4000 --repeat 1 --out "$out/bench" >"$out/bench.txt" 2>&1
log "bench: exit $?"

if [ -n "${DLRM_DIR:-}" ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  log "reference DLRM on the same GPU"
  tables=$(printf '100000-%.0s' $(seq 26)); tables=${tables%-}
  for batch in 1024 128; do
    timeout 120 python3 "$DLRM_DIR/dlrm_s_pytorch.py" --arch-sparse-feature-size=16 --arch-mlp-bot=13-512-256-64-16 \
      --arch-mlp-top=512-256-1 --arch-embedding-size="$tables" --num-indices-per-lookup=1 --num-indices-per-lookup-fixed=True \
      --data-generation=random --optimizer=sgd --learning-rate=0.1 --loss-function=bce --round-targets=True \
      --numpy-rand-seed=123 --print-time --use-gpu --mini-batch-size=$batch --num-batches=400 --print-freq=50 \
      >"$out/dlrm-$batch.txt" 2>&1
    log "DLRM batch $batch: $(grep -o '[0-9.]* ms/it' "$out/dlrm-$batch.txt" | tail -4 | tr '\n' ' ')"
  done
else
  log "reference DLRM: skipped (set DLRM_DIR to a copy of facebookresearch/dlrm on a machine where torch sees the GPU)"
fi

python3 - "$out" <<'PY' || log "results.json: python3 missing; see the files"
import json, os, re, sys
out = sys.argv[1]
res = {"devices": None, "tests": {}, "step_ms": {}, "kaggle": {}, "bench": None, "dlrm_ms_per_it": {}}
try: res["devices"] = json.load(open(os.path.join(out, "devices.json")))
except Exception as e: res["devices"] = str(e)
for line in open(os.path.join(out, "tests.txt"), errors="replace"):
    m = re.match(r"\s*--- (PASS|FAIL|SKIP): (\S+)", line)
    if m: res["tests"][m.group(2)] = m.group(1)
for line in open(os.path.join(out, "step.txt"), errors="replace"):
    m = re.match(r"BenchmarkGPUTrainStep/(\S+?)-\d+\s+\d+\s+([0-9.]+) ms/step", line)
    if m: res["step_ms"][m.group(1)] = float(m.group(2))
for d in sorted(os.listdir(out)):
    p = os.path.join(out, d, "summary.json")
    if d.startswith("kaggle-") and os.path.exists(p):
        s = json.load(open(p))
        res["kaggle"][d[7:]] = {k: s.get(k) for k in ("test_auc", "test_logloss", "samples_per_s", "step_ms_median", "bytes_h2d", "bytes_d2h", "device")}
p = os.path.join(out, "bench", "report.json")
if os.path.exists(p):
    r = json.load(open(p))
    res["bench"] = [{k: m.get(k) for k in ("name", "samples_per_s", "speedup_vs_hybrid", "bytes_ratio_vs_hybrid", "test_auc")} for m in r.get("modes", [])]
for b in ("1024", "128"):
    p = os.path.join(out, "dlrm-%s.txt" % b)
    if os.path.exists(p):
        ms = [float(x) for x in re.findall(r"([0-9.]+) ms/it", open(p).read())]
        if ms: res["dlrm_ms_per_it"][b] = sorted(ms[2:] or ms)[len(ms[2:] or ms) // 2]
json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=2)
print("gpu-check: wrote", os.path.join(out, "results.json"))
PY
