"""A token tree the way a draft tree grows: under each node, the engine's own k
best next tokens (sequential decodes), k given per depth."""
from __future__ import annotations

from typing import List, Sequence

from .differential import topk_ids
from .engine import Engine
from .layout import Layout, LayoutError, TreeNode


def parse_branching(text: str) -> List[int]:
    try:
        ks = [int(x) for x in text.split(",")]
    except ValueError:
        raise LayoutError(f"--branching: expected comma-separated integers such as 2,2,1, got {text!r}") from None
    if not ks or any(k < 1 or k > 8 for k in ks) or len(ks) > 8:
        raise LayoutError(f"--branching: 1 to 8 depths of 1 to 8 children each, got {text!r}")
    return ks


def topk_tree(engine: Engine, prompt: Sequence[int], branching: Sequence[int]) -> Layout:
    nodes: List[TreeNode] = []
    frontier = [(-1, [])]  # (node index, its path tokens)
    for k in branching:
        logits = engine.sequential(prompt, [path for _, path in frontier], whole=True)
        nxt = []
        for (parent, path), row in zip(frontier, logits):
            for t in topk_ids(row, k):
                nodes.append(TreeNode(parent, int(t)))
                nxt.append((len(nodes) - 1, path + [int(t)]))
        frontier = nxt
    return Layout(list(prompt), nodes, origin="top-k tree")
