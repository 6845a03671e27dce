#!/usr/bin/env bash
# Everything a session with a lent GPU runs, in phases, each logging under
# $OUT (what the device tool brings back: at most 8 files, so each phase
# writes one log, and the goldens travel as one archive). Build dir build-gpu
# stays on the warm machine between calls. Usage (device `run`, carry
# [".gpu-kit"], made here first by scripts/gpu-kit.sh):
#   bash scripts/gpu-session.sh build test                     # call 1 (< 10 min)
#   bash scripts/gpu-session.sh golden bench-kernels           # call 2
#   bash scripts/gpu-session.sh bench-static                   # call 3
#   bash scripts/gpu-session.sh bench-e2e bench-spec           # call 4
# Then copy the logs into docs/results/ and the numbers, with these commands,
# into docs/benchmarks.md.
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
  header "cmake -S . -B $B -G Ninja -DCMAKE_PREFIX_PATH=\"$PWD/.gpu-kit;$torch_prefix\" -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_BUILD_GUI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build $B -j$JOBS"
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu-kit;$torch_prefix" \
    -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_BUILD_GUI=OFF \
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
run() { echo "\$ $*"; "$@"; }
phase_bench-kernels() {  # part 1 kernels + tree attention, each vs a D2D copy in the same run
  header "bench_cuda --no-static; bench_tree_attention"
  run "$B/bench/bench_cuda" --no-static && run "$B/bench/bench_tree_attention"
}
phase_bench-static() {  # STATIC: fused step vs LibTorch on the device vs the CPU reference
  header "bench_cuda --static"
  run "$B/bench/bench_cuda" --static
}
phase_bench-e2e() {  # trie vs batch beam search, 0.85B random Llama (trie paper Table 1 columns)
  header "bench_torch --preset llama-0.8b --device cuda"
  run "$B/bench/bench_torch" --preset llama-0.8b --device cuda --attention tree_kernel --prompt 2048 --new 128 --beams 3,9,15 &&
  run "$B/bench/bench_torch" --preset llama-0.8b --device cuda --attention auto --prompt 2048 --new 128 --beams 3,9,15 &&
  run "$B/bench/bench_torch" --preset llama-0.8b --device cuda --attention dense --prompt 2048 --new 128 --beams 3,9,15
}
phase_bench-spec() {  # DSBD vs beam sampling, lookahead baseline vs trie, on the device
  header "bench_dsbd_torch / bench_lookahead_torch --device cuda"
  run "$B/bench/bench_dsbd_torch" --device cuda --layers 8 --hidden 1024 --vocab 32000 --csv "$OUT/dsbd_points.csv" &&
  run "$B/bench/bench_lookahead_torch" --device cuda --layers 8 --hidden 1024 --vocab 32000 --new 256
}
status=0
for p in "$@"; do
  case "$p" in
    build|test|golden|bench-kernels|bench-static|bench-e2e|bench-spec) ;;
    *) echo "gpu-session: unknown phase $p (build|test|golden|bench-kernels|bench-static|bench-e2e|bench-spec)" >&2; exit 2 ;;
  esac
  echo "== phase $p"
  if ! "phase_$p" >"$OUT/$p.log" 2>&1; then
    echo "phase $p FAILED (see $OUT/$p.log)"; status=1
  fi
  tail -n 15 "$OUT/$p.log"
done
exit $status
