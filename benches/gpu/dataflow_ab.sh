#!/usr/bin/env bash
# Two builds side by side on the fused kernels alone: per round, fixture and sync form,
# `run --megakernel --repeat 100` with each binary (which goes first alternates; every run
# verified against the reference interpreter), then the median device time of each and
# the ratio B / A over all rounds. For an emitter change to the waits or grid barriers.
# Usage: benches/gpu/dataflow_ab.sh BIN_A BIN_B [OUT_DIR] [ROUNDS]
set -uo pipefail
cd "$(dirname "$0")/../.."
A=$1
B=$2
DIR=${3:-${OUT:-/tmp/vyrescope-dataflow-ab}}
ROUNDS=${4:-3}
mkdir -p "$DIR/json"
F=fixtures/pipelines
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
side() { # round fixture sync label binary
  timeout 120 "$5" run "$F/$2.json" --backend cuda --megakernel --sync "$3" --repeat 100 \
    --fuel 1099511627776 --json > "$DIR/json/$2.$3.$4.r$1.json" 2>/dev/null \
    || echo "FAILED (exit $?): $2 $3 $4 round $1"
}
for r in $(seq 1 "$ROUNDS"); do
  for f in ${AB_ONLY:-softmax reduce_normalize_2p20 stencil_halo4 hist_equalize_shared}; do
    for s in dataflow barrier; do
      if [ $((r % 2)) = 1 ]; then side "$r" "$f" "$s" a "$A"; side "$r" "$f" "$s" b "$B"
      else side "$r" "$f" "$s" b "$B"; side "$r" "$f" "$s" a "$A"; fi
    done
  done
done
python3 - "$DIR/json" <<'PY'
import glob, json, os, statistics, sys
rows = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    f, s, side, r = os.path.basename(p)[:-5].rsplit(".", 3)
    try:
        m = json.load(open(p))["megakernel"]
    except Exception:
        continue
    if not m["parity"]["passed"]:
        print("MISMATCH", p)
    rows.setdefault((f, s), {}).setdefault(side, []).append(m["device_ms"]["median_ms"] * 1e3)
print(f'{"fixture":24} {"sync":9} {"A rounds (us)":28} {"B rounds (us)":28} B/A')
for (f, s), v in sorted(rows.items()):
    a, b = v.get("a", []), v.get("b", [])
    ratio = statistics.median(b) / statistics.median(a) if a and b else float("nan")
    fa = ", ".join(f"{x:.1f}" for x in a)
    fb = ", ".join(f"{x:.1f}" for x in b)
    print(f"{f:24} {s:9} {fa:28} {fb:28} {ratio:.3f}")
PY
