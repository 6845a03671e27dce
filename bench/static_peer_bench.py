#!/usr/bin/env python3
"""STATIC: the authors' PyTorch decoder beside ours, same inputs, one thread.

Runs the authors' public code (github.com/youtube/static-constraint-decoding:
static_decoding/csr_utils.py build_static_index, static_decoding/decoding_pt.py
sparse_transition_torch and generate_and_apply_logprobs_mask), imported
unmodified from a checkout given by --peer, beside bench_static_step (ours),
at the paper's setting: |V| = 2048, L = 8, batch 2 x beam 70, d = 2. Nothing
of theirs is copied here; see docs/benchmarks-static.md for the commands.

Inputs both sides read (written to --work): the constraint set (our
`triescope constraint random`, seed 20260224, the sets bench_constraint uses),
logits [L x 140 x |V|] ~ N(0, 3) float32 (seed --seed), 140 random ids of the
set (the beams' prefixes for the constraint-only timing).

Measured, each over --reps repetitions (median, p10, p90):
  whole step: one whole decode / L. Theirs: sparse_transition_torch with a
    model that returns the prepared logits (at step t, row b * 70 + j of
    slice t for beam j of query b; at step 0 row b * 70), tokens_per_beam =
    70 (exact at the dense level), the index tensors as their test builds
    them (int64 CSR and row pointers, bool masks). Ours: static_decode.
  constraint work: per level, beams at the prefixes' states, mean over the L
    levels. Theirs: the constraint operations their decoder issues at that
    level: level 0 torch.where(start_mask, ...), level 1 the dense_mask row
    gather + torch.where + the dense_states gather of the chosen, levels >= 2
    generate_and_apply_logprobs_mask + _gather_beams of the chosen's next
    states (the top-k between them is not timed). Ours: the step's
    constraint phases (bench_static_step's constraint_us), and the same plus
    the dense levels' bit test, which runs inside the normaliser's pass
    (constraint_with_filter_us).
Decoded ids of the two whole decodes are compared beam by beam.

--figure1 instead runs only their decoder on the paper's Figure 1 set (3 ids,
|V| = 4, L = 3) with batch 2 x beam 4 (more beams than ids), their
RandomModel, 10 seeds, d = 1 and 2, and counts the decoded ids that are in C
(ours: tests/constraint/test_static_step.cpp, every live beam is in C).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

L, V, BATCH, BEAMS, D = 8, 2048, 2, 70, 2
ROWS = BATCH * BEAMS


def stats(v):
    v = sorted(v)
    q = lambda p: v[int(p * (len(v) - 1) + 0.5)]
    return {"median": q(0.5), "p10": q(0.1), "p90": q(0.9), "min": v[0], "max": v[-1], "n": len(v)}


def their_states(prefixes, p_csr, indptr, d_states):
    """The state their index gives each prefix, per level [L][ROWS] (-1: none)."""
    out = np.zeros((L, ROWS), dtype=np.int64)
    for r in range(ROWS):
        ids = prefixes[r]
        s = 0
        for t in range(L):
            out[t, r] = s
            if t == 0:
                s = int(ids[0]) + 1  # their level-1 states: token + 1
            elif t == 1:
                s = int(d_states[ids[0], ids[1]])
            else:
                a, b = int(indptr[s]), int(indptr[s + 1])
                hit = np.nonzero(p_csr[a:b, 0] == ids[t])[0]
                if len(hit) != 1:
                    raise SystemExit(f"prefix row {r} level {t}: not in their index")
                s = int(p_csr[a + hit[0], 1])
    return out


def figure1(args):
    sys.path.insert(0, os.path.abspath(args.peer))
    import torch
    from static_decoding.csr_utils import build_static_index
    from static_decoding import decoding_pt
    torch.set_num_threads(1)
    sids = np.array([[1, 2, 1], [3, 1, 2], [3, 1, 3]], dtype=np.int32)  # Figure 1: C over V = {1, 2, 3}
    vocab, length, beams = 4, 3, 4
    valid = {tuple(r) for r in sids.tolist()}
    for d in (1, 2):
        p, ind, br, sm, dm, ds = build_static_index(sids, vocab, dense_lookup_layers=d)
        ok = total = 0
        for seed in range(10):
            torch.manual_seed(seed)
            out = decoding_pt.sparse_transition_torch(
                decoding_pt.RandomModel(vocab, torch.device("cpu")), BATCH, beams, beams, 0, length, vocab, br,
                torch.tensor(p, dtype=torch.long), torch.tensor(ind, dtype=torch.long), torch.tensor(sm), torch.tensor(dm),
                torch.tensor(ds, dtype=torch.long), torch.device("cpu"), d_dense=d)
            ids = out.numpy().reshape(-1, length).tolist()
            ok += sum(tuple(i) in valid for i in ids)
            total += len(ids)
        print(f"Figure 1, d = {d}: {ok} of {total} decoded ids in C (10 seeds x batch {BATCH} x beam {beams})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="checkout of youtube/static-constraint-decoding")
    ap.add_argument("--build", default="", help="our build directory (app/triescope, bench/bench_static_step)")
    ap.add_argument("--items", type=int, default=0)
    ap.add_argument("--work", default="", help="folder for the shared inputs and the results")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--layout", default="compact")
    ap.add_argument("--figure1", action="store_true", help="only their decoder's quirk with more beams than ids")
    args = ap.parse_args()
    if args.figure1:
        return figure1(args)

    if not (args.build and args.items and args.work):
        raise SystemExit("static_peer_bench: --build, --items and --work are required (or --figure1)")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, os.path.abspath(args.peer))
    import torch
    from static_decoding.csr_utils import build_static_index
    from static_decoding import decoding_pt
    torch.set_num_threads(1)

    os.makedirs(args.work, exist_ok=True)
    ids_path = os.path.join(args.work, f"ids_{args.items}.npy")
    if not os.path.exists(ids_path):
        subprocess.run([os.path.join(args.build, "app", "triescope"), "constraint", "random", "--items", str(args.items), "--length", str(L),
                        "--vocab", str(V), "--seed", "20260224", "--out", ids_path], check=True, stdout=subprocess.DEVNULL)
    sids = np.load(ids_path).astype(np.int32)
    rng = np.random.default_rng(args.seed)
    logits = rng.normal(0.0, 3.0, size=(L, ROWS, V)).astype(np.float32)
    prefixes = sids[rng.integers(0, len(sids), size=ROWS)].astype(np.int32)
    logits_path, prefixes_path = os.path.join(args.work, "logits.f32"), os.path.join(args.work, "prefixes.i32")
    logits.tofile(logits_path)
    prefixes.tofile(prefixes_path)

    # --- theirs ---
    t0 = time.perf_counter()
    p_csr, indptr, branches, s_mask, d_mask, d_states = build_static_index(sids, V, dense_lookup_layers=D)
    build_s = time.perf_counter() - t0
    dev = torch.device("cpu")
    p_csr_t = torch.tensor(p_csr, dtype=torch.long)
    indptr_t = torch.tensor(indptr, dtype=torch.long)
    s_mask_t = torch.tensor(s_mask, dtype=torch.bool)
    d_mask_t = torch.tensor(d_mask, dtype=torch.bool)
    d_states_t = torch.tensor(d_states, dtype=torch.long)
    index_mb = sum(t.numel() * t.element_size() for t in (p_csr_t, indptr_t, s_mask_t, d_mask_t, d_states_t)) / 1e6
    steps = [torch.from_numpy(logits[0][[b * BEAMS for b in range(BATCH)]]).unsqueeze(1)]
    steps += [torch.from_numpy(logits[t]).unsqueeze(1) for t in range(1, L)]

    class Replay(torch.nn.Module):
        """The model: at call t it returns the prepared logits of step t."""

        def __init__(self):
            super().__init__()
            self.t = 0

        def forward(self, input_ids):
            out = steps[self.t]
            self.t += 1
            return out

    model = Replay()

    def decode():
        model.t = 0
        return decoding_pt.sparse_transition_torch(
            model=model, batch_size=BATCH, beam_size=BEAMS, tokens_per_beam=BEAMS, start_token=0, max_sample_len=L, vocab_size=V,
            max_branch_factors=branches, packed_csr=p_csr_t, csr_indptr=indptr_t, start_mask=s_mask_t, dense_mask=d_mask_t,
            dense_states=d_states_t, device=dev, d_dense=D)

    theirs_tokens = decode()  # warm-up
    wall, cpu = [], []
    for _ in range(args.reps):
        w0, c0 = time.perf_counter(), time.thread_time()
        theirs_tokens = decode()
        cpu.append((time.thread_time() - c0) / L * 1e6)
        wall.append((time.perf_counter() - w0) / L * 1e6)

    # Their constraint operations per level, beams at the prefixes' states.
    st = torch.from_numpy(their_states(prefixes, p_csr, indptr, d_states))
    lps = [torch.log_softmax(torch.from_numpy(logits[t]), dim=-1) for t in range(L)]
    neg_inf = torch.tensor(-float("inf"))
    cons, cons_cpu = [], []
    clock = {"wall": 0.0, "cpu": 0.0}

    class timed:
        def __enter__(self):
            self.w, self.c = time.perf_counter(), time.thread_time()

        def __exit__(self, *exc):
            clock["wall"] += time.perf_counter() - self.w
            clock["cpu"] += time.thread_time() - self.c

    for rep in range(args.reps + 1):
        clock["wall"] = clock["cpu"] = 0.0
        for t in range(L):
            lp, states = lps[t], st[t]
            if t == 0:
                with timed():
                    torch.where(s_mask_t, lp, neg_inf)
            elif t == 1:
                with timed():
                    parent = (states - 1).long()
                    masked = torch.where(d_mask_t[parent], lp, neg_inf)
                top = torch.topk(masked, BEAMS, dim=-1).indices
                with timed():
                    d_states_t[parent.unsqueeze(1), top.long()]
            else:
                limit = branches[t]
                with timed():
                    c_lp, c_tok, c_next = decoding_pt.generate_and_apply_logprobs_mask(lp, states, p_csr_t, indptr_t, limit, V, dev)
                top = torch.topk(c_lp.view(BATCH, BEAMS * limit), BEAMS, dim=-1).indices
                with timed():
                    decoding_pt._gather_beams(c_next.view(BATCH, BEAMS * limit), top)
        if rep > 0:  # the first pass warms up
            cons.append(clock["wall"] / L * 1e6)
            cons_cpu.append(clock["cpu"] / L * 1e6)

    # --- ours ---
    out_path = os.path.join(args.work, f"ours_{args.items}_{args.layout}.json")
    subprocess.run([os.path.join(args.build, "bench", "bench_static_step"), "--set", ids_path, "--vocab", str(V), "--logits", logits_path,
                    "--prefixes", prefixes_path, "--layout", args.layout, "--reps", str(args.reps), "--out", out_path], check=True)
    ours = json.load(open(out_path))
    ours_tokens = np.array(ours["tokens"], dtype=np.int64).reshape(BATCH, BEAMS, L)
    theirs_np = theirs_tokens.numpy().astype(np.int64)
    same_beams = int((ours_tokens == theirs_np).all(axis=2).sum())
    valid = {tuple(r) for r in sids.tolist()}
    theirs_valid = sum(tuple(r) in valid for r in theirs_np.reshape(-1, L).tolist())

    res = {
        "items": args.items, "layout": args.layout, "reps": args.reps, "seed": args.seed,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                     "torch_threads": torch.get_num_threads(), "peer": os.path.abspath(args.peer)},
        "load_average": os.getloadavg(),
        "theirs": {"build_s": build_s, "index_MB": index_mb, "branches": [int(b) for b in branches],
                   "whole_step_us": stats(wall), "whole_step_cpu_us": stats(cpu), "constraint_us": stats(cons),
                   "constraint_cpu_us": stats(cons_cpu),
                   "decoded_valid": theirs_valid},
        "ours": {k: ours[k] for k in ("build_s", "index_MB", "normaliser_isa", "whole_step_us", "whole_step_cpu_us", "full_vocab_step_us",
                                      "full_vocab_step_cpu_us", "constraint_us", "dense_filter_us", "constraint_with_filter_us", "rank_us",
                                      "full_vocab_tokens_equal", "live")},
        "same_beams": same_beams, "beams": BATCH * BEAMS,
    }
    res["whole_step_speedup"] = res["theirs"]["whole_step_us"]["median"] / ours["whole_step_us"]["median"]
    res["whole_step_cpu_speedup"] = res["theirs"]["whole_step_cpu_us"]["median"] / ours["whole_step_cpu_us"]["median"]
    res["constraint_speedup"] = res["theirs"]["constraint_us"]["median"] / ours["constraint_us"]["median"]
    res["constraint_cpu_speedup"] = res["theirs"]["constraint_cpu_us"]["median"] / ours["constraint_us"]["median"]
    # their CPU time against ours with the dense bit test included
    res["constraint_conservative_speedup"] = res["theirs"]["constraint_cpu_us"]["median"] / ours["constraint_with_filter_us"]["median"]
    json.dump(res, open(os.path.join(args.work, f"peer_{args.items}_{args.layout}.json"), "w"), indent=1)
    f = lambda s: f"{s['median']:.0f} [{s['p10']:.0f}, {s['p90']:.0f}]"
    print(f"|C| = {args.items} ({args.layout}): whole step us theirs {f(res['theirs']['whole_step_us'])} ours {f(ours['whole_step_us'])} "
          f"-> {res['whole_step_speedup']:.2f}x (cpu {res['whole_step_cpu_speedup']:.2f}x); constraint us theirs "
          f"{f(res['theirs']['constraint_us'])} ours {f(ours['constraint_us'])} -> {res['constraint_speedup']:.2f}x (their cpu {res['theirs']['constraint_cpu_us']['median']:.0f} us: "
          f"{res['constraint_cpu_speedup']:.2f}x; ours with the dense bit test {ours['constraint_with_filter_us']['median']:.0f} us: "
          f"{res['constraint_conservative_speedup']:.2f}x); "
          f"same beams {same_beams}/{BATCH * BEAMS}; their ids in C {theirs_valid}/{BATCH * BEAMS}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
