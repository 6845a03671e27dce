"""One engine tree pass checked two ways: the trace it leaves (`triescope.check`:
every mask row and position id against the ancestor rule) and the differential
(its logits against the same engine's sequential decode)."""
from __future__ import annotations

import dataclasses
import math
from typing import List, Optional

import numpy as np

from .. import _core
from .differential import Differential, differential, topk_ids
from .engine import Engine, TreePass
from .layout import Layout


@dataclasses.dataclass
class EngineCheck:
    engine: str
    layout: Layout
    tree: TreePass
    diff: Differential
    violations: list  # triescope.Violation of the recorded trace
    trace_path: str

    @property
    def prompt_nodes(self) -> int:
        return len(self.layout.prompt)

    def node_of_violation(self, v) -> Optional[int]:
        """The layout node index a violation's query is (None: a prompt token)."""
        n = v.query - self.prompt_nodes
        return n if n >= 0 else None

    @property
    def check_ok(self) -> bool:
        return not self.violations and not self.tree.problems

    @property
    def diff_ok(self) -> bool:
        return self.diff.first_divergent is None

    @property
    def ok(self) -> bool:
        return self.check_ok and self.diff_ok

    @property
    def agree(self) -> bool:
        return self.check_ok == self.diff_ok


def _log_softmax(row: np.ndarray) -> np.ndarray:
    x = row.astype(np.float64)
    m = np.max(x)
    return x - (m + math.log(np.sum(np.exp(x - m))))


def _node_logprob(layout: Layout, tree: TreePass, i: int) -> float:
    parent = layout.nodes[i].parent
    row = tree.prompt_logits if parent < 0 else tree.logits[parent]
    return float(_log_softmax(row)[layout.nodes[i].token])


def _topk(tree: TreePass, top_k: int) -> list:
    out = []
    for row in tree.logits:
        lp = _log_softmax(row)
        out.append([[t, float(lp[t])] for t in topk_ids(row, top_k)])
    return out


def record_trace(path: str, engine: Engine, layout: Layout, tree: TreePass, diff: Differential) -> None:
    """The pass as a v2 `external` trace: step 0 the prompt, step 1 the tree."""
    p = len(layout.prompt)
    config = {"engine_check": engine.settings()}
    with _core.TraceWriter(path, algorithm=engine.name, vocab=engine.vocab_labels(), config=config,
                           model=engine.provenance(), keyframe_interval=16) as w:
        added = [(k - 1, t, tree.prompt_slots[k]) for k, t in enumerate(layout.prompt)]
        w.step(added=added, queries=list(range(p)), mask=tree.prompt_mask, positions=list(range(p)))
        nodes = [((p - 1) if n.parent < 0 else p + n.parent, n.token, tree.node_slots[i], _node_logprob(layout, tree, i))
                 for i, n in enumerate(layout.nodes)]
        record = dict(tree.engine)
        record["topk"] = _topk(tree, diff.top_k)
        record["differential"] = diff.to_json()
        if tree.problems:
            record["problems"] = list(tree.problems)
        w.step(added=nodes, queries=list(range(p, p + len(nodes))), mask=tree.mask, positions=tree.positions,
               engine=record)


def check_engine(engine: Engine, layout: Layout, out: str, top_k: int = 5) -> EngineCheck:
    layout = engine.complete(layout)
    tree = engine.tree_pass(layout)
    diff = differential(engine, layout, tree, top_k)
    record_trace(out, engine, layout, tree, diff)
    report = _core.check(out, limit=1000)
    return EngineCheck(engine.name, layout, tree, diff, list(report.violations), out)


def _mask_row_text(result: EngineCheck, i: int) -> str:
    """Which slots node i read, and which the ancestor rule wants."""
    row = np.nonzero(result.tree.mask[i])[0].tolist()
    want = sorted([result.tree.prompt_slots[k] for k in range(result.prompt_nodes)]
                  + [result.tree.node_slots[a] for a in result.layout.ancestors(i)])
    return f"read slots {_ranges(row)}; its ancestors-or-self are slots {_ranges(want)}"


def _ranges(xs: List[int]) -> str:
    parts, start = [], None
    for k, x in enumerate(xs):
        if start is None:
            start = x
        if k + 1 == len(xs) or xs[k + 1] != x + 1:
            parts.append(str(start) if start == x else f"{start}-{x}")
            start = None
    return "[" + ", ".join(parts) + "]"


def _violation_text(result: EngineCheck, v) -> str:
    where = "position id" if v.slot < 0 else f"slot {v.slot}"
    return f"{v.fault} ({where}: expected {v.expected}, found {v.found})"


def format_report(result: EngineCheck, labels: Optional[List[str]] = None) -> str:
    lay, tree, diff = result.layout, result.tree, result.diff
    by_node = {}
    for v in result.violations:
        n = result.node_of_violation(v)
        by_node.setdefault(n, []).append(v)
    lines = [f"engine {result.engine}: {len(lay.nodes)} nodes under a {len(lay.prompt)}-token prompt; trace {result.trace_path}",
             f"noise floor (one batch vs token by token, same engine) {diff.noise_floor:.3g}; tolerance {diff.tolerance:.3g}",
             f"{'node':>4} {'parent':>6} {'token':>14} {'pos':>5} {'slot':>5} {'max|dlogit|':>12} {'top-' + str(diff.top_k):>6} {'differential':>12}  check"]
    for d in diff.nodes:
        n = lay.nodes[d.node]
        tok = labels[n.token] if labels and n.token < len(labels) else str(n.token)
        vs = by_node.get(d.node, [])
        lines.append(f"{d.node:>4} {n.parent:>6} {tok[-14:]!s:>14} {tree.positions[d.node]:>5} {tree.node_slots[d.node]:>5} "
                     f"{d.max_abs_delta:>12.4g} {'same' if d.topk_agree else 'DIFF':>6} {'DIVERGES' if d.divergent else 'ok':>12}  "
                     + ("ok" if not vs else "; ".join(_violation_text(result, v) for v in vs[:2])))
    for p in tree.problems:
        lines.append(f"engine misuse: {p}")
    first = diff.first_divergent
    if first is not None:
        lines.append(f"first divergent node: {first.node} (max |delta logit| {first.max_abs_delta:.4g} > {diff.tolerance:.3g}); "
                     f"its mask row {_mask_row_text(result, first.node)}")
    prompt_violations = by_node.get(None, [])
    for v in prompt_violations[:3]:
        lines.append(f"prompt: {v}")
    verdict = "PASS" if result.ok else "FAIL"
    lines.append(f"{verdict}: check {'passed' if result.check_ok else 'failed'} ({len(result.violations)} violations), "
                 f"differential {'passed' if result.diff_ok else 'failed'}"
                 + ("" if result.agree else " -- the two checks DISAGREE"))
    return "\n".join(lines)
