#!/bin/bash
# Where a fused kernel's time goes: the five dataflow fixtures recorded with `run --timeline`
# in both sync forms (20 instrumented and 20 plain rounds side by side), the text summary and
# the JSON per run, then the launch path alone (benches/gpu/launch_costs.cu: plain vs
# cooperative launches, with and without a memset before each, submission exposed and hidden).
# Usage: benches/gpu/dataflow_timeline.sh path/to/vyrescope OUTDIR
set -u
V=${1:?path to vyrescope}
OUT=${2:?output folder}
D=$(cd "$(dirname "$0")" && pwd)
F=$D/../../fixtures
mkdir -p "$OUT"
if command -v nvcc > /dev/null; then
  nvcc -O3 -arch=sm_90 -o "$OUT/launch_costs" "$D/launch_costs.cu" \
    && "$OUT/launch_costs" 300 1056 > "$OUT/launch_costs.jsonl"
  cat "$OUT/launch_costs.jsonl"
fi
for n in softmax reduce_normalize_2p20 stencil_halo4 hist_equalize hist_equalize_shared; do
  for s in dataflow barrier; do
    echo "== $n --sync $s"
    timeout 120 "$V" run "$F/pipelines/$n.json" --backend cuda --megakernel --sync "$s" --timeline \
      --timeline-rounds 20 --trace "$OUT/$n.$s.trace.json" > "$OUT/$n.$s.txt" 2>&1
    echo "exit $?"
    grep -E "kernel_ms|device|overhead|bubble|step|wait|critical|check" "$OUT/$n.$s.txt" | head -40
    timeout 120 "$V" run "$F/pipelines/$n.json" --backend cuda --megakernel --sync "$s" --timeline \
      --timeline-rounds 20 --json > "$OUT/$n.$s.json" 2>/dev/null
  done
done
