#!/usr/bin/env bash
# Prints a 16-hex-digit fingerprint of the files named on stdin (one path a
# line, relative to the repository root): SHA-256 over each file's path and
# SHA-256, in the order given. scripts/gpu-kit.sh records it for the tree the
# device gets; scripts/gpu-session.sh recomputes it there. A missing file
# counts as the word "missing", so a deleted file changes the fingerprint.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
while IFS= read -r f; do
  if [ -f "$f" ]; then sha256sum -- "$f"; else echo "missing  $f"; fi
done | sha256sum | cut -c1-16
