#!/usr/bin/env bash
# Builds side by side on the fused kernels' timelines: per round, fixture and sync form,
# `run --megakernel --timeline --timeline-rounds 20` with each binary (the order rotates
# from round to round), then per build the kernel span (first record's start to last record's end,
# the instrumented run) and the plain kernel's median device time. Kernel spans move by
# tenths of a microsecond between rounds, device-time medians by up to 25 %, so the span
# decides an emitter change; every run is checked against the reference interpreter.
# Usage: [AB_ONLY="softmax ..."] [AB_ROUNDS=3] [AB_DIR=...] benches/gpu/dataflow_span_ab.sh BIN_A BIN_B [BIN_C ...]
# (labels a, b, c, ... in the order given)
set -uo pipefail
cd "$(dirname "$0")/../.."
BINS=("$@")
DIR=${AB_DIR:-${OUT:-/tmp/vyrescope-span-ab}}
ROUNDS=${AB_ROUNDS:-3}
LABELS=(a b c d e f)
mkdir -p "$DIR/txt"
F=fixtures/pipelines
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
side() { # round fixture sync label binary
  timeout 120 "$5" run "$F/$2.json" --backend cuda --megakernel --sync "$3" --timeline \
    --timeline-rounds 20 --verify --fuel 1099511627776 > "$DIR/txt/$2.$3.$4.r$1.txt" 2>&1 \
    || echo "FAILED (exit $?): $2 $3 $4 round $1"
}
ONLY=${AB_ONLY:-softmax stencil_halo4 reduce_normalize_2p20 stencil_halo4_2p20 hist_equalize_shared}
for r in $(seq 1 "$ROUNDS"); do
  for f in $ONLY; do
    for s in dataflow barrier; do
      n=${#BINS[@]}
      for i in $(seq 0 $((n - 1))); do
        j=$(((i + r) % n))
        side "$r" "$f" "$s" "${LABELS[$j]}" "${BINS[$j]}"
      done
    done
  done
done
python3 - "$DIR/txt" <<'PY'
import glob, os, re, statistics, sys
rows = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.txt"))):
    f, s, side, r = os.path.basename(p)[:-4].rsplit(".", 3)
    t = open(p).read()
    span = re.search(r"timeline: ([0-9.]+) ms", t)
    plain = re.search(r"vs plain ([0-9.]+) ms", t)
    if "FAILED" in t or "mismatch" in t.lower():
        print("PROBLEM", p)
    if span and plain:
        e = rows.setdefault((f, s), {}).setdefault(side, ([], []))
        e[0].append(float(span.group(1)) * 1e3)
        e[1].append(float(plain.group(1)) * 1e3)
j = lambda xs: ", ".join(f"{x:.2f}" for x in xs)
k = lambda xs: ", ".join(f"{x:.1f}" for x in xs)
print(f'{"fixture":22} {"sync":9} {"build":5} {"kernel span (us)":24} plain device time (us)')
for (f, s), v in sorted(rows.items()):
    for side in sorted(v):
        span, plain = v[side]
        print(f"{f:22} {s:9} {side:5} {j(span):24} {k(plain)}")
PY
