#!/bin/sh
# The export command line as a script would use it: a pane of a sample at a
# step to SVG and PNG (offscreen, no display), at a chosen size; bad usage
# exits 2, a bad pane exits 1 naming it; nothing half-written is left.
# usage: export_cli.sh <triescope-gui> <image_check> <samples dir> <work dir>
set -eu
GUI=$1 CHECK=$2 SAMPLES=$3 WORK=$4
export QT_QPA_PLATFORM=offscreen
rm -rf "$WORK" && mkdir -p "$WORK"
for pane in trie mask kv narration constraint; do
  timeout 60 "$GUI" --sample "$SAMPLES/static_figure1.json" --step 2 --export-pane $pane \
    --svg "$WORK/$pane.svg" --png "$WORK/$pane.png" --export-size 800x500 2>"$WORK/$pane.err" >/dev/null
  grep -q "<svg" "$WORK/$pane.svg" || { echo "$pane.svg is not an SVG"; exit 1; }
  grep -q "<text" "$WORK/$pane.svg" || { echo "$pane.svg has no text element"; exit 1; }
  "$CHECK" "$WORK/$pane.png" 4 0.005 | grep -q "800x500" || { echo "$pane.png is not 800x500"; "$CHECK" "$WORK/$pane.png" 4 0.005; exit 1; }
done
# Usage errors: exit 2 before anything is loaded.
rc=0
timeout 60 "$GUI" --sample "$SAMPLES/static_figure1.json" --export-pane mask 2>"$WORK/usage.err" || rc=$?
[ "$rc" = 2 ] || { echo "--export-pane without an output: exit $rc, not 2"; exit 1; }
grep -q -- "--svg FILE or --png FILE" "$WORK/usage.err" || { cat "$WORK/usage.err"; exit 1; }
# An unknown pane: exit 1, the pane and the file named, no file written.
rc=0
timeout 60 "$GUI" --sample "$SAMPLES/static_figure1.json" --export-pane masks --svg "$WORK/x.svg" 2>"$WORK/pane.err" >/dev/null || rc=$?
[ "$rc" = 1 ] || { echo "unknown pane: exit $rc, not 1"; cat "$WORK/pane.err"; exit 1; }
grep -q 'x.svg: unknown pane "masks"' "$WORK/pane.err" || { cat "$WORK/pane.err"; exit 1; }
[ ! -e "$WORK/x.svg" ] || { echo "x.svg written for an unknown pane"; exit 1; }
ls -A "$WORK" | grep -q tmp && { echo "temporary left behind:"; ls -A "$WORK"; exit 1; }
echo "export cli ok"
