"""TraceWriter's provenance (model=) and per-step engine record (engine=), which
the engine checks (python/triescope/engines) write through."""
import numpy as np
import pytest

import triescope


def write(path, **kw):
    engine = kw.pop("engine", None)
    with triescope.TraceWriter(path, algorithm="my_engine", vocab=["a", "b"], **kw) as w:
        w.step(added=[(-1, 0, 0)], queries=[0], mask=np.ones((1, 1), bool), positions=[0], engine=engine)


def test_model_and_engine_are_recorded(tmp_path):
    path = tmp_path / "t.jsonl"
    write(path, model={"engine_version": "1.2.3", "path": "m.gguf"}, engine={"cells": [{"slot": 0, "pos": 0, "seq": [0]}]})
    t = triescope.Trace(path)
    assert t.header["model"] == {"type": "external", "vocab_size": 2, "engine_version": "1.2.3", "path": "m.gguf"}
    step = next(r for r in t.records if r["kind"] == "step")
    assert step["engine"] == {"cells": [{"slot": 0, "pos": 0, "seq": [0]}]}
    assert triescope.check(path).ok


def test_provenance_is_not_compared_by_diff(tmp_path, run_cli):
    write(tmp_path / "a.jsonl", model={"engine_version": "1"})
    write(tmp_path / "b.jsonl", model={"engine_version": "2"})
    assert run_cli("diff", tmp_path / "a.jsonl", tmp_path / "b.jsonl").returncode == 0


@pytest.mark.parametrize("kw, message", [
    ({"model": {"type": "x"}}, "model: \"type\" is always \"external\""),
    ({"model": [1]}, "model: must be an object"),
    ({"engine": [1]}, "engine: must be an object"),
])
def test_bad_fields_are_named_and_leave_no_file(tmp_path, kw, message):
    with pytest.raises(triescope.Error, match=message):
        write(tmp_path / "t.jsonl", **kw)
    assert not (tmp_path / "t.jsonl").exists()
