#!/usr/bin/env bash
# README command 2: build everything and run the whole test suite with ctest.
# CUDA tests report "skipped" (exit 77) on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DTRIESCOPE_WERROR=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)"
