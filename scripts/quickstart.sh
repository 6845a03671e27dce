#!/usr/bin/env bash
# README command 1: install, build what the first look needs (the CLI and the
# inspector, nothing else), decode the trie paper's Figure 1 sample (trie beam
# search), print its summary and a text view of step 2, and open the
# inspector when a display is present. scripts/test.sh builds the rest (tests,
# benchmarks, sanitizer and fuzz copies) and runs the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/configure.sh  # the build test.sh continues (scripts/configure.sh)
targets=(triescope)
# The inspector when Qt 6 was found (configure summary: TRIESCOPE_BUILD_GUI).
if ninja -C build -t query triescope-gui >/dev/null 2>&1; then targets+=(triescope-gui); fi
cmake --build build -j"$(nproc)" --target "${targets[@]}"
mkdir -p out
build/app/triescope run samples/figure1_once_upon_a_time.json --out out/figure1.trace.jsonl
build/app/triescope inspect out/figure1.trace.jsonl --step 2
if [ -n "${DISPLAY:-}" ] && [ -x build/gui/triescope-gui ]; then
  build/gui/triescope-gui out/figure1.trace.jsonl &
fi
