#!/usr/bin/env python3
"""Records an engine's tree passes as TrieScope traces: the step an engine's
repository runs in CI before `triescope check` and `triescope diff`
(docs/ci.md, docs/examples/triescope-ci.yml).

A toy engine stands in for yours: after a prompt it lays a speculative draft
tree (EAGLE/Medusa style) into the same KV cache, builds the attention mask
and position ids the way engines do (each node's parents walked up to the
prompt), and `triescope.TraceWriter` records what it built. Replace
`toy_engine_pass` with your engine's own tensors (or use
`python -m triescope.engines`, docs/engines.md).

usage: record_traces.py --out DIR
TOY_ENGINE_BUG=mask|position plants a bug in the toy engine (the recipe's
own test shows that CI then fails and names the step and node).
"""
import argparse
import os
import pathlib

import numpy as np
import triescope

VOCAB = ["Once", "upon", "a", "time", "there", "in", "was", "lived", "far", "the", "<s>"]

# name -> (prompt token ids, draft tree as (parent index or -1 for the prompt's last token, token id))
TREES = {
    "draft_tree_small": ([10, 0, 1], [(-1, 2), (0, 3), (-1, 9), (2, 3)]),
    "draft_tree_wide": ([10, 0, 1, 2, 3], [(-1, 4), (-1, 5), (0, 6), (0, 7), (1, 8), (4, 9)]),
}


def toy_engine_pass(prompt_len, tree, bug):
    """The draft pass's mask [drafts x slots] and position ids, built by walking parents."""
    n = len(tree)
    mask = np.zeros((n, prompt_len + n), dtype=bool)
    positions = []
    for i, _ in enumerate(tree):
        mask[i, :prompt_len] = True  # the prompt
        depth, j = 0, i
        while j >= 0:
            mask[i, prompt_len + j] = True
            depth += 1
            j = tree[j][0]
        positions.append(prompt_len - 1 + depth)
    if bug == "mask":  # the last draft also sees the first draft's slot (not its ancestor in these trees)
        mask[n - 1, prompt_len] = True
    if bug == "position":  # the deepest draft one position too far
        deepest = max(range(n), key=lambda k: positions[k])
        positions[deepest] += 1
    return mask, positions


def record(path, prompt, tree, bug):
    with triescope.TraceWriter(str(path), algorithm="toy_engine", vocab=VOCAB, model={"engine": "toy_engine 0.1"}) as w:
        p = len(prompt)
        w.step(added=[(k - 1, tok, k) for k, tok in enumerate(prompt)], queries=list(range(p)),
               mask=np.tril(np.ones((p, p), dtype=bool)), positions=list(range(p)))
        mask, positions = toy_engine_pass(p, tree, bug)
        added = [(p - 1 if parent < 0 else p + parent, tok, p + i) for i, (parent, tok) in enumerate(tree)]
        w.step(added=added, queries=list(range(p, p + len(tree))), mask=mask, positions=positions)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for <name>.trace.jsonl")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    bug = os.environ.get("TOY_ENGINE_BUG", "")
    for name, (prompt, tree) in TREES.items():
        record(out / f"{name}.trace.jsonl", prompt, tree, bug)
        print(f"recorded {out / name}.trace.jsonl")


if __name__ == "__main__":
    main()
