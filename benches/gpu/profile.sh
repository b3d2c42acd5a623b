#!/usr/bin/env bash
# The GPU check of `vyrescope profile` (issue 50), for a machine with a GPU. From the
# repository root:  benches/gpu/profile.sh [BIN] [OUT_DIR]
# Checks, per source (instrumented, pc):
#   1. profile_chain_f32: at least 70% of the cycles/samples land on the loop (body[3] and the
#      statements nested in it: the loop statement's total share);
#   2. profile_copy_f32 (pc only): the hottest statement's top stall reason is a memory stall;
#   3. every fixtures/programs/*.json (pc only): 0 unmapped samples.
# A source the card or this build does not allow is reported as such (the profile names the
# source it fell back to) and counts as a failure of that check, never as a pass.
set -uo pipefail
BIN=${1:-target/release/vyrescope}
DIR=${2:-/tmp/vyrescope-profile}
mkdir -p "$DIR"
failed=0
check() { # label json-file python-condition-on-profile-p
  python3 - "$1" "$2" "$3" <<'PY' || failed=1
import json, sys
label, path, cond = sys.argv[1:]
MEMORY = {"long_scoreboard", "lg_throttle", "mio_throttle", "tex_throttle", "drain",
          "memory_dependency", "memory_throttle", "imc_miss"}
try:
    v = json.load(open(path))
except Exception as e:
    print(f"FAIL {label}: no profile ({e})"); sys.exit(1)
if "profiles" not in v:
    print(f"FAIL {label}: {v.get('error')} / Fix: {v.get('fix')}"); sys.exit(1)
p = v["profiles"][0]
want = label.split(":")[0]
if p["source"] != want:
    print(f"FAIL {label}: the profile came from `{p['source']}`, not `{want}`"); sys.exit(1)
st = {s["node"]: s for s in p["statements"]}
ok = eval(cond, {"p": p, "st": st, "MEMORY": MEMORY})
print(("ok  " if ok else "FAIL") + f" {label}: total {p['total']} {p['unit']}, unmapped {p['unmapped']}, "
      f"overhead {p.get('overhead')}")
sys.exit(0 if ok else 1)
PY
}
for src in instrumented pc; do
  "$BIN" profile benches/gpu/profile_chain_f32.json --source "$src" --json > "$DIR/chain.$src.json"
  check "$src:chain loop >= 70%" "$DIR/chain.$src.json" 'st.get("body[3]", {}).get("total_share", 0) >= 0.70'
done
"$BIN" profile benches/gpu/profile_copy_f32.json --source pc --json > "$DIR/copy.pc.json"
check "pc:copy top stall is memory" "$DIR/copy.pc.json" \
  'bool(p["statements"]) and bool(p["statements"][0]["stalls"]) and p["statements"][0]["stalls"][0][0] in MEMORY'
for f in fixtures/programs/*.json; do
  n=$(basename "$f" .json)
  "$BIN" profile "$f" --source pc --json > "$DIR/$n.pc.json"
  check "pc:$n 0 unmapped" "$DIR/$n.pc.json" 'p["unmapped"] == 0'
done
exit $failed
