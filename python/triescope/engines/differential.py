"""The differential: each node's logits from the tree pass against the same
engine's sequential decode of its root-to-node path, beside a noise floor
measured in the same run."""
from __future__ import annotations

import dataclasses
from typing import List

import numpy as np

from .engine import Engine, TreePass
from .layout import Layout


@dataclasses.dataclass
class NodeDelta:
    node: int
    max_abs_delta: float  # max over the vocabulary of |tree - sequential|
    topk_agree: bool  # the k best tokens, in order, are the same
    argmax_tree: int
    argmax_sequential: int
    divergent: bool


@dataclasses.dataclass
class Differential:
    nodes: List[NodeDelta]
    noise_floor: float  # max |delta| between two correct sequential decodes (one batch vs token by token)
    tolerance: float  # a node diverges when its max |delta| exceeds this
    top_k: int

    @property
    def first_divergent(self):
        return next((d for d in self.nodes if d.divergent), None)

    def to_json(self) -> dict:
        return {
            "noise_floor": self.noise_floor,
            "tolerance": self.tolerance,
            "top_k": self.top_k,
            "nodes": [dataclasses.asdict(d) for d in self.nodes],
        }


def topk_ids(row: np.ndarray, k: int) -> List[int]:
    """The k largest entries' ids, best first; ties by the lower id (a stable order)."""
    order = np.lexsort((np.arange(row.shape[0]), -row.astype(np.float64)))
    return order[:k].tolist()


def tolerance_for(engine: Engine, floor: float) -> float:
    """The stated rule (docs/engines.md): 8 x the floor, at least the engine's minimum."""
    return max(8.0 * floor, engine.min_tolerance)


def differential(engine: Engine, layout: Layout, tree: TreePass, top_k: int) -> Differential:
    paths = [layout.path_tokens(i) for i in range(len(layout.nodes))]
    seq = engine.sequential_reference(layout.prompt, paths, whole=False)
    whole = engine.sequential_reference(layout.prompt, paths, whole=True)
    floor = float(np.max(np.abs(seq.astype(np.float64) - whole.astype(np.float64))))
    tol = tolerance_for(engine, floor)
    deltas = []
    for i in range(len(layout.nodes)):
        t, s = tree.logits[i].astype(np.float64), seq[i].astype(np.float64)
        d = float(np.max(np.abs(t - s)))
        deltas.append(NodeDelta(i, d, topk_ids(t, top_k) == topk_ids(s, top_k), int(np.argmax(t)), int(np.argmax(s)), not d <= tol))  # NaN diverges
    return Differential(deltas, floor, tol, top_k)
