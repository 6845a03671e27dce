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

Measured by the peer protocol (bench/peer_protocol.py: --runs >= 3, load average
before each run, thread counts printed and equal, outputs asserted):
  whole step: one whole decode / L, interleaved rep by rep (--reps per run,
    --warmup first, the side that goes first alternating), decoded ids
    asserted equal on every call (exit 1 otherwise). Theirs:
    sparse_transition_torch in this process with a model that returns the
    prepared logits (at step t, row b * 70 + j of slice t for beam j of query
    b; at step 0 row b * 70), tokens_per_beam = 70 (exact at the dense level),
    the index tensors as their test builds them (int64 CSR and row pointers,
    bool masks); timed here (wall, this thread's CPU). Ours: static_decode in
    `bench_static_step --serve` (index built once, one decode per request,
    timed inside: wall and thread CPU). Median of the run medians [min .. max].
  constraint work: per level, beams at the prefixes' states, mean over the L
    levels; per run the median of --reps passes of each side (theirs here,
    ours in bench_static_step), the side that goes first alternating. Theirs:
    the constraint operations their decoder issues at that level: level 0
    torch.where(start_mask, ...) on its 2 rows (one per query, as its decoder
    does; this bench used to mask all 140), level 1 the dense_mask row
    gather + torch.where + the dense_states gather of the chosen, levels >= 2
    generate_and_apply_logprobs_mask + _gather_beams of the chosen's next
    states (the top-k between them is not timed). Ours: the step's
    constraint phases (constraint_us), and the same plus the dense levels'
    bit test, which runs fused inside the normaliser's pass and is charged as
    the step's dense passes minus a plain normaliser over the same rows
    (constraint_with_filter_us). Ratios are given as their range over runs:
    a difference of timers, not one number.

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_protocol  # noqa: E402

L, V, BATCH, BEAMS, D = 8, 2048, 2, 70, 2
ROWS = BATCH * BEAMS


def their_state_path(ids, p_csr, indptr, d_states, dense):
    """The state their index gives each prefix of `ids`: [len(ids)] (the state before
    level t). Level-1 states are token + 1; with dense = 2 level 2's come from their dense
    state table, else (dense = 1) from the CSR like every later level."""
    out, s = [], 0
    for t, tok in enumerate(ids):
        out.append(s)
        if t == 0:
            s = int(tok) + 1
        elif t == 1 and dense == 2:
            s = int(d_states[ids[0], tok])
        else:
            a, b = int(indptr[s]), int(indptr[s + 1])
            hit = np.nonzero(p_csr[a:b, 0] == tok)[0]
            if len(hit) != 1:
                raise SystemExit(f"prefix {list(ids[:t + 1])}: not in their index")
            s = int(p_csr[a + hit[0], 1])
    return out


def their_states(prefixes, p_csr, indptr, d_states):
    """The state their index gives each prefix, per level [L][ROWS]."""
    return np.array([their_state_path(prefixes[r], p_csr, indptr, d_states, D) for r in range(ROWS)], dtype=np.int64).T.copy()


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
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--layout", default="compact")
    ap.add_argument("--figure1", action="store_true", help="only their decoder's quirk with more beams than ids")
    args = ap.parse_args()
    if args.figure1:
        return figure1(args)

    if not (args.build and args.items and args.work):
        raise SystemExit("static_peer_bench: --build, --items and --work are required (or --figure1)")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["TRIESCOPE_HOST_THREADS"] = "1"  # our selection on one thread too, like theirs
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

    step_bin = os.path.join(args.build, "bench", "bench_static_step")
    inputs = ["--set", ids_path, "--vocab", str(V), "--logits", logits_path, "--prefixes", prefixes_path, "--layout", args.layout]

    # --- whole step, by the peer protocol: their decoder here, ours in a serving child,
    # interleaved rep by rep, decoded ids asserted equal every call ---
    serve = subprocess.Popen([step_bin, *inputs, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = json.loads(serve.stdout.readline())

    def theirs_call():
        return decode().numpy().astype(np.int64).reshape(BATCH, BEAMS, L).tolist(), None, None

    def ours_call():
        serve.stdin.write("decode\n")
        serve.stdin.flush()
        r = json.loads(serve.stdout.readline())
        return np.array(r["tokens"], dtype=np.int64).reshape(BATCH, BEAMS, L).tolist(), r["wall_s"], r["cpu_s"]

    sides = [peer_protocol.Side("authors' sparse_transition_torch", theirs_call, torch.get_num_threads()),
             peer_protocol.Side("ours (static_decode)", ours_call, 1)]
    peer_protocol.run(sides, reps=args.reps, warmup=args.warmup, runs=args.runs, label=f"|C| = {args.items} whole step: ")
    serve.stdin.close()
    serve.wait()
    theirs_np = np.array(theirs_call()[0], dtype=np.int64)
    per_step = 1e6 / L

    # Their constraint operations per level, beams at the prefixes' states.
    st = torch.from_numpy(their_states(prefixes, p_csr, indptr, d_states))
    lps = [torch.log_softmax(torch.from_numpy(logits[t]), dim=-1) for t in range(L)]
    neg_inf = torch.tensor(-float("inf"))
    clock = {"wall": 0.0, "cpu": 0.0}

    class timed:
        def __enter__(self):
            self.w, self.c = time.perf_counter(), time.thread_time()

        def __exit__(self, *exc):
            clock["wall"] += time.perf_counter() - self.w
            clock["cpu"] += time.thread_time() - self.c

    def their_constraint_pass():
        clock["wall"] = clock["cpu"] = 0.0
        for t in range(L):
            lp, states = lps[t], st[t]
            if t == 0:
                # Their decoder masks one row per query at level 0 (every beam of a
                # query starts from the same start token), not all 140.
                first = lp[[b * BEAMS for b in range(BATCH)]]
                with timed():
                    torch.where(s_mask_t, first, neg_inf)
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
        return clock["wall"] / L * 1e6, clock["cpu"] / L * 1e6

    # --- constraint work: per run, their passes (median of --reps after one warm-up)
    # and our bench_static_step's (its --reps), alternating which goes first ---
    runs = []
    out_path = os.path.join(args.work, f"ours_{args.items}_{args.layout}.json")
    for r in range(args.runs):
        print(f"|C| = {args.items} constraint run {r + 1}/{args.runs}: {peer_protocol.load_average()}", flush=True)

        def theirs_run():
            their_constraint_pass()
            passes = [their_constraint_pass() for _ in range(args.reps)]
            return {"wall": float(np.median([p[0] for p in passes])), "cpu": float(np.median([p[1] for p in passes]))}

        def ours_run():
            subprocess.run([step_bin, *inputs, "--reps", str(args.reps), "--out", out_path], check=True, stdout=subprocess.DEVNULL)
            return json.load(open(out_path))

        if r % 2 == 0:
            t_run, o_run = theirs_run(), ours_run()
        else:
            o_run, t_run = ours_run(), theirs_run()
        runs.append({"theirs": t_run, "ours": o_run})
    ours = runs[-1]["ours"]
    valid = {tuple(x) for x in sids.tolist()}
    theirs_valid = sum(tuple(x) in valid for x in theirs_np.reshape(-1, L).tolist())

    def rng_of(values):
        return {"median": float(np.median(values)), "min": float(min(values)), "max": float(max(values))}

    cons_ratio = rng_of([x["theirs"]["wall"] / x["ours"]["constraint_us"]["median"] for x in runs])
    # Charged honestly: ours with the dense levels' bit test (which runs fused in the
    # normaliser's pass: the step's dense passes minus a plain normaliser over the same
    # rows), against their CPU time for their constraint operations.
    cons_filter_ratio = rng_of([x["theirs"]["cpu"] / x["ours"]["constraint_with_filter_us"]["median"] for x in runs])
    res = {
        "items": args.items, "layout": args.layout, "reps": args.reps, "runs": args.runs, "seed": args.seed,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                     "torch_threads": torch.get_num_threads(), "peer": os.path.abspath(args.peer)},
        "theirs": {"build_s": build_s, "index_MB": index_mb, "branches": [int(b) for b in branches],
                   "whole_step_us": peer_protocol.spread(sides[0].wall, per_step),
                   "whole_step_cpu_us": peer_protocol.spread(sides[0].cpu, per_step),
                   "constraint_us": rng_of([x["theirs"]["wall"] for x in runs]),
                   "constraint_cpu_us": rng_of([x["theirs"]["cpu"] for x in runs]),
                   "decoded_valid": theirs_valid},
        "ours": {"build_s": ready["build_s"], "whole_step_us": peer_protocol.spread(sides[1].wall, per_step),
                 "whole_step_cpu_us": peer_protocol.spread(sides[1].cpu, per_step),
                 "constraint_us": rng_of([x["ours"]["constraint_us"]["median"] for x in runs]),
                 "constraint_with_filter_us": rng_of([x["ours"]["constraint_with_filter_us"]["median"] for x in runs]),
                 **{k: ours[k] for k in ("index_MB", "normaliser_isa", "full_vocab_step_us", "full_vocab_step_cpu_us", "dense_filter_us",
                                         "rank_us", "full_vocab_tokens_equal", "live")}},
        "same_beams": BATCH * BEAMS, "beams": BATCH * BEAMS,
        "whole_step_speedup": peer_protocol.ratio_range(sides[0].wall, sides[1].wall),
        "whole_step_cpu_speedup": peer_protocol.ratio_range(sides[0].cpu, sides[1].cpu),
        "constraint_speedup": cons_ratio,
        "constraint_with_filter_cpu_speedup": cons_filter_ratio,
    }
    json.dump(res, open(os.path.join(args.work, f"peer_{args.items}_{args.layout}.json"), "w"), indent=1)
    f = peer_protocol.fmt
    print(f"|C| = {args.items} ({args.layout}): whole step us theirs {f(res['theirs']['whole_step_us'])} ours "
          f"{f(res['ours']['whole_step_us'])} -> {f(res['whole_step_speedup'], 'x', 2)} (cpu {f(res['whole_step_cpu_speedup'], 'x', 2)}); "
          f"constraint us theirs {f(res['theirs']['constraint_us'])} ours {f(res['ours']['constraint_us'])} -> "
          f"{f(cons_ratio, 'x', 2)}; ours with the dense bit test vs their CPU: {f(cons_filter_ratio, 'x', 2)}; "
          f"same beams {BATCH * BEAMS}/{BATCH * BEAMS} (asserted every call); their ids in C {theirs_valid}/{BATCH * BEAMS}")


if __name__ == "__main__":
    main()
