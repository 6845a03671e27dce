#!/usr/bin/env python3
"""Time model of cuda::tree_attention on an H200, calibrated on the first GPU
run (commit 9ae4cdc, ../shared/gpu-results/2026-11-26-h200/
bench_cuda_and_tree_attention.log: `bench_tree_attention --reps 20`), and its
prediction for the cascade kernel (docs/benchmarks.md, "Tree attention on a
GPU: H200 baseline and predictions"). Written before any GPU ran the cascade.

Per-beam kernel (measured): t = c0 + listed bytes / B_list, least squares over
the 18 measured rows (trie and batch layouts). The kernel's rate on listed
bytes is the same whether they come from HBM (batch) or L2 (trie): it is bound
by issue, not by memory.

Cascade (predicted), three launches on one stream:
  t = 3 c_launch + t_items + t_private + t_merge
  t_items   = max(unique shared bytes / B_hbm, FMAs / (eta x peak x occupancy))
              FMAs = b x 4 query-head rows x segment slots x 2 head_dim x KV
              heads (scores and P.V), occupancy = min(1, blocks / (2 x SMs));
              chunks of max(64, P x KV heads / (4 x SMs)) slots (the bench's target);
  t_private = private list bytes / B_list (the per-beam kernel on b x t slots);
  t_merge   = partial states written and read / B_hbm.
c_launch = c0 / 2 (the per-beam rows launch two kernels, split + combine);
B_hbm = the 1 GiB D2D copy (read + write) of the same log; peak = 132 SMs x
128 FP32 FMA/clk x 1.98 GHz; eta = 0.30 is an assumption, not a calibration
(made for the first item kernel, about one shared-memory load per 1.3 FMA;
the register-tiled one issues about one per 9 FMA but runs 4-5 blocks of 4
warps per SM; its H200 times are in docs/benchmarks.md beside this model).

  python3 bench/tree_attention_time_model.py
"""
import math

# (P, b, layout, unique MB, listed MB, kernel ms, copy ms) from the H200 log.
H200 = [
    (512, 3, "trie", 2.88, 7.08, 0.0270, 0.0074), (512, 3, "batch", 7.08, 7.08, 0.0265, 0.0083),
    (512, 9, "trie", 4.46, 21.23, 0.0308, 0.0083), (512, 9, "batch", 21.23, 21.23, 0.0303, 0.0147),
    (512, 15, "trie", 6.03, 35.39, 0.0402, 0.0085), (512, 15, "batch", 35.39, 35.39, 0.0400, 0.0221),
    (2048, 3, "trie", 9.18, 25.95, 0.0367, 0.0082), (2048, 3, "batch", 25.95, 25.95, 0.0368, 0.0170),
    (2048, 9, "trie", 10.75, 77.86, 0.0759, 0.0085), (2048, 9, "batch", 77.86, 77.86, 0.0914, 0.0426),
    (2048, 15, "trie", 12.32, 129.76, 0.1137, 0.0091), (2048, 15, "batch", 129.76, 129.76, 0.1375, 0.0666),
    (8192, 3, "trie", 34.34, 101.45, 0.1010, 0.0221), (8192, 3, "batch", 101.45, 101.45, 0.1241, 0.0532),
    (8192, 9, "trie", 35.91, 304.35, 0.2675, 0.0228), (8192, 9, "batch", 304.35, 304.35, 0.3161, 0.1472),
    (8192, 15, "trie", 37.49, 507.25, 0.4438, 0.0235), (8192, 15, "batch", 507.25, 507.25, 0.4957, 0.2407),
]
D2D_GBPS = 4231.9  # cudaMemcpy D2D 1 GiB, read + write, same log
SMS, PEAK_FMA = 132, 132 * 128 * 1.98e9
ETA = 0.30
HEADS, KV_HEADS, HD, T = 32, 8, 64, 64
ROW_BYTES = 2 * HD * 4  # K and V of one slot and KV head


def fit():
    xs = [r[4] for r in H200]
    ys = [r[5] for r in H200]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    c0 = my - slope * mx
    return c0, 1.0 / slope  # ms, MB per ms (= GB/s)


def cascade_ms(P, b, c0, b_list):
    c_launch = c0 / 2
    work = P * 1 * KV_HEADS  # one tile of b x 4 rows <= 64
    chunk = max(64, math.ceil(work / (4 * SMS)))
    chunk = (chunk + 31) // 32 * 32
    chunks = math.ceil(P / chunk)
    blocks = chunks * KV_HEADS
    shared_mb = P * KV_HEADS * ROW_BYTES / 1e6
    fma = b * (HEADS // KV_HEADS) * P * 2 * HD * KV_HEADS
    occ = min(1.0, blocks / (2 * SMS))
    t_items = max(shared_mb / D2D_GBPS, fma / (ETA * PEAK_FMA * occ) * 1e3)
    t_private = b * T * KV_HEADS * ROW_BYTES / 1e6 / b_list
    partial_mb = (b * chunks + b) * HEADS * (HD + 2) * 4 / 1e6
    t_merge = 2 * partial_mb / D2D_GBPS
    return 3 * c_launch + t_items + t_private + t_merge, t_items, blocks


def main():
    c0, b_list = fit()
    print(f"per-beam kernel fit over {len(H200)} rows: t = {c0:.4f} ms + listed MB / {b_list:.0f} GB/s")
    worst = max(abs(c0 + r[4] / b_list - r[5]) / r[5] for r in H200 if r[0] >= 2048)
    print(f"  worst relative residual at P >= 2048: {worst:.0%}")
    print("| P | b | unique KV MB (trie) | measured per-beam trie ms | measured batch ms | predicted cascade ms "
          "| of which items ms | item blocks | predicted batch / cascade | predicted unique-KV GB/s / copy GB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = {(r[0], r[1], r[2]): r for r in H200}
    for P in (2048, 8192):
        for b in (3, 9, 15):
            tr, ba = rows[(P, b, "trie")], rows[(P, b, "batch")]
            t, ti, blocks = cascade_ms(P, b, c0, b_list)
            unique_gbps = tr[3] / t
            copy_gbps = tr[3] / tr[6]
            print(f"| {P} | {b} | {tr[3]:.2f} | {tr[5]:.4f} | {ba[5]:.4f} | {t:.4f} | {ti:.4f} | {blocks} | "
                  f"{ba[5] / t:.1f}x | {unique_gbps / copy_gbps:.0%} |")


if __name__ == "__main__":
    main()
