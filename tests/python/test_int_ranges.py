"""Integers and floats given to TraceWriter (issue 27): numpy inputs are
range-checked, never narrowed (9ae4cdc cut token 2^32 + 7 to 7, slot 2^32 to
0, a uint64 parent to -1); integers past int64 raise OverflowError (9ae4cdc:
a bare RuntimeError); slots obey the reader's limit on write; a log-prob of
-inf is written as "-inf" and read back (9ae4cdc wrote null, which the reader
refused); NaN is refused by name."""
import math

import numpy as np
import pytest

import triescope


def writer(tmp_path):
    return triescope.TraceWriter(tmp_path / "t.jsonl", vocab=["a", "b"])


@pytest.mark.parametrize("added, name", [
    (np.array([[-1, 2**32 + 7, 0]], dtype=np.int64), "added[0].token"),
    (np.array([[-1, 0, 2**32]], dtype=np.int64), "added[0].slot"),
    (np.array([[2**31, 0, 0]], dtype=np.int64), "added[0].parent"),
])
def test_numpy_rows_are_not_narrowed(tmp_path, added, name):
    w = writer(tmp_path)
    with pytest.raises(triescope.Error, match=r"^" + name.replace("[", r"\[").replace("]", r"\]") + ": .* does not fit in 32 bits"):
        w.step(added=added)
    w.abandon()


def test_uint64_past_int64_is_an_overflow_error(tmp_path):
    w = writer(tmp_path)
    with pytest.raises(OverflowError, match=r"added: entry 0 = 18446744073709551615 does not fit in 64 bits"):
        w.step(added=np.array([[2**64 - 1, 0, 0]], dtype=np.uint64))
    with pytest.raises(OverflowError, match=r"queries: entry 0 = 18446744073709551615 does not fit in 64 bits"):
        w.step(queries=np.array([2**64 - 1], dtype=np.uint64), mask=np.ones((1, 1), dtype=bool), positions=[0])
    w.abandon()


def test_python_int_past_int64_is_an_overflow_error(tmp_path):
    w = writer(tmp_path)
    with pytest.raises(OverflowError, match=r"added\[0\]\[1\]: 36893488147419103232 does not fit in 64 bits"):
        w.step(added=[(-1, 2**65, 0)])
    with pytest.raises(OverflowError, match=r"does not fit in 64 bits"):
        w.step(gc=[(2**70, 0)])
    w.abandon()


def test_numpy_gc_moves_are_not_narrowed(tmp_path):
    w = writer(tmp_path)
    w.step(added=[(-1, 0, 0)])
    with pytest.raises(triescope.Error, match=r"gc\[0\]\.old: 4294967296 does not fit in 32 bits"):
        w.step(gc=np.array([[2**32, 0]], dtype=np.int64))
    w.abandon()


def test_slot_limit_is_the_readers(tmp_path):
    w = writer(tmp_path)
    # 2^24 + 5 was written and then refused by the reader; 2^31 - 1 allocated 8 GiB.
    for slot in (2**24 + 5, 2**31 - 1):
        with pytest.raises(triescope.Error, match=r"added\[0\]\.slot: must be in \[0, 16777216\) \(or -1: no K/V\), got " + str(slot)):
            w.step(added=[(-1, 0, slot)])
    w.abandon()


def test_minus_inf_logprob_round_trips(tmp_path):
    path = tmp_path / "t.jsonl"
    with triescope.TraceWriter(path, vocab=["a", "b"]) as w:
        w.step(added=[(-1, 0, 0, 0.0), (0, 1, 1, -math.inf)], queries=[0, 1], mask=np.array([[1, 0], [1, 1]], dtype=bool),
               positions=[0, 1])
    assert '"logprob":"-inf"' in path.read_text()
    t = triescope.Trace(str(path))
    assert t.at(0).nodes[1].logprob == -math.inf
    assert triescope.check(str(path)).ok


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_nan_or_plus_inf_logprob_is_refused(tmp_path, bad):
    w = writer(tmp_path)
    with pytest.raises(triescope.Error, match=r"added\[0\]\.logprob: must be a number or -inf, got"):
        w.step(added=[(-1, 0, 0, bad)])
    w.abandon()
