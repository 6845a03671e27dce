#!/bin/sh
# The host thread pool when the system refuses threads: 4096 asked for under
# a 4 GB address-space cap (each thread reserves its stack) used to hang in
# the pool's constructor. Now the pool runs with the threads it got, says so
# on stderr, and the decode finishes with the right result.
# usage: thread_pool_limits.sh <triescope> <work dir>
set -eu
CLI=$1 WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK"
# Beam rows x vocabulary above the pool's threshold (65,536 entries) on every step.
cat > "$WORK/wide.json" <<'JSON'
{"schema": "triescope.sample", "version": 1, "name": "wide vocabulary", "algorithm": "trie_beam_search",
 "model": {"type": "synthetic", "vocab_size": 50000, "seed": 3, "peakiness": 1.5},
 "prompt": [1, 2, 3], "beam": {"num_beams": 4, "max_new_tokens": 3, "eos_token": -1, "gc_interval": 0}}
JSON
TRIESCOPE_HOST_THREADS=1 "$CLI" run "$WORK/wide.json" --out "$WORK/one.jsonl" --quiet
rc=0
( ulimit -v 4000000 && TRIESCOPE_HOST_THREADS=4096 exec timeout 120 "$CLI" run "$WORK/wide.json" --out "$WORK/many.jsonl" --quiet ) 2>"$WORK/many.err" || rc=$?
[ "$rc" = 0 ] || { echo "exit $rc under the cap (124: hung)"; cat "$WORK/many.err"; exit 1; }
grep -q "thread pool could create [0-9]* of its 4095 worker threads" "$WORK/many.err" || { echo "no word of the missing threads:"; cat "$WORK/many.err"; exit 1; }
# The same hypotheses with one thread and with the threads the cap allowed.
"$CLI" diff "$WORK/one.jsonl" "$WORK/many.jsonl" >/dev/null || { echo "the capped run decoded differently"; exit 1; }
echo "thread pool under limits ok"
