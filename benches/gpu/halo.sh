#!/usr/bin/env bash
# The recomputed (halo) form on one GPU: the three targets of issue 47 (the 4-step
# stencil_clamped fixture; 8 clamped 1-D Jacobi sweeps over 2^20 floats; 4 steps of a 2-D
# 5-point stencil on 2048x2048 floats), each `run --both` (planned form against separate
# launches, both verified against the reference interpreter, with the speedup gate) under
# `--decide recompute` (every chain recomputed) and `--decide model` (the planner's choice),
# plus `plan` of each, so the chosen k, tile and recomputed fraction are kept with the times.
# One summary line per run goes to OUT/summary.txt. Nothing here claims a figure: it measures.
# Usage: [HALO_REPEAT=N] benches/gpu/halo.sh [BINARY] [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/release/vyrescope}"
out="${2:-${OUT:-/tmp/vyrescope-halo}}"
mkdir -p "$out/json"
work="$(mktemp -d)"
# The plan cache goes to a private HOME, never the machine's.
export HOME="$work/home" XDG_CACHE_HOME= XDG_CONFIG_HOME=
mkdir -p "$HOME"
trap 'rm -rf "$work"' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt" || true

targets="fixtures/pipelines/stencil_clamped.json benches/gpu/halo/jacobi1d_8_2p20.json benches/gpu/halo/stencil2d_5pt_2048.json"
for f in $targets; do
  name="$(basename "$f" .json)"
  for decide in recompute model; do
    tag="$name.$decide"
    "$bin" plan "$f" --decide "$decide" > "$out/json/$tag.plan.txt" 2>&1 || true
    timeout 300 "$bin" run "$f" --backend cuda --both --repeat "${HALO_REPEAT:-50}" \
      --decide "$decide" --fuel 1099511627776 --timeout 10000 --json \
      > "$out/json/$tag.json" 2> "$out/json/$tag.err" || echo "FAILED (exit $?): $tag" | tee -a "$out/summary.txt"
    python3 - "$out/json/$tag.json" "$tag" <<'PY' | tee -a "$out/summary.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]:36} no report: {e}"); sys.exit()
s, m, g = r.get("separate"), r.get("megakernel"), r.get("gate") or {}
ok = all(x["parity"]["passed"] for x in (s, m) if x)
passes = []
for grp in (r.get("plan") or {}).get("groups", []):
    h = grp.get("halo")
    if h:
        passes.append(f'k={h["k"]} tile={h["spec"]["tile"][0]}x{h["spec"]["tile"][1]} recomputed={100*h["recomputed_fraction"]:.1f}%')
print(f'{sys.argv[2]:36} sep {s["device_ms"]["median_ms"]:.4f} ms  plan {m["device_ms"]["median_ms"]:.4f} ms '
      f'({m["launches"]} launches)  {g.get("speedup", 0):.2f}x [{g.get("speedup_low", 0):.2f}..{g.get("speedup_high", 0):.2f}] '
      f'{g.get("verdict", "-")}  {"verified" if ok else "MISMATCH"}  {"; ".join(passes) or "no recomputed pass"}')
PY
  done
done
tar czf "$out/halo-json.tgz" -C "$out" json
