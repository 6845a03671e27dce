"""Layout faults of the kinds engine users make, planted into a correct
layout: the tests (and `--plant KIND`) show each one fails both the trace
check and the differential, and that the node is named."""
from __future__ import annotations

import copy
from typing import Callable, Dict, List, Optional

from .layout import Layout, LayoutError


def _sibling(lay: Layout, i: int) -> Optional[int]:
    return next((j for j, n in enumerate(lay.nodes) if j != i and n.parent == lay.nodes[i].parent), None)


def _parent_pos(lay: Layout, i: int) -> int:
    parent = lay.nodes[i].parent
    return len(lay.prompt) - 1 if parent < 0 else lay.nodes[parent].pos


def _foreign_seqs(lay: Layout, i: int) -> List[int]:
    """Seq ids of leaves not below node i (other branches)."""
    mine = set(lay.nodes[i].seq)
    return [s for leaf in lay.leaves() if i not in lay.ancestors(leaf) for s in lay.nodes[leaf].seq if s not in mine]


# --- llama.cpp: seq ids and positions -------------------------------------------
def _sibling_seq(lay: Layout, i: int) -> bool:
    j = _sibling(lay, i)
    leaves = lay.leaves()
    if j is None or i not in leaves or j not in leaves:  # inner nodes: llama_decode refuses the gap it leaves
        return False
    lay.nodes[i].seq = list(lay.nodes[j].seq)
    return True


def _missing_seq(lay: Layout, i: int) -> bool:
    if len(lay.nodes[i].seq) < 2:
        return False
    lay.nodes[i].seq = lay.nodes[i].seq[:-1]
    return True


def _extra_seq(lay: Layout, i: int) -> bool:
    foreign = _foreign_seqs(lay, i)
    if not foreign:
        return False
    lay.nodes[i].seq = lay.nodes[i].seq + [foreign[0]]
    return True


def _extra_seq_first(lay: Layout, i: int) -> bool:
    foreign = _foreign_seqs(lay, i)
    if not foreign:
        return False
    lay.nodes[i].seq = [foreign[0]] + lay.nodes[i].seq
    return True


def _parent_seq(lay: Layout, i: int) -> bool:
    """The node takes its parent's whole seq set (its siblings' leaves included)."""
    parent = lay.nodes[i].parent
    if parent < 0 or set(lay.nodes[parent].seq) == set(lay.nodes[i].seq):
        return False
    lay.nodes[i].seq = list(lay.nodes[parent].seq)
    return True


def _leaf_seq_swap(lay: Layout, i: int) -> bool:
    """Leaf i and a leaf of another branch at the same depth trade seq ids."""
    if i not in lay.leaves():
        return False
    j = next((k for k in lay.leaves() if k != i and lay.depth(k) == lay.depth(i) and lay.nodes[k].parent != lay.nodes[i].parent), None)
    if j is None:
        return False
    lay.nodes[i].seq, lay.nodes[j].seq = lay.nodes[j].seq, lay.nodes[i].seq
    return True


def _grandparent_position(lay: Layout, i: int) -> bool:
    if lay.nodes[i].parent < 0:
        return False
    lay.nodes[i].pos = _parent_pos(lay, lay.nodes[i].parent)
    return True


def _parent_position(lay: Layout, i: int) -> bool:
    lay.nodes[i].pos = _parent_pos(lay, i)
    return True


def _pos_plus_one(lay: Layout, i: int) -> bool:
    lay.nodes[i].pos += 1
    return True


# --- Hugging Face: the 4D mask as passed --------------------------------------
def _binary_mask(lay: Layout, i: int) -> bool:
    lay.mask = [[1.0 if v == 0.0 else 0.0 for v in row] for row in lay.mask]
    return True


def _sibling_visible(lay: Layout, i: int) -> bool:
    j = _sibling(lay, i)
    if j is None:
        return False
    lay.mask[i][len(lay.prompt) + j] = 0.0
    return True


def _parent_hidden(lay: Layout, i: int) -> bool:
    parent = lay.nodes[i].parent
    col = len(lay.prompt) - 1 if parent < 0 else len(lay.prompt) + parent
    lay.mask[i][col] = float("-inf")
    return True


def _prompt_hidden(lay: Layout, i: int) -> bool:
    lay.mask[i][0] = float("-inf")
    return True


def _causal_mask(lay: Layout, i: int) -> bool:
    p = len(lay.prompt)
    lay.mask = [[0.0 if c <= p + r else float("-inf") for c in range(p + len(lay.nodes))] for r in range(len(lay.nodes))]
    return True


LLAMA_CPP: Dict[str, Callable[[Layout, int], bool]] = {
    "sibling_seq": _sibling_seq,  # a leaf is given its sibling leaf's seq ids
    "parent_seq": _parent_seq,  # a node takes its parent's seq set (its siblings' leaves too)
    "leaf_seq_swap": _leaf_seq_swap,  # two leaves of different branches trade seq ids
    "extra_seq": _extra_seq,  # a node also carries another branch's seq id, listed last
    "extra_seq_first": _extra_seq_first,  # ... listed first
    "parent_pos": _parent_position,  # the node at its parent's position
    # Refused by llama_decode itself (a sequence's positions must not skip or decrease):
    "grandparent_pos": _grandparent_position,  # the node at its grandparent's position
    "missing_seq": _missing_seq,  # an inner node lacks one leaf sequence below it
    "pos_plus_one": _pos_plus_one,  # the node one position too far
}
# The kinds llama_decode refuses before running anything.
LLAMA_CPP_REFUSED = ("grandparent_pos", "missing_seq", "pos_plus_one")
HF: Dict[str, Callable[[Layout, int], bool]] = {
    "binary_mask": _binary_mask,  # a 0/1 mask where transformers adds the mask to the scores
    "sibling_visible": _sibling_visible,  # the row lets the node see its sibling
    "parent_hidden": _parent_hidden,  # the row hides the node's parent
    "prompt_hidden": _prompt_hidden,  # the row hides the first prompt token
    "causal_mask": _causal_mask,  # the tree passed with a plain causal mask, as if it were one sequence
    "parent_pos": _parent_position,
    "pos_plus_one": _pos_plus_one,
}
BY_ENGINE = {"llama.cpp": LLAMA_CPP, "hf-transformers": HF, "libtorch": HF}  # libtorch takes HF's additive rows


def plant(layout: Layout, engine: str, kind: str, node: Optional[int] = None) -> Layout:
    """A copy of a completed layout with one fault of `kind` at `node` (default:
    the last node where the kind applies)."""
    kinds = BY_ENGINE[engine]
    if kind not in kinds:
        raise LayoutError(f"--plant: {engine} faults are {', '.join(kinds)}; got {kind!r}")
    candidates: List[int] = [node] if node is not None else list(range(len(layout.nodes)))[::-1]
    for i in candidates:
        if not 0 <= i < len(layout.nodes):
            raise LayoutError(f"--plant: node {i} is not in the layout (0 .. {len(layout.nodes) - 1})")
        out = copy.deepcopy(layout)
        if kinds[kind](out, i):
            return out
    raise LayoutError(f"--plant: {kind} does not apply to {'node ' + str(node) if node is not None else 'any node'} of this tree")
