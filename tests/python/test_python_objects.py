"""Python objects handed to the writers (issue 36's findings): a circular or very deep
`config` / `model` is refused by name instead of recursing until the interpreter dies;
anything the writer accepts our reader reads back; `outputs` are token ids checked
against int32 (2^40 + 3 was written as 3); hf_generate_replay's kv_shape is read
like a sample's (a negative or 2^32 + 1 layer count was taken)."""
import numpy as np
import pytest

import triescope
from triescope import _core


def nested(depth):
    obj = 0
    for _ in range(depth):
        obj = {"a": obj}
    return obj


def write(path, config=None, outputs=None):
    w = triescope.TraceWriter(path, vocab=["a", "b"], config=config)
    w.step(added=[(-1, 0, 0)], queries=[0], mask=np.ones((1, 1), bool), positions=[0])
    w.close(outputs=outputs)


def test_circular_config_is_refused_by_name(tmp_path):
    loop = {}
    loop["self"] = loop
    with pytest.raises(triescope.Error, match=r"^config\.self\.self.*nested deeper than"):
        write(tmp_path / "t.jsonl", config=loop)
    assert not (tmp_path / "t.jsonl").exists()


def test_a_million_levels_are_refused_not_a_crash(tmp_path):
    with pytest.raises(triescope.Error, match=r"nested deeper than"):
        write(tmp_path / "t.jsonl", config=nested(10**6))


def test_what_the_writer_accepts_the_reader_reads(tmp_path):
    """Every depth up to the refusal: written, then read back by triescope.Trace and check."""
    accepted = 0
    for depth in range(40, 80):
        path = tmp_path / f"d{depth}.jsonl"
        try:
            write(path, config=nested(depth))
        except triescope.Error as e:
            assert "nested deeper than" in str(e)
            assert not path.exists()
            break
        accepted = depth
        config = triescope.Trace(path).header["config"]
        assert {k: v for k, v in config.items() if k != "engine"} == nested(depth)
        assert triescope.check(path).ok
    assert 40 <= accepted < 79, accepted  # some depth was refused, and only past what reads back


def test_outputs_are_checked_against_int32(tmp_path):
    with pytest.raises(triescope.Error, match=r"outputs\[0\]\[1\]: 1099511627779 does not fit in 32 bits"):
        write(tmp_path / "t.jsonl", outputs=[[1, 2**40 + 3]])
    write(tmp_path / "ok.jsonl", outputs=[[1, 0]])
    assert triescope.Trace(tmp_path / "ok.jsonl").summary["outputs"][0]["tokens"] == [1, 0]


def replay(kv_shape):
    return _core.hf_generate_replay([0], [np.zeros((1, 4), np.float32)], [[0, 1]], None, 1, 1, -1, 0, 1.0, False, 0,
                                    kv_shape, None, None, None, None, 0)


@pytest.mark.parametrize("kv_shape, message", [
    ({"layers": -1}, r"kv_shape\.layers must be in \[1, 1024\], got -1"),
    ({"layers": 2**32 + 1}, r"kv_shape\.layers must be in \[1, 1024\], got 4294967297"),
    ({"head_dim": "64"}, r"kv_shape\.head_dim must be an integer"),
    ({"heads": 8}, r"unknown field kv_shape\.heads"),
    ([1, 2], r"kv_shape must be an object"),
])
def test_hf_replay_kv_shape_is_read_like_a_samples(kv_shape, message):
    with pytest.raises(triescope.Error, match=message):
        replay(kv_shape)
