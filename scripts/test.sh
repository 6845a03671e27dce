#!/usr/bin/env bash
# README command 2: build everything and run the whole test suite with ctest.
# CUDA tests report "skipped" (exit 77) on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
# The engines the engine checks run (seconds when cached, about 7 minutes the first time).
bash scripts/install-engines.sh
# The peer and Python tests are required here, not left to detection: a broken
# peer environment (scripts/install-deps.sh) fails them instead of hiding them.
# The project's default optimisation (-O2) without debug information: -g made the
# LibTorch-heavy files a third slower to compile and the test binaries slower to
# link, and no test reads it (configure a build of your own for a debugger).
cmake -S . -B "$BUILD" -G Ninja -DTRIESCOPE_WERROR=ON -DTRIESCOPE_PEER_TESTS=ON -DTRIESCOPE_PYTHON_TESTS=ON -DTRIESCOPE_ENGINE_TESTS=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_CUDA_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)"
