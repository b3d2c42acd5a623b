#!/usr/bin/env bash
# Installs NVIDIA's ptxas 13.0.88 from the nvidia-cuda-nvcc PyPI wheel (CPU-only machines are
# fine) and prints the absolute path of the ptxas binary on stdout (nothing else).
# Usage in CI:  export VYRESCOPE_PTXAS="$(scripts/install-ptxas.sh)"
set -euo pipefail
PY=${PYTHON:-python3}
if ! "$PY" -m pip show nvidia-cuda-nvcc 2>/dev/null | grep -q '^Version: 13.0.88$'; then
  "$PY" -m pip install --quiet nvidia-cuda-nvcc==13.0.88 >&2
fi
loc=$("$PY" -m pip show -f nvidia-cuda-nvcc | awk '/^Location:/{print $2}')
rel=$("$PY" -m pip show -f nvidia-cuda-nvcc | awk '$1 ~ /\/bin\/ptxas$/ {print $1; exit}')
if [ -z "$rel" ] || [ ! -x "$loc/$rel" ]; then
  echo "install-ptxas: ptxas not found in the nvidia-cuda-nvcc wheel" >&2
  exit 1
fi
echo "$loc/$rel"
