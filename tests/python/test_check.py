"""triescope check / triescope.check: each planted mask mistake is named; every bundled
sample's trace (recorded here by the CLI) passes."""
import json
import pathlib

import numpy as np
import pytest

import triescope

# Prompt chain 0-1-2 in slots 0..2; step 1 adds 3 and 4 under node 2 (slots 3, 4); step 2
# adds 5 under 3 (slot 5) and re-feeds node 3.
ANCESTORS = {0: [0], 1: [0, 1], 2: [0, 1, 2], 3: [0, 1, 2, 3], 4: [0, 1, 2, 4], 5: [0, 1, 2, 3, 5]}


def rows(queries, cols):
    m = np.zeros((len(queries), cols), dtype=bool)
    for r, q in enumerate(queries):
        m[r, ANCESTORS[q]] = True
    return m


def record(path, plant=None):
    """A correct three-step trace, or one with `plant(step, mask, positions)` applied."""
    steps = [
        dict(added=[(-1, 0, 0), (0, 1, 1), (1, 2, 2)], queries=[0, 1, 2], cols=3),
        dict(added=[(2, 3, 3), (2, 4, 4)], queries=[3, 4], cols=5),
        dict(added=[(3, 5, 5)], queries=[5, 3], cols=6),
    ]
    depth = {0: 0, 1: 1, 2: 2, 3: 3, 4: 3, 5: 4}
    with triescope.TraceWriter(path, algorithm="planted") as w:
        for i, s in enumerate(steps):
            mask = rows(s["queries"], s["cols"])
            positions = [depth[q] for q in s["queries"]]
            if plant:
                mask, positions = plant(i, mask, positions)
            w.step(added=s["added"], queries=s["queries"], mask=mask, positions=positions)


def plant_bit(step, row, col, value):
    def plant(i, mask, positions):
        if i == step:
            if col >= mask.shape[1]:
                mask = np.concatenate([mask, np.zeros((mask.shape[0], col + 1 - mask.shape[1]), dtype=bool)], axis=1)
            mask[row, col] = value
        return mask, positions
    return plant


def plant_position(step, row, delta):
    def plant(i, mask, positions):
        if i == step:
            positions[row] += delta
        return mask, positions
    return plant


def test_correct_trace_passes(tmp_path, run_cli):
    record(tmp_path / "ok.jsonl")
    r = triescope.check(tmp_path / "ok.jsonl")
    assert r.ok and r.passes == 3 and r.rows == 7
    out = run_cli("check", tmp_path / "ok.jsonl", expect=0).stdout
    assert "every mask row and position id follows the ancestor rule" in out


PLANTED = [
    # (name, plant, step, row, query, slot, fault, expected, found)
    ("sibling", plant_bit(1, 1, 3, True), 1, 1, 4, 3, "sees a sibling's slot", 0, 1),
    ("missing self", plant_bit(1, 0, 3, False), 1, 0, 3, 3, "missing self bit", 1, 0),
    ("missing ancestor", plant_bit(2, 0, 1, False), 2, 0, 5, 1, "missing ancestor bit", 1, 0),
    ("descendant", plant_bit(2, 1, 5, True), 2, 1, 3, 5, "sees a descendant's slot", 0, 1),
    ("other branch", plant_bit(2, 0, 4, True), 2, 0, 5, 4, "sees another branch's slot", 0, 1),
    ("free slot", plant_bit(1, 0, 6, True), 1, 0, 3, 6, "sees a slot no node holds", 0, 1),
    ("position off by one", plant_position(1, 1, +1), 1, 1, 4, -1, "wrong position id", 3, 4),
    ("position of the prefill", plant_position(0, 2, -1), 0, 2, 2, -1, "wrong position id", 2, 1),
]


@pytest.mark.parametrize("name, plant, step, row, query, slot, fault, expected, found", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_mistake_is_named(tmp_path, run_cli, name, plant, step, row, query, slot, fault, expected, found):
    path = tmp_path / "bad.jsonl"
    record(path, plant)
    r = triescope.check(path)
    assert not r.ok and r.violation_count == 1, [str(v) for v in r.violations]
    v = r.violations[0]
    assert (v.step, v.row, v.query, v.slot, v.fault, v.expected, v.found) == (step, row, query, slot, fault, expected, found)
    if name in ("sibling", "position off by one"):  # the CLI prints the same lines (one start-up each: kept few)
        p = run_cli("check", path, expect=1)
        assert "1 violation" in p.stdout and str(v) in p.stdout


def test_cli_limits_the_listing(tmp_path, run_cli):
    path = tmp_path / "many.jsonl"
    record(path, lambda i, m, pos: (np.ones_like(m), pos))
    r = triescope.check(path, limit=2)
    assert r.violation_count > 2 and len(r.violations) == 2
    out = run_cli("check", path, "--max", 2, expect=1).stdout
    assert f"{r.violation_count} violations" in out and f"... {r.violation_count - 2} more" in out
    assert run_cli("check", path, "--max", "x", expect=2).stderr.count("--max must be an integer") == 1
    assert "cannot open" in run_cli("check", tmp_path / "none.jsonl", expect=2).stderr


# --- every bundled sample, recorded by the CLI ------------------------------------------

def samples(source_dir):
    # transformer_byo needs a model the user downloads (README: bring your own model).
    return sorted(p for p in (source_dir / "samples").glob("*.json") if p.stem != "transformer_byo")


@pytest.fixture(scope="module")
def sample_traces(tmp_path_factory, source_dir, run_cli):
    out = tmp_path_factory.mktemp("samples")
    traces = {}
    for s in samples(source_dir):
        p = run_cli("run", s, "--out", out / f"{s.stem}.jsonl", expect=None)
        if p.returncode != 0 and "transformer" in p.stderr and "LibTorch" in p.stderr:
            continue  # a build without LibTorch has no transformer model
        assert p.returncode == 0, f"{s}: {p.stderr}"
        traces[s.stem] = out / f"{s.stem}.jsonl"
    # The batch layout and MultiGen's copy method, from the Figure 1 samples.
    fig1 = json.loads((source_dir / "samples" / "figure1_once_upon_a_time.json").read_text())
    fig1["algorithm"] = "batch_beam_search"
    fig1.pop("trace", None)
    fig1["beam"].pop("gc_interval", None)
    mg = json.loads((source_dir / "samples" / "multigen_figure1.json").read_text())
    mg["multigen"]["method"] = "copy"
    for name, sample in (("batch_beam_search_figure1", fig1), ("multigen_copy_figure1", mg)):
        (out / f"{name}.json").write_text(json.dumps(sample))
        run_cli("run", out / f"{name}.json", "--out", out / f"{name}.jsonl")
        traces[name] = out / f"{name}.jsonl"
    return traces


def test_every_sample_trace_passes(sample_traces, source_dir, run_cli):
    assert len(sample_traces) >= len(samples(source_dir)) - 2 + 2
    for name, path in sample_traces.items():
        r = triescope.check(path)
        assert r.ok, (name, [str(v) for v in r.violations])
        assert r.passes > 0 and r.rows > 0
        algorithm = json.loads(path.read_text().split("\n", 1)[0])["algorithm"]
        assert r.layout == ("copies" if algorithm == "batch_beam_search" else "tree")
    out = run_cli("check", sample_traces["batch_beam_search_figure1"], expect=0).stdout
    assert "follows the copy layout" in out


def flip(path, out, step, edit):
    """Writes `path` with `edit(forward)` applied to the step record of `step`."""
    recs = [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]
    for r in recs:
        if r["kind"] == "step" and r["step"] == step:
            edit(r["forward"])
    pathlib.Path(out).write_text("".join(json.dumps(r) + "\n" for r in recs))


def set_bit(fwd, row, col):
    hexrow = bytearray.fromhex(fwd["mask"]["rows"][row])
    hexrow[col // 8] ^= 1 << (col % 8)
    fwd["mask"]["rows"][row] = hexrow.hex()


def test_mistakes_in_a_sample_trace(sample_traces, tmp_path):
    # Figure 1, step 2: query "was" (node 7, slot 6, under "there" in slot 4) gets the bit of
    # "in" (slot 5, the other prompt continuation): another branch.
    flip(sample_traces["figure1_once_upon_a_time"], tmp_path / "f.jsonl", 2, lambda f: set_bit(f, 0, 5))
    v = triescope.check(tmp_path / "f.jsonl").violations
    assert [(x.step, x.query, x.slot, x.fault) for x in v] == [(2, 7, 5, "sees another branch's slot")]
    # Its sibling "lived" (node 9, slot 8) on the same step.
    flip(sample_traces["figure1_once_upon_a_time"], tmp_path / "g.jsonl", 2, lambda f: set_bit(f, 0, 8))
    v = triescope.check(tmp_path / "g.jsonl").violations
    assert [(x.step, x.query, x.slot, x.slot_node, x.fault) for x in v] == [(2, 7, 8, 9, "sees a sibling's slot")]

    # A pass that says "a" (node 8, slot 7) wrote slot 3.
    def move(f):
        f["slots"][1] = 3
    flip(sample_traces["figure1_once_upon_a_time"], tmp_path / "h.jsonl", 2, move)
    v = triescope.check(tmp_path / "h.jsonl").violations
    assert [(x.step, x.query, x.slot, x.fault, x.expected, x.found) for x in v] == [(2, 8, 3, "wrong slot written", 7, 3)]


def test_mistakes_in_a_draft_pass(sample_traces, tmp_path):
    # speculative_synthetic, step 3 (draft): the draft model's second pass feeds node 12 at
    # slot 12 (mask row "ff1f": slots 0..12). Its own bit cleared, then its position moved.
    src = sample_traces["speculative_synthetic"]

    def edit(step, fn):
        recs = [json.loads(line) for line in pathlib.Path(src).read_text().splitlines()]
        for r in recs:
            if r["kind"] == "step" and r["step"] == step and r["phase"] == "draft":
                fn(r["draft_forwards"][1])
        pathlib.Path(tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        return triescope.check(tmp_path / "d.jsonl").violations

    v = edit(3, lambda f: set_bit(f, 0, 12))
    assert [(x.step, x.phase, x.pass_name, x.query, x.slot, x.fault) for x in v] == [
        (3, "draft", "draft_forwards[1]", 12, 12, "missing self bit")]
    assert "draft_forwards[1]" in str(v[0])

    def shift(f):
        f["positions"][0] += 1
    v = edit(3, shift)
    assert [(x.pass_name, x.fault, x.expected, x.found) for x in v] == [("draft_forwards[1]", "wrong position id", 12, 13)]


def test_mistakes_in_the_copy_layout(sample_traces, tmp_path):
    src = sample_traces["batch_beam_search_figure1"]
    # Region size: 4 prompt + 3 new tokens = 7. Step 1 feeds row 1 at slot 7 + 4 = 11.
    flip(src, tmp_path / "a.jsonl", 1, lambda f: set_bit(f, 1, 4))  # row 1 reads copy 0's slot 4
    v = triescope.check(tmp_path / "a.jsonl").violations
    assert [(x.row, x.slot, x.fault, x.expected, x.found) for x in v] == [(1, 4, "sees another branch's slot", 0, 1)]
    flip(src, tmp_path / "b.jsonl", 1, lambda f: set_bit(f, 1, 11))  # its own slot cleared
    v = triescope.check(tmp_path / "b.jsonl").violations
    assert [(x.row, x.slot, x.fault) for x in v] == [(1, 11, "missing self bit")]

    def shift(f):
        f["positions"][2] += 1
    flip(src, tmp_path / "c.jsonl", 1, shift)
    v = triescope.check(tmp_path / "c.jsonl").violations
    assert [(x.row, x.fault, x.expected, x.found) for x in v] == [(2, "wrong position id", 4, 5)]
