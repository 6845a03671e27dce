"""What an engine adapter provides: one tree pass the engine's way, and the
same engine's sequential decode of a path (the differential's reference)."""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Sequence

import numpy as np

from .layout import Layout


@dataclasses.dataclass
class TreePass:
    """One tree pass as the engine ran it (nodes in layout order)."""

    logits: np.ndarray  # [nodes x vocab] float32: each node's next-token logits
    prompt_logits: np.ndarray  # [vocab]: after the last prompt token (the top nodes' parent)
    prompt_slots: List[int]  # the engine's KV slot of each prompt token
    node_slots: List[int]  # the engine's KV slot of each node
    prompt_mask: np.ndarray  # bool [prompt x slots]: what the prompt's queries read
    mask: np.ndarray  # bool [nodes x slots]: what each node's query read, as the engine applied it
    positions: List[int]  # each node's position id, as the engine used it
    engine: Dict = dataclasses.field(default_factory=dict)  # engine-specific record (cells, mask as passed...)
    problems: List[str] = dataclasses.field(default_factory=list)  # named misuses the engine accepted silently


class Engine:
    """Base of the adapters (llama_cpp.py, hf_transformers.py)."""

    name = "engine"
    # Smallest |delta logit| tolerance used whatever the measured floor (0: exact).
    min_tolerance = 0.0

    def vocab_size(self) -> int:
        raise NotImplementedError

    def vocab_labels(self) -> List[str]:
        raise NotImplementedError

    def tokenize(self, text: str) -> List[int]:
        """Token ids of `text`, special tokens parsed, none added."""
        raise NotImplementedError

    def provenance(self) -> Dict:
        """Engine, version, model file: the trace header's `model` (diff skips it)."""
        raise NotImplementedError

    def settings(self) -> Dict:
        """The settings the result depends on: the trace header's config."""
        raise NotImplementedError

    def complete(self, layout: Layout) -> Layout:
        """The layout with what the user left out built the engine's correct way."""
        raise NotImplementedError

    def tree_pass(self, layout: Layout) -> TreePass:
        raise NotImplementedError

    def sequential(self, prompt: Sequence[int], paths: Sequence[Sequence[int]], whole: bool) -> np.ndarray:
        """[len(paths) x vocab]: the logits after prompt + path, decoded as one
        ordinary sequence: the prompt in one batch then one token at a time
        (whole=False), or prompt + path in one batch (whole=True)."""
        raise NotImplementedError

    def sequential_reference(self, prompt: Sequence[int], paths: Sequence[Sequence[int]], whole: bool) -> np.ndarray:
        """sequential(), decoded once per (prompt, paths, whole) by this engine object: the
        reference does not depend on the tree pass being checked, so checking several
        layouts of one tree (the planted faults) decodes the paths once. The settings the
        logits depend on are fixed when the adapter is made, and the cached copy is read-only."""
        key = (tuple(int(t) for t in prompt), tuple(tuple(int(t) for t in p) for p in paths), bool(whole))
        cache = self.__dict__.setdefault("_sequential_cache", {})
        if key not in cache:
            logits = np.array(self.sequential(prompt, paths, whole), copy=True)
            logits.setflags(write=False)
            cache[key] = logits
        return cache[key]
