#!/usr/bin/env python3
"""Readers' memory is not O(records) at a struct a record (issue 36: a 1.1 GB
trace of 35 million small records took 4.4 GB in `check`, 7 GB in `diff`).

Writes two traces of minimal step records (scripts/make_scale_trace.py
--small-records), --base and --records of them, runs each reader on both and
compares their peak RSS (os.wait4, per child): the growth must stay under
BYTES_PER_RECORD a record more plus ALLOWANCE. The base trace is past the
GUI's 2 MB preview (parsed whole, a fixed cost), so only what grows with the
records is measured. The readers' packed index costs a few bits a record;
the old index (32 bytes a record, copied into the replay) and anything like
it exceed the bound. A stand-in that holds 32 bytes a record is measured the
same way first and must fail the bound, so the test can fail.

    trace_memory_bound.py TRIESCOPE SOURCE_DIR WORK_DIR [--gui GUI]
                          [--python PYTHON --pythonpath DIR] [--base N] [--records N]
"""
import argparse
import os
import pathlib
import subprocess
import sys
import time

BYTES_PER_RECORD = 12
ALLOWANCE_KB = 2 * 1024


def peak_rss_kb(cmd, work, env=None):
    """Runs cmd; returns (its peak RSS in kB, seconds). Fails on a non-zero exit."""
    out = work / "out.txt"
    t0 = time.monotonic()
    with open(out, "wb") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(map(str, cmd))} exited {p.returncode}:\n{out.read_text()[-2000:]}")
    return usage.ru_maxrss, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("triescope")
    ap.add_argument("source_dir", type=pathlib.Path)
    ap.add_argument("work", type=pathlib.Path)
    ap.add_argument("--gui")
    ap.add_argument("--python")
    ap.add_argument("--pythonpath")
    ap.add_argument("--base", type=int, default=100_000)
    ap.add_argument("--records", type=int, default=430_000)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    # Written by another process: a child's peak RSS counts the parent's at the
    # fork (Linux keeps the high-water mark across exec), so this one stays small.
    small, big = a.work / "base.jsonl", a.work / "many.jsonl"
    more = a.records - a.base
    for path, n in ((small, a.base), (big, a.records)):
        subprocess.run([sys.executable, a.source_dir / "scripts" / "make_scale_trace.py", path, "--small-records", str(n)], check=True)
    bound_kb = more * BYTES_PER_RECORD // 1024 + ALLOWANCE_KB

    # Each reader as a command on a trace and its last step.
    readers = [
        ("check", lambda t, last: [a.triescope, "check", t], None),
        ("inspect --step last", lambda t, last: [a.triescope, "inspect", t, "--step", str(last)], None),
        ("diff T T", lambda t, last: [a.triescope, "diff", t, t], None),
    ]
    if a.gui:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        shot = a.work / "gui.png"
        readers.append(("gui --step last", lambda t, last: [a.gui, t, "--step", str(last), "--screenshot", shot], env))
    if a.python and a.pythonpath:
        env = dict(os.environ, PYTHONPATH=a.pythonpath)
        code = "import sys, triescope; t = triescope.Trace(sys.argv[1]); v = t.at(len(t.steps) - 1); n = sum(1 for _ in t.records)"
        readers.append(("python Trace", lambda t, last: [a.python, "-c", code, t], env))

    # The stand-in: 32 bytes a record held (written, so resident), measured as the readers are.
    hold = "import sys; b = b'x' * (32 * int(sys.argv[1])); print(len(b))"
    base, _ = peak_rss_kb([sys.executable, "-c", hold, str(a.base)], a.work)
    planted, _ = peak_rss_kb([sys.executable, "-c", hold, str(a.records)], a.work)
    print(f"{a.base} -> {a.records} records, bound +{bound_kb} kB ({BYTES_PER_RECORD} B a record more + {ALLOWANCE_KB} kB)")
    print(f"  stand-in holding 32 B a record: +{planted - base} kB")
    if planted - base <= bound_kb:
        sys.exit("FAIL: the bound does not catch 32 bytes a record: the measurement is broken")

    failed = []
    for name, cmd, env in readers:
        rss0, _ = peak_rss_kb(cmd(small, a.base - 1), a.work, env)
        rss1, secs = peak_rss_kb(cmd(big, a.records - 1), a.work, env)
        grow = rss1 - rss0
        print(f"  {name:22s} peak RSS {rss0} kB -> {rss1} kB (+{grow} kB, {grow * 1024 / more:.1f} B a record more), {secs:.1f} s")
        if grow > bound_kb:
            failed.append(name)
    for path in (small, big):
        path.unlink()
    if failed:
        sys.exit(f"FAIL: memory grows with the records past {BYTES_PER_RECORD} B a record: {', '.join(failed)}")
    print("ok")


if __name__ == "__main__":
    main()
