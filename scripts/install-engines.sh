#!/usr/bin/env bash
# The engines that python/triescope/engines checks (docs/engines.md, ctest label
# engines), into the virtual environment of scripts/install-deps.sh (run it
# first): EAGLE's and Medusa's sdists and llama-cpp-python's dependencies,
# pinned by sha256 (scripts/requirements-engines.txt), and llama-cpp-python
# 0.3.36 (llama.cpp itself, CPU only) built here from its sdist (sha256 below)
# with GGML_NATIVE=OFF (portable: no -march=native) and without its multimodal
# library (LLAVA_BUILD=OFF). The wheel and llama.cpp's C headers (for the C++
# model, core/model/llama_cpp) are kept in .cache/llama-cpp and in a per-user
# cache, so another checkout on this machine installs in seconds; the build
# takes about 7 minutes on 2 cores. scripts/test.sh runs this.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV="${TRIESCOPE_VENV:-$REPO/.cache/venv}"
[ -x "$VENV/bin/pip" ] || { echo "install-engines: $VENV is missing: run scripts/install-deps.sh first" >&2; exit 1; }
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes -r "$REPO/scripts/requirements-engines.txt"
VERSION=0.3.36
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LOCAL="$REPO/.cache/llama-cpp"
SHARED="${XDG_CACHE_HOME:-$HOME/.cache}/triescope/llama-cpp-$VERSION"
mkdir -p "$LOCAL"

installed=$("$VENV/bin/python" -c "import llama_cpp; print(llama_cpp.__version__)" 2>/dev/null || true)
have() { ls "$1"/llama_cpp_python-$VERSION-*.whl >/dev/null 2>&1 && [ -f "$1/include/llama.h" ]; }

if ! have "$LOCAL"; then
  if have "$SHARED"; then
    cp -r "$SHARED"/. "$LOCAL"/
  else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --no-build-isolation --no-binary=:all: -d "$work" "llama-cpp-python==$VERSION"
    sdist="$work/llama_cpp_python-$VERSION.tar.gz"
    echo "$SDIST_SHA256  $sdist" | sha256sum --check --quiet -
    echo "install-engines: building llama-cpp-python $VERSION from its sdist (several minutes on 2 cores)" >&2
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$VENV/bin/pip" wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$work/wheel" "$sdist"
    tar -xzf "$sdist" -C "$work"
    src="$work/llama_cpp_python-$VERSION/vendor/llama.cpp"
    mkdir -p "$work/out/include"
    cp "$src"/include/llama.h "$src"/ggml/include/ggml.h "$src"/ggml/include/ggml-cpu.h "$src"/ggml/include/ggml-backend.h \
       "$src"/ggml/include/ggml-alloc.h "$src"/ggml/include/ggml-opt.h "$src"/ggml/include/gguf.h "$work/out/include/"
    cp "$work"/wheel/llama_cpp_python-$VERSION-*.whl "$work/out/"
    mkdir -p "$SHARED"
    cp -r "$work/out"/. "$SHARED"/
    cp -r "$work/out"/. "$LOCAL"/
  fi
fi
if [ "$installed" != "$VERSION" ]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall "$LOCAL"/llama_cpp_python-$VERSION-*.whl
fi
"$VENV/bin/python" -c "import llama_cpp, eagle.model.utils, medusa.model.utils" \
  || { echo "install-engines: the engines (llama_cpp, eagle, medusa) do not import in $VENV" >&2; exit 1; }
