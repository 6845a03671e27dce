"""Per-step overhead of STATIC as a Hugging Face LogitsProcessor: triescope.StaticLogitsProcessor
(the C++ VNTK index) against STATIC's own PyTorch formulation of the same processor (the
paper's Alg. 2 with tensor ops over the stacked CSR matrix: row-pointer lookup, a fixed
B_t-wide slice by arange + gather, Where for the sanitisation, a scatter projection; the
prefix's state by the same slice-and-match gather per level, as a LogitsProcessor must
recover it from input_ids).

Both get the same (input_ids, scores) per step t = 0 .. L-1 and must return the same masked
scores (checked). Prints one line per configuration: microseconds per call, the min over
--repeats of the mean over the L steps. torch runs on --threads threads (our C++ on one).

Run: PYTHONPATH=build/python .cache/venv/bin/python bench/static_hf_processor.py
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

import triescope


class StaticTorchProcessor:
    """STATIC's PyTorch formulation as a LogitsProcessor (stacked CSR, no dense levels)."""

    def __init__(self, index: triescope.ConstraintIndex, prompt_length: int) -> None:
        csr = index.csr()
        self.row_ptr = torch.from_numpy(csr["row_ptr"].astype(np.int64))
        edges = torch.from_numpy(csr["edges"].astype(np.int64))
        self.tok, self.nxt = edges[:, 0].contiguous(), edges[:, 1].contiguous()
        self.max_branch = csr["max_branch"].tolist()
        self.num_rows = self.row_ptr.numel() - 1
        self.E = self.tok.numel()
        self.V = index.vocab_size
        self.prompt_length = prompt_length

    def _slice(self, s: torch.Tensor, t: int):
        bt = self.max_branch[t]
        r = torch.where((s >= 0) & (s < self.num_rows), s, torch.full_like(s, self.num_rows - 1))
        start = self.row_ptr[r]
        length = torch.where((s >= 0) & (s < self.num_rows), self.row_ptr[r + 1] - start, torch.zeros_like(start))
        idx = start[:, None] + torch.arange(bt)[None, :]
        ok = torch.arange(bt)[None, :] < length[:, None]
        idx = idx.clamp_max(self.E - 1)
        return torch.where(ok, self.tok[idx], torch.full_like(idx, self.V)), torch.where(ok, self.nxt[idx], torch.full_like(idx, -1))

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        gen = input_ids[:, self.prompt_length:]
        n, t = gen.shape
        s = torch.zeros(n, dtype=torch.long)
        for level in range(t):  # the state of each prefix: the gather of Alg. 1 phase 4, level by level
            toks, nexts = self._slice(s, level)
            hit = toks == gen[:, level:level + 1]
            s = torch.where(hit.any(1), (nexts * hit).sum(1), torch.full_like(s, -1))
        toks, _ = self._slice(s, t)
        vals = torch.gather(torch.cat([scores, torch.full((n, 1), float("-inf"))], 1), 1, toks)
        out = torch.full((n, self.V + 1), float("-inf"))
        out.scatter_(1, toks, vals)  # the projection
        return out[:, : self.V]


def bench(proc, inputs, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for ids, sc in inputs:
            proc(ids, sc.clone())
        best = min(best, (time.perf_counter() - t0) / len(inputs))
    clone = min(_clone_time(inputs) for _ in range(repeats))
    return (best - clone) * 1e6


def _clone_time(inputs):
    t0 = time.perf_counter()
    for _, sc in inputs:
        sc.clone()
    return (time.perf_counter() - t0) / len(inputs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="2048:8:1000000:70,2048:8:1000000:280,32000:8:100000:16",
                    help="vocab:L:items:beams, comma separated")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    results = []
    for cfg in args.configs.split(","):
        V, L, items, beams = map(int, cfg.split(":"))
        seqs = rng.integers(0, V, size=(items, L))
        index = triescope.ConstraintIndex(seqs, vocab_size=V)
        ours, theirs = triescope.StaticLogitsProcessor(index, prompt_length=4), StaticTorchProcessor(index, 4)
        # Beams follow real sequences of the set (the states a constrained search visits).
        rows = seqs[rng.integers(0, items, size=beams)]
        inputs = []
        for t in range(L):
            ids = torch.from_numpy(np.concatenate([np.full((beams, 4), 7), rows[:, :t]], 1))
            sc = torch.log_softmax(torch.randn(beams, V), 1)
            a, b = ours(ids, sc.clone()), theirs(ids, sc.clone())
            assert torch.equal(torch.isfinite(a), torch.isfinite(b)) and torch.equal(a[torch.isfinite(a)], b[torch.isfinite(b)])
            inputs.append((ids, sc))
        r = {"vocab": V, "L": L, "items": index.size, "beams": beams,
             "triescope_us": bench(ours, inputs, args.repeats), "torch_us": bench(theirs, inputs, args.repeats)}
        r["speedup"] = r["torch_us"] / r["triescope_us"]
        results.append(r)
        print(f"|V| {V:6d}  L {L}  |C| {index.size:8d}  beams {beams:4d}:  triescope {r['triescope_us']:9.1f} us/step"
              f"  torch formulation {r['torch_us']:9.1f} us/step  ({r['speedup']:.2f}x)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
