#!/usr/bin/env python3
"""Tables for docs/benchmarks-static.md from bench_constraint --benchmark_out JSON files.

usage: bench_constraint_report.py RUN.json [RUN.json ...]
Per-step overhead = step_cpu_us(impl) - step_cpu_us(unconstrained) from the same
file; constraint_cpu_us is the CPU time inside mask + next-state update alone.
"""
import json
import sys

IMPLS = ["projection_floor", "vntk_stacked_d2", "vntk_compact_d2", "vntk_stacked_d0", "vntk_compact_d0",
         "pointer_trie", "ppv_exact", "ppv_approx", "hash_bitmap"]

for path in sys.argv[1:]:
    rows = {}
    for b in json.load(open(path))["benchmarks"]:
        name = b["name"].split("/")
        if name[0] == "hash_fpr":
            name.insert(1, "")
        rows[(name[0], name[1])] = b
        cfg = f"|C| = {int(name[2]):,}, |V| = {name[3]}"
    print(f"\n### {cfg}  ({path})\n")
    base = rows.get(("step", "unconstrained"))
    if base:
        print(f"unconstrained step: {base['step_cpu_us']:.0f} us CPU per step (log-softmax + top-M of B x M x |V|)\n")
    print("| impl | constraint us/step (CPU) | step us (CPU) | overhead vs unconstrained | constraint time vs vntk_compact_d2 | index MB | build s |")
    print("|---|---|---|---|---|---|---|")
    ref = rows.get(("step", "vntk_compact_d2"), {}).get("constraint_cpu_us")
    for impl in IMPLS:
        b = rows.get(("step", impl))
        if not b:
            continue
        if "error_message" in b:
            print(f"| {impl} | skipped: {b['error_message']} | | | | | |")
            continue
        c = b.get("constraint_cpu_us", 0.0)
        over = b["step_cpu_us"] - base["step_cpu_us"] if base else float("nan")
        ratio = f"{c / ref:.1f}x" if ref else ""
        mb = f"{b['index_MB']:.1f}" if "index_MB" in b else ""
        bs = f"{b['build_s']:.2f}" if "build_s" in b else ""
        print(f"| {impl} | {c:.0f} | {b['step_cpu_us']:.0f} | {over:+.0f} | {ratio} | {mb} | {bs} |")
    for lay in ["stacked", "compact"]:
        b = rows.get(("build", lay))
        if b and "error_message" not in b:
            print(f"\nbuild/{lay} (d = 2): {b['build_s']:.2f} s, {b['total_MB']:.1f} MB total, "
                  f"{b['MB_per_1M_items']:.1f} MB per 1M items, CSR {b['csr_B_per_node']:.2f} B/node, "
                  f"dense {b['dense_MB']:.2f} MB, {b['states_M']:.2f} M states")
        elif b:
            print(f"\nbuild/{lay}: skipped: {b['error_message']}")
    for k, b in rows.items():
        if k[0] == "hash_fpr":
            print(f"\nhash bitmap false-positive rate {b['fpr_pct']:.2f} % (Bloom estimate {b['expected_fpr_pct']:.2f} %), "
                  f"false negatives {int(b['false_neg'])}")
