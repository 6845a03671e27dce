#!/usr/bin/env bash
# Fuzzes one reader with libFuzzer (tests/fuzz/, docs/reliability.md):
#   scripts/fuzz.sh TARGET MINUTES        e.g. scripts/fuzz.sh trace 30
#   scripts/fuzz.sh TARGET --seconds S [--build DIR] [--seed N]   (.ci/run's short runs)
# TARGET: sample trace safetensors llama_config tokenizer gguf constraint_npy constraint_text
#         mask_check sample_run output_path.
# Builds build-fuzz/ with clang (ASan + UBSan + libFuzzer) when needed, starts
# from the seed corpus and the reproducers, keeps what it finds in
# build-fuzz/fuzz-corpus/TARGET (not in the repository), writes the log to
# build-fuzz/fuzz-logs/ and prints executions and coverage. Exit 1 on a finding
# (the input is saved as build-fuzz/fuzz-artifacts/TARGET-crash-*, -timeout-*, -oom-*).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,11p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
TARGET=$1; shift
SECONDS_TO_RUN=""
BUILD=build-fuzz
SEED=0  # libFuzzer's 0: a random seed
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_TO_RUN=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    [0-9]*) SECONDS_TO_RUN=$(( $1 * 60 )); shift ;;
    *) usage ;;
  esac
done
[ -n "$SECONDS_TO_RUN" ] || usage
[ -d "tests/fuzz/corpus/$TARGET" ] || { echo "fuzz.sh: no target '$TARGET' (tests/fuzz/corpus/ lists them)" >&2; exit 2; }

CXX_FUZZ=${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++ || true)}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  [ -n "$CXX_FUZZ" ] || { echo "fuzz.sh: needs clang++ (scripts/install-deps.sh installs clang-14)" >&2; exit 2; }
  # Only what the targets link: core, the CLI (inspect) and the model-format readers.
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER="$CXX_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRIESCOPE_BUILD_FUZZ=ON -DTRIESCOPE_BUILD_TESTS=OFF -DTRIESCOPE_BUILD_GUI=OFF -DTRIESCOPE_WITH_TORCH=OFF \
    -DTRIESCOPE_WITH_CUDA=OFF -DTRIESCOPE_CUDA_HOST=OFF -DTRIESCOPE_BUILD_BENCH=OFF -DTRIESCOPE_BUILD_PYTHON=OFF \
    $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
fi
cmake --build "$BUILD" --target "triescope_fuzz_$TARGET" -j"${FUZZ_JOBS:-2}" >/dev/null

WORK="$BUILD/fuzz-corpus/$TARGET"
ART="$BUILD/fuzz-artifacts"
LOGS="$BUILD/fuzz-logs"
mkdir -p "$WORK" "$ART" "$LOGS"
LOG="$LOGS/$TARGET-$(date -u +%Y%m%dT%H%M%SZ).log"
SEEDS=("tests/fuzz/corpus/$TARGET")
[ -d "tests/fuzz/regressions/$TARGET" ] && SEEDS+=("tests/fuzz/regressions/$TARGET")
# A finding: any crash or sanitizer report, a run over 5 s, memory over 2 GB.
set +e
nice -n 19 "$BUILD/tests/fuzz/triescope_fuzz_$TARGET" -max_total_time="$SECONDS_TO_RUN" -seed="$SEED" -timeout=5 \
  -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$ART/$TARGET-" \
  "$WORK" "${SEEDS[@]}" >"$LOG" 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)
cov=$(grep -o 'cov: [0-9]*' "$LOG" | tail -1 | cut -d' ' -f2)
ft=$(grep -o 'ft: [0-9]*' "$LOG" | tail -1 | cut -d' ' -f2)
echo "fuzz $TARGET: ${SECONDS_TO_RUN}s, ${execs:-?} executions, cov ${cov:-?} edges, ft ${ft:-?} features, corpus $(ls "$WORK" | wc -l) files, log $LOG"
if [ $rc -ne 0 ]; then
  echo "fuzz $TARGET: FINDING (libFuzzer exit $rc):" >&2
  grep -E 'FINDING|ERROR: |SUMMARY|Test unit written' "$LOG" | head -20 >&2
  exit 1
fi
