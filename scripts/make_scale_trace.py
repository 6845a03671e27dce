#!/usr/bin/env python3
"""A big, valid trace for the scale benchmark (docs/benchmarks.md, "Traces at
scale"): a random tree of --nodes nodes added at the prefill, then --steps
steps each re-verifying --queries nodes with their exact ancestor masks
(so `triescope check` finds no violation and does all its work), a keyframe
every 16 steps. Written as JSON Lines, never held whole.

    python3 scripts/make_scale_trace.py /tmp/scale.jsonl --nodes 5000 --queries 4096 --steps 200

With --small-records N it writes instead a trace of many small records: the
header, N step records of 31 to 32 bytes (`{"kind":"step","step":123}`: a
step with no tree, no forward pass, valid for `triescope check`) and the
summary. 35,000,000 records make a 1.1 GB file whose cost in a reader is its
per-record index, not any record (docs/benchmarks.md, "Traces at scale").

    python3 scripts/make_scale_trace.py /tmp/small.jsonl --small-records 35000000
"""
import argparse
import json
import random


def dump(r):
    return json.dumps(r, separators=(",", ":"))


HEADER = {"kind": "header", "schema": "triescope.trace", "version": 2, "algorithm": "external",
          "backend": "external", "config": {"engine": "scale"}, "model": {"type": "external"}}


def write_small_records(out, n):
    """The header, n step records `{"kind":"step","step":s}`, the summary."""
    with open(out, "w") as f:
        f.write(dump(HEADER) + "\n")
        block = 100_000
        for start in range(0, n, block):
            f.write("".join('{"kind":"step","step":%d}\n' % s for s in range(start, min(n, start + block))))
        f.write(dump({"kind": "summary", "outputs": [], "metrics": {"last_step": n - 1}}) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--small-records", type=int, default=0, metavar="N",
                    help="write N minimal step records instead (many small records)")
    a = ap.parse_args()
    if a.small_records > 0:
        write_small_records(a.out, a.small_records)
        return
    rng = random.Random(a.seed)
    n = a.nodes
    parent = [-1] + [rng.randrange(max(0, i - 64), i) for i in range(1, n)]  # shallow-ish, bushy
    depth = [0] * n
    anc = [0] * n  # ancestors-or-self as a bit set over slots (slot = node id)
    for i in range(n):
        if parent[i] >= 0:
            depth[i] = depth[parent[i]] + 1
            anc[i] = anc[parent[i]]
        anc[i] |= 1 << i
    nbytes = (n + 7) // 8
    row_hex = [anc[i].to_bytes(nbytes, "little").hex() for i in range(n)]
    nodes = [{"id": i, "parent": parent[i], "token": i % 251, "depth": depth[i], "slot": i, "logprob": -0.5, "status": "live"}
             for i in range(n)]
    with open(a.out, "w") as f:
        f.write(dump(HEADER) + "\n")
        f.write(dump({"kind": "step", "step": 0, "phase": "prefill", "added": nodes, "kv": {"slots": n, "peak": n}}) + "\n")
        for s in range(1, a.steps + 1):
            q = [(s * 7919 + k * 31) % n for k in range(a.queries)]
            # The record's text built around the mask rows, so no 4 MB list is dumped twice.
            head = dump({"kind": "step", "step": s, "phase": "forward", "kv": {"slots": n, "peak": n}})[:-1]
            f.write(head + ',"forward":{"queries":' + dump(q) + ',"positions":' + dump([depth[i] for i in q]) +
                    ',"slots":' + dump(q) + ',"mask":{"cols":' + str(n) + ',"rows":[')
            f.write(",".join('"' + row_hex[i] + '"' for i in q))
            f.write("]}}}\n")
            if s % 16 == 0:
                f.write(dump({"kind": "keyframe", "step": s, "nodes": nodes, "slot_to_node": list(range(n))}) + "\n")
        f.write(dump({"kind": "summary", "outputs": []}) + "\n")


if __name__ == "__main__":
    main()
