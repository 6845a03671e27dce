"""EAGLE's and Medusa's draft-tree buffers, built by the released packages, recorded as a
trace and checked.

The packages (PyPI ``eagle-llm`` 1.2.1, ``medusa-llm`` 0.1, scripts/requirements-engines.txt)
are imported and called, never copied: their builders
(``eagle.model.utils.generate_tree_buffers``, ``medusa.model.utils.generate_medusa_buffers``)
make the tree attention mask, position ids, retrieve indices and tree indices on the CPU,
and their own decode functions (``initialize_tree`` / ``initialize_medusa`` then
``tree_decoding``) run over a stub model that records what a Llama forward pass would get:
the position ids they pass, and the attention mask the package's own
``LlamaModel._prepare_decoder_attention_mask`` combines from the past, the causal mask and
the tree mask. That is the engine's verify pass, exactly as it runs it.

The tree itself comes from the choices, not from the buffers (they are what is judged):
EAGLE's choices are paths of top-k ranks (``[0, 1]`` = the 2nd candidate under the 1st);
Medusa 0.1's are counts per level (``[1, 7, 6]``: the root, 7 candidates under it, 6
under each of those, a Cartesian product). Both builders order the nodes root first, then
by (depth, path); so does :class:`DraftTree`.

Conventions of the recorded trace (docs/engines.md):

* step 0, ``prefill``: the prompt, ``prompt_length`` tokens as a chain, nodes and slots
  0 .. P-1, positions and mask as the engine's prefill call builds them;
* step 1, ``forward``: the draft tree, every node a query in the builder's order; tree
  node k is trace node (and slot) P + k; node 0, the root, is the token sampled last, a
  child of the last prompt token; the mask row is the engine's combined row over
  [prompt | tree] columns; positions as the engine passes them (tree position ids + P);
* tokens: prompt token i is id i (label ``prompt<i>``), the root is id P (``sampled``),
  a draft node that is its parent's rank-r candidate is id P + 1 + r (``top<r>``);
* the step's ``engine`` field holds the choices, every buffer's shape, the retrieve
  indices, tree indices and tree position ids as the builder returned them (after a
  planted fault), the node paths and the past length.

The check: ``triescope.check`` on the trace (each mask row and position id against the
ancestor rule), plus the retrieve indices (every row a root-to-leaf path in depth order,
padded as the package pads, every leaf in exactly one row) and the tree indices (each node
gathers its parent's rank-r candidate) checked here.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import sys
import types
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Optional, Sequence

import torch

import triescope

FAULTS = ("position", "mask_sibling", "mask_parent", "retrieve", "tree_indices")
MAX_NODES = 4096  # the builders make a dense [nodes x nodes] float mask


class DraftTreeError(ValueError):
    """Bad input: choices that are not a tree, an unknown engine or fault, a bad prompt length."""


# --- the tree, from the choices -------------------------------------------------------


@dataclass(frozen=True)
class DraftTree:
    """A draft tree in the builders' node order: the root (path ()), then by (depth, path)."""

    paths: tuple[tuple[int, ...], ...]
    parents: tuple[int, ...]  # -1 for the root

    @property
    def size(self) -> int:
        return len(self.paths)

    @property
    def depth(self) -> int:
        return max(len(p) for p in self.paths)

    @cached_property
    def with_children(self) -> list[int]:
        """Nodes that are some node's parent, in node order."""
        return sorted(set(p for p in self.parents if p >= 0))

    @cached_property
    def leaves(self) -> list[int]:
        inner = set(self.parents)
        return [k for k in range(self.size) if k not in inner]

    def label(self, k: int) -> str:
        return f"node {k} {list(self.paths[k])}"

    def earlier_sibling(self, k: int) -> Optional[int]:
        """The sibling just before node k, if any (siblings are contiguous in (depth, path) order)."""
        return k - 1 if k > 1 and self.parents[k - 1] == self.parents[k] else None


def tree_from_paths(paths: Sequence[Sequence[int]]) -> DraftTree:
    """The tree of a set of root-to-node paths (each path's prefixes must be in the set)."""
    ordered = [()] + sorted((tuple(p) for p in paths), key=lambda p: (len(p), p))
    index = {p: k for k, p in enumerate(ordered)}
    parents = tuple(-1 if not p else index[p[:-1]] for p in ordered)
    return DraftTree(tuple(ordered), parents)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def eagle_paths(choices: Any, top_k: int) -> list[tuple[int, ...]]:
    """EAGLE's tree choices checked as a tree: non-empty paths of ranks 0 .. top_k-1, no
    duplicates, every path's parent path present. Raises DraftTreeError naming the path."""
    if not isinstance(choices, (list, tuple)) or not choices:
        raise DraftTreeError(f"eagle choices: expected a non-empty list of paths, got {choices!r}")
    seen: set[tuple[int, ...]] = set()
    for i, path in enumerate(choices):
        if not isinstance(path, (list, tuple)) or not path or not all(_is_int(r) for r in path):
            raise DraftTreeError(f"eagle choices[{i}] = {path!r}: not a non-empty list of ints")
        bad = [r for r in path if not 0 <= r < top_k]
        if bad:
            raise DraftTreeError(f"eagle choices[{i}] = {list(path)}: rank {bad[0]} is outside the "
                                 f"draft model's top-{top_k} (eagle.model.utils.TOPK)")
        if tuple(path) in seen:
            raise DraftTreeError(f"eagle choices[{i}] = {list(path)}: a duplicate path")
        if len(seen) >= MAX_NODES:
            raise DraftTreeError(f"eagle choices: more than {MAX_NODES - 1} paths")
        seen.add(tuple(path))
    for i, path in enumerate(choices):
        if len(path) > 1 and tuple(path[:-1]) not in seen:
            raise DraftTreeError(f"eagle choices[{i}] = {list(path)}: its parent path {list(path[:-1])} "
                                 "is not in the choices, so they are not a tree")
    return sorted(seen)


def medusa_paths(choices: Any) -> list[tuple[int, ...]]:
    """Medusa 0.1's choices (candidates per level; level 0 is the base model's one sampled
    token, so choices[0] must be 1) as the paths of their Cartesian-product tree."""
    if not isinstance(choices, (list, tuple)) or not choices or not all(_is_int(c) for c in choices):
        raise DraftTreeError(f"medusa choices: expected a non-empty list of ints, got {choices!r}")
    if choices[0] != 1:
        raise DraftTreeError(f"medusa choices[0] = {choices[0]}: must be 1, the root is the base "
                             "model's one sampled token (medusa.model.utils.generate_candidates takes its argmax)")
    if len(choices) < 2:
        raise DraftTreeError(f"medusa choices {list(choices)}: no level after the root, so no draft tokens")
    bad = [i for i, c in enumerate(choices) if c < 1]
    if bad:
        raise DraftTreeError(f"medusa choices[{bad[0]}] = {choices[bad[0]]}: a level needs at least one candidate")
    nodes = sum(itertools.accumulate(choices, lambda a, b: a * b))
    if nodes > MAX_NODES:
        raise DraftTreeError(f"medusa choices {list(choices)}: {nodes} nodes, more than {MAX_NODES}")
    paths: list[tuple[int, ...]] = []
    for depth in range(1, len(choices)):
        paths += itertools.product(*(range(c) for c in choices[1:depth + 1]))
    return paths


# --- the engines' own decode functions over a stub model ------------------------------


class _StubModel:
    """Stands in for EaModel / MedusaModel where the package's decode functions call it.

    Per call it records the position ids and the attention mask the package's Llama
    forward pass (its modeling_llama_kv.LlamaModel.forward) would use: position ids
    default to past .. past + n - 1, attention_mask to all ones over past + n, and the
    package's own _prepare_decoder_attention_mask combines it with the causal mask and
    the tree mask the decode functions set on base_model.model. It answers with zero
    tensors shaped as each caller unpacks them (`replies`, one per call)."""

    def __init__(self, prepare_mask: Callable[..., torch.Tensor], replies: list[Callable[[int], tuple]]):
        self.base_model = types.SimpleNamespace(model=types.SimpleNamespace())
        self._prepare_mask = prepare_mask
        self._replies = replies
        self.past = 0  # the KV cache's current length
        self.calls: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, input_ids: torch.Tensor, past_key_values: Any = None,
                 position_ids: Optional[torch.Tensor] = None, **_: Any) -> tuple:
        n = input_ids.shape[1]
        if position_ids is None:
            position_ids = torch.arange(self.past, self.past + n)
        attention = torch.ones((1, self.past + n), dtype=torch.bool)
        combined = self._prepare_mask(self.base_model.model, attention, (1, n), torch.zeros(1, n, 1), self.past)
        self.calls.append((combined[0, 0] == 0, position_ids.reshape(-1, n)[0].clone()))
        self.past += n
        return self._replies[len(self.calls) - 1](n)


def _verify_pass(stub: _StubModel, decode: Callable[[], Any]) -> Optional[str]:
    """Runs the engine's tree_decoding; an out-of-range retrieve index makes its gather fail
    after the forward call was recorded: that is returned as a problem, not raised."""
    try:
        decode()
    except IndexError as e:
        if len(stub.calls) < 2:
            raise
        return f"the engine's tree_decoding fails to gather its logits with retrieve_indices: {e}"
    return None


def _replay_eagle(buffers: dict, prompt_length: int) -> tuple[list, Optional[str]]:
    """EAGLE's initialize_tree (the prefill) and tree_decoding (the draft tree's verify pass)."""
    from eagle.model import modeling_llama_kv, utils

    stub = _StubModel(modeling_llama_kv.LlamaModel._prepare_decoder_attention_mask,
                      [lambda n: (None,) * 5, lambda n: (None, torch.zeros(1, n, 1), None)])
    input_ids = torch.zeros(1, prompt_length, dtype=torch.long)
    utils.reset_tree_mode(stub)
    utils.initialize_tree(input_ids, stub, buffers["tree_attn_mask"], None, None)
    tokens = torch.zeros(1, buffers["tree_position_ids"].numel(), dtype=torch.long)
    error = _verify_pass(stub, lambda: utils.tree_decoding(
        stub, tokens, None, buffers["tree_position_ids"], input_ids, buffers["retrieve_indices"]))
    return stub.calls, error


def _replay_medusa(buffers: dict, prompt_length: int) -> tuple[list, Optional[str]]:
    """Medusa's initialize_medusa (the prefill) and tree_decoding (the verify pass)."""
    from medusa.model import modeling_llama_kv, utils

    stub = _StubModel(modeling_llama_kv.LlamaModel._prepare_decoder_attention_mask,
                      [lambda n: (None,) * 3, lambda n: (torch.zeros(1, 1, n, 1), None, torch.zeros(1, n, 1))])
    input_ids = torch.zeros(1, prompt_length, dtype=torch.long)
    utils.reset_medusa_mode(stub)
    utils.initialize_medusa(input_ids, stub, buffers["medusa_attn_mask"], None)
    tokens = torch.zeros(1, buffers["medusa_position_ids"].numel(), dtype=torch.long)
    error = _verify_pass(stub, lambda: utils.tree_decoding(
        stub, tokens, None, buffers["medusa_position_ids"], input_ids, buffers["retrieve_indices"]))
    return stub.calls, error


# --- the two packages -----------------------------------------------------------------


def _eagle_default() -> list:
    from eagle.model.choices import mc_sim_7b_63

    return [list(p) for p in mc_sim_7b_63]


def _eagle_paths(choices: Any) -> list[tuple[int, ...]]:
    from eagle.model.utils import TOPK

    return eagle_paths(choices, TOPK)


def _eagle_build(choices: Any) -> dict:
    from eagle.model.utils import generate_tree_buffers

    return generate_tree_buffers([list(p) for p in choices], device="cpu")


def _eagle_tree_indices(tree: DraftTree, choices: Any) -> list[int]:
    """Where each node's token sits in EAGLE's candidates = [sampled token] + the draft
    model's top-k rows flattened; the draft model emits one row per node with children,
    in node order (the root's first), so node k is 1 + TOPK * row(parent) + rank."""
    from eagle.model.utils import TOPK

    row = {node: r for r, node in enumerate(tree.with_children)}
    return [0] + [1 + TOPK * row[tree.parents[k]] + tree.paths[k][-1] for k in range(1, tree.size)]


def _medusa_default() -> list:
    import inspect

    from medusa.model.medusa_model import MedusaModel

    return list(inspect.signature(MedusaModel.medusa_generate).parameters["medusa_choices"].default)


def _medusa_build(choices: Any) -> dict:
    from medusa.model.utils import generate_medusa_buffers

    return generate_medusa_buffers(list(choices), device="cpu")


def _medusa_tree_indices(tree: DraftTree, choices: Any) -> list[int]:
    """Medusa's candidates = [base model's argmax] + head 1's top-c1 + head 2's top-c2 ...:
    a depth-d node of rank r is at 1 + c1 + ... + c(d-1) + r."""
    level_start = list(itertools.accumulate([1] + list(choices[1:])))
    return [0] + [level_start[len(p) - 1] + p[-1] for p in tree.paths[1:]]


@dataclass(frozen=True)
class _Engine:
    name: str
    distribution: str  # the PyPI package
    builder: str
    prefill_call: str  # the package's decode functions the stub model runs under
    verify_call: str
    mask_key: str
    positions_key: str
    retrieve_pad: Optional[int]  # what short retrieve rows are padded with (None: never padded)
    default_choices: Callable[[], Any]
    paths: Callable[[Any], list]
    build: Callable[[Any], dict]
    replay: Callable[[dict, int], tuple[list, Optional[str]]]
    tree_indices: Callable[[DraftTree, Any], list[int]]


ENGINES = {
    "eagle": _Engine("eagle", "eagle-llm", "eagle.model.utils.generate_tree_buffers",
                     "eagle.model.utils.initialize_tree", "eagle.model.utils.tree_decoding", "tree_attn_mask",
                     "tree_position_ids", -1, _eagle_default, _eagle_paths, _eagle_build, _replay_eagle,
                     _eagle_tree_indices),
    "medusa": _Engine("medusa", "medusa-llm", "medusa.model.utils.generate_medusa_buffers",
                      "medusa.model.utils.initialize_medusa", "medusa.model.utils.tree_decoding", "medusa_attn_mask",
                      "medusa_position_ids", None, _medusa_default, medusa_paths, _medusa_build, _replay_medusa,
                      _medusa_tree_indices),
}


# --- planted faults -------------------------------------------------------------------


@dataclass(frozen=True)
class PlantedFault:
    kind: str
    node: Optional[int]  # the tree node changed (None for "retrieve")
    row: Optional[int]  # the retrieve row changed (None otherwise)
    description: str


def fault_node(tree: DraftTree, kind: str) -> int:
    """The node a node fault goes to: the last node (builder order) with an earlier
    sibling, so "mask_sibling" sets a bit the engine's causal mask does not hide
    (a later sibling's column is above the diagonal); the last node if none has one."""
    with_sibling = [k for k in range(tree.size) if tree.earlier_sibling(k) is not None]
    if with_sibling:
        return with_sibling[-1]
    if kind == "mask_sibling":
        raise DraftTreeError("fault mask_sibling: no node of this tree has an earlier sibling")
    return tree.size - 1


def plant_fault(buffers: dict, engine: _Engine, tree: DraftTree, kind: str) -> PlantedFault:
    """Changes the package's returned buffers in place by one off-by-one of `kind`."""
    if kind == "retrieve":
        retrieve = buffers["retrieve_indices"]
        before = int(retrieve[0, 1])
        retrieve[0, 1] += 1
        return PlantedFault(kind, None, 0, f"retrieve_indices[0, 1]: {before} -> {before + 1}")
    k = fault_node(tree, kind)
    mask = buffers[engine.mask_key][0, 0]
    if kind == "position":
        buffers[engine.positions_key][k] += 1
        what = f"{engine.positions_key}[{k}] + 1"
    elif kind == "mask_sibling":
        sibling = tree.earlier_sibling(k)
        mask[k, sibling] = 1
        what = f"{engine.mask_key} row {k} sees its sibling node {sibling}"
    elif kind == "mask_parent":
        mask[k, tree.parents[k]] = 0
        what = f"{engine.mask_key} row {k} misses its parent node {tree.parents[k]}"
    else:
        buffers["tree_indices"][k] += 1
        what = f"tree_indices[{k}] + 1"
    return PlantedFault(kind, k, None, f"{what} ({tree.label(k)})")


# --- the checks beside triescope.check ------------------------------------------------


def _row_problem(tree: DraftTree, r: int, row: list[int], pad: Optional[int]) -> Optional[str]:
    """Why retrieve row r is not a root-to-leaf path padded with `pad`, or None."""
    real = row[:row.index(pad)] if pad is not None and pad in row else row
    if any(x != pad for x in row[len(real):]):
        return f"retrieve row {r} {row}: a node after the padding ({pad})"
    if not real or real[0] != 0:
        return f"retrieve row {r} {row}: does not start at the root (node 0)"
    for j in range(1, len(real)):
        node = real[j]
        if not 0 <= node < tree.size:
            return f"retrieve row {r} {row}: column {j}: {node} is not a node (the tree has {tree.size})"
        if tree.parents[node] != real[j - 1]:
            return (f"retrieve row {r} {row}: column {j}: {tree.label(node)} is not a child of "
                    f"{tree.label(real[j - 1])}")
    if real[-1] not in tree.leaves:
        return f"retrieve row {r} {row}: ends at {tree.label(real[-1])}, not a leaf"
    return None


def retrieve_problems(tree: DraftTree, retrieve: torch.Tensor, pad: Optional[int]) -> list[str]:
    """Every row a root-to-leaf path in depth order (padded with `pad` to depth + 1
    columns), every leaf in exactly one row."""
    if retrieve.dim() != 2 or retrieve.shape[1] != tree.depth + 1:
        return [f"retrieve_indices: shape {list(retrieve.shape)}, expected [rows x {tree.depth + 1}] "
                f"(the tree's depth {tree.depth} + the root)"]
    problems, rows_of = [], {leaf: [] for leaf in tree.leaves}
    for r, row in enumerate(retrieve.tolist()):
        problem = _row_problem(tree, r, row, pad)
        if problem:
            problems.append(problem)
        else:
            rows_of[[x for x in row if x != pad][-1]].append(r)
    for leaf, rows in rows_of.items():
        if len(rows) != 1:
            where = f"rows {rows}" if rows else "no valid row"
            problems.append(f"retrieve_indices: leaf {tree.label(leaf)} is in {where}, expected exactly one")
    return problems


def tree_indices_problems(tree: DraftTree, expected: list[int], found: torch.Tensor) -> list[str]:
    """Each node's tree index against where its candidate sits (`expected`)."""
    found_list = found.tolist()
    problems = []
    for k, (want, got) in enumerate(zip(expected, found_list)):
        if want != got:
            what = f"its parent's rank-{tree.paths[k][-1]} candidate" if k else "the sampled token"
            problems.append(f"tree_indices[{k}] = {got} ({tree.label(k)}): expected {want}, {what}")
    return problems


def shape_problems(engine: _Engine, tree: DraftTree, buffers: dict) -> list[str]:
    """The buffers the trace is made of must have one entry per node."""
    n = tree.size
    expect = {engine.mask_key: [1, 1, n, n], engine.positions_key: [n], "tree_indices": [n]}
    return [f"{key}: shape {list(buffers[key].shape)}, expected {shape} for the {n} nodes of the choices"
            for key, shape in expect.items() if list(buffers[key].shape) != shape]


def violation_problems(report: triescope.CheckReport, tree: DraftTree, prompt_length: int) -> list[str]:
    """triescope.check's violations, each led by the tree node (path) it is about."""
    problems = []
    for v in report.violations:
        who = tree.label(v.query - prompt_length) if v.query >= prompt_length else f"prompt node {v.query}"
        seen = ""
        if v.slot_node >= prompt_length:
            seen = f" (slot {v.slot} is {tree.label(v.slot_node - prompt_length)})"
        problems.append(f"{who}: {v}{seen}")
    if report.violation_count > len(report.violations):
        problems.append(f"... and {report.violation_count - len(report.violations)} more violations")
    return problems


# --- recording ------------------------------------------------------------------------


def _token(tree: DraftTree, k: int, prompt_length: int) -> int:
    """The convention: the root is id P ("sampled"), a rank-r candidate id P + 1 + r ("top<r>")."""
    return prompt_length if k == 0 else prompt_length + 1 + tree.paths[k][-1]


def _vocab(tree: DraftTree, prompt_length: int) -> list[str]:
    ranks = max(p[-1] for p in tree.paths[1:]) + 1
    return [f"prompt{i}" for i in range(prompt_length)] + ["sampled"] + [f"top{r}" for r in range(ranks)]


def _buffer_shapes(buffers: dict) -> dict:
    return {k: list(v.shape) if isinstance(v, torch.Tensor) else [len(v)] for k, v in buffers.items()}


def _engine_record(engine: _Engine, tree: DraftTree, choices: Any, buffers: dict, prompt_length: int,
                   planted: Optional[PlantedFault]) -> dict:
    """The verify step's `engine` field: what the builder returned, as used."""
    return {
        "call": engine.verify_call,
        "choices": json.loads(json.dumps(choices)),
        "past_length": prompt_length,
        "buffer_shapes": _buffer_shapes(buffers),
        "retrieve_indices": buffers["retrieve_indices"].tolist(),
        "tree_indices": buffers["tree_indices"].tolist(),
        "tree_position_ids": buffers[engine.positions_key].tolist(),
        "node_paths": [list(p) for p in tree.paths],
        "planted_fault": planted.description if planted else None,
    }


def _write_trace(path: str, engine: _Engine, tree: DraftTree, calls: list, prompt_length: int,
                 verify_record: dict) -> None:
    """Step 0: the prompt chain through the engine's prefill call; step 1: the draft tree
    through its verify call (node k of the tree is trace node and slot P + k)."""
    (prefill_mask, prefill_positions), (tree_mask, tree_positions) = calls
    P = prompt_length
    model = {"engine": engine.distribution, "engine_version": importlib.metadata.version(engine.distribution),
             "builder": engine.builder, "device": "cpu"}
    config = {"choices": verify_record["choices"], "prompt_length": P, "planted_fault": verify_record["planted_fault"]}
    with triescope.TraceWriter(path, algorithm=engine.name, vocab=_vocab(tree, P), config=config, model=model) as w:
        w.step(added=[(i - 1, i, i) for i in range(P)], queries=list(range(P)), mask=prefill_mask,
               positions=prefill_positions, engine={"call": engine.prefill_call, "past_length": 0})
        added = [(P - 1 if k == 0 else P + tree.parents[k], _token(tree, k, P), P + k) for k in range(tree.size)]
        w.step(added=added, queries=[P + k for k in range(tree.size)], mask=tree_mask, positions=tree_positions,
               engine=verify_record)


# --- the importers --------------------------------------------------------------------


@dataclass
class DraftTreeResult:
    """What record_eagle_tree / record_medusa_tree found: `ok` when the trace passes
    triescope.check and the retrieve and tree indices are right; `problems` names each
    fault by its tree node (path) or retrieve row."""

    engine: str
    trace_path: Optional[str]  # None when the buffers' shapes did not allow a trace
    choices: Any
    tree: DraftTree
    prompt_length: int
    buffer_shapes: dict
    report: Optional[triescope.CheckReport]
    problems: list[str] = field(default_factory=list)
    planted: Optional[PlantedFault] = None

    @property
    def ok(self) -> bool:
        return self.report is not None and self.report.ok and not self.problems

    @property
    def nodes(self) -> int:
        return self.tree.size

    @property
    def depth(self) -> int:
        return self.tree.depth


def _check_arguments(engine: str, prompt_length: Any, fault: Optional[str]) -> _Engine:
    if engine not in ENGINES:
        raise DraftTreeError(f"engine {engine!r}: expected one of {', '.join(sorted(ENGINES))}")
    if not _is_int(prompt_length) or prompt_length < 1:
        raise DraftTreeError(f"prompt_length {prompt_length!r}: expected an int >= 1")
    if fault is not None and fault not in FAULTS:
        raise DraftTreeError(f"fault {fault!r}: expected one of {', '.join(FAULTS)}")
    return ENGINES[engine]


def record_draft_tree(engine_name: str, path: str, choices: Any = None, prompt_length: int = 4,
                      fault: Optional[str] = None) -> DraftTreeResult:
    """Builds `engine_name`'s tree buffers with its package (default choices: the package's),
    plants `fault` (one of FAULTS) if given, records the prefill and the verify pass as the
    engine runs them into the trace at `path`, and checks it. Raises DraftTreeError on bad input."""
    engine = _check_arguments(engine_name, prompt_length, fault)
    if choices is None:
        choices = engine.default_choices()
    tree = tree_from_paths(engine.paths(choices))
    buffers = engine.build(choices)
    planted = plant_fault(buffers, engine, tree, fault) if fault else None
    result = DraftTreeResult(engine.name, None, choices, tree, prompt_length, _buffer_shapes(buffers), None,
                             shape_problems(engine, tree, buffers), planted)
    if result.problems:
        return result
    calls, gather_error = engine.replay(buffers, prompt_length)
    _write_trace(path, engine, tree, calls, prompt_length,
                 _engine_record(engine, tree, choices, buffers, prompt_length, planted))
    result.trace_path = str(path)
    result.report = triescope.check(path, limit=100)
    result.problems = (violation_problems(result.report, tree, prompt_length)
                       + retrieve_problems(tree, buffers["retrieve_indices"], engine.retrieve_pad)
                       + tree_indices_problems(tree, engine.tree_indices(tree, choices), buffers["tree_indices"])
                       + ([gather_error] if gather_error else []))
    return result


def record_eagle_tree(path: str, choices: Any = None, prompt_length: int = 4,
                      fault: Optional[str] = None) -> DraftTreeResult:
    """EAGLE (eagle-llm): choices are paths of top-k ranks; default eagle.model.choices.mc_sim_7b_63."""
    return record_draft_tree("eagle", path, choices, prompt_length, fault)


def record_medusa_tree(path: str, choices: Any = None, prompt_length: int = 4,
                       fault: Optional[str] = None) -> DraftTreeResult:
    """Medusa (medusa-llm 0.1): choices are candidates per level; default MedusaModel.medusa_generate's [1, 7, 6]."""
    return record_draft_tree("medusa", path, choices, prompt_length, fault)


# --- python -m triescope.engines draft-tree -------------------------------------------


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def format_table(result: DraftTreeResult) -> str:
    """A short summary: the engine, the tree's size, the check's verdict and each problem."""
    retrieve = result.buffer_shapes.get("retrieve_indices", [])
    choices = json.dumps(result.choices)
    lines = [
        f"engine      {result.engine}",
        f"choices     {choices if len(choices) <= 70 else choices[:67] + '...'}",
        f"nodes       {result.nodes} (the root + {result.nodes - 1} draft tokens), depth {result.depth}, "
        f"{len(result.tree.leaves)} leaves",
        f"retrieve    {' x '.join(map(str, retrieve))}",
    ]
    if result.planted:
        lines.append(f"planted     {result.planted.kind}: {result.planted.description}")
    if result.report is not None:
        lines.append(f"trace       {result.trace_path}: {result.report.passes} passes, {result.report.rows} mask rows, "
                     f"{_count(result.report.violation_count, 'violation')}")
    lines.append(f"check       {'ok' if result.ok else 'FAILED, ' + _count(len(result.problems), 'problem')}")
    lines += [f"  {p}" for p in result.problems]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--engine", required=True, choices=sorted(ENGINES), help="whose tree buffers to build")
    parser.add_argument("--choices", help="the tree as JSON (EAGLE: a list of rank paths, e.g. [[0],[1],[0,0]]; "
                        "Medusa: candidates per level, e.g. [1,3,2]); default: the package's default tree")
    parser.add_argument("--prompt-length", type=int, default=4, help="prompt tokens before the tree (default 4)")
    parser.add_argument("--fault", choices=FAULTS, help="plant one off-by-one into the package's buffers")
    parser.add_argument("--out", required=True, help="the trace to write")


def run(args: argparse.Namespace) -> int:
    """0: recorded and clean; 1: a violation or a wrong retrieve / tree index; 2: bad input."""
    try:
        choices = None if args.choices is None else json.loads(args.choices)
    except json.JSONDecodeError as e:
        print(f"draft-tree: --choices is not JSON: {e}", file=sys.stderr)
        return 2
    try:
        result = record_draft_tree(args.engine, args.out, choices, args.prompt_length, args.fault)
    except DraftTreeError as e:
        print(f"draft-tree: {e}", file=sys.stderr)
        return 2
    print(format_table(result))
    return 0 if result.ok else 1


def main_draft_tree(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m triescope.engines draft-tree",
                                     description="Record EAGLE's or Medusa's draft-tree buffers as a trace and check them.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main_draft_tree())
