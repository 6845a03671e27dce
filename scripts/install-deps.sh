#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12's packages.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git python3 python3-venv \
  python3-torch python3-numpy python3-yaml python3-requests python3-typing-extensions \
  nlohmann-json3-dev catch2 libbenchmark-dev \
  libtorch-dev \
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev \
  libgraphviz-dev \
  xvfb xauth >/dev/null
# LibTorch (C++ and Python) calls BLAS through the libblas.so.3 alternative; OpenBLAS
# takes it over from the reference BLAS: 6-11x faster decoding (docs/benchmarks.md, "Beside Hugging Face").
$SUDO apt-get install -y -qq --no-install-recommends libopenblas0-pthread >/dev/null

# The Python peers (Hugging Face transformers, tokenizers, safetensors, gguf) in
# a virtual environment over Debian's torch and numpy; pinned, no CUDA wheels.
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV="${TRIESCOPE_VENV:-$REPO/.cache/venv}"
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$REPO/scripts/requirements-peer.txt"
"$VENV/bin/python" -c "import torch, transformers, tokenizers, safetensors, gguf" \
  || { echo "install-deps: the Python peer environment in $VENV does not import" >&2; exit 1; }
echo "install-deps: done"
