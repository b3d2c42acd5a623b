#!/usr/bin/env bash
# Dataflow megakernels (`--sync dataflow`) against grid barriers (`--sync barrier`) and
# separate launches on one GPU: softmax (2^18), reduce + normalise (2^20), the 4-step halo
# stencil (2^18 and a 2^20 copy), histogram equalisation (2^20, mixed workgroup sizes; with
# one seq_cst atomic per element and with a shared-memory histogram), each
# `--both --repeat 30` in both sync forms (both verified against the reference interpreter),
# then the no-regression cases (elementwise chain 2^12 / 2^26, reduction 2^26).
# Usage: [DATAFLOW_QUICK=1] [DATAFLOW_ONLY="softmax ..."] [DATAFLOW_REPEAT=N] benches/gpu/dataflow.sh [BINARY] [OUTDIR]
# (DATAFLOW_ONLY: just those fixtures in both sync forms, e.g. to compare two builds; the
# scaled copies such as chain3_2e12 count too. DATAFLOW_REPEAT: repetitions per form, 30 by
# default; more narrows the gate's interval.)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/release/vyrescope}"
out="${2:-${OUT:-/tmp/vyrescope-dataflow}}"
mkdir -p "$out/json"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r fixtures/pipelines/programs "$work/programs"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv || true

scale() { # scale SRC NAME N: copy pipeline SRC with every buffer length scaled to N
  python3 benches/gpu/scale.py "$1" "$work/$2.json" "$3"
}
# Every pipeline fixture, so that DATAFLOW_ONLY can name any of them.
cp fixtures/pipelines/*.json "$work/"
scale fixtures/pipelines/stencil_halo4.json stencil_halo4_2e20 1048576
scale fixtures/pipelines/softmax.json softmax_2e20 1048576
scale fixtures/pipelines/chain3_transient.json chain3_2e12 4096
scale fixtures/pipelines/chain3_transient.json chain3_2e26 67108864
scale fixtures/pipelines/reduce_total_normalize.json reduce_2e26 67108864

one() { # one NAME SYNC [extra args]
  local name="$1" sync="$2"; shift 2
  local tag="$name.$sync${1:+.measure}"
  echo "== $tag"
  timeout 150 "$bin" run "$work/$name.json" --backend cuda --both --repeat "${DATAFLOW_REPEAT:-30}" --sync "$sync" \
    --fuel 1099511627776 --timeout 5000 "$@" --json > "$out/json/$tag.json" \
    || echo "FAILED (exit $?): $tag"
  tar czf "$out/dataflow-json.tgz" -C "$out" json
  python3 - "$out/json/$tag.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no report:", e); sys.exit()
s, m, g = r.get("separate"), r.get("megakernel"), r.get("gate")
f = lambda x: f'{x["device_ms"]["median_ms"]:.4f} ms, {x["launches"]} launch(es), {"verified" if x["parity"]["passed"] else "MISMATCH"}'
print(f'  {r["device"]}: separate {f(s)}; fused {f(m)}')
if g: print(f'  speedup {g["speedup"]:.2f}x ({g["speedup_low"]:.2f}..{g["speedup_high"]:.2f}): {g["verdict"]}')
for t in r.get("topology", []):
    print(f'  group {t["group"]}: {t["used_blocks"]} blocks (estimated {t["estimated_blocks"]}, driver {t["driver_blocks"]}) measured {t["measured_ms"]}')
PY
}
for name in ${DATAFLOW_ONLY:-softmax reduce_normalize_2p20 stencil_halo4 hist_equalize hist_equalize_shared}; do
  one "$name" dataflow
  one "$name" barrier
done
[ -n "${DATAFLOW_ONLY:-}" ] && { rm -rf "$out/json"; exit 0; }
one chain3_2e12 dataflow
one reduce_2e26 dataflow
if [ "${DATAFLOW_QUICK:-0}" = 1 ]; then # the target cases and the 2^20 copies only
  one stencil_halo4_2e20 dataflow
  one softmax_2e20 dataflow
  rm -rf "$out/json"
  exit 0
fi
# The persistent grid by measurement (1, 2, 4 blocks per SM and the most co-resident).
one softmax dataflow --topology measure
one stencil_halo4_2e20 dataflow --topology measure
for name in stencil_halo4_2e20 softmax_2e20; do
  one "$name" dataflow
  one "$name" barrier
done
one chain3_2e26 dataflow
one reduce_2e26 barrier
rm -rf "$out/json"
