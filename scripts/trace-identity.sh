#!/usr/bin/env bash
# Records every bundled sample's trace on each backend, or compares two such
# recordings byte by byte. The only bytes allowed to differ are the values of
# "seconds" (wall time): they are replaced by 0 when recording. A refactor
# that must not change any output is checked with:
#   scripts/trace-identity.sh record build/app/triescope /tmp/before   (on the old commit)
#   scripts/trace-identity.sh record build/app/triescope /tmp/after    (on the new one)
#   scripts/trace-identity.sh compare /tmp/before /tmp/after
# A sample that cannot run here (transformer_byo.json needs a model you
# bring) is recorded as its error message, which must then match too.
set -euo pipefail

usage() {
  echo "usage: $0 record <triescope binary> <dir> | compare <dir a> <dir b>" >&2
  exit 2
}

record() {
  local bin=$1 dir=$2 root
  root=$(cd "$(dirname "$0")/.." && pwd)
  mkdir -p "$dir"
  for sample in "$root"/samples/*.json; do
    local name
    name=$(basename "$sample" .json)
    for backend in cpu cuda-emu; do
      local out="$dir/$name.$backend"
      local rc=0
      (cd "$root" && "$bin" run "samples/$name.json" --backend "$backend" --out "$out.jsonl" >/dev/null 2>"$out.err") || rc=$?
      if [[ $rc -ne 0 ]]; then
        rm -f "$out.jsonl"
        echo "exit $rc" >>"$out.err"
      else
        rm -f "$out.err"
        sed -i -E 's/"seconds":[-+0-9.eE]+/"seconds":0/g' "$out.jsonl"
      fi
    done
  done
  echo "recorded $(find "$dir" -name '*.jsonl' | wc -l) traces and $(find "$dir" -name '*.err' | wc -l) errors in $dir"
}

compare() {
  local a=$1 b=$2 failed=0 n=0
  for f in "$a"/*; do
    n=$((n + 1))
    local g="$b/$(basename "$f")"
    if [[ ! -e $g ]]; then
      echo "missing in $b: $(basename "$f")"
      failed=1
    elif ! cmp -s "$f" "$g"; then
      echo "differs: $(basename "$f") ($(cmp "$f" "$g" 2>&1 | head -1))"
      failed=1
    fi
  done
  for g in "$b"/*; do
    [[ -e "$a/$(basename "$g")" ]] || { echo "missing in $a: $(basename "$g")"; failed=1; }
  done
  if [[ $failed -eq 0 ]]; then
    echo "identical: $n files (traces byte for byte, seconds set to 0)"
  fi
  return $failed
}

case "${1:-}" in
  record) [[ $# -eq 3 ]] || usage; record "$(realpath "$2")" "$3" ;;
  compare) [[ $# -eq 3 ]] || usage; compare "$2" "$3" ;;
  *) usage ;;
esac
