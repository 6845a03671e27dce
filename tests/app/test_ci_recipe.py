#!/usr/bin/env python3
"""scripts/ci-recipe-local.sh runs docs/examples/triescope-ci.yml's steps on
this checkout: with the example engine as it is, every step passes and the
artifacts hold a clean JUnit file and page per trace; with a bug planted in
the engine (TOY_ENGINE_BUG=mask), the run fails, and the check and diff
reports name the step and node that record_traces.py planted.

usage: test_ci_recipe.py SOURCE_DIR BUILD_DIR WORK_DIR
"""
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

SRC, BUILD, WORK = map(pathlib.Path, sys.argv[1:4])
SCRIPT = SRC / "scripts/ci-recipe-local.sh"


def recipe(work, **env):
    r = subprocess.run(["bash", SCRIPT, "--work", work, "--build", BUILD], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **env})
    print(r.stdout[-3000:], r.stderr[-2000:])
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
