#!/usr/bin/env bash
# README command 1: install, build, and decode the trie paper's Figure 1
# sample (trie beam search), print its summary and a text view of step 2,
# and open the inspector when a display is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"$(nproc)"
mkdir -p out
build/app/triescope run samples/figure1_once_upon_a_time.json --out out/figure1.trace.jsonl
build/app/triescope inspect out/figure1.trace.jsonl --step 2
if [ -n "${DISPLAY:-}" ] && [ -x build/gui/triescope-gui ]; then
  build/gui/triescope-gui out/figure1.trace.jsonl &
fi
