#!/usr/bin/env bash
# The fusion planner on one GPU (`run --decide`): every pipeline fixture and 2^20 copies of
# the dependent ones, `--both --repeat N` (planned form against separate launches, both
# verified against the reference interpreter, with the speedup gate) with the cost model's
# decisions (`--decide model`, the default) in both sync forms; then `--decide measure` on the
# pipelines where the model splits or declines, followed by a `--decide model` run that must
# find the measured choice in the plan cache; then the no-regression cases (chain 2^12/2^26,
# reduction 2^26). One summary line per run goes to OUT/summary.txt.
# Usage: [DECIDE_ONLY="softmax ..."] [DECIDE_SYNC="dataflow barrier"] [DECIDE_REPEAT=N]
#        benches/gpu/decide.sh [BINARY] [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/release/vyrescope}"
out="${2:-${OUT:-/tmp/vyrescope-decide}}"
mkdir -p "$out/json"
work="$(mktemp -d)"
# The plan cache goes to a private HOME, never the machine's.
export HOME="$work/home" XDG_CACHE_HOME= XDG_CONFIG_HOME=
mkdir -p "$HOME"
trap 'rm -rf "$work"' EXIT
cp -r fixtures/pipelines/programs "$work/programs"
cp fixtures/pipelines/*.json "$work/"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt" || true

scale() { # scale SRC NAME N: copy pipeline SRC with every buffer length scaled to N
  python3 benches/gpu/scale.py "$1" "$work/$2.json" "$3"
}
for f in softmax stencil_clamped stencil_periodic stencil_pingpong8 scan_1024_middle reduce_normalize; do
  scale "fixtures/pipelines/$f.json" "${f}_2e20" 1048576
done
scale fixtures/pipelines/chain3_transient.json chain3_2e12 4096
scale fixtures/pipelines/chain3_transient.json chain3_2e26 67108864
scale fixtures/pipelines/reduce_total_normalize.json reduce_2e26 67108864

one() { # one NAME SYNC DECIDE [extra args]
  local name="$1" sync="$2" decide="$3"; shift 3
  local tag="$name.$sync.$decide${1:+.x}"
  timeout 150 "$bin" run "$work/$name.json" --backend cuda --both --repeat "${DECIDE_REPEAT:-30}" \
    --sync "$sync" --decide "$decide" --fuel 1099511627776 --timeout 5000 "$@" --json \
    > "$out/json/$tag.json" 2> "$out/json/$tag.err" || echo "FAILED (exit $?): $tag" | tee -a "$out/summary.txt"
  python3 - "$out/json/$tag.json" "$tag" <<'PY' | tee -a "$out/summary.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]:44} no report: {e}"); sys.exit()
s, m, g = r.get("separate"), r.get("megakernel"), r.get("gate") or {}
ok = all(x["parity"]["passed"] for x in (s, m) if x)
dec = []
for d in (r.get("plan") or {}).get("decisions", []):
    dec.append(f'{"+".join(map(str, d["steps"]))}:{"fuse" if len(d["chosen"]) == 1 else "separate" if len(d["chosen"]) == len(d["steps"]) else "split"}/{d["source"]}')
print(f'{sys.argv[2]:44} sep {s["device_ms"]["median_ms"]:.4f} ms  plan {m["device_ms"]["median_ms"]:.4f} ms '
      f'({m["launches"]} launches)  {g.get("speedup", 0):.2f}x [{g.get("speedup_low", 0):.2f}..{g.get("speedup_high", 0):.2f}] '
      f'{g.get("verdict", "-")}  {"verified" if ok else "MISMATCH"}  {" ".join(dec)}')
PY
  tar czf "$out/decide-json.tgz" -C "$out" json
}
all="$(cd "$work" && ls *.json | sed 's/\.json$//' | grep -v -e chain3_2e26 -e reduce_2e26 -e chain3_2e12)"
for name in ${DECIDE_ONLY:-$all}; do
  for sync in ${DECIDE_SYNC:-dataflow barrier}; do
    one "$name" "$sync" model
  done
done
[ -n "${DECIDE_ONLY:-}" ] && exit 0
for name in hist_equalize scan_1024_middle stencil_periodic softmax; do
  one "$name" dataflow measure
  one "$name" dataflow model
done
one chain3_2e12 dataflow model
one chain3_2e26 dataflow model
one reduce_2e26 dataflow model
rm -rf "$out/json"/*.json
