#!/usr/bin/env bash
# Everything a session with a lent GPU runs, in phases. Each phase is
# time-boxed (a slow one cannot eat the others) and writes one log under $OUT
# (what the device tool brings back: at most 8 files, so the goldens travel as
# one archive). A lent GPU comes with about 15 minutes in all and a minute per
# start, so the binaries are built here first (scripts/gpu-prebuild.sh, about
# 4 minutes on 2 cores with ccache warm) and carried as .gpu-bin; only the
# LibTorch benches are built there (phase build-torch, needs .gpu-kit from
# scripts/gpu-kit.sh) in the background while the other phases run. Usage,
# one device `run` (carry [".gpu-bin", ".gpu-kit"]), about 8 minutes:
#   bash scripts/gpu-session.sh build-torch test golden bench-kernels bench-attention bench-static bench-e2e bench-hf sanitize
# Then copy the logs into docs/results/ and the numbers, with these commands,
# into docs/benchmarks.md. Every log starts with the command, the GPU, the
# driver and the commit. Rehearsed here (no GPU): each binary says so and
# exits 77, each phase still logs, is time-boxed and reports its failure.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
BIN=${GPU_SESSION_BIN:-.gpu-bin}
T0=$(date +%s)

header() {
  echo "# $*"
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); binaries: $(tr '\n' ' ' <"$BIN/BUILT_FROM" 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/# gpu: /'
  echo "# host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
}
# The carried binaries read samples from the path they were built in: link it here.
link_source_dir() {
  local built
  built=$(sed -n 's/^source_dir //p' "$BIN/BUILT_FROM" 2>/dev/null)
  if [ -n "$built" ] && [ ! -e "$built" ]; then
    mkdir -p "$(dirname "$built")" && ln -s "$PWD" "$built"
  fi
}
# box SECONDS CMD...: the command, killed after SECONDS (exit 124 then).
box() {
  local s=$1
  shift
  echo "\$ timeout $s $*"
  timeout --kill-after=10 "$s" "$@"
}

phase_test() {  # every CUDA kernel test on the device
  header "triescope_tests_cuda (all kernel tests)"
  box 180 "$BIN/triescope_tests_cuda"
}
phase_golden() {  # goldens recorded with --backend cuda, each diffed against the CPU first; one archive back
  header "cmake -DTRIESCOPE=$BIN/triescope -DSAMPLES_DIR=samples -DGOLDEN_DIR=golden-out -DWORK_DIR=golden-work -P tests/golden/record_goldens.cmake"
  rm -rf golden-out golden-work && mkdir -p golden-out
  box 240 cmake -DTRIESCOPE="$BIN/triescope" -DSAMPLES_DIR=samples -DGOLDEN_DIR=golden-out -DWORK_DIR=golden-work \
    -P tests/golden/record_goldens.cmake || return 1
  tar -C golden-out -czf "$OUT/goldens.tar.gz" . && ls -l golden-out
}
phase_bench-kernels() {  # mask, compaction, the b = 15 beam step (parts, old vs new selection), each vs a D2D copy
  header "bench_cuda --no-static --reps 20"
  box 150 "$BIN/bench_cuda" --no-static --reps 20
}
phase_bench-static() {  # STATIC at the paper setting: new vs old selection vs unconstrained vs the CPU reference
  header "bench_cuda --paper --reps 10"
  box 300 "$BIN/bench_cuda" --paper --reps 10
}
wait_torch_build() {
  local pid
  pid=$(cat /tmp/gpu-session-build-torch.pid 2>/dev/null)
  [ -n "$pid" ] && while kill -0 "$pid" 2>/dev/null; do sleep 2; done
  echo "## the LibTorch build (waited until $(( $(date +%s) - T0 )) s):"
  tail -n 3 "$TORCH_BUILD_LOG"
}
phase_bench-hf() {  # Hugging Face generate() beside trie and batch beam search on the GPU, the peer protocol, outputs asserted equal
  header "bench_hf.py --device cuda --layers 8 --hidden 1024 --vocab 32000 --prompt 2048 --new 64 --beams 15 --threads 8 --runs 3 --reps 1"
  wait_torch_build
  [ -x build-torch/app/triescope ] || return 1
  python3 -c 'import torch, transformers; print("# torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.version.cuda)'
  box 300 python3 bench/bench_hf.py --triescope build-torch/app/triescope --work /tmp/bench_hf --device cuda --layers 8 --hidden 1024 \
    --vocab 32000 --prompt 2048 --new 64 --beams 15 --threads 8 --runs 3 --reps 1 --warmup 1
}
phase_sanitize() {  # the new selection kernels under compute-sanitizer
  header "compute-sanitizer memcheck / racecheck: triescope_tests_cuda [beam],[constraint]"
  box 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/triescope_tests_cuda" "[beam],[constraint]"
  local a=$?
  box 90 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN/triescope_tests_cuda" "[beam]"
  local b=$?
  [ $a -eq 0 ] && [ $b -eq 0 ]
}
phase_bench-attention() {  # tree attention: trie vs batch layout, per-beam vs cascade kernel, vs a D2D copy
  header "triescope_tests_cuda [tree_attention]; bench_tree_attention --reps 20 --prompts 2048,8192 --beams 3,9,15"
  box 60 "$BIN/triescope_tests_cuda" "[tree_attention]"
  box 150 "$BIN/bench_tree_attention" --reps 20 --prompts 2048,8192 --beams 3,9,15
}
# bench_torch against the device's PyTorch LibTorch (CUDA), built in the
# background (12 of 16 cores) while the GPU phases run; bench-e2e waits for it.
TORCH_BUILD_LOG=/tmp/gpu-session-build-torch.log
phase_build-torch() {
  local torch_prefix
  torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  echo "# cmake -S . -B build-torch -DCMAKE_PREFIX_PATH=\"$PWD/.gpu-kit;$torch_prefix\" -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_CUDA_HOST=OFF ... && cmake --build build-torch --target bench_torch triescope -j12" >"$TORCH_BUILD_LOG"
  (timeout 420 bash -c "cmake -S . -B build-torch -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH='$PWD/.gpu-kit;$torch_prefix' \
    -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_BUILD_GUI=OFF -DTRIESCOPE_BUILD_PYTHON=OFF \
    -DTRIESCOPE_BUILD_TESTS=OFF -DTRIESCOPE_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build-torch --target bench_torch triescope -j12" \
    >>"$TORCH_BUILD_LOG" 2>&1; echo "build-torch exit $?" >>"$TORCH_BUILD_LOG") &
  echo $! >/tmp/gpu-session-build-torch.pid
}
phase_bench-e2e() {  # trie vs batch beam search end to end, 0.85B random Llama, b = 15, prompt 2,048
  header "bench_torch --preset llama-0.8b --device cuda --prompt 2048 --new 64 --beams 15, --attention auto, tree_kernel, then dense"
  wait_torch_build
  [ -x build-torch/bench/bench_torch ] || return 1
  box 200 build-torch/bench/bench_torch --preset llama-0.8b --device cuda --attention auto --prompt 2048 --new 64 --beams 15
  local a=$?
  box 200 build-torch/bench/bench_torch --preset llama-0.8b --device cuda --attention tree_kernel --prompt 2048 --new 64 --beams 15
  [ $? -eq 0 ] || a=1
  box 120 build-torch/bench/bench_torch --preset llama-0.8b --device cuda --attention dense --prompt 2048 --new 64 --beams 15
  [ $a -eq 0 ]
}

status=0
link_source_dir
for p in "$@"; do
  case "$p" in
    test|golden|bench-kernels|bench-static|sanitize|bench-attention|build-torch|bench-e2e|bench-hf) ;;
    *) echo "gpu-session: unknown phase $p (test|golden|bench-kernels|bench-static|sanitize|bench-attention|build-torch|bench-e2e|bench-hf)" >&2; exit 2 ;;
  esac
  echo "== phase $p at $(( $(date +%s) - T0 )) s"
  log="$OUT/$p.log"
  [ "$p" = build-torch ] && log=/tmp/gpu-session-phase-build-torch.log  # its output is in bench-e2e.log (8 files come back)
  [ "$p" = sanitize ] && log="$OUT/test.log"                             # appended to the tests' log, likewise
  if ! "phase_$p" >>"$log" 2>&1; then
    echo "phase $p FAILED (see $log)"; status=1
  fi
  tail -n 12 "$log"
done
echo "== done at $(( $(date +%s) - T0 )) s"
exit $status
