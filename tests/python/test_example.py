"""python/examples/speculative_tree_mask.py runs as a user would run it: the planted mask
bug is found and named, the fixed mask passes, and the trace opens in the inspector."""
import os
import pathlib
import subprocess
import sys

import pytest

import triescope


def run_example(source_dir, tmp_path, *args):
    env = dict(os.environ)
    env.pop("DISPLAY", None)  # the GUI is exercised below, headless
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.run([sys.executable, str(source_dir / "python" / "examples" / "speculative_tree_mask.py"), *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)


@pytest.fixture(scope="module")
def planted(source_dir, tmp_path_factory):
    """The example run once as shipped (the planted bug, no display): its process and folder."""
    tmp = tmp_path_factory.mktemp("example")
    return run_example(source_dir, tmp, "--out", "bad.jsonl"), tmp


def test_planted_bug_is_found(planted):
    p, tmp_path = planted
    assert p.returncode == 1, p.stderr
    assert "bad.jsonl: 2 forward passes, 10 mask rows, 5 violations" in p.stdout
    # The bug: the second child of each node copies its sibling's row.
    for line in ("step 1 (forward), row 1, query node 5, slot 4 (node 4): sees a sibling's slot: expected 0, found 1",
                 "step 1 (forward), row 3, query node 7, slot 6 (node 6): sees a sibling's slot: expected 0, found 1",
                 "step 1 (forward), row 5, query node 9, slot 8 (node 8): sees a sibling's slot: expected 0, found 1"):
        assert line in p.stdout
    assert "no display" in p.stdout
    t = triescope.Trace(tmp_path / "bad.jsonl")
    assert t.header["config"]["engine"] == "speculative_tree_example"
    assert [n.status for n in t.at(2).nodes][4:] == ["accepted", "rejected", "accepted", "rejected", "rejected", "rejected"]


def test_fixed_mask_passes(source_dir, tmp_path, run_cli):
    p = run_example(source_dir, tmp_path, "--out", "good.jsonl", "--fixed", "--no-gui")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 violations" in p.stdout
    out = run_cli("inspect", tmp_path / "good.jsonl", "--step", 1).stdout
    assert "all agree" in out and "sofa" in out
    # triescope diff reads it like any other trace: against itself equal, against the buggy
    # run the first divergence is the mask row of the first planted sibling bit.
    run_cli("diff", tmp_path / "good.jsonl", tmp_path / "good.jsonl", expect=0)
    run_example(source_dir, tmp_path, "--out", "bad.jsonl", "--no-gui")
    out = run_cli("diff", tmp_path / "good.jsonl", tmp_path / "bad.jsonl", expect=1).stdout
    assert "forward.mask.rows[1]" in out, out


def test_trace_opens_in_the_inspector(planted, build_dir, tmp_path):
    gui = pathlib.Path(build_dir) / "gui" / "triescope-gui"
    if not gui.exists():
        pytest.skip("this build has no inspector (TRIESCOPE_BUILD_GUI is OFF)")
    shot = tmp_path / "shot.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    p = subprocess.run([str(gui), str(planted[1] / "bad.jsonl"), "--step", "1", "--screenshot", str(shot), "--size", "800x600"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert shot.exists() and shot.stat().st_size > 1000


def test_trace_format_examples_are_its_records(planted, source_dir):
    """docs/trace-format.md's `external` examples are records the example writes (they cannot drift)."""
    import json
    import re

    records = [json.loads(line) for line in (planted[1] / "bad.jsonl").read_text().splitlines()]
    doc = (source_dir / "docs" / "trace-format.md").read_text()
    blocks = re.findall(r"<!-- python example: python/examples/speculative_tree_mask.py (\w+)(?: step=(\d+))? -->\n```json\n(.*?)\n```",
                        doc, re.S)
    assert len(blocks) == 2
    for kind, step, text in blocks:
        want = [r for r in records if r["kind"] == kind and (not step or r["step"] == int(step))][0]
        assert json.loads(text) == want
