#!/usr/bin/env bash
# Two builds of vyrescope, or one build with two sets of emitter flags, side by side on the
# GPU (e.g. before and after an emitter change): per fixture, ROUNDS interleaved rounds of `bench-kernel --repeat 20` with each binary (which
# goes first alternates), the first round of each verified against the reference
# interpreter; prints the median device time of each and the ratio B / A.
# Usage, from the repository root:  benches/gpu/ab.sh BIN_A BIN_B [OUT_DIR] [ROUNDS]
# BIN_A / BIN_B may carry bench-kernel flags, e.g. the versioned bounds checks against one
# check per access: benches/gpu/ab.sh target/release/vyrescope \
#   "target/release/vyrescope --version-bounds" /tmp/vab 5
set -euo pipefail
A=$1
B=$2
DIR=${3:-${OUT:-/tmp/vyrescope-ab}}
ROUNDS=${4:-3}
mkdir -p "$DIR"
CASES=(
  "stencil5_f32|--scale 16"
  "warp_scan_u32|--elements 67108864"
  "vadd_f32|--elements 67108864"
  "saxpy_f32|--elements 67108864"
  "reduce_sum_f32|--elements 67108864"
  "histogram_u8|--elements 67108864"
  "bounds_fast_path|"
)
failed=0
side() { # round fixture args label "binary [flags]"
  local check="--no-verify --full-reps 0"
  [ "$1" = 1 ] && check="--full-reps 1"
  local bin flags
  read -r bin flags <<< "$5"
  # shellcheck disable=SC2086
  "$bin" bench-kernel "fixtures/programs/$2.json" $3 $flags $check --repeat 20 --json \
    > "$DIR/$2.$4.r$1.json" || { echo "FAILED: $2 $4 round $1" >&2; failed=1; }
}
for r in $(seq 1 "$ROUNDS"); do
  for c in "${CASES[@]}"; do
    IFS='|' read -r k args <<< "$c"
    if [ $((r % 2)) = 1 ]; then side "$r" "$k" "$args" a "$A"; side "$r" "$k" "$args" b "$B"
    else side "$r" "$k" "$args" b "$B"; side "$r" "$k" "$args" a "$A"; fi
  done
done
names=$(printf '%s\n' "${CASES[@]}" | cut -d'|' -f1 | tr '\n' ' ')
python3 - "$DIR" "$ROUNDS" $names <<'PY'
import json, statistics, sys, pathlib
d, rounds, names = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
print("| fixture | A ms | B ms | B / A | per-round B / A | regs A/B | verified A/B |")
print("|---|---:|---:|---:|---|---|---|")
for k in names:
    per, regs, ok = {"a": [], "b": []}, {}, {}
    for side in "ab":
        for r in range(1, rounds + 1):
            try:
                kb = json.loads((d / f"{k}.{side}.r{r}.json").read_text())["kernel"]
            except Exception:
                per[side].append(float("nan"))
                continue
            per[side].append(kb["device_ms"]["median_ms"])
            regs[side] = kb["regs"]
            if r == 1:
                ok[side] = "ok" if (kb.get("parity") or {}).get("passed") else "FAIL"
    ma, mb = statistics.median(per["a"]), statistics.median(per["b"])
    rr = ", ".join(f"{b / a:.3f}" for a, b in zip(per["a"], per["b"]))
    print(f"| {k} | {ma:.4f} | {mb:.4f} | {mb / ma:.3f} | {rr} | {regs.get('a')}/{regs.get('b')} "
          f"| {ok.get('a')}/{ok.get('b')} |")
PY
exit "$failed"
