#!/usr/bin/env bash
# The GPU checks of the vyre backend, capture and megakernel work, in one device call, most
# important first (a call cut short by its time limit still returns what ran):
#   1. the dispatch race (vyrescope-cuda against vyre-driver-cuda, with our phase table),
#   2. vyre-driver-cuda's own dispatches recorded and replayed on ours,
#   3. the example vyre application on vyrescope-cuda, recorded and replayed on both backends,
#   4. the vyre op catalogue through the registry-acquired backend,
#   5. selftest, and the default (`--decide auto`) plan of the halo targets against separate
#      launches, 6. the pipeline fuzzer in both sync forms.
# The machine's huge-page setting goes with the figures (the dispatch path advises huge pages
# for large host outputs).
# Usage, from the repository root:
#   benches/gpu/backend_round.sh [VYRESCOPE_BIN] [RACE_BIN] [VYRE_APP_BIN] [OUT_DIR]
# VYRESCOPE_BIN is built with `--features vyre`; RACE_BIN is benches/gpu/vyre-driver-race's
# release binary; VYRE_APP_BIN is target/release/examples/vyre_app.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/release/vyrescope}
RACE=${2:-benches/gpu/vyre-driver-race/target/release/vyre-driver-race}
APP=${3:-target/release/examples/vyre_app}
DIR=${4:-${OUT:-/tmp/vyrescope-backend-round}}
mkdir -p "$DIR"
export HOME=$(mktemp -d) XDG_CACHE_HOME= XDG_CONFIG_HOME=
. benches/gpu/step.sh
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "transparent_hugepage: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
} > "$DIR/gpu.txt" 2>&1
cat "$DIR/gpu.txt"
step race 240 benches/gpu/vyre_dispatch_race.sh "$BIN" "$RACE" "$DIR/race"
step driver_capture 120 benches/gpu/vyre_driver_capture.sh "$BIN" "$RACE" "$DIR/driver_capture"
rm -rf "$DIR/app_capture"
step app_record 120 env VYRESCOPE_CAPTURE="$DIR/app_capture" "$APP"
step app_replay_cuda 120 "$BIN" replay "$DIR/app_capture" --backend cuda
step app_replay_reference 120 "$BIN" replay "$DIR/app_capture" --backend reference
rm -rf "$DIR/app_capture" "$DIR/driver_capture/capture"
step vyre_backend 120 "$BIN" selftest --vyre-backend --backend cuda
step selftest 300 "$BIN" selftest
for f in benches/gpu/halo/stencil2d_5pt_2048.json benches/gpu/halo/jacobi1d_8_2p20.json fixtures/pipelines/stencil_clamped.json; do
  step "auto_$(basename "$f" .json)" 120 "$BIN" run "$f" --backend cuda --both --repeat 20 \
    --fuel 1099511627776 --timeout 10000
done
step fuzz_dataflow 300 "$BIN" selftest --fuzz-pipelines 200 --sync dataflow --out "$DIR/fuzz_dataflow"
step fuzz_barrier 300 "$BIN" selftest --fuzz-pipelines 200 --sync barrier --out "$DIR/fuzz_barrier"
echo "summary in $DIR/summary.txt"
