#!/bin/bash
# Timeline checks and overhead: every pipeline fixture in both forms and five Program
# fixtures, each recorded and checked by `run --timeline` (exit 1 on a failed check), with
# 30 instrumented and 30 plain rounds side by side; JSON and Chrome traces go to OUTDIR.
# Usage: benches/gpu/timeline.sh path/to/vyrescope OUTDIR
set -u
V=${1:?path to vyrescope}
OUT=${2:?output folder}
F=$(dirname "$0")/../../fixtures
mkdir -p "$OUT"
status=0
for p in "$F"/pipelines/*.json; do
  n=$(basename "$p" .json)
  "$V" run "$p" --backend cuda --timeline --timeline-rounds 30 --trace "$OUT/$n.trace.json" --json > "$OUT/$n.json" || status=1
done
for n in vadd_f32 matmul_tiled_f32 stencil5_f32 reduce_sum_f32 loop_early_return; do
  "$V" run "$F/programs/$n.json" --backend cuda --verify --timeline --timeline-rounds 30 --trace "$OUT/$n.trace.json" --json > "$OUT/$n.json" || status=1
done
exit $status
