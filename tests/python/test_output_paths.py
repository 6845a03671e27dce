"""Two Python TraceWriters on one path (issue 27): each writes its own
temporary, so the trace left is one writer's, whole, and none is left over."""
import numpy as np

import triescope

VOCAB = ["a", "b", "c"]


def write_chain(w, n):
    for i in range(n):
        w.step(added=[(i - 1, i % 3, i)], queries=[i], mask=np.ones((1, i + 1), dtype=bool), positions=[i])


def test_two_writers_on_one_path(tmp_path):
    path = tmp_path / "t.jsonl"
    a = triescope.TraceWriter(path, algorithm="a", vocab=VOCAB)
    b = triescope.TraceWriter(path, algorithm="b", vocab=VOCAB)
    write_chain(a, 30)
    write_chain(b, 20)
    a.close()
    b.close()
    t = triescope.Trace(str(path))  # 9ae4cdc: both wrote one temporary, the trace was corrupt
    assert t.header["config"]["engine"] == "b"
    assert t.steps == list(range(20))
    assert triescope.check(str(path)).ok
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


def test_abandoned_writer_leaves_the_other(tmp_path):
    path = tmp_path / "t.jsonl"
    a = triescope.TraceWriter(path, algorithm="a", vocab=VOCAB)
    b = triescope.TraceWriter(path, algorithm="b", vocab=VOCAB)
    write_chain(a, 5)
    write_chain(b, 5)
    a.close()
    b.abandon()
    assert triescope.Trace(str(path)).header["config"]["engine"] == "a"
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]
