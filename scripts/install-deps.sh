#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12's packages.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git python3 \
  nlohmann-json3-dev catch2 libbenchmark-dev \
  libtorch-dev \
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev \
  libgraphviz-dev \
  xvfb xauth >/dev/null
echo "install-deps: done"
