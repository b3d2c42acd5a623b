#!/usr/bin/env bash
# Megakernel plans against separate launches, side by side on one GPU: every pipeline fixture
# once (verified), then scaled copies of the elementwise chain (launch-bound 2^12 and
# memory-bound 2^26) and of the reduce-then-normalize pipeline (2^20, 2^26), each with
# `--both --repeat 40` (interleaved rounds, both forms verified against the reference
# interpreter, the speedup gate's verdict and its CSV evidence).
# Usage: benches/gpu/pipelines.sh [BINARY] [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/release/vyrescope}"
out="${2:-${OUT:-/tmp/vyrescope-pipelines}}"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r fixtures/pipelines/programs "$work/programs"

echo "== every pipeline fixture, both forms, verified"
for f in fixtures/pipelines/*.json; do
  "$bin" run "$f" --backend cuda --both --repeat 1 || echo "FAILED: $f"
done

scale() { # scale SRC NAME N: copy pipeline SRC with every buffer length scaled to N
  python3 benches/gpu/scale.py "$1" "$work/$2.json" "$3"
}
scale fixtures/pipelines/chain3_transient.json chain3_2e12 4096
scale fixtures/pipelines/chain3_transient.json chain3_2e26 67108864
scale fixtures/pipelines/reduce_total_normalize.json reduce_2e20 1048576
scale fixtures/pipelines/reduce_total_normalize.json reduce_2e26 67108864
scale fixtures/pipelines/stencil_pingpong.json stencil_2e20 1048576

echo "== timed, --both --repeat 40"
# Pipelines with grid barriers run once per barrier lowering (`flip`, the default, and the
# earlier `generation`), so both are measured against the same separate launches in one call.
for case in chain3_2e12:flip chain3_2e26:flip reduce_2e20:flip reduce_2e20:generation \
            reduce_2e26:flip reduce_2e26:generation stencil_2e20:flip stencil_2e20:generation; do
  name="${case%%:*}"
  gb="${case##*:}"
  tag="$name.$gb"
  # The reference check of 2^26-element pipelines needs more than the default step budget;
  # cooperative groups pick their persistent grid by timing (`--topology measure`).
  "$bin" run "$work/$name.json" --backend cuda --both --repeat 40 --fuel 1099511627776 \
    --topology measure --grid-barrier "$gb" --gate-csv "$out/$tag.gate.csv" --json > "$out/$tag.json" \
    || echo "FAILED: $tag"
  python3 - "$out/$tag.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[1], "no report:", e); raise SystemExit(0)
s, m, g = r["separate"], r["megakernel"], r["gate"]
for t in r.get("topology", []):
    print(f'  {r["pipeline"]} group {t["group"]}: {t["used_blocks"]} blocks; measured ' +
          ", ".join(f"{b}:{ms:.4f}ms" for b, ms in t["measured_ms"]))
print(f'{r["pipeline"]:<14} {r.get("grid_barrier", "?"):<10} separate {s["launches"]} launches {s["device_ms"]["median_ms"]:.4f} ms '
      f'({"ok" if s["parity"]["passed"] else "MISMATCH"}) | megakernel {m["launches"]} launch '
      f'{m["device_ms"]["median_ms"]:.4f} ms ({"ok" if m["parity"]["passed"] else "MISMATCH"}) | '
      f'speedup {g["speedup"]:.2f}x [{g["speedup_low"]:.2f}, {g["speedup_high"]:.2f}] {g["verdict"]}')
PY
done
