#!/usr/bin/env bash
# The fused-kernel faults of the pipeline fuzzer, in one device call: the three kept
# reproducers (tests/data/megakernel-faults/) run exactly as the fuzzer ran them (fused as far as
# legal, in their sync form) and under compute-sanitizer's synccheck, then the pipeline fuzzer
# over FUZZ seeds in each sync form (worker processes: a fault is recorded and the run goes on).
# Usage, from the repository root:
#   benches/gpu/faults.sh [VYRESCOPE_BINARY] [OUT_DIR] [FUZZ_COUNT] [FIRST_SEED]
# Everything lands in OUT_DIR; summary.txt has one line per step (exit status, milliseconds).
set -uo pipefail
BIN=${1:-./target/release/vyrescope}
DIR=${2:-/tmp/vyrescope-faults}
FUZZ=${3:-500}
SEED=${4:-20261301}
mkdir -p "$DIR"
# Caches and configs go to a private HOME, never the machine's.
export HOME=$(mktemp -d) XDG_CACHE_HOME= XDG_CONFIG_HOME=
. "$(dirname "$0")/step.sh"
export PATH="$PATH:$(ls -d /usr/local/cuda*/bin 2>/dev/null | tr '\n' ':')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$DIR/gpu.txt"
R=tests/data/megakernel-faults
for c in 20261226-dataflow 20261450-dataflow 20261333-barrier; do
  sync=${c#*-}
  step "repro_$c" 120 "$BIN" run "$R/seed-$c.pipeline.json" --backend cuda --both --decide fuse --sync "$sync" --repeat 5
  if command -v compute-sanitizer > /dev/null; then
    step "synccheck_$c" 180 compute-sanitizer --tool synccheck --target-processes all \
      "$BIN" run "$R/seed-$c.pipeline.json" --backend cuda --megakernel --decide fuse --sync "$sync" --repeat 1
  fi
done
for s in dataflow barrier; do
  step "fuzz_$s" 280 "$BIN" selftest --fuzz-pipelines "$FUZZ" --seed "$SEED" --sync "$s" --out "$DIR/fuzz_$s"
  tail -4 "$DIR/fuzz_$s.out"
done
