#!/usr/bin/env bash
# The one configuration both README commands build with: -O2 without debug
# information (-g made the LibTorch-heavy files a third slower to compile and
# the test binaries slower to link; configure a build of your own for a
# debugger) and warnings as errors. quickstart.sh builds the CLI and the
# inspector of it, test.sh the rest, so command 2 compiles nothing command 1
# compiled. Arguments go on to cmake: test.sh's turn on the peer, Python and
# engine tests, which add tests and change no compile line.
# BUILD_DIR: the build folder (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B "${BUILD_DIR:-build}" -G Ninja -DTRIESCOPE_WERROR=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_CUDA_FLAGS_RELEASE="-O2 -DNDEBUG" "$@" >/dev/null
