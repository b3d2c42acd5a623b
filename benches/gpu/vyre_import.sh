#!/usr/bin/env bash
# The imported vyre fixtures on the GPU (a build with `--features vyre`): every supported
# fixtures/vyre/*.vyre file and its `vyre_ir` text twin runs with `run --backend cuda --verify`,
# so the kernel vyrescope emits for the imported Program is checked against the reference
# interpreter on the imported `run` section (grid_sync_u32 needs a cooperative launch).
# Usage: benches/gpu/vyre_import.sh [BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/release/vyrescope}"
failed=0
for f in fixtures/vyre/*.vyre fixtures/vyre/*.vyre.txt; do
  case "$f" in *unsupported*) continue ;; esac
  echo "== $f"
  if ! "$bin" run "$f" --backend cuda --verify; then
    echo "FAILED: $f"
    failed=1
  fi
done
exit "$failed"
