#!/bin/sh
# Smoke test: run the real app under Xvfb on a sample trace, step to a GC
# step with a node selected, save a screenshot and check it is not blank.
# usage: smoke_gui.sh <triescope> <triescope-gui> <image_check> <samples dir> <work dir>
set -eu
CLI=$1 GUI=$2 CHECK=$3 SAMPLES=$4 WORK=$5
command -v xvfb-run >/dev/null 2>&1 || { echo "xvfb-run not installed: skipped"; exit 77; }
mkdir -p "$WORK"
rm -f "$WORK"/*.png
"$CLI" run "$SAMPLES/figure1_once_upon_a_time.json" --out "$WORK/fig1.jsonl" >/dev/null
for step in 1 2 3; do
  timeout 60 xvfb-run -a -s "-screen 0 1600x1000x24" \
    "$GUI" "$WORK/fig1.jsonl" --step $step --select 4 --screenshot "$WORK/fig1-step$step.png"
  "$CHECK" "$WORK/fig1-step$step.png" 64 0.10
done
# A diff of a trace with itself opens in diff mode and still paints.
timeout 60 xvfb-run -a -s "-screen 0 1600x1000x24" \
  "$GUI" --diff "$WORK/fig1.jsonl" "$WORK/fig1.jsonl" --step 2 --screenshot "$WORK/fig1-diff.png"
"$CHECK" "$WORK/fig1-diff.png" 64 0.10
# A broken file is reported (naming the file) and the app exits non-zero, no crash.
printf '{"kind":"header","schema":"triescope.trace","version":99}\n' > "$WORK/bad.jsonl"
if timeout 60 xvfb-run -a "$GUI" "$WORK/bad.jsonl" --screenshot "$WORK/bad.png" 2>"$WORK/bad.err"; then
  echo "bad trace was accepted"; exit 1
fi
grep -q "bad.jsonl" "$WORK/bad.err" || { echo "error does not name the file:"; cat "$WORK/bad.err"; exit 1; }
grep -q "version" "$WORK/bad.err" || { echo "error does not name the field:"; cat "$WORK/bad.err"; exit 1; }
[ ! -e "$WORK/bad.png" ] || { echo "a screenshot was written for a bad trace"; exit 1; }
echo "smoke ok"
