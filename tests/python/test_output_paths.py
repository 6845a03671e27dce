"""Two Python TraceWriters on one path (issue 27): each writes its own
temporary, so the trace left is one writer's, whole, and none is left over."""
import numpy as np
import pytest

import triescope

VOCAB = ["a", "b", "c"]


def write_chain(w, n):
    for i in range(n):
        w.step(added=[(i - 1, i % 3, i)], queries=[i], mask=np.ones((1, i + 1), dtype=bool), positions=[i])


@pytest.mark.parametrize("b_closes, winner, steps", [(True, "b", 20), (False, "a", 30)])
def test_two_writers_on_one_path(tmp_path, b_closes, winner, steps):
    # 9ae4cdc: both wrote one temporary (<path>.tmp.<pid>), the trace was corrupt.
    path = tmp_path / "t.jsonl"
    a = triescope.TraceWriter(path, algorithm="a", vocab=VOCAB)
    b = triescope.TraceWriter(path, algorithm="b", vocab=VOCAB)
    write_chain(a, 30)
    write_chain(b, 20)
    a.close()
    b.close() if b_closes else b.abandon()
    t = triescope.Trace(str(path))
    assert t.header["config"]["engine"] == winner
    assert t.steps == list(range(steps))
    assert triescope.check(str(path)).ok
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]
