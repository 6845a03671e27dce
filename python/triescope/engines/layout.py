"""A token tree under a prompt, and how an engine lays it out in one pass.

The layout file (docs/engines.md):

    {"engine_layout": 1, "prompt": [ids],
     "nodes": [{"parent": -1 | node index, "token": id, "pos": p, "seq": [seq ids]}, ...],
     "mask": [[...], ...]}

`parent` -1 hangs a node under the last prompt token; a parent comes before its
children. `pos` (position id), `seq` (llama.cpp seq ids) and `mask` (the 4D mask
rows a Hugging Face caller passes, one per node over prompt + nodes columns) are
what the user's own code produced; left out, the adapter builds them correctly.
"""
from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from typing import List, Optional, Sequence

LAYOUT_VERSION = 1
# Ids and positions an engine could take (int32), and a bound on the tree's size
# (a pass holds every node; llama.cpp has 256 sequence ids).
MAX_ID = 2**31 - 1
MAX_NODES = 4096


class LayoutError(ValueError):
    """Bad layout input: the message names the file and the field."""


@dataclasses.dataclass
class TreeNode:
    parent: int  # -1: under the last prompt token
    token: int
    pos: Optional[int] = None
    seq: Optional[List[int]] = None


@dataclasses.dataclass
class Layout:
    prompt: List[int]
    nodes: List[TreeNode]
    mask: Optional[List[List[float]]] = None  # rows as the caller passes them (HF)
    origin: str = "layout"  # where it came from, for error messages

    # --- the tree ---------------------------------------------------------
    def depth(self, i: int) -> int:
        """1 for a node under the prompt, its parent's + 1 below."""
        d = 1
        while self.nodes[i].parent >= 0:
            i = self.nodes[i].parent
            d += 1
        return d

    def ancestors(self, i: int) -> List[int]:
        """Node indices from the top node down to i (i included)."""
        path = [i]
        while self.nodes[path[-1]].parent >= 0:
            path.append(self.nodes[path[-1]].parent)
        return path[::-1]

    def path_tokens(self, i: int) -> List[int]:
        return [self.nodes[a].token for a in self.ancestors(i)]

    def children(self, i: int) -> List[int]:
        return [j for j, n in enumerate(self.nodes) if n.parent == i]

    def leaves(self) -> List[int]:
        has_child = {n.parent for n in self.nodes}
        return [i for i in range(len(self.nodes)) if i not in has_child]

    # --- what a correct layout holds -------------------------------------
    def correct_pos(self, i: int) -> int:
        return len(self.prompt) + self.depth(i) - 1

    def correct_seq(self, i: int) -> List[int]:
        """The leaf sequences below node i: leaf k (in node order) is seq k + 1."""
        seq_of_leaf = {leaf: k + 1 for k, leaf in enumerate(self.leaves())}
        return sorted(seq_of_leaf[leaf] for leaf in seq_of_leaf if i in self.ancestors(leaf))

    def visible(self, i: int) -> List[int]:
        """Columns (prompt + nodes) node i may read: the prompt and its ancestors-or-self."""
        return list(range(len(self.prompt))) + [len(self.prompt) + a for a in self.ancestors(i)]

    def correct_mask(self) -> List[List[float]]:
        """Additive 4D-mask rows: 0 where visible, -inf elsewhere."""
        cols = len(self.prompt) + len(self.nodes)
        rows = []
        for i in range(len(self.nodes)):
            row = [-math.inf] * cols
            for c in self.visible(i):
                row[c] = 0.0
            rows.append(row)
        return rows

    def completed(self) -> "Layout":
        """A copy with every pos and seq the user left out filled in correctly."""
        nodes = [
            TreeNode(n.parent, n.token, self.correct_pos(i) if n.pos is None else n.pos,
                     self.correct_seq(i) if n.seq is None else list(n.seq))
            for i, n in enumerate(self.nodes)
        ]
        return Layout(list(self.prompt), nodes, self.mask, self.origin)

    def to_json(self) -> dict:
        out = {"engine_layout": LAYOUT_VERSION, "prompt": list(self.prompt), "nodes": []}
        for n in self.nodes:
            d = {"parent": n.parent, "token": n.token}
            if n.pos is not None:
                d["pos"] = n.pos
            if n.seq is not None:
                d["seq"] = list(n.seq)
            out["nodes"].append(d)
        if self.mask is not None:
            out["mask"] = [[_json_float(v) for v in row] for row in self.mask]
        return out


def _json_float(v: float):
    return "-inf" if v == -math.inf else v


def _int(value, where: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise LayoutError(f"{where}: expected an integer, got {json.dumps(value)[:40]}")
    if not lo <= value <= hi:
        raise LayoutError(f"{where}: {value} is outside [{lo}, {hi}]")
    return value


def _mask_value(value, where: str) -> float:
    if value == "-inf":
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LayoutError(f"{where}: expected a number (or \"-inf\"), got {json.dumps(value)[:40]}")
    if math.isnan(value) or value == math.inf:
        raise LayoutError(f"{where}: NaN and +inf are not mask values")
    return float(value)


def _node(d, where: str, index: int, vocab_size: int) -> TreeNode:
    if not isinstance(d, dict):
        raise LayoutError(f"{where}: expected an object")
    unknown = set(d) - {"parent", "token", "pos", "seq"}
    if unknown:
        raise LayoutError(f"{where}: unknown field {sorted(unknown)[0]!r} (parent, token, pos, seq)")
    for f in ("parent", "token"):
        if f not in d:
            raise LayoutError(f"{where}.{f}: missing")
    parent = _int(d["parent"], f"{where}.parent", -1, MAX_ID)
    if parent >= index:
        raise LayoutError(f"{where}.parent: node {parent} does not come before node {index} (parents first)")
    token = _int(d["token"], f"{where}.token", 0, vocab_size - 1)
    pos = _int(d["pos"], f"{where}.pos", 0, MAX_ID) if "pos" in d else None
    seq = None
    if "seq" in d:
        if not isinstance(d["seq"], list) or not d["seq"]:
            raise LayoutError(f"{where}.seq: expected a non-empty list of seq ids")
        seq = [_int(s, f"{where}.seq[{k}]", 0, 255) for k, s in enumerate(d["seq"])]
        if len(set(seq)) != len(seq):
            raise LayoutError(f"{where}.seq: a seq id is listed twice")
    return TreeNode(parent, token, pos, seq)


def _mask(rows, where: str, n_rows: int, n_cols: int) -> List[List[float]]:
    if not isinstance(rows, list) or len(rows) != n_rows:
        raise LayoutError(f"{where}: expected {n_rows} rows (one per node)")
    out = []
    for r, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != n_cols:
            raise LayoutError(f"{where}[{r}]: expected {n_cols} columns (prompt + nodes)")
        out.append([_mask_value(v, f"{where}[{r}][{c}]") for c, v in enumerate(row)])
    return out


def layout_from_json(doc, origin: str, vocab_size: int) -> Layout:
    """Validates a parsed layout document; every error names `origin` and the field."""
    if not isinstance(doc, dict):
        raise LayoutError(f"{origin}: expected a JSON object")
    unknown = set(doc) - {"engine_layout", "prompt", "nodes", "mask"}
    if unknown:
        raise LayoutError(f"{origin}: unknown field {sorted(unknown)[0]!r} (engine_layout, prompt, nodes, mask)")
    if doc.get("engine_layout") != LAYOUT_VERSION:
        raise LayoutError(f"{origin}: engine_layout: expected {LAYOUT_VERSION}, got {json.dumps(doc.get('engine_layout'))}")
    prompt = doc.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        raise LayoutError(f"{origin}: prompt: expected a non-empty list of token ids")
    prompt = [_int(t, f"{origin}: prompt[{k}]", 0, vocab_size - 1) for k, t in enumerate(prompt)]
    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise LayoutError(f"{origin}: nodes: expected a non-empty list")
    if len(nodes) > MAX_NODES:
        raise LayoutError(f"{origin}: nodes: {len(nodes)} nodes, at most {MAX_NODES}")
    parsed = [_node(d, f"{origin}: nodes[{i}]", i, vocab_size) for i, d in enumerate(nodes)]
    mask = None
    if "mask" in doc:
        mask = _mask(doc["mask"], f"{origin}: mask", len(parsed), len(prompt) + len(parsed))
    return Layout(prompt, parsed, mask, origin)


def load_layout(path, vocab_size: int) -> Layout:
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise LayoutError(f"{path}: cannot read the layout file: {e}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise LayoutError(f"{path}: not JSON: {e}") from None
    return layout_from_json(doc, str(path), vocab_size)


def tree_from_parents(prompt: Sequence[int], parents: Sequence[int], tokens: Sequence[int]) -> Layout:
    return Layout(list(prompt), [TreeNode(p, t) for p, t in zip(parents, tokens)])
