#!/usr/bin/env bash
# Every fixture kernel worth timing against its nvcc -O3 mirror (benches/gpu/kernels.cu), side
# by side in one run on the device machine, in interleaved rounds (see BENCHMARKS.md).
#
# Usage, from the repository root:
#   benches/gpu/kernels.sh [VYRESCOPE_BINARY] [OUT_DIR] [ROUNDS]
# Defaults: target/release/vyrescope, $OUT (or /tmp/vyrescope-kernels), 3 rounds.
# Needs nvcc (sm_90, C++17, libcu++), cuobjdump and python3. Writes per round and kernel
# OUT_DIR/rN/nvcc_K.json and OUT_DIR/rN/vs_K.json, the register counts of both sides, the
# SASS of both sides (OUT_DIR/sass/), and prints the markdown table (table.py --kernels).
# Round 1 verifies every vyrescope result against the reference interpreter (the matmul on a
# sample of its workgroups) and every nvcc result on the CPU; later rounds only time. A
# failing step is reported (OUT_DIR/failures.txt) and the rest keeps going; the exit status
# is 1 when anything failed.
set -euo pipefail
BIN=${1:-target/release/vyrescope}
DIR=${2:-${OUT:-/tmp/vyrescope-kernels}}
ROUNDS=${3:-3}
REPS=20
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR/sass"
: > "$DIR/failures.txt"
failed=0
fail() {
  echo "FAILED: $*" >&2
  echo "$*" >> "$DIR/failures.txt"
  failed=1
}

# fixture | vyrescope size options | reference check in round 1
KERNELS=(
  "histogram_u8|--elements 67108864|"
  "histogram_u8_relaxed|--elements 67108864|"
  "warp_scan_u32|--elements 67108864|"
  "matmul_tiled_f32|--scale 8|--sample 64"
  "stencil5_f32|--scale 16|"
  "atomics_mixed|--elements 4194304|"
  "atomics_mixed_relaxed|--elements 4194304|"
)

NVCC_OK=1
if ! nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o "$DIR/kernels" "$HERE/kernels.cu" \
    > "$DIR/nvcc_build.txt" 2>&1; then
  fail "nvcc could not build kernels.cu (see $DIR/nvcc_build.txt)"
  NVCC_OK=0
fi
if [ "$NVCC_OK" = 1 ]; then
  cuobjdump --dump-resource-usage "$DIR/kernels" > "$DIR/nvcc_resources.txt" 2>&1 \
    || fail "cuobjdump --dump-resource-usage (see $DIR/nvcc_resources.txt)"
  cuobjdump -sass "$DIR/kernels" > "$DIR/sass/nvcc.sass" 2>&1 || fail "cuobjdump -sass of the nvcc binary"
fi

# vyrescope's side of the SASS: its PTX assembled by the same toolkit's ptxas.
for entry in "${KERNELS[@]}"; do
  IFS='|' read -r k _ _ <<< "$entry"
  if "$BIN" emit "fixtures/programs/$k.json" --sm 90 -o "$DIR/sass/$k.ptx" > /dev/null 2>&1 \
      && ptxas -O3 -arch=sm_90 "$DIR/sass/$k.ptx" -o "$DIR/sass/$k.cubin" > /dev/null 2>&1; then
    cuobjdump -sass "$DIR/sass/$k.cubin" > "$DIR/sass/$k.sass" 2>&1 || fail "cuobjdump -sass $k"
  else
    fail "emit + ptxas of $k for the SASS listing"
  fi
done

nvcc_side() { # round kernel
  [ "$NVCC_OK" = 1 ] || return 0
  "$DIR/kernels" "$REPS" "$2" > "$DIR/r$1/nvcc_$2.json" 2> "$DIR/r$1/nvcc_$2.err" \
    || fail "nvcc $2 round $1 (see $DIR/r$1/nvcc_$2.err)"
  if grep -q '"verified": false' "$DIR/r$1/nvcc_$2.json"; then
    fail "nvcc $2 round $1 computed a wrong result (see $DIR/r$1/nvcc_$2.json)"
  fi
}

vyrescope_side() { # round kernel size-options check-options
  local check
  if [ "$1" = 1 ]; then check="--full-reps 1 $4"; else check="--no-verify --full-reps 0"; fi
  # shellcheck disable=SC2086 # the option strings are word lists
  local rc=0
  "$BIN" bench-kernel "fixtures/programs/$2.json" $3 $check --repeat "$REPS" --json \
    > "$DIR/r$1/vs_$2.json" 2> "$DIR/r$1/vs_$2.err" || rc=$?
  # Exit 1 after printing JSON: the GPU result differs from the interpreter's.
  if [ "$rc" != 0 ]; then
    fail "vyrescope $2 round $1 exited $rc (see $DIR/r$1/vs_$2.json and vs_$2.err)"
  fi
}

for r in $(seq 1 "$ROUNDS"); do
  mkdir -p "$DIR/r$r"
  for entry in "${KERNELS[@]}"; do
    IFS='|' read -r k size check <<< "$entry"
    # Interleaved: which side goes first alternates with the round.
    if [ $((r % 2)) = 1 ]; then
      nvcc_side "$r" "$k"
      vyrescope_side "$r" "$k" "$size" "$check"
    else
      vyrescope_side "$r" "$k" "$size" "$check"
      nvcc_side "$r" "$k"
    fi
  done
done

python3 "$HERE/table.py" --kernels "$DIR" "$ROUNDS" || fail "table.py"
if [ -s "$DIR/failures.txt" ]; then
  echo
  echo "Failures:"
  cat "$DIR/failures.txt"
fi
exit "$failed"
