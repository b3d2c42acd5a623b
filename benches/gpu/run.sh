#!/usr/bin/env bash
# GPU benchmarks, side by side in one run on the device machine (see BENCHMARKS.md).
# Usage, from the repository root:  benches/gpu/run.sh [VYRESCOPE_BINARY] [OUT_DIR]
# Needs nvcc (sm_90) and python3; writes JSON per measurement into OUT_DIR and prints a
# markdown table.
set -euo pipefail
BIN=${1:-./.devbin/vyrescope}
DIR=${2:-${OUT:-/tmp/vyrescope-bench}}
N=$((1 << 26))
REPS=20
failed=0
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
nvcc -O3 -arch=sm_90 -o "$DIR/baselines" "$HERE/baselines.cu"
"$DIR/baselines" "$N" "$REPS" > "$DIR/nvcc.jsonl"
for f in vadd_f32 saxpy_f32 reduce_sum_f32; do
  # Exit 1 means the GPU results differed from the interpreter's: report it, keep going.
  "$BIN" bench-kernel "fixtures/programs/$f.json" --elements "$N" --repeat "$REPS" --full-reps 5 --json > "$DIR/vs_$f.json" \
    || { echo "bench-kernel $f failed (see $DIR/vs_$f.json)" >&2; failed=1; }
done
# Warm dispatch overhead at 1024 elements (the kernel itself is negligible there).
"$BIN" bench-kernel fixtures/programs/vadd_f32.json --elements 1024 --repeat 5 --full-reps 1 --overhead --json > "$DIR/overhead.json"
python3 "$HERE/table.py" "$DIR"
exit "${failed:-0}"
