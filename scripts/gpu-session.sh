#!/usr/bin/env bash
# Everything a session with a lent GPU runs, in phases, each logging under
# $OUT (what the device tool brings back: at most 8 files, so each phase
# writes one log, and the goldens travel as one archive). Build dir build-gpu
# stays on the warm machine between calls. Usage (device `run`, carry
# [".gpu-kit"], made here first by scripts/gpu-kit.sh):
#   bash scripts/gpu-session.sh build test          # one call
#   bash scripts/gpu-session.sh golden bench        # a second call
# Every log starts with the command, the GPU, the driver and the commit.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
B=build-gpu
JOBS=$(nproc)
header() {
  echo "# $*"
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/# gpu: /'
  nvcc --version | tail -1 | sed 's/^/# nvcc: /'
}
phase_build() {
  local torch_prefix
  torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  header "cmake -S . -B $B -G Ninja -DCMAKE_PREFIX_PATH=\"$PWD/.gpu-kit;$torch_prefix\" -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_BUILD_GUI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build $B -j$JOBS"
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu-kit;$torch_prefix" \
    -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_BUILD_GUI=OFF \
    -DTRIESCOPE_BUILD_TESTS=ON -DTRIESCOPE_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
  cmake --build "$B" -j"$JOBS"
}
phase_test() {
  header "cd $B && ctest -L cuda --output-on-failure; ctest --output-on-failure -j$JOBS -LE gui"
  (cd "$B" && ctest -L cuda --output-on-failure -V; ctest --output-on-failure -j"$JOBS" -LE gui)
}
phase_golden() {
  # tests/golden/record_goldens.cmake: every sample whose models are synthetic,
  # each diffed against the CPU reference before any is kept; then the ctest
  # check over the recorded set. The goldens travel back as one archive:
  # unpack it into traces/golden/ here and fill in the README's table.
  header "cmake -DTRIESCOPE=$B/app/triescope -DSAMPLES_DIR=samples -DGOLDEN_DIR=$B/golden -DWORK_DIR=$B/golden_record -P tests/golden/record_goldens.cmake"
  rm -rf "$B/golden" && mkdir -p "$B/golden"
  cmake -DTRIESCOPE="$B/app/triescope" -DSAMPLES_DIR=samples -DGOLDEN_DIR="$B/golden" \
        -DWORK_DIR="$B/golden_record" -P tests/golden/record_goldens.cmake || return 1
  tar -C "$B/golden" -czf "$OUT/goldens.tar.gz" . &&
  cmake -DTRIESCOPE="$B/app/triescope" -DSAMPLES_DIR=samples -DGOLDEN_DIR="$B/golden" \
        -DWORK_DIR="$B/golden_work" -P tests/golden/golden_diff.cmake
}
phase_bench() {
  header "$B/bench/bench_cuda; $B/bench/bench_torch --device cuda (see docs/benchmarks.md)"
  "$B/bench/bench_cuda"
}
status=0
for p in "$@"; do
  case "$p" in
    build|test|golden|bench) ;;
    *) echo "gpu-session: unknown phase $p (build|test|golden|bench)" >&2; exit 2 ;;
  esac
  echo "== phase $p"
  if ! "phase_$p" >"$OUT/$p.log" 2>&1; then
    echo "phase $p FAILED (see $OUT/$p.log)"; status=1
  fi
  tail -n 15 "$OUT/$p.log"
done
exit $status
