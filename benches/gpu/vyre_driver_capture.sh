#!/usr/bin/env bash
# vyre-driver-cuda's own dispatches, recorded and replayed on vyrescope (issue 46): the race
# binary records a small application on vyre's own CUDA backend (`cuda`) through the capture
# crate alone, then `vyrescope replay` runs every recorded call again on `vyrescope-cuda`
# and on `vyrescope-reference` and compares the bytes (exit 1 on any divergence).
#
# Usage, from the repository root, on the GPU machine:
#   benches/gpu/vyre_driver_capture.sh [VYRESCOPE_BIN] [RACE_BIN] [OUT_DIR]
# Defaults: target/release/vyrescope (built with `--features vyre`),
# benches/gpu/vyre-driver-race/target/release/vyre-driver-race, $OUT (or
# /tmp/vyrescope-driver-capture). Writes OUT_DIR/record.txt, OUT_DIR/replay-cuda.txt and
# OUT_DIR/replay-reference.txt; the capture itself is OUT_DIR/capture.
set -euo pipefail
BIN=${1:-target/release/vyrescope}
RACE=${2:-benches/gpu/vyre-driver-race/target/release/vyre-driver-race}
DIR=${3:-${OUT:-/tmp/vyrescope-driver-capture}}
mkdir -p "$DIR"
rm -rf "$DIR/capture"
status=0
"$RACE" --capture "$DIR/capture" > "$DIR/record.txt" 2>&1 || status=1
cat "$DIR/record.txt"
for backend in cuda reference; do
  "$BIN" replay "$DIR/capture" --backend "$backend" > "$DIR/replay-$backend.txt" 2>&1 || status=1
  tail -3 "$DIR/replay-$backend.txt"
done
exit "$status"
