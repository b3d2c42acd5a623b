#!/usr/bin/env bash
# vyre's plan against ours and separate launches on one GPU, for every vyre graph fixture
# (fixtures/vyre/graphs/*.vgr: vyre-libs' dense gated MLP block at two sizes, the graphs of
# vyre-megakernel's tests and our hand-built ones; docs/vyre.md says where each comes from).
# Per graph: `plan --vyre --json` (both plans and their differences) and, for each of our
# planner's decision modes (`--decide model`, the cost model's plan, and `--decide fuse`, every
# node fused), `run --backend cuda --both --repeat N --json` (separate launches, our plan and
# vyre's plan, each verified against the reference interpreter and timed in interleaved
# rounds, with vyre's own target-compile verdict). The JSON goes to OUT/json/, one summary line
# per graph and mode to OUT/summary.txt: the three medians, each plan's speedup over separate
# launches with its interval and verdict, verification, and vyre's target verdict. Needs a
# `--features vyre` build.
# Usage: [VYRE_GRAPHS_ONLY="dense_gated_mlp ..."] [VYRE_GRAPHS_DECIDE="model fuse"]
#        [VYRE_GRAPHS_REPEAT=N] benches/gpu/vyre_graphs.sh [BINARY] [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/release/vyrescope}"
out="${2:-${OUT:-/tmp/vyrescope-vyre-graphs}}"
mkdir -p "$out/json"
work="$(mktemp -d)"
# Our plan cache goes to a private HOME, never the machine's.
export HOME="$work/home" XDG_CACHE_HOME= XDG_CONFIG_HOME=
mkdir -p "$HOME"
trap 'rm -rf "$work"' EXIT
if ! "$bin" check fixtures/vyre/graphs/named_chain.vgr > /dev/null 2>&1; then
  echo "error: $bin cannot open vyre graphs" >&2
  echo "  Fix: cargo build --release --features vyre" >&2
  exit 1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt" || true
: > "$out/summary.txt"

all="$(ls fixtures/vyre/graphs/*.vgr | xargs -n1 basename | sed 's/\.vgr$//')"
for name in ${VYRE_GRAPHS_ONLY:-$all}; do
  f="fixtures/vyre/graphs/$name.vgr"
  "$bin" plan "$f" --vyre --json > "$out/json/$name.plan.json" 2> "$out/json/$name.plan.err" \
    || echo "FAILED (exit $?): plan $name" | tee -a "$out/summary.txt"
  for decide in ${VYRE_GRAPHS_DECIDE:-model fuse}; do
    tag="$name.$decide"
    timeout 300 "$bin" run "$f" --backend cuda --both --repeat "${VYRE_GRAPHS_REPEAT:-30}" \
      --decide "$decide" --fuel 1099511627776 --timeout 5000 --json \
      > "$out/json/$tag.run.json" 2> "$out/json/$tag.run.err" \
      || echo "FAILED (exit $?): run $tag" | tee -a "$out/summary.txt"
    python3 - "$out/json/$tag.run.json" "$tag" <<'PY' | tee -a "$out/summary.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]:30} no report: {e}"); sys.exit()
forms = {x["form"]: x for x in r["forms"]}
def med(name):
    x = forms.get(name) or {}
    if x.get("refused"):
        return f"{name} refused"
    t = (x.get("device_ms") or {}).get("median_ms")
    ok = "verified" if x.get("verified") else "MISMATCH"
    t = f"{t:.4f} ms" if t is not None else "no time"
    return f"{name} {t} ({x.get('launches', 0)} launches, {ok})"
def gate(g, who):
    if not g:
        return f"{who} -"
    return (f"{who} {g['speedup']:.2f}x [{g['speedup_low']:.2f}..{g['speedup_high']:.2f}] "
            f"{g['verdict']}")
t = r.get("vyre_target") or {}
target = "vyre target ok" if t.get("ok") else f"vyre target {t.get('code')}"
print(f"{sys.argv[2]:30} {med('separate')} | {med('vyrescope')} | {med('vyre')} | "
      f"{gate(r.get('gate'), 'ours')} | {gate(r.get('vyre_gate'), 'vyre')} | {target}")
PY
  done
done
tar czf "$out/vyre-graphs-json.tgz" -C "$out" json
