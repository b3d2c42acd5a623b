#!/usr/bin/env bash
# Installs NVIDIA's nvdisasm 13.2.78 from the nvidia-cuda-nvdisasm PyPI wheel (CPU-only
# machines are fine; there is no 13.0 wheel, and 13.2.78 reads the cubins of ptxas 13.0.88
# for sm_75/80/90) and prints the absolute path of the nvdisasm binary on stdout (nothing else).
# Usage:  export VYRESCOPE_NVDISASM="$(scripts/install-nvdisasm.sh)"
set -euo pipefail
PY=${PYTHON:-python3}
if ! "$PY" -m pip show nvidia-cuda-nvdisasm 2>/dev/null | grep -q '^Version: 13.2.78$'; then
  "$PY" -m pip install --quiet nvidia-cuda-nvdisasm==13.2.78 >&2
fi
loc=$("$PY" -m pip show -f nvidia-cuda-nvdisasm | awk '/^Location:/{print $2}')
rel=$("$PY" -m pip show -f nvidia-cuda-nvdisasm | awk '$1 ~ /\/bin\/nvdisasm$/ {print $1; exit}')
if [ -z "$rel" ] || [ ! -f "$loc/$rel" ]; then
  echo "install-nvdisasm: nvdisasm not found in the nvidia-cuda-nvdisasm wheel" >&2
  exit 1
fi
chmod +x "$loc/$rel"
echo "$loc/$rel"
