#!/usr/bin/env bash
# vyrescope's kernels against vyre's own (vyre-lower + vyre-emit-ptx 0.7.2) on the device
# machine: vadd, saxpy, a reduction and a global-atomic histogram, both kernels verified
# against the reference interpreter, timed in interleaved rounds (docs/vyre.md, "GPU race").
#
# Usage, from the repository root:
#   benches/gpu/vyre.sh [VYRESCOPE_BINARY] [OUT_DIR] [ELEMENTS] [ROUNDS]
# Defaults: target/release/vyrescope (built with `--features vyre`), $OUT (or
# /tmp/vyrescope-vyre), 2^24 invocations, 50 rounds. Writes OUT_DIR/vyre_race.json and
# OUT_DIR/vyre_race.txt (the table); exit status 1 when a result differs or a Program failed.
set -euo pipefail
BIN=${1:-target/release/vyrescope}
DIR=${2:-${OUT:-/tmp/vyrescope-vyre}}
ELEMENTS=${3:-16777216}
ROUNDS=${4:-50}
mkdir -p "$DIR"
status=0
"$BIN" selftest --vyre --vyre-elements "$ELEMENTS" --vyre-rounds "$ROUNDS" --json \
  > "$DIR/vyre_race.json" || status=$?
"$BIN" selftest --vyre --vyre-elements "$ELEMENTS" --vyre-rounds "$ROUNDS" \
  | tee "$DIR/vyre_race.txt" || status=$?
exit "$status"
