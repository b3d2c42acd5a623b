#!/usr/bin/env bash
# The GPU checks of one working round, in one device call (see BENCHMARKS.md):
# selftest in both sync forms (fixtures, pipelines, inspector-vs-run verdicts, timeline
# fingerprints, fault recovery), softmax through `run` and through the inspector's `r`,
# vyre's op catalogue on CUDA, the saturating fixture, and GPU vs offline tuning of a
# Program written for its own workgroup size, and `run GRAPH --both` on the vyre graph fixtures.
# Usage, from the repository root:  benches/gpu/round.sh [VYRESCOPE_BINARY] [OUT_DIR]
set -uo pipefail
BIN=${1:-./target/release/vyrescope}
DIR=${2:-${OUT:-/tmp/vyrescope-round}}
mkdir -p "$DIR"
# Tune caches and configs go to a private HOME, never the machine's.
export HOME=$(mktemp -d) XDG_CACHE_HOME= XDG_CONFIG_HOME=
step() { # name, timeout seconds, command...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$limit" "$@" > "$DIR/$name.out" 2> "$DIR/$name.err"
  local rc=$?
  printf '%-28s rc=%-3s %6d ms\n' "$name" "$rc" $(( ($(date +%s%N) - t0) / 1000000 )) | tee -a "$DIR/summary.txt"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$DIR/gpu.txt" 2>&1
cat "$DIR/gpu.txt"
P=fixtures/pipelines/softmax.json
# Fixtures and pipelines (each pipeline in both sync forms), inspector-vs-run, faults.
step selftest 300 "$BIN" selftest
for s in barrier dataflow; do
  step run_softmax_$s 60 "$BIN" run $P --backend cuda --both --repeat 20 --sync $s
  step tui_softmax_run_$s 90 "$BIN" tui $P --sync $s --keys "4 r" --snapshot "$DIR/tui_softmax_run_$s.txt"
  step tui_softmax_timeline_$s 90 "$BIN" tui $P --sync $s --keys "r 8" --snapshot "$DIR/tui_softmax_timeline_$s.txt"
done
step saturating_int 60 "$BIN" run fixtures/programs/saturating_int.json --backend cuda
if "$BIN" selftest --help | grep -q -- --vyre-catalog; then
  step vyre_catalog_cuda 300 "$BIN" selftest --vyre-catalog --backend cuda
fi
R=fixtures/programs/reduce_sum_f32.json
step tune_reduce_gpu 120 "$BIN" tune $R --fresh
step tune_reduce_offline 120 "$BIN" tune $R --offline
step run_reduce_wg128 60 "$BIN" run $R --backend cuda --workgroup 128,1,1
step fuzz_pipelines 240 "$BIN" selftest --fuzz-pipelines 60 --seed 7 --out "$DIR/fuzz_pipelines"
step fuzz_pipelines_dataflow 240 "$BIN" selftest --fuzz-pipelines 60 --seed 7 --sync dataflow --out "$DIR/fuzz_pipelines_dataflow"
step fuzz_programs 240 "$BIN" selftest --fuzz 300 --seed 7 --out "$DIR/fuzz_programs"
# vyre's plan beside ours and separate launches (`run GRAPH --both`, feature vyre): for each
# graph fixture, three forms verified against the reference and timed in interleaved rounds,
# and vyre's own target-compile verdict; the JSON is DIR/both_<file>.json.
if "$BIN" check fixtures/vyre/graphs/named_chain.vgr > /dev/null 2>&1; then
  for g in fixtures/vyre/graphs/*.vgr fixtures/vyre/graphs/*.vmk; do
    n=both_$(basename "$g" | tr . _)
    step "$n" 120 "$BIN" run "$g" --backend cuda --both --repeat 20 --json
    cp "$DIR/$n.out" "$DIR/$n.json"
  done
fi
