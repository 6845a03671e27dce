"""Build a speculative tree attention mask the way an engine does in PyTorch, record it
with triescope.TraceWriter, check it, and open it in the inspector.

The tree (EAGLE/Medusa style): a 4-token prompt, then a draft tree of 2 x 2 candidates
under the last prompt token, verified in one forward pass. The mask builder below has a
planted bug (--fixed removes it): each draft row is built from its parent's row, but the
row buffer is shared between siblings, so the second child of a node also sees its first
sibling. `triescope check` names the step, query node, slot, expected vs found.

Run:  PYTHONPATH=build/python python python/examples/speculative_tree_mask.py [--fixed] [--out t.jsonl] [--no-gui]
Exit code: 0 when the mask passes the check, 1 when it does not (the planted bug).
"""
from __future__ import annotations

import argparse
import sys

import torch

import triescope

VOCAB = ["The", "cat", "sat", "on", "the", "a", "mat", "rug", "floor", "sofa"]
PROMPT = [0, 1, 2, 3]  # "The cat sat on"
# Draft tree: (parent index in this list, -1 = the last prompt token, token)
DRAFT = [(-1, 4), (-1, 5), (0, 6), (0, 7), (1, 8), (1, 9)]


def build_tree_mask(prompt_len: int, parents: list[int], planted_bug: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The verify pass's mask [len(parents) x (prompt_len + len(parents))] and position ids,
    as an engine builds them: a draft node reads the prompt, its ancestors and itself."""
    n = len(parents)
    mask = torch.zeros(n, prompt_len + n, dtype=torch.bool)
    pos = torch.empty(n, dtype=torch.long)
    for i, p in enumerate(parents):
        if planted_bug and i > 0 and parents[i - 1] == p:
            # The bug: "a sibling has the same ancestors, reuse its row" -- but the row
            # also holds the sibling's own bit.
            row = mask[i - 1].clone()
        elif p < 0:
            row = torch.zeros(prompt_len + n, dtype=torch.bool)
            row[:prompt_len] = True
        else:
            row = mask[p].clone()
        row[prompt_len + i] = True
        mask[i] = row
        pos[i] = prompt_len if p < 0 else pos[p] + 1
    return mask, pos


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fixed", action="store_true", help="build the mask without the planted bug")
    ap.add_argument("--out", default="speculative_tree.jsonl", help="trace file to write")
    ap.add_argument("--no-gui", action="store_true", help="do not open the inspector")
    args = ap.parse_args()

    parents = [p for p, _ in DRAFT]
    mask, positions = build_tree_mask(len(PROMPT), parents, planted_bug=not args.fixed)

    with triescope.TraceWriter(args.out, algorithm="speculative_tree_example", vocab=VOCAB) as w:
        # Step 0, the prefill: the prompt chain in slots 0..3 under a causal mask.
        prompt_ids = w.step(
            added=[(-1 if i == 0 else i - 1, tok, i) for i, tok in enumerate(PROMPT)],
            queries=list(range(len(PROMPT))),
            mask=torch.ones(len(PROMPT), len(PROMPT), dtype=torch.bool).tril(),
            positions=torch.arange(len(PROMPT)),
        )
        # Step 1, the verify pass: the draft tree in slots 4.., fed with the mask built above.
        added = []
        for i, (p, tok) in enumerate(DRAFT):
            parent_node = prompt_ids[-1] if p < 0 else len(PROMPT) + p
            added.append((parent_node, tok, len(PROMPT) + i))
        draft_nodes = w.step(added=added, queries=list(range(len(PROMPT), len(PROMPT) + len(DRAFT))), mask=mask, positions=positions)
        # The verifier accepted "the mat": mark the other draft nodes rejected in a last step.
        accepted = {draft_nodes[0], draft_nodes[2]}
        w.step(status={n: ("accepted" if n in accepted else "rejected") for n in draft_nodes})
        w.close(outputs=[[DRAFT[0][1], DRAFT[2][1]]])

    report = triescope.check(args.out)
    print(f"{args.out}: {report.passes} forward passes, {report.rows} mask rows, {report.violation_count} violations")
    for v in report.violations:
        print("  " + str(v))
    if not args.no_gui:
        triescope.open_in_gui(args.out)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
