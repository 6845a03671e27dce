#!/usr/bin/env bash
# Regenerates the figures docs/gui.md shows, one SVG per pane, with the
# inspector's export command (offscreen, no display):
#   triescope-gui --sample S --step N --export-pane PANE --svg docs/figures/gui-PANE.svg
# usage: scripts/gui-figures.sh [build dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
GUI=${1:-build}/gui/triescope-gui
[ -x "$GUI" ] || { echo "gui-figures.sh: $GUI not built (cmake --build ${1:-build} --target triescope-gui)" >&2; exit 2; }
export QT_QPA_PLATFORM=offscreen
mkdir -p docs/figures
# pane  sample                              step
while read -r pane sample step; do
  "$GUI" --sample "samples/$sample" --step "$step" --export-pane "$pane" --svg "docs/figures/gui-$pane.svg" >/dev/null
done <<'LIST'
narration  figure1_once_upon_a_time.json  2
trie       figure1_once_upon_a_time.json  2
mask       figure1_once_upon_a_time.json  2
kv         figure1_once_upon_a_time.json  2
plots      figure1_once_upon_a_time.json  2
verify     dsbd_figure3.json              4
constraint static_figure1.json            2
LIST
ls -l docs/figures/gui-*.svg
