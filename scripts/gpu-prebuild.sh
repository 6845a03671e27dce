#!/usr/bin/env bash
# Builds the CUDA binaries for a lent GPU here (nvcc 13.0, sm_90 = H100/H200,
# Release, no LibTorch/GUI/Python) and copies them into .gpu-bin/, which the
# device `run` tool carries (name ".gpu-bin" in `carry`); then on the device:
#   bash scripts/gpu-session.sh            (the default phases; see its header)
# The binaries look for samples under the path they were built from; the
# session links that path to its checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build-gpu}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_WITH_TORCH=OFF -DTRIESCOPE_BUILD_GUI=OFF \
  -DTRIESCOPE_BUILD_PYTHON=OFF -DTRIESCOPE_SANITIZE_TESTS=OFF -DTRIESCOPE_BUILD_TESTS=ON -DTRIESCOPE_BUILD_BENCH=ON >/dev/null
targets="triescope triescope_tests_cuda bench_cuda bench_tree_attention"
cmake --build "$B" --target $targets -j"$(nproc)"
rm -rf .gpu-bin && mkdir -p .gpu-bin
cp "$B/app/triescope" "$B/tests/cuda/triescope_tests_cuda" "$B/bench/bench_cuda" "$B/bench/bench_tree_attention" .gpu-bin/
strip .gpu-bin/*
# What every session log's header names (scripts/gpu-session.sh): the commit
# (and whether the tree had uncommitted changes), the toolkit, the date.
dirty=""
[ -z "$(git status --porcelain)" ] || dirty=" with uncommitted changes"
{
  echo "source_dir $PWD"
  echo "commit $(git rev-parse --short HEAD)$dirty"
  echo "nvcc $("$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" --version | sed -n 's/.*release \([0-9.]*\), \(V[0-9.]*\).*/\1 (\2)/p')"
  echo "built $(date -u +%FT%TZ) in $B (Release, sm_90)"
} >.gpu-bin/BUILT_FROM
cat .gpu-bin/BUILT_FROM
du -sh .gpu-bin
