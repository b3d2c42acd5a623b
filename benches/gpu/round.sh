#!/usr/bin/env bash
# The GPU checks of one working round, in one device call (see BENCHMARKS.md): selftest
# (fixtures, pipelines in the default form and fused with grid barriers, inspector-vs-run
# verdicts, timeline fingerprints, fault recovery), `run GRAPH --both` on the vyre graph
# fixtures, the pipeline and Program fuzzers, `--decide measure` on reduce_normalize at 2^20,
# softmax through `run` and through the inspector's `r`, the saturating fixture and vyre's op
# catalogue on CUDA.
# Usage, from the repository root:  benches/gpu/round.sh [VYRESCOPE_BINARY] [OUT_DIR]
set -uo pipefail
BIN=${1:-./target/release/vyrescope}
DIR=${2:-${OUT:-/tmp/vyrescope-round}}
mkdir -p "$DIR"
# Tune caches and configs go to a private HOME, never the machine's.
export HOME=$(mktemp -d) XDG_CACHE_HOME= XDG_CONFIG_HOME=
. "$(dirname "$0")/step.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$DIR/gpu.txt" 2>&1
cat "$DIR/gpu.txt"
P=fixtures/pipelines/softmax.json
# Most important first: a call cut short by its time limit still returns what ran.
# Fixtures and pipelines (default form, then fused with grid barriers), inspector-vs-run, faults.
step selftest 300 "$BIN" selftest
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
# The pipeline fuzzer in the default form (the issue's 1000), then fused with grid barriers
# (where smaller steps are packed), then the Program fuzzer.
step fuzz_pipelines 300 "$BIN" selftest --fuzz-pipelines 1000 --seed 7 --out "$DIR/fuzz_pipelines"
step fuzz_pipelines_barrier 200 "$BIN" selftest --fuzz-pipelines 300 --seed 5001 --sync barrier --out "$DIR/fuzz_pipelines_barrier"
step fuzz_programs 200 "$BIN" selftest --fuzz 1000 --seed 7 --out "$DIR/fuzz_programs"
# The one pipeline the default plan ran slower than separate launches: the model's choice,
# then --decide measure (timing the candidate forms), then the model again (plan cache hit).
W=$(mktemp -d); cp -r fixtures/pipelines/programs "$W/programs"
python3 benches/gpu/scale.py fixtures/pipelines/reduce_normalize.json "$W/reduce_normalize_2e20.json" 1048576
for d in model measure model; do
  step "reduce_normalize_2e20_$d" 150 "$BIN" run "$W/reduce_normalize_2e20.json" --backend cuda --both \
    --repeat 30 --decide $d --fuel 1099511627776 --timeout 5000 --json
done
step run_softmax 60 "$BIN" run $P --backend cuda --both --repeat 20
step tui_softmax_run 90 "$BIN" tui $P --keys "4 r" --snapshot "$DIR/tui_softmax_run.txt"
step saturating_int 60 "$BIN" run fixtures/programs/saturating_int.json --backend cuda
if "$BIN" selftest --help | grep -q -- --vyre-catalog; then
  step vyre_catalog_cuda 300 "$BIN" selftest --vyre-catalog --backend cuda
fi
