"""The bindings round-trip every type they expose, and bad input raises a Python
exception naming the argument (never a crash)."""
import ast
import pathlib

import numpy as np
import pytest
import torch

import triescope
from triescope import _core

VOCAB = ["a", "b", "c", "d", "e"]


def write_small(path, mask_dtype=bool):
    """A prompt chain of 2, then two children of the last prompt token, then a gc."""
    with triescope.TraceWriter(path, algorithm="unit", vocab=VOCAB, config={"note": "x", "k": [1, 2.5, None, True]}) as w:
        ids = w.step(added=[(-1, 0, 0), (0, 1, 1, -0.5)], queries=[0, 1], mask=np.array([[1, 0], [1, 1]], dtype=mask_dtype),
                     positions=[0, 1])
        assert ids == [0, 1]
        ids = w.step(added=[(1, 2, 2, -1.0), (1, 3, 3, -2.0)], queries=np.array([2, 3]),
                     mask=torch.tensor([[1, 1, 1, 0], [1, 1, 0, 1]], dtype=torch.bool), positions=torch.tensor([2, 2]))
        assert ids == [2, 3]
        w.step(status={3: "pruned"})
        ids = w.step(gc=[(0, 0), (1, 1), (2, 2)], added=[(2, 4, 3)], queries=[4], mask=np.array([[1, 1, 1, 1]], dtype=np.uint8),
                     positions=[3])
        assert ids == [4]
        assert w.steps == 4 and w.num_slots == 4 and not w.closed
        assert [n.token for n in w.nodes] == [0, 1, 2, 3, 4]
        w.close(outputs=[[2, 4]])
        assert w.closed


def test_trace_writer_round_trip(tmp_path):
    path = tmp_path / "t.jsonl"
    write_small(path)
    t = triescope.Trace(str(path))
    h = t.header
    assert (h["schema"], h["version"], h["algorithm"], h["backend"]) == (triescope.TRACE_FORMAT, triescope.TRACE_VERSION, "external", "external")
    assert h["config"] == {"engine": "unit", "note": "x", "k": [1, 2.5, None, True]}
    assert t.vocab == VOCAB
    assert t.steps == [0, 1, 2, 3]
    v = t.at(1)
    assert isinstance(v, triescope.StepView) and v.step == 1 and v.phase == "forward"
    assert [(n.id, n.parent, n.token, n.depth, n.slot, n.status) for n in v.nodes] == [
        (0, -1, 0, 0, 0, "live"), (1, 0, 1, 1, 1, "live"), (2, 1, 2, 2, 2, "live"), (3, 1, 3, 2, 3, "live")]
    assert v.nodes[1].logprob == -0.5 and isinstance(v.nodes[0], triescope.Node)
    assert v.added == [2, 3] and v.slot_to_node == [0, 1, 2, 3]
    f = v.forward
    assert isinstance(f, triescope.Forward)
    assert f.queries == [2, 3] and f.positions == [2, 2] and f.slots == [2, 3]
    assert f.mask.dtype == np.bool_ and f.mask.tolist() == [[True, True, True, False], [True, True, False, True]]
    assert v.kv == {"slots": 4, "peak": 4}
    assert t.at(2).forward is None and t.at(2).nodes[3].status == "pruned"
    v3 = t.at(3)
    assert v3.gc_moves == [(0, 0), (1, 1), (2, 2)]
    assert v3.nodes[3].slot == -1 and v3.nodes[4].slot == 3 and v3.slot_to_node == [0, 1, 2, 4]
    assert t.summary["outputs"] == [{"tokens": [2, 4]}]
    assert t.summary["metrics"]["model_calls"] == 3 and t.summary["metrics"]["gc_runs"] == 1
    assert [r["kind"] for r in t.records] == ["header", "step", "step", "step", "gc", "step", "keyframe", "summary"]
    report = triescope.check(str(path))
    assert isinstance(report, triescope.CheckReport) and report.ok and bool(report)
    assert (report.layout, report.passes, report.rows, report.violation_count, report.violations) == ("tree", 3, 5, 0, [])


def test_mask_dtypes_equal(tmp_path):
    write_small(tmp_path / "bool.jsonl", bool)
    write_small(tmp_path / "u8.jsonl", np.uint8)
    a = (tmp_path / "bool.jsonl").read_text().splitlines()
    b = (tmp_path / "u8.jsonl").read_text().splitlines()
    assert a[:-1] == b[:-1]  # the summary differs only by wall time (none here)


def test_violation_fields(tmp_path):
    path = tmp_path / "bad.jsonl"
    with triescope.TraceWriter(path) as w:
        w.step(added=[(-1, 0, 0), (0, 1, 1), (0, 2, 2)], queries=[0, 1, 2],
               mask=np.array([[1, 0, 0], [1, 1, 1], [1, 0, 1]], dtype=bool), positions=[0, 1, 1])
    r = triescope.check(str(path))
    assert not r.ok and r.violation_count == 1
    v = r.violations[0]
    assert isinstance(v, triescope.Violation)
    assert (v.step, v.phase, v.row, v.query, v.slot, v.slot_node, v.fault, v.expected, v.found) == (
        0, "prefill", 1, 1, 2, 2, "sees a sibling's slot", 0, 1)
    assert str(v) == "step 0 (prefill), row 1, query node 1, slot 2 (node 2): sees a sibling's slot: expected 0, found 1"
    assert triescope.check(str(path), limit=0).violations == [] and triescope.check(str(path), limit=0).violation_count == 1


def test_constraint_index(tmp_path):
    seqs = np.array([[1, 2, 3], [1, 2, 4], [1, 3, 0], [2, 0, 0], [1, 2, 3]])
    idx = triescope.ConstraintIndex(seqs, vocab_size=5)
    assert (idx.length, idx.vocab_size, idx.size, len(idx)) == (3, 5, 4, 4) and idx.memory_bytes > 0
    assert idx.contains([1, 2, 4]) and not idx.contains([1, 2, 2]) and idx.contains(np.array([2, 0, 0]))
    scores = np.zeros((3, 5), dtype=np.float32)
    idx.mask_(np.zeros((3, 0), dtype=np.int64), scores)
    assert (np.isfinite(scores) == [[False, True, True, False, False]] * 3).all()
    scores = torch.zeros(3, 5)
    idx.mask_(torch.tensor([[1, 2], [1, 3], [2, 2]]), scores)  # a torch tensor is masked in place
    assert torch.isfinite(scores).tolist() == [[False, False, False, True, True], [True, False, False, False, False],
                                               [False] * 5]
    csr = idx.csr()
    assert set(csr) == {"row_ptr", "edges", "max_branch", "level_start"} and csr["edges"].shape[1] == 2
    assert csr["max_branch"].tolist() == [2, 2, 2]


def test_stubs_name_every_binding(source_dir):
    """_core.pyi declares exactly the module's public names."""
    stub = ast.parse((pathlib.Path(source_dir) / "python" / "triescope" / "_core.pyi").read_text())
    declared = {n.name for n in stub.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    declared |= {t.id for n in stub.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert declared == public
    for name in public:
        obj = getattr(_core, name)
        if callable(obj) and name != "Error":
            assert obj.__doc__, f"{name} has no docstring"


# --- bad input: a Python exception naming the argument, never a crash -------------------

def new_writer(tmp_path):
    w = triescope.TraceWriter(tmp_path / "x.jsonl")
    w.step(added=[(-1, 0, 0), (0, 1, 1)], queries=[0, 1], mask=np.tril(np.ones((2, 2), dtype=bool)), positions=[0, 1])
    return w


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(queries=[1], mask=np.ones((1, 2), dtype=np.float32), positions=[1]), TypeError, ["mask", "float32"]),
    (dict(queries=[1], mask=np.ones((1, 2), dtype=np.int64), positions=[1]), TypeError, ["mask", "int64"]),
    (dict(queries=[1], mask=torch.ones(1, 2), positions=[1]), TypeError, ["mask", "float32"]),
    (dict(queries=[1], mask=np.ones(2, dtype=bool), positions=[1]), triescope.Error, ["mask", "2-D", "(2,)"]),
    (dict(queries=[1], mask=np.ones((2, 2), dtype=bool), positions=[1]), triescope.Error, ["mask", "2 rows for 1 queries"]),
    (dict(queries=[1], mask=np.full((1, 2), 3, dtype=np.uint8), positions=[1]), triescope.Error, ["mask[0, 0] = 3"]),
    (dict(queries=[1], mask=np.ones((1, 2), dtype=bool), positions=[1, 2]), triescope.Error, ["positions", "2 entries for 1"]),
    (dict(queries=[1.5], mask=np.ones((1, 2), dtype=bool), positions=[1]), TypeError, ["queries[0]", "float"]),
    (dict(queries=np.array([1.0]), mask=np.ones((1, 2), dtype=bool), positions=[1]), TypeError, ["queries", "float64"]),
    (dict(queries=[7], mask=np.ones((1, 2), dtype=bool), positions=[1]), triescope.Error, ["queries[0]", "node 7 does not exist"]),
    (dict(queries=[1], mask=np.ones((1, 2), dtype=bool)), triescope.Error, ["positions"]),
    (dict(added=[(9, 2, 2)]), triescope.Error, ["added[0].parent", "node 9 does not exist"]),
    (dict(added=[(1, 2, 2), (5, 2, 3)]), triescope.Error, ["added[1].parent", "node 5 does not exist"]),
    (dict(added=[(1, 2, 1)]), triescope.Error, ["added[0].slot", "slot 1 is still held by node 1 (live)"]),
    (dict(added=[(1, 2, 2), (1, 3, 2)]), triescope.Error, ["added[1].slot", "slot 2 is still held by node 2"]),
    (dict(added=[(1, "b", 2)]), TypeError, ["added[0]", "str"]),
    (dict(added=[(1, 2)]), triescope.Error, ["added[0]", "got 2 entries"]),
    (dict(added=[(1, -3, 2)]), triescope.Error, ["added[0].token"]),
    (dict(gc=[(0, 0)]), triescope.Error, ["gc", "drops slot 1 of live node 1"]),
    (dict(gc=[(0, 0), (1, 0)]), triescope.Error, ["gc[1]", "new slot 0 is filled twice"]),
    (dict(gc=[(0, 0), (0, 1)]), triescope.Error, ["gc[1]", "old slot 0 is moved twice"]),
    (dict(gc=[(0, 0), (1, 2)]), triescope.Error, ["gc[1]", "new slot 2 outside"]),
    (dict(gc=[(5, 0)]), triescope.Error, ["gc[0]", "old slot 5"]),
    (dict(status={7: "pruned"}), triescope.Error, ["status[0]", "node 7"]),
    (dict(status={1: "gone"}), triescope.Error, ["status[0]", "gone"]),
    (dict(status={1: 3}), TypeError, ["status[0]", "string"]),
])
def test_writer_rejects(tmp_path, kwargs, exc, words):
    w = new_writer(tmp_path)
    with pytest.raises(exc) as e:
        w.step(**kwargs)
    for word in words:
        assert word in str(e.value), (word, str(e.value))
    # Nothing was recorded: the next valid step is step 1.
    assert w.steps == 1
    w.step(added=[(1, 2, 2)], queries=[2], mask=np.ones((1, 3), dtype=bool), positions=[2])
    w.close()
    assert triescope.check(str(tmp_path / "x.jsonl")).ok


def test_writer_leaves_no_file_on_error(tmp_path):
    path = tmp_path / "y.jsonl"
    with pytest.raises(triescope.Error):
        with triescope.TraceWriter(path) as w:
            w.step(added=[(-1, 0, 0)], queries=[0], mask=np.ones((1, 1), dtype=bool), positions=[0])
            w.step(added=[(4, 0, 1)])
    assert not path.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(triescope.Error, match="already abandoned"):
        w.step()


@pytest.mark.parametrize("call, exc, words", [
    (lambda: triescope.TraceWriter("/nonexistent-dir/x.jsonl"), triescope.Error, ["/nonexistent-dir/x.jsonl"]),
    (lambda: triescope.TraceWriter("x.jsonl", vocab="abc"), TypeError, ["vocab"]),
    (lambda: triescope.TraceWriter("x.jsonl", config=[1]), triescope.Error, ["config"]),
    (lambda: triescope.TraceWriter("x.jsonl", config={"a": object()}), TypeError, ["config.a"]),
    (lambda: triescope.Trace("/nonexistent.jsonl"), triescope.Error, ["/nonexistent.jsonl"]),
    (lambda: triescope.check("/nonexistent.jsonl"), triescope.Error, ["/nonexistent.jsonl"]),
    (lambda: triescope.ConstraintIndex(np.array([[1.0, 2.0]]), 5), TypeError, ["sequences", "float64"]),
    (lambda: triescope.ConstraintIndex(np.array([[1, 7]]), 5), triescope.Error, ["sequences[0][1]", "token 7"]),
    (lambda: triescope.ConstraintIndex([[1, 2], [1]], 5), triescope.Error, ["sequences[1]"]),
    (lambda: triescope.ConstraintIndex(np.array([1, 2]), 5), triescope.Error, ["sequences", "2-D"]),
    (lambda: triescope.ConstraintIndex(np.zeros((0, 2), dtype=int), 5), triescope.Error, ["sequences", "empty"]),
    (lambda: triescope.ConstraintIndex([[1, 2]], 5, dense_levels=2), triescope.Error, ["dense_levels"]),
])
def test_constructors_reject(tmp_path, monkeypatch, call, exc, words):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(exc) as e:
        call()
    for word in words:
        assert word in str(e.value), (word, str(e.value))


@pytest.mark.parametrize("generated, scores, exc, words", [
    (np.zeros((2, 0), dtype=int), np.zeros((2, 5), dtype=np.float64), TypeError, ["scores", "float32"]),
    (np.zeros((2, 0), dtype=int), np.zeros((2, 4), dtype=np.float32), triescope.Error, ["scores", "4 columns"]),
    (np.zeros((3, 0), dtype=int), np.zeros((2, 5), dtype=np.float32), triescope.Error, ["generated", "3 rows"]),
    (np.zeros((2, 3), dtype=int), np.zeros((2, 5), dtype=np.float32), triescope.Error, ["generated", "3 tokens"]),
    (np.zeros((2, 1), dtype=np.float32), np.zeros((2, 5), dtype=np.float32), TypeError, ["generated", "float32"]),
    (np.zeros((2, 0), dtype=int), np.zeros((5, 2), dtype=np.float32).T, triescope.Error, ["scores", "C-contiguous"]),
    (np.zeros((2, 0), dtype=int), "scores", TypeError, ["scores"]),
])
def test_mask_rejects(generated, scores, exc, words):
    idx = triescope.ConstraintIndex([[1, 2, 3]], 5)
    with pytest.raises(exc) as e:
        idx.mask_(generated, scores)
    for word in words:
        assert word in str(e.value), (word, str(e.value))
