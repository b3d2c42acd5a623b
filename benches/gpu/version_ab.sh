#!/usr/bin/env bash
# The emitter's versioned bounds checks (one range test per group of accesses, an unchecked
# fast copy) against one check per access (the default; `--version-bounds` turns versioning on), side by side on the GPU:
# per fixture, ROUNDS interleaved rounds of `bench-kernel --repeat 20` for each form (which
# goes first alternates), the first round of each form verified against the reference
# interpreter; prints the median device time of each form and their ratio.
# Usage, from the repository root:  benches/gpu/version_ab.sh [BINARY] [OUT_DIR] [ROUNDS]
set -euo pipefail
BIN=${1:-target/release/vyrescope}
DIR=${2:-${OUT:-/tmp/vyrescope-version-ab}}
ROUNDS=${3:-3}
mkdir -p "$DIR"
CASES=(
  "stencil5_f32|--scale 16"
  "warp_scan_u32|--elements 67108864"
  "vadd_f32|--elements 67108864"
  "bounds_fast_path|"
)
failed=0
side() { # round fixture args form
  local flag="" check="--no-verify --full-reps 0"
  [ "$4" = versioned ] && flag="--version-bounds"
  [ "$1" = 1 ] && check="--full-reps 1"
  # shellcheck disable=SC2086
  "$BIN" bench-kernel "fixtures/programs/$2.json" $3 $flag $check --repeat 20 --json \
    > "$DIR/$2.$4.r$1.json" || { echo "FAILED: $2 $4 round $1" >&2; failed=1; }
}
for r in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r k args <<< "$c"
    if [ $((r % 2)) = 1 ]; then side "$r" "$k" "$args" versioned; side "$r" "$k" "$args" checked
    else side "$r" "$k" "$args" checked; side "$r" "$k" "$args" versioned; fi
  done
done
python3 - "$DIR" "$ROUNDS" <<'PY'
import json, statistics, sys, pathlib
d, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2])
print("| fixture | versioned ms | one check per access ms | versioned / checked | regs v/c | verified v/c |")
print("|---|---:|---:|---:|---|---|")
for k in ["stencil5_f32", "warp_scan_u32", "vadd_f32", "bounds_fast_path"]:
    med, regs, ok = {}, {}, {}
    for form in ["versioned", "checked"]:
        xs = []
        for r in range(1, rounds + 1):
            p = d / f"{k}.{form}.r{r}.json"
            try:
                kb = json.loads(p.read_text())["kernel"]
            except Exception:
                continue
            xs.append(kb["device_ms"]["median_ms"])
            regs[form] = kb["regs"]
            if r == 1:
                ok[form] = "ok" if (kb.get("parity") or {}).get("passed") else "FAIL"
        med[form] = statistics.median(xs) if xs else float("nan")
    print(f"| {k} | {med['versioned']:.4f} | {med['checked']:.4f} | {med['versioned']/med['checked']:.3f} "
          f"| {regs.get('versioned')}/{regs.get('checked')} | {ok.get('versioned')}/{ok.get('checked')} |")
PY
exit "$failed"
