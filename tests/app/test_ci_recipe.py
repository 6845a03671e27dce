#!/usr/bin/env python3
"""scripts/ci-recipe-local.sh runs docs/examples/triescope-ci.yml's steps on
this checkout: with the example engine as it is, every step passes and the
artifacts hold a clean JUnit file and page per trace; with a bug planted in
the engine (TOY_ENGINE_BUG=mask), the run fails, and the check and diff
reports name the step and node that record_traces.py planted.

The install step is pip: the wheel in WHEEL_DIR (python_test_pip_install's)
goes into a fresh environment, WORK/<run>/venv, and the steps' `python` and
`triescope` are that environment's; with --build, the build tree's.

usage: test_ci_recipe.py SOURCE_DIR WORK_DIR (--wheel-dir WHEEL_DIR | --build BUILD_DIR)
"""
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

SRC, WORK = map(pathlib.Path, sys.argv[1:3])
MODE, WHERE = sys.argv[3], pathlib.Path(sys.argv[4])
SCRIPT = SRC / "scripts/ci-recipe-local.sh"
if MODE == "--wheel-dir":
    wheels = sorted(WHERE.glob("triescope-*.whl"))
    assert len(wheels) == 1, f"{WHERE}: expected one triescope wheel (python_test_pip_install builds it), found {wheels}"
    INSTALL = ["--wheel", str(wheels[0])]
else:
    assert MODE == "--build", f"usage: {__doc__.splitlines()[-1]}"
    INSTALL = ["--build", str(WHERE)]


def recipe(work, **env):
    r = subprocess.run(["bash", SCRIPT, "--work", work, *INSTALL], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **env})
    print(r.stdout[-3000:], r.stderr[-2000:])
    if MODE == "--wheel-dir":
        assert f"== Install TrieScope: replaced by pip install of this checkout's wheel into {work}/venv" in r.stdout, r.stdout
        assert (pathlib.Path(work) / "venv/bin/triescope").is_file(), "pip installed no triescope command"
        # The steps ran the environment's triescope: its package, not the build tree's.
        p = subprocess.run([pathlib.Path(work) / "venv/bin/python", "-c", "import triescope; print(triescope.__file__)"],
                           capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert p.stdout.startswith(f"{work}/venv/lib/"), (p.stdout, p.stderr)
    return r


def failures(xml):
    root = ET.parse(xml).getroot()
    assert root.tag == "testsuites" and root.find("testsuite/testcase") is not None
    return [f.get("message") for f in root.iter("failure")]


clean = recipe(WORK / "clean")
assert clean.returncode == 0, clean.returncode
art = WORK / "clean/artifacts"
names = sorted(p.name for p in art.iterdir())
golden = sorted(p.name.replace(".trace.jsonl", "") for p in (SRC / "docs/examples/golden").glob("*.trace.jsonl"))
assert golden and names == sorted(f"{k}-{g}.{e}" for k in ("check", "diff") for g in golden for e in ("html", "xml")), names
assert all(not failures(p) for p in art.glob("*.xml"))

planted = recipe(WORK / "planted", TOY_ENGINE_BUG="mask")
assert planted.returncode == 1, planted.returncode
assert "== Diff against golden traces: failed" in planted.stdout, "the diff step runs after the failed check (if: always())"
art = WORK / "planted/artifacts"
for g in golden:
    check, diff = failures(art / f"check-{g}.xml"), failures(art / f"diff-{g}.xml")
    assert len(check) == 1 and "step 1" in check[0] and "pass forward" in check[0] and "node" in check[0], check
    assert len(diff) == 1 and "step 1" in diff[0] and "forward.mask.rows" in diff[0], diff
    # The same node in both: the last draft of the tree (record_traces.py plants its bug there).
    node = check[0].split(", node ")[1].split(",")[0]
    assert f", node {node}," in diff[0], (check, diff)
    assert f"node {node}" in (art / f"check-{g}.html").read_text()
print("PASS ci recipe: clean run passes, planted engine bug named by check and diff")
