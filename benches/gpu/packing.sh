#!/usr/bin/env bash
# Packed steps in the dataflow form, and where the time of a small fused pipeline goes, in one
# device call: selftest (every fixture, pipelines fused in both sync forms), the pipeline
# fuzzer in the dataflow form (packed steps that wait per trip among them), the mixed-size
# stencil fused against separate launches in both sync forms, the fixed cost of one launch
# against several (launch_costs.cu at the clamped stencil's 79 blocks and at 1056), and
# Nsight Compute's kernel durations of the clamped stencil fused and separate.
# Usage, from the repository root:  benches/gpu/packing.sh [VYRESCOPE_BINARY] [OUT_DIR]
set -uo pipefail
BIN=${1:-./target/release/vyrescope}
DIR=${2:-${OUT:-/tmp/vyrescope-packing}}
mkdir -p "$DIR"
# Caches and configs go to a private HOME, never the machine's.
export HOME=$(mktemp -d) XDG_CACHE_HOME= XDG_CONFIG_HOME=
. "$(dirname "$0")/step.sh"
# nvcc and ncu may sit outside PATH.
export PATH="$PATH:$(ls -d /usr/local/cuda*/bin 2>/dev/null | tr '\n' ':')$(ls -d /opt/nvidia/nsight-compute/* 2>/dev/null | tr '\n' ':')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$DIR/gpu.txt"
step selftest 240 "$BIN" selftest
step fuzz_dataflow 200 "$BIN" selftest --fuzz-pipelines 300 --seed 1515 --sync dataflow --out "$DIR/fuzz_dataflow"
M=fixtures/pipelines/stencil_mixed_sizes.json
for s in dataflow barrier; do
  step "mixed_$s" 90 "$BIN" run $M --backend cuda --both --decide fuse --sync $s --repeat 30
done
for f in stencil_clamped softmax; do
  step "both_$f" 90 "$BIN" run fixtures/pipelines/$f.json --backend cuda --both --decide fuse --repeat 30
done
if command -v nvcc > /dev/null; then
  nvcc -O3 -arch=sm_90 -o "$DIR/lc" benches/gpu/launch_costs.cu 2> "$DIR/nvcc.err"
  for b in 79 1056; do step "launch_costs_$b" 60 "$DIR/lc" 50 $b; done
  rm -f "$DIR/lc"
fi
if command -v ncu > /dev/null; then
  step ncu_stencil_clamped 150 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size \
    "$BIN" run fixtures/pipelines/stencil_clamped.json --backend cuda --both --decide fuse --repeat 3
fi
