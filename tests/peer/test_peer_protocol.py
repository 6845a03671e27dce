"""bench/peer_protocol.py: the harness every peer benchmark runs by. Sides interleave rep by
rep in rotating order after a warm-up, >= 3 runs each, unequal outputs exit 1, unequal
thread counts are refused, and the figures are the run medians' median and range."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import peer_protocol  # noqa: E402


def sides(log, outputs=("x", "x"), threads=(1, 1), own=(None, None)):
    def make(i, name):
        def call():
            log.append(name)
            return outputs[i], own[i], None
        return peer_protocol.Side(name, call, threads[i])
    return [make(0, "a"), make(1, "b")]


def test_interleaved_rotating_order_after_warmup(capsys):
    log = []
    ss = peer_protocol.run(sides(log), reps=2, warmup=1, runs=3)
    assert log == ["a", "b"] + ["a", "b", "b", "a"] * 3
    assert [len(r) for r in ss[0].wall] == [2, 2, 2] and len(ss[1].cpu) == 3
    out = capsys.readouterr().out
    assert out.count("load average") == 3 and "threads: a 1, b 1" in out


def test_unequal_output_exits_1():
    with pytest.raises(SystemExit) as e:
        peer_protocol.run(sides([], outputs=("x", "y")), reps=1, warmup=0, runs=3)
    assert e.value.code == 1


def test_unequal_threads_and_too_few_runs_are_refused():
    with pytest.raises(SystemExit, match="unequal thread counts"):
        peer_protocol.run(sides([], threads=(1, 2)), reps=1, warmup=0, runs=3)
    with pytest.raises(SystemExit, match="runs must be >= 3"):
        peer_protocol.run(sides([]), reps=1, warmup=0, runs=2)


def test_medians_spread_and_ratio_range():
    a, b = peer_protocol.Side("a", None, 1), peer_protocol.Side("b", None, 1)
    a.wall = [[1.0, 3.0, 2.0], [4.0, 4.0, 4.0], [2.0, 2.0, 9.0]]  # run medians 2, 4, 2
    b.wall = [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [0.5, 0.5, 0.5]]  # 1, 2, 0.5
    assert peer_protocol.spread(a.wall) == {"median": 2.0, "min": 2.0, "max": 4.0, "runs": 3, "reps": 3}
    assert peer_protocol.ratio_range(a.wall, b.wall) == {"median": 2.0, "min": 2.0, "max": 4.0}


def test_own_timing_is_used_when_a_side_gives_it():
    ss = peer_protocol.run(sides([], own=(0.25, None)), reps=1, warmup=0, runs=3)
    assert ss[0].wall == [[0.25]] * 3 and all(w[0] < 0.25 for w in ss[1].wall)
