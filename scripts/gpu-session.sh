#!/usr/bin/env bash
# Everything a session with a lent GPU runs, in phases (issue 33 item 6). The
# binaries are built here first (scripts/gpu-prebuild.sh: .gpu-bin, with
# BUILT_FROM naming their commit and nvcc) and the header-only build kit
# packed (scripts/gpu-kit.sh: .gpu-kit); only the LibTorch programs are built
# there (phase build-torch, in the background while the other phases run).
# One device `run`, carry [".gpu-bin", ".gpu-kit"], timeout_s 600:
#   bash scripts/gpu-session.sh
# runs the default phases, in this order, each time-boxed (seconds of the
# session's wall time; the whole fits one 10-minute device call with the
# machine's start and the transfers left over):
#   build-torch     0 (background, box 330 s): CUDA LibTorch build of bench_torch,
#                   the CLI and triescope_tests_cuda_torch
#   test          170  ctest label "cuda", entry by entry, on the carried binaries:
#                      triescope_tests_cuda (every case; its twin cases and the rest
#                      as two processes side by side) and the CLI's
#                      cli_run_backend_cuda{,_every_sample} (their cmake scripts);
#                      the untraced decodes (mask rows and logits on the device,
#                      captured steps) are a case of triescope_tests_cuda
#   sanitize      190  compute-sanitizer memcheck, racecheck and synccheck, seven
#                      processes side by side (box 180 each), over triescope_tests_cuda
#                      "[twin]" and "~[twin]~[trace]", and memcheck over the untraced
#                      decodes ("untraced*"): every kernel's twin
#                      cases ([twin]: masks, positions, KV gather, logits,
#                      selection, Philox, verifiers, STATIC, the tree-attention
#                      item kernel and the cascade) and the kernel unit tests
#   golden         40  every synthetic sample re-recorded with --backend cuda, each
#                      diffed against the CPU, then against traces/golden/
#   bench-kernels  40  bench_cuda --no-static --reps 20
#   test-torch     30  ctest label "cuda"'s LibTorch entry, triescope_tests_cuda_torch
#                      (the ctest entry in build-torch; waits for the build)
#   bench-e2e     190  bench_torch --preset llama-0.8b --device cuda, b = 15, P = 2,048,
#                      64 new tokens: trie and batch, phases and LibTorch ops per step,
#                      fp32 (box 110), then --dtype bf16 (box 80)
# = 660 s of boxes (on an H200 on 2026-11-28, docs/results/2026-11-28-h200: golden 4 s,
# bench-kernels 1, test-torch 3, bench-e2e 68; test and sanitize, one process at a time,
# did not fit their boxes, and side by side all finished within 173 s);
# GPU_SESSION_BUDGET_S (default 585) caps the sum: a phase gets at
# most what is left, and none starts with under 10 s left. Phases by name
# (a second call): bench-hf (HF generate beside trie and batch, 300; name
# build-torch before it unless build-torch/ is left from an earlier call on
# the same warm machine), bench-static (300), bench-attention (210), and any
# of the above.
# Every log (under $OUT; at most 8 files come back, so the goldens travel as
# one archive and appended phases share a log) starts with a header: the
# session's command and the phase's exact commands, the date, the commit the
# binaries were built from, the checkout's commit, the card, the driver, the
# CUDA version the driver supports and the toolkit's, and the host's load.
# Rehearsal without a GPU: GPU_SESSION_BIN=<dir> bash scripts/gpu-session.sh
# runs every phase; the carried binaries say they have no device and exit 77,
# the commands that need one (compute-sanitizer, --backend cuda, the CUDA
# LibTorch) are not run and their phase says "no GPU" and exits 77, and every
# phase still writes its log with the header. Exit: 0 all passed, 1 a phase
# failed, 77 none failed but some were skipped for want of a GPU.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-out}
mkdir -p "$OUT"
BIN=${GPU_SESSION_BIN:-.gpu-bin}
T0=$(date +%s)
SESSION_CMD="bash scripts/gpu-session.sh${*:+ $*}"
ARGS_GIVEN="$*"
BUDGET=${GPU_SESSION_BUDGET_S:-585}
DEFAULT_PHASES="build-torch test sanitize golden bench-kernels test-torch bench-e2e"
HAVE_GPU=0
nvidia-smi -L >/dev/null 2>&1 && HAVE_GPU=1

elapsed() { echo $(($(date +%s) - T0)); }
left() { echo $((BUDGET - $(elapsed))); }
# first_line CMD...: the command's first line of output, or "unavailable (why)".
first_line() {
  local o
  if o=$("$@" 2>&1); then echo "$o" | head -n 1; else echo "unavailable ($(echo "$o" | head -n 1))"; fi
}
nvcc_release() {
  local nvcc
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\), \(V[0-9.]*\).*/\1 (\2)/p' | head -n 1
}
# What the binaries were built from: scripts/gpu-prebuild.sh's BUILT_FROM
# ("commit <sha> [dirty]", "nvcc <release>"; an older one: a bare short sha).
built_from() {
  local f="$BIN/BUILT_FROM" commit nvcc
  [ -r "$f" ] || { echo "unknown: $f missing (not made by scripts/gpu-prebuild.sh)"; return; }
  commit=$(sed -n 's/^commit //p' "$f")
  [ -n "$commit" ] || commit=$(grep -v '^source_dir ' "$f" | head -n 1)
  nvcc=$(sed -n 's/^nvcc //p' "$f")
  echo "commit ${commit:-unknown}, nvcc ${nvcc:-unrecorded} ($f)"
}
# The checkout these logs were made in: scripts/gpu-kit.sh's record
# (.gpu-kit/CHECKOUT), checked against the files here by their fingerprint;
# git only without a record (the device copy's git metadata can be older than
# its files).
checkout_commit() {
  local rec=.gpu-kit/CHECKOUT c want now
  if [ -r "$rec" ] && [ -r "$rec.files" ]; then
    c="$(sed -n 's/^commit //p' "$rec"), $(sed -n 's/^tree //p' "$rec") (recorded $(sed -n 's/^recorded //p' "$rec") by scripts/gpu-kit.sh)"
    want=$(sed -n 's/^fingerprint //p' "$rec")
    now=$(bash scripts/tree-fingerprint.sh <"$rec.files")
    if [ "$now" = "$want" ]; then
      echo "$c; the files here match that record (fingerprint $now)"
    else
      echo "$c; the files here DIFFER from that record (fingerprint $now, recorded $want)"
    fi
    return
  fi
  c=$(git rev-parse --short HEAD 2>/dev/null) || { echo "unknown (no .gpu-kit/CHECKOUT and no git here)"; return; }
  [ -z "$(git status --porcelain 2>/dev/null)" ] || c="$c with uncommitted changes"
  echo "$c (git here, no .gpu-kit/CHECKOUT: this copy's git metadata may be older than its files)"
}
# header PHASE BUDGET COMMANDS: the lines every log starts with.
header() {
  echo "# session: $SESSION_CMD$([ -n "$ARGS_GIVEN" ] || echo ' (the default phases)') (phase $1, budget $2 s, started at $(elapsed) s)"
  echo "# command: $3"
  echo "# date: $(date -u +%FT%TZ)"
  echo "# binaries built from: $(built_from)"
  echo "# checkout: $(checkout_commit)"
  if [ "$HAVE_GPU" = 1 ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/# gpu (card, driver, memory): /'
    echo "# cuda: driver supports $(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1);" \
      "toolkit here nvcc $(nvcc_release)"
  else
    if command -v nvidia-smi >/dev/null; then
      echo "# gpu: none, no GPU here (nvidia-smi -L: $(first_line nvidia-smi -L))"
    else
      echo "# gpu: none, no GPU here (no nvidia-smi on the PATH)"
    fi
    echo "# cuda: no driver; toolkit here nvcc $(nvcc_release)"
  fi
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
# box SECONDS CMD...: the command, killed after SECONDS or what is left of the
# session's budget, whichever is less (exit 124 then).
box() {
  local s=$1 l
  shift
  l=$(left)
  [ "$l" -lt "$s" ] && s=$l
  if [ "$s" -lt 10 ]; then
    echo "\$ $(printf '%q ' "$@")"
    echo "# not run: ${s} s of the session's ${BUDGET} s budget left"
    return 124
  fi
  echo "\$ timeout $s $(printf '%q ' "$@")"
  timeout --kill-after=10 "$s" "$@"
}
# box_gpu SECONDS CMD...: box for a command that needs a GPU; without one it
# is shown, not run, and returns 77.
box_gpu() {
  if [ "$HAVE_GPU" = 1 ]; then
    box "$@"
    return
  fi
  shift
  echo "\$ $(printf '%q ' "$@")"
  echo "# no GPU here: not run (exit 77)"
  return 77
}
# worst RC...: 0 if all 0, else the first failure, else 77 if any skipped.
worst() {
  local r=0 c
  for c in "$@"; do
    if [ "$c" -ne 0 ] && [ "$c" -ne 77 ]; then return "$c"; fi
    [ "$c" -eq 77 ] && r=77
  done
  return $r
}

# in_parallel NAME:SECONDS:CMD... : each command boxed, all at once (the
# twin cases compute every shape's CPU twin, so one process a set keeps the
# GPU-only test binary inside its box), their outputs then shown in order.
in_parallel() {
  local spec name secs pids=() names=() rc rcs=()
  for spec in "$@"; do
    name=${spec%%:*}; spec=${spec#*:}; secs=${spec%%:*}; spec=${spec#*:}
    names+=("$name")
    (eval "box_gpu $secs $spec" >"/tmp/gpu-session-par-$name.log" 2>&1) &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"; rc=$?; rcs+=("$rc")
    echo "## ${names[$i]} (exit $rc)"; cat "/tmp/gpu-session-par-${names[$i]}.log"
  done
  worst "${rcs[@]}"
}
phase_test() {  # ctest label "cuda" on the carried binaries, entry by entry (no build tree there)
  local cli=(cmake -DTRIESCOPE="$BIN/triescope" -DBACKEND=cuda -DSAMPLE=samples/synthetic_long.json -DSAMPLES_DIR=samples)
  header test 170 "$BIN/triescope_tests_cuda \"~[twin]\" and \"[twin]\" side by side; ${cli[*]} -DWORK_DIR=/tmp/gpu-session-cli{,-all} -P tests/cuda/cli_backend_cuda{,_all}.cmake"
  in_parallel "units:150:$BIN/triescope_tests_cuda '~[twin]'" "twin:150:$BIN/triescope_tests_cuda '[twin]'"
  local a=$?
  box_gpu 20 "${cli[@]}" -DWORK_DIR=/tmp/gpu-session-cli -P tests/cuda/cli_backend_cuda.cmake
  local b=$?
  box_gpu 20 "${cli[@]}" -DWORK_DIR=/tmp/gpu-session-cli-all -P tests/cuda/cli_backend_cuda_all.cmake
  worst "$a" "$b" $?
}
phase_sanitize() {  # every kernel under compute-sanitizer, one process a tool and set, side by side
  local t sets=()
  header sanitize 190 "compute-sanitizer --tool {memcheck,racecheck,synccheck} --error-exitcode 9 $BIN/triescope_tests_cuda {\"[twin]\",\"~[twin]~[trace]\"}; memcheck over \"untraced*\""
  for t in memcheck racecheck synccheck; do
    sets+=("$t-twin:180:compute-sanitizer --tool $t --error-exitcode 9 $BIN/triescope_tests_cuda '[twin]'")
    sets+=("$t-units:180:compute-sanitizer --tool $t --error-exitcode 9 $BIN/triescope_tests_cuda '~[twin]~[trace]'")
  done
  sets+=("memcheck-untraced:180:compute-sanitizer --tool memcheck --error-exitcode 9 $BIN/triescope_tests_cuda 'untraced*'")
  in_parallel "${sets[@]}"
}
phase_golden() {  # goldens re-recorded with --backend cuda (each diffed against the CPU), then against traces/golden/
  local g=/tmp/gpu-session-golden
  header golden 40 "cmake -DTRIESCOPE=$BIN/triescope -DSAMPLES_DIR=samples -DGOLDEN_DIR=$g/out -DWORK_DIR=$g/work -P tests/golden/record_goldens.cmake; $BIN/triescope diff $g/out/X traces/golden/X for each X"
  rm -rf "$g" && mkdir -p "$g/out"
  box_gpu 30 cmake -DTRIESCOPE="$BIN/triescope" -DSAMPLES_DIR=samples -DGOLDEN_DIR="$g/out" -DWORK_DIR="$g/work" \
    -P tests/golden/record_goldens.cmake || return $?
  tar -C "$g/out" -czf "$OUT/goldens.tar.gz" . && ls -l "$g/out"
  local f differ=0
  for f in "$g"/out/*.trace.jsonl; do
    box 10 "$BIN/triescope" diff "$f" "traces/golden/$(basename "$f")" || differ=1
  done
  return $differ
}
phase_bench-kernels() {  # mask, compaction, the b = 15 beam step (parts, old vs new selection), each vs a D2D copy
  header bench-kernels 40 "$BIN/bench_cuda --no-static --reps 20"
  box 40 "$BIN/bench_cuda" --no-static --reps 20
}
phase_bench-static() {  # STATIC at the paper setting: new vs old selection vs unconstrained vs the CPU reference
  header bench-static 300 "$BIN/bench_cuda --paper --reps 10"
  box 300 "$BIN/bench_cuda" --paper --reps 10
}
phase_bench-attention() {  # tree attention: trie vs batch layout, per-beam vs cascade kernel, vs a D2D copy
  header bench-attention 210 "$BIN/triescope_tests_cuda [tree_attention]; $BIN/bench_tree_attention --reps 20 --prompts 2048,8192 --beams 3,9,15"
  box 60 "$BIN/triescope_tests_cuda" "[tree_attention]"
  local a=$?
  box 150 "$BIN/bench_tree_attention" --reps 20 --prompts 2048,8192 --beams 3,9,15
  worst "$a" $?
}
# The LibTorch programs against the device's PyTorch LibTorch (CUDA), built in
# the background (12 of 16 cores) while the GPU phases run; test-torch,
# bench-e2e and bench-hf wait for it.
TORCH_BUILD_LOG=/tmp/gpu-session-build-torch.log
TORCH_TARGETS="bench_torch triescope triescope_tests_cuda_torch"
phase_build-torch() {
  local torch_prefix
  header build-torch 330 "cmake -S . -B build-torch -DCMAKE_PREFIX_PATH=\"$PWD/.gpu-kit;<torch.utils.cmake_prefix_path>\" -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_BUILD_TESTS=ON ... && cmake --build build-torch --target $TORCH_TARGETS -j12 (background)" >"$TORCH_BUILD_LOG"
  rm -f /tmp/gpu-session-build-torch.pid
  if [ "$HAVE_GPU" != 1 ]; then
    echo "# no GPU here: the CUDA LibTorch build is not run (exit 77)" | tee -a "$TORCH_BUILD_LOG"
    return 77
  fi
  if ! torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>&1); then
    echo "# no PyTorch here: $torch_prefix" | tee -a "$TORCH_BUILD_LOG"
    return 1
  fi
  (timeout 330 bash -c "cmake -S . -B build-torch -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH='$PWD/.gpu-kit;$torch_prefix' \
    -DTRIESCOPE_WITH_CUDA=ON -DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_WITH_TORCH=ON -DTRIESCOPE_BUILD_GUI=OFF -DTRIESCOPE_BUILD_PYTHON=OFF \
    -DTRIESCOPE_SANITIZE_TESTS=OFF -DTRIESCOPE_BUILD_TESTS=ON -DTRIESCOPE_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    && cmake --build build-torch --target $TORCH_TARGETS -j12" >>"$TORCH_BUILD_LOG" 2>&1
   echo "build-torch exit $?" >>"$TORCH_BUILD_LOG") &
  echo $! >/tmp/gpu-session-build-torch.pid
}
# wait_torch_build NEEDED: waits for the background build; 77 without a GPU,
# 1 if NEEDED (a path in build-torch) was not built.
wait_torch_build() {
  local pid
  pid=$(cat /tmp/gpu-session-build-torch.pid 2>/dev/null)
  [ -n "$pid" ] && while kill -0 "$pid" 2>/dev/null && [ "$(left)" -gt 10 ]; do sleep 2; done
  echo "## the LibTorch build (waited until $(elapsed) s):"
  tail -n 3 "$TORCH_BUILD_LOG" 2>/dev/null
  [ "$HAVE_GPU" = 1 ] || { echo "# no GPU here: build-torch did not run, $1 is not run (exit 77)"; return 77; }
  [ -x "build-torch/$1" ] || { echo "# build-torch/$1 was not built (see above)"; return 1; }
}
phase_test-torch() {  # ctest label "cuda"'s LibTorch entry: TorchTransformer on cuda with the tree kernel vs the CPU
  header test-torch 30 "ctest --test-dir build-torch -L '^cuda\$' -R '^triescope_tests_cuda_torch\$' --output-on-failure"
  wait_torch_build tests/cuda/triescope_tests_cuda_torch || return $?
  box 30 ctest --test-dir build-torch -L '^cuda$' -R '^triescope_tests_cuda_torch$' --output-on-failure
}
phase_bench-e2e() {  # trie vs batch beam search end to end, 0.85B random Llama, b = 15, prompt 2,048, fp32 then bf16
  local cmd=(build-torch/bench/bench_torch --preset llama-0.8b --device cuda --attention auto --prompt 2048 --new 64 --beams 15)
  header bench-e2e 190 "${cmd[*]}; the same with --dtype bf16"
  wait_torch_build bench/bench_torch
  local w=$?
  echo "## the LibTorch build's log (its header and last 20 lines):"
  head -n 9 "$TORCH_BUILD_LOG" 2>/dev/null
  tail -n 20 "$TORCH_BUILD_LOG" 2>/dev/null
  [ "$w" -eq 0 ] || return "$w"
  box 110 "${cmd[@]}"
  local a=$?
  box 80 "${cmd[@]}" --dtype bf16
  worst "$a" $?
}
phase_bench-hf() {  # Hugging Face generate() beside trie and batch beam search on the GPU, the peer protocol, outputs asserted equal
  local cmd=(python3 bench/bench_hf.py --triescope build-torch/app/triescope --work /tmp/bench_hf --device cuda --layers 8 --hidden 1024
             --vocab 32000 --prompt 2048 --new 64 --beams 15 --threads 8 --runs 3 --reps 1 --warmup 1)
  header bench-hf 300 "${cmd[*]}"
  wait_torch_build app/triescope || return $?
  python3 -c 'import torch, transformers; print("# torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.version.cuda)'
  box 300 "${cmd[@]}"
}

# log_of PHASE: where a phase writes (at most 8 files come back).
log_of() {
  case "$1" in
    test-torch) echo "$OUT/test.log" ;;            # the rest of ctest label "cuda"
    build-torch) echo "/tmp/gpu-session-phase-build-torch.log" ;;  # its build log is in bench-e2e.log
    *) echo "$OUT/$1.log" ;;
  esac
}

phases=("$@")
[ ${#phases[@]} -eq 0 ] && read -r -a phases <<<"$DEFAULT_PHASES"
for p in "${phases[@]}"; do
  case "$p" in
    build-torch|test|sanitize|golden|bench-kernels|test-torch|bench-e2e|bench-static|bench-attention|bench-hf) ;;
    *) echo "gpu-session: unknown phase $p (default: $DEFAULT_PHASES; also bench-static bench-attention bench-hf)" >&2; exit 2 ;;
  esac
done
[ "$HAVE_GPU" = 1 ] || echo "gpu-session: no GPU here (nvidia-smi -L fails): a rehearsal; phases that need one say so and exit 77"
status=0
link_source_dir
for p in "${phases[@]}"; do
  echo "== phase $p at $(elapsed) s (budget ${BUDGET} s)"
  log=$(log_of "$p")
  "phase_$p" >>"$log" 2>&1
  rc=$?
  case $rc in
    0) echo "phase $p passed" ;;
    77) echo "phase $p: no GPU, skipped (exit 77; see $log)"; [ $status -eq 0 ] && status=77 ;;
    *) echo "phase $p FAILED, exit $rc (see $log)"; status=1 ;;
  esac
  tail -n 12 "$log"
done
echo "== done at $(elapsed) s"
exit $status
