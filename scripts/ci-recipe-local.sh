#!/usr/bin/env bash
# Runs the CI recipe's workflow (docs/examples/triescope-ci.yml) on this
# machine, step by step, the way GitHub Actions would (docs/ci.md):
#   - the engine repository is a fresh folder made from docs/examples: the
#     example recorder as ci/record_traces.py, docs/examples/golden/ as
#     traces/golden/ (or --engine-repo DIR, a repository laid out that way);
#   - `uses:` steps are not run: checkout is that folder, setup-python is the
#     project's Python (.cache/venv, else python3), upload-artifact is a copy
#     of $REPORTS into WORK/artifacts;
#   - the step with id install-triescope is replaced by a pip install of this
#     checkout into a fresh virtual environment, WORK/venv, whose bin/ (python,
#     the `triescope` command) comes first on PATH: the wheel is built from the
#     checkout (`pip wheel`, without build isolation: the project's pinned
#     scikit-build-core; minutes) or given (--wheel FILE), and installed with
#     --no-index, numpy linked from the project's Python (venv-link-numpy.py);
#     --build DIR instead puts a build tree on PATH and PYTHONPATH (no pip);
#   - every `run:` step runs with the job's env in `bash -eo pipefail`, and,
#     as in Actions, a step runs after a failed one only with `if: always()`.
# usage: scripts/ci-recipe-local.sh [--work DIR] [--engine-repo DIR] [--workflow FILE] [--wheel FILE | --build DIR]
# Exit status: 0 every step passed; 1 a step failed (the reports say why); 2 bad setup.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORKFLOW="$REPO/docs/examples/triescope-ci.yml"
WORK="" ENGINE="" WHEEL="" BUILD=""
while [ $# -gt 0 ]; do
  case "$1" in
    --work) WORK="$2"; shift 2 ;;
    --engine-repo) ENGINE="$2"; shift 2 ;;
    --workflow) WORKFLOW="$2"; shift 2 ;;
    --wheel) WHEEL="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    *) echo "ci-recipe-local: unknown argument $1" >&2; exit 2 ;;
  esac
done
fail_setup() { echo "ci-recipe-local: $*" >&2; exit 2; }
[ -z "$WHEEL" ] || [ -z "$BUILD" ] || fail_setup "give --wheel or --build, not both"
if [ -n "$BUILD" ]; then
  [ -x "$BUILD/app/triescope" ] || fail_setup "$BUILD/app/triescope not built (ninja -C build triescope)"
  [ -d "$BUILD/python/triescope" ] || fail_setup "$BUILD/python/triescope not built (ninja -C build triescope_python)"
fi
[ -z "$WHEEL" ] || [ -f "$WHEEL" ] || fail_setup "--wheel $WHEEL: no such file"
[ -f "$WORKFLOW" ] || fail_setup "$WORKFLOW: no such workflow"
PY="$REPO/.cache/venv/bin/python"
[ -x "$PY" ] || PY=$(command -v python3)
[ -n "$WORK" ] || WORK=$(mktemp -d)
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)  # absolute: the steps run in WORK/repo
rm -rf "$WORK/repo" "$WORK/steps" "$WORK/artifacts" "$WORK/bin" "$WORK/venv"
mkdir -p "$WORK/steps" "$WORK/artifacts" "$WORK/bin"

# checkout: the engine repository.
if [ -n "$ENGINE" ]; then
  cp -r "$ENGINE" "$WORK/repo"
else
  mkdir -p "$WORK/repo/ci" "$WORK/repo/traces"
  cp "$REPO/docs/examples/record_traces.py" "$WORK/repo/ci/record_traces.py"
  cp -r "$REPO/docs/examples/golden" "$WORK/repo/traces/golden"
fi
# setup-python and the install step (below): `python` and `triescope` come from
# WORK/venv (pip) or from the build tree (--build).
if [ -n "$BUILD" ]; then
  ln -s "$PY" "$WORK/bin/python"
  ln -s "$BUILD/app/triescope" "$WORK/bin/triescope"
  export PATH="$WORK/bin:$PATH"
  export PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
else
  export PATH="$WORK/venv/bin:$PATH"
  unset PYTHONPATH
fi
# The install step with pip: a fresh environment, this checkout's wheel in it.
install_with_pip() {
  if [ -z "$WHEEL" ]; then
    echo "   building the wheel of $REPO (pip wheel; several minutes)"
    rm -rf "$WORK/dist"
    "$PY" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$WORK/dist" "$REPO" || return 1
    WHEEL=$(ls "$WORK"/dist/triescope-*.whl) || return 1
  fi
  local base
  base=$("$PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
  "$base" -m venv "$WORK/venv" || return 1
  if ! "$PY" "$REPO/scripts/venv-link-numpy.py" "$WORK/venv"; then
    echo "   numpy not linked: pip fetches it from the index"
    "$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"
    return
  fi
  echo "   pip install --no-index $WHEEL (into $WORK/venv)"
  "$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check --no-index "$WHEEL"
}

# The workflow's steps as files: WORK/steps/NN.{sh,meta}; meta = kind, if, name split by \x1f
# (not a tab: read merges empty whitespace-separated fields).
"$PY" - "$WORKFLOW" "$WORK/steps" <<'PYEOF' || fail_setup "$WORKFLOW: cannot read its steps"
import sys, yaml, shlex
wf = yaml.safe_load(open(sys.argv[1]))
(job,) = wf["jobs"].values()
env = job.get("env", {})
with open(f"{sys.argv[2]}/env.sh", "w") as f:
    for k, v in env.items():
        f.write(f"export {k}={shlex.quote(str(v))}\n")
for i, s in enumerate(job["steps"]):
    name = s.get("name") or s.get("uses") or f"step {i}"
    kind = "install" if s.get("id") == "install-triescope" else "uses:" + s["uses"] if "uses" in s else "run"
    with open(f"{sys.argv[2]}/{i:02d}.meta", "w") as f:
        f.write(f"{kind}\x1f{s.get('if', '')}\x1f{name}\n")
    if "run" in s:
        with open(f"{sys.argv[2]}/{i:02d}.sh", "w") as f:
            f.write(s["run"])
PYEOF
# shellcheck disable=SC1091
. "$WORK/steps/env.sh"

failed=0
for meta in "$WORK"/steps/*.meta; do
  IFS=$'\x1f' read -r kind cond name < "$meta"
  script="${meta%.meta}.sh"
  if [ "$failed" = 1 ] && [ "$cond" != "always()" ]; then
    echo "== $name: skipped (a step before failed)"
    continue
  fi
  case "$kind" in
    install)
      if [ -n "$BUILD" ]; then
        echo "== $name: replaced by this checkout's build ($BUILD/app, $BUILD/python)"
      else
        echo "== $name: replaced by pip install of this checkout's wheel into $WORK/venv"
        install_with_pip || { echo "== $name: failed"; failed=1; }
      fi
      continue ;;
    uses:actions/upload-artifact*)
      echo "== $name: copied $REPORTS to $WORK/artifacts"
      [ -d "$WORK/repo/$REPORTS" ] && cp -r "$WORK/repo/$REPORTS/." "$WORK/artifacts/"
      continue ;;
    uses:*) echo "== $name: not run here (the folder and Python above stand in)"; continue ;;
  esac
  echo "== $name"
  if ! (cd "$WORK/repo" && bash --noprofile --norc -eo pipefail "$script"); then
    echo "== $name: failed"
    failed=1
  fi
done
echo "reports: $WORK/artifacts"
exit "$failed"
