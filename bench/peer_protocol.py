"""The protocol every peer benchmark follows (docs/benchmarks.md, "Peer protocol").

- Both sides are called from one driver, interleaved rep by rep; the order of the sides
  rotates every rep, so neither always runs on the other's warm caches.
- `warmup` reps of every side first, not timed.
- `runs` >= 3 runs of `reps` reps each; the load average is printed before each run.
- Every output is asserted equal to the first side's (the reference): on any mismatch
  the bench prints both and exits 1 (`Mismatch`).
- Wall and CPU time per call. In-process sides are timed here (perf_counter and
  thread_time); a side that runs a child process reports its own wall time (the part it
  times itself) and its CPU time is the child's user + system time (whole process).
- Per run the median of the reps; reported: the median of the run medians and their
  spread (min .. max over runs), and each ratio as its range over the runs.
- Thread counts of the sides are printed and must be equal (`threads_equal`).
"""
from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple


class Mismatch(SystemExit):
    """Outputs of two sides differ: exit status 1."""

    def __init__(self, message: str) -> None:
        print(f"MISMATCH: {message}", file=sys.stderr, flush=True)
        super().__init__(1)


# What a side's call returns: its output, and its own wall and CPU seconds when it timed
# itself (a child process), else None for the harness to measure.
Call = Callable[[], Tuple[Any, Optional[float], Optional[float]]]


@dataclass
class Side:
    name: str
    call: Call
    threads: int
    wall: List[List[float]] = field(default_factory=list)  # [run][rep] seconds
    cpu: List[List[float]] = field(default_factory=list)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"


def threads_equal(sides: List[Side]) -> None:
    counts = {s.name: s.threads for s in sides}
    print("threads: " + ", ".join(f"{k} {v}" for k, v in counts.items()), flush=True)
    if len(set(counts.values())) != 1:
        raise SystemExit(f"peer_protocol: unequal thread counts {counts}")


def child_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(side: Side) -> Tuple[Any, float, float]:
    w0, c0, k0 = time.perf_counter(), time.thread_time(), child_cpu_seconds()
    out, wall, cpu = side.call()
    w1, c1, k1 = time.perf_counter(), time.thread_time(), child_cpu_seconds()
    return out, (w1 - w0) if wall is None else wall, ((c1 - c0) + (k1 - k0)) if cpu is None else cpu


def run(sides: List[Side], *, reps: int, warmup: int, runs: int,
        same: Callable[[Any, Any], bool] = lambda a, b: a == b, label: str = "") -> List[Side]:
    """Runs the protocol; fills each side's wall/cpu. Raises Mismatch on unequal outputs."""
    if runs < 3:
        raise SystemExit(f"peer_protocol: --runs must be >= 3, got {runs}")
    if reps < 1 or warmup < 0:
        raise SystemExit(f"peer_protocol: reps {reps} must be >= 1 and warm-up {warmup} >= 0")
    threads_equal(sides)
    ref: Dict[str, Any] = {}

    def check(side: Side, out: Any, where: str) -> None:
        if "out" not in ref:
            ref["out"], ref["by"] = out, side.name
        elif not same(ref["out"], out):
            raise Mismatch(f"{label}{where}: {side.name} differs from {ref['by']}:\n  {ref['by']}: {ref['out']!r:.400}\n"
                           f"  {side.name}: {out!r:.400}")

    for w in range(warmup):
        for s in sides:
            check(s, timed(s)[0], f" warm-up {w}")
    for r in range(runs):
        print(f"{label}run {r + 1}/{runs}: {load_average()}", flush=True)
        for s in sides:
            s.wall.append([])
            s.cpu.append([])
        for k in range(reps):
            order = sides[k % len(sides):] + sides[:k % len(sides)]
            for s in order:
                out, wall, cpu = timed(s)
                check(s, out, f" run {r + 1} rep {k + 1}")
                s.wall[-1].append(wall)
                s.cpu[-1].append(cpu)
    return sides


def run_medians(values: List[List[float]]) -> List[float]:
    return [statistics.median(v) for v in values]


def spread(values: List[List[float]], scale: float = 1.0) -> Dict[str, float]:
    """Median of the run medians and their min .. max, times `scale`."""
    m = run_medians(values)
    return {"median": statistics.median(m) * scale, "min": min(m) * scale, "max": max(m) * scale, "runs": len(m),
            "reps": len(values[0])}


def ratio_range(num: List[List[float]], den: List[List[float]]) -> Dict[str, float]:
    """num / den per run (of the run medians): the median ratio and its range."""
    r = [a / b for a, b in zip(run_medians(num), run_medians(den))]
    return {"median": statistics.median(r), "min": min(r), "max": max(r)}


def fmt(s: Dict[str, float], unit: str = "", digits: int = 1) -> str:
    return f"{s['median']:.{digits}f}{unit} [{s['min']:.{digits}f} .. {s['max']:.{digits}f}]"
