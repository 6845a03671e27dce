#!/usr/bin/env python3
"""Tables for docs/benchmarks-static.md from bench_constraint --benchmark_out JSON files.

usage: bench_constraint_report.py RUN.json [RUN.json ...]
Each number is the median over the repetitions of a benchmark
(--benchmark_repetitions), with [min, max] when there are several.
constraint_cpu_us is the CPU time inside mask + next-state update alone (for
step/static_step_*: the step's constraint phases); overhead = step_cpu_us(impl)
- step_cpu_us(unconstrained) from the same file.
"""
import json
import statistics
import sys

IMPLS = ["projection_floor", "vntk_stacked_d2", "vntk_compact_d2", "vntk_stacked_d0", "vntk_compact_d0", "static_step_compact_d2",
         "static_step_stacked_d2", "pointer_trie", "ppv_exact", "ppv_approx", "hash_bitmap"]


def spread(values, fmt="{:.0f}"):
    if not values:
        return ""
    med = fmt.format(statistics.median(values))
    return med if len(values) == 1 else f"{med} [{fmt.format(min(values))}, {fmt.format(max(values))}]"


for path in sys.argv[1:]:
    runs = {}  # (group, impl) -> list of iteration runs
    cfg = ""
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"].split("/")
        if name[0] == "hash_fpr":
            name.insert(1, "")
        runs.setdefault((name[0], name[1]), []).append(b)
        if name[0] == "step":
            cfg = f"|C| = {int(name[2]):,}, |V| = {name[3]}"
    print(f"\n### {cfg}  ({path})\n")
    col = lambda key, impl: [b[key] for b in runs.get(("step", impl), []) if key in b]
    base = col("step_cpu_us", "unconstrained")
    if base:
        print(f"unconstrained step: {spread(base)} us CPU per step (log-softmax + top-M of B x M x |V|)\n")
    print("| impl | constraint us/step (CPU) | step us (CPU) | overhead vs unconstrained | constraint vs vntk_compact_d2 | index MB | build s |")
    print("|---|---|---|---|---|---|---|")
    ref = col("constraint_cpu_us", "vntk_compact_d2")
    for impl in IMPLS:
        bs = runs.get(("step", impl))
        if not bs:
            continue
        if "error_message" in bs[0]:
            print(f"| {impl} | skipped: {bs[0]['error_message']} | | | | | |")
            continue
        c, step = col("constraint_cpu_us", impl), col("step_cpu_us", impl)
        over = f"{statistics.median(step) - statistics.median(base):+.0f}" if base else ""
        ratio = f"{statistics.median(c) / statistics.median(ref):.1f}x" if ref and c else ""
        mb = f"{bs[0]['index_MB']:.1f}" if "index_MB" in bs[0] else ""
        build = f"{bs[0]['build_s']:.2f}" if "build_s" in bs[0] else ""
        print(f"| {impl} | {spread(c)} | {spread(step)} | {over} | {ratio} | {mb} | {build} |")
    for lay in ["stacked", "compact"]:
        bs = runs.get(("build", lay))
        if bs and "error_message" not in bs[0]:
            b = bs[0]
            print(f"\nbuild/{lay} (d = 2): {b['build_s']:.2f} s, {b['total_MB']:.1f} MB total, "
                  f"{b['MB_per_1M_items']:.1f} MB per 1M items, CSR {b['csr_B_per_node']:.2f} B/node, "
                  f"dense {b['dense_MB']:.2f} MB, {b['states_M']:.2f} M states")
        elif bs:
            print(f"\nbuild/{lay}: skipped: {bs[0]['error_message']}")
    for k, bs in runs.items():
        if k[0] == "hash_fpr":
            b = bs[0]
            print(f"\nhash bitmap false-positive rate {b['fpr_pct']:.2f} % (Bloom estimate {b['expected_fpr_pct']:.2f} %), "
                  f"false negatives {int(b['false_neg'])}")
    alias = sorted((k, bs) for k, bs in runs.items() if k[0] == "alias")
    if alias:
        print("\n| 4K-aliasing guard | offset 0 | offset 16 | offset 64 |")
        print("|---|---|---|---|")
        for impl in ("copy_from_block", "fill_neg_inf"):
            cells = []
            for off in ("0", "16", "64"):
                vals = [b["step_cpu_us"] for b in runs.get(("alias", impl), []) if b["name"].split("/")[2] == off]
                cells.append(spread(vals, "{:.1f}"))
            print(f"| {impl} (us per 140 rows of 2048) | " + " | ".join(cells) + " |")
