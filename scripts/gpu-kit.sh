#!/usr/bin/env bash
# Packs the header-only / static build dependencies that the lent GPU machines
# lack (they have nvcc, CMake, ninja and PyTorch's LibTorch, but no Debian
# packages and no network) into .gpu-kit/, a CMake prefix that the device
# `run` tool carries (name ".gpu-kit" in `carry`). Run here, once per session:
#   bash scripts/gpu-kit.sh
# then on the device: bash scripts/gpu-session.sh (its build-torch phase configures with
# CMAKE_PREFIX_PATH=.gpu-kit;<PyTorch's LibTorch>).
# It also records the checkout the device will get (.gpu-kit/CHECKOUT: the
# commit, whether the tree had uncommitted changes, and a fingerprint of the
# files the run tool copies, listed in .gpu-kit/CHECKOUT.files), because the
# device copy's git metadata can be older than its files; every log's
# "checkout:" line comes from it. Run it last before the device call.
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=.gpu-kit
rm -rf "$KIT.tmp"
mkdir -p "$KIT.tmp/include" "$KIT.tmp/lib/cmake" "$KIT.tmp/share/cmake"
need() { [ -e "$1" ] || { echo "gpu-kit: $1 missing (run scripts/install-deps.sh first)" >&2; exit 2; }; }
need /usr/include/nlohmann/json.hpp
need /usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake
need /usr/include/catch2/catch.hpp
need /usr/lib/cmake/Catch2/Catch2Config.cmake
cp -r /usr/include/nlohmann "$KIT.tmp/include/"
cp -r /usr/share/cmake/nlohmann_json "$KIT.tmp/share/cmake/"
cp -r /usr/include/catch2 "$KIT.tmp/include/"
cp -r /usr/lib/cmake/Catch2 "$KIT.tmp/lib/cmake/"
# Catch2Targets-none.cmake checks that this archive exists; we link our own main.
cp /usr/lib/libCatch2WithMain.a "$KIT.tmp/lib/"
# The files the device `run` copies: tracked, and untracked but not ignored.
git ls-files --cached --others --exclude-standard -- . ":(exclude)$KIT.tmp" >"$KIT.tmp/CHECKOUT.files"
dirty=clean
[ -z "$(git status --porcelain -- . ":(exclude)$KIT.tmp")" ] || dirty="with uncommitted changes"
{
  echo "commit $(git rev-parse --short HEAD)"
  echo "tree $dirty"
  echo "recorded $(date -u +%FT%TZ)"
  echo "fingerprint $(bash scripts/tree-fingerprint.sh <"$KIT.tmp/CHECKOUT.files")"
} >"$KIT.tmp/CHECKOUT"
rm -rf "$KIT" && mv "$KIT.tmp" "$KIT"
cat "$KIT/CHECKOUT"
du -sh "$KIT"
