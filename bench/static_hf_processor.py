"""Per-step overhead of STATIC as a Hugging Face LogitsProcessor, by the peer protocol
(bench/peer_protocol.py): triescope.StaticLogitsProcessor (the C++ VNTK index) beside
TorchStandInProcessor, a PyTorch formulation of the same processor WRITTEN IN THIS BENCH
(not the STATIC authors' code): the paper's Alg. 2 with tensor ops over the stacked CSR
matrix (row-pointer lookup, a fixed B_t-wide slice by arange + gather, Where for the
sanitisation, a scatter projection; the prefix's state by the same slice-and-match gather
per level, as a LogitsProcessor must recover it from input_ids).

Both get the same (input_ids, scores) per step t = 0 .. L-1, interleaved rep by rep (one
rep = the L calls of one side), after --warmup reps, in --runs >= 3 runs of --reps reps
with the load average printed before each; their masked scores are asserted equal (exit 1
on any difference). Prints per configuration microseconds per call (wall and this
thread's CPU, the scores' clone included on both sides): the median of the run medians
[min .. max over runs], and the ratio's range. Our C++ runs on one thread, so torch must
too (--threads 1; the protocol refuses unequal thread counts).

With --peer <checkout of github.com/youtube/static-constraint-decoding> a third side runs
the authors' own kernel, unmodified: their index (build_static_index, dense_lookup_layers =
1), level 0 their start-mask torch.where, levels >= 1 generate_and_apply_logprobs_mask plus
the scatter a LogitsProcessor needs into a full -inf row; each beam's state is GIVEN to it
(computed outside the timing from the beam's tokens), where ours re-derives it from
input_ids on every call.

Run: PYTHONPATH=build/python .cache/venv/bin/python bench/static_hf_processor.py [--peer DIR]
"""
from __future__ import annotations

import argparse
import os
import json
import pathlib
import sys

import numpy as np
import torch

import triescope

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peer_protocol  # noqa: E402


class TorchStandInProcessor:
    """Our PyTorch stand-in for STATIC's formulation as a LogitsProcessor (stacked CSR, no
    dense levels); written here, not the authors' code."""

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


class AuthorsKernelProcessor:
    """The authors' generate_and_apply_logprobs_mask + scatter, the beam states given."""

    def __init__(self, peer: str, seqs: np.ndarray, V: int, rows: np.ndarray) -> None:
        sys.path.insert(0, str(pathlib.Path(peer).resolve()))
        from static_decoding.csr_utils import build_static_index
        from static_decoding import decoding_pt
        from static_peer_bench import their_state_path

        self.kernel = decoding_pt.generate_and_apply_logprobs_mask
        p_csr, indptr, self.branches, s_mask, _, d_states = build_static_index(np.unique(seqs, axis=0).astype(np.int32), V, dense_lookup_layers=1)
        self.p_csr, self.indptr = torch.tensor(p_csr, dtype=torch.long), torch.tensor(indptr, dtype=torch.long)
        self.s_mask = torch.tensor(s_mask, dtype=torch.bool)
        self.V = V
        # [L][beams]: the state before level t of each beam (the bench's beams follow `rows`).
        self.states = torch.tensor(np.array([their_state_path(r, p_csr, indptr, d_states, 1) for r in rows]).T.copy())

    def __call__(self, t: int, scores: torch.Tensor) -> torch.Tensor:
        if t == 0:
            return torch.where(self.s_mask, scores, torch.tensor(-float("inf")))
        lp, tok, _ = self.kernel(scores, self.states[t], self.p_csr, self.indptr, self.branches[t], self.V, torch.device("cpu"))
        tok = torch.where(torch.isfinite(lp), tok.long(), torch.full_like(tok.long(), self.V))
        out = torch.full((scores.shape[0], self.V + 1), float("-inf"))
        out.scatter_(1, tok, lp)
        return out[:, : self.V]


def masked_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(torch.isfinite(a), torch.isfinite(b)) and torch.equal(a[torch.isfinite(a)], b[torch.isfinite(b)])


def all_equal(xs, ys) -> bool:
    return len(xs) == len(ys) and all(masked_equal(a, b) for a, b in zip(xs, ys))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="2048:8:1000000:70,2048:8:1000000:280,32000:8:100000:16",
                    help="vocab:L:items:beams, comma separated")
    ap.add_argument("--peer", help="checkout of youtube/static-constraint-decoding: adds the authors' kernel")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["TRIESCOPE_HOST_THREADS"] = str(args.threads)  # our selection pool, read on every call
    rng = np.random.default_rng(0)
    results = []
    for cfg in args.configs.split(","):
        V, L, items, beams = map(int, cfg.split(":"))
        seqs = rng.integers(0, V, size=(items, L))
        index = triescope.ConstraintIndex(seqs, vocab_size=V)  # stacked CSR, no dense level: what the stand-in reads
        # Ours with level 0 dense, as the authors' side is built (dense_lookup_layers = 1).
        ours = triescope.StaticLogitsProcessor(triescope.ConstraintIndex(seqs, vocab_size=V, dense_levels=1), prompt_length=4)
        theirs = TorchStandInProcessor(index, 4)
        # Beams follow real sequences of the set (the states a constrained search visits).
        rows = seqs[rng.integers(0, items, size=beams)]
        inputs = []
        for t in range(L):
            ids = torch.from_numpy(np.concatenate([np.full((beams, 4), 7), rows[:, :t]], 1))
            inputs.append((ids, torch.log_softmax(torch.randn(beams, V), 1)))

        def side(name, proc, threads):
            return peer_protocol.Side(name, lambda: ([proc(ids, sc.clone()) for ids, sc in inputs], None, None), threads)

        sides = [side("triescope.StaticLogitsProcessor", ours, 1),
                 side("TorchStandInProcessor (this bench's)", theirs, torch.get_num_threads())]
        if args.peer:
            authors = AuthorsKernelProcessor(args.peer, seqs, V, rows)
            sides.append(peer_protocol.Side(
                "authors' kernel + scatter (states given)",
                lambda: ([authors(t, sc.clone()) for t, (_, sc) in enumerate(inputs)], None, None), torch.get_num_threads()))
        peer_protocol.run(sides, reps=args.reps, warmup=args.warmup, runs=args.runs, same=all_equal,
                          label=f"|V| {V} L {L} |C| {index.size} beams {beams}: ")
        per_call = 1e6 / L
        r = {"vocab": V, "L": L, "items": index.size, "beams": beams, "runs": args.runs, "reps": args.reps, "threads": args.threads,
             "triescope_us": peer_protocol.spread(sides[0].wall, per_call), "torch_stand_in_us": peer_protocol.spread(sides[1].wall, per_call),
             "triescope_cpu_us": peer_protocol.spread(sides[0].cpu, per_call),
             "torch_stand_in_cpu_us": peer_protocol.spread(sides[1].cpu, per_call),
             "speedup": peer_protocol.ratio_range(sides[1].wall, sides[0].wall),
             "cpu_speedup": peer_protocol.ratio_range(sides[1].cpu, sides[0].cpu)}
        if args.peer:
            r["authors_kernel_us"] = peer_protocol.spread(sides[2].wall, per_call)
            r["authors_kernel_cpu_us"] = peer_protocol.spread(sides[2].cpu, per_call)
            r["authors_kernel_cpu_ratio"] = peer_protocol.ratio_range(sides[2].cpu, sides[0].cpu)
        results.append(r)
        f = peer_protocol.fmt
        print(f"|V| {V:6d}  L {L}  |C| {index.size:8d}  beams {beams:4d}:  triescope {f(r['triescope_us'])} us/call "
              f"(cpu {f(r['triescope_cpu_us'])})  torch stand-in {f(r['torch_stand_in_us'])} us/call "
              f"(cpu {f(r['torch_stand_in_cpu_us'])})  ratio {f(r['speedup'], 'x', 2)} (cpu {f(r['cpu_speedup'], 'x', 2)})"
              + (f"  authors' kernel + scatter, states given {f(r['authors_kernel_us'])} us/call (cpu "
                 f"{f(r['authors_kernel_cpu_us'])}): theirs / ours cpu {f(r['authors_kernel_cpu_ratio'], 'x', 2)}" if args.peer else ""),
              flush=True)
    if args.json:
        with open(args.json, "w") as fp:
            json.dump({"threads": args.threads, "results": results}, fp, indent=1)


if __name__ == "__main__":
    main()
