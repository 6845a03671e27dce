"""Hugging Face transformers as an engine: a tree pass is one forward with a
4D attention mask, position ids and a cache holding the prompt.

Pinned behaviour (transformers 4.45.2 on torch 1.13, eager attention, which
is what this version picks without torch's SDPA): a 4D mask is used as given
("already in inverted form") and ADDED to the attention scores, so 0 means
visible and a large negative (finfo.min, -inf) hidden. A 0/1 mask is accepted
silently and reads as "everything visible"; values in between only down-weight.
"""
from __future__ import annotations

import math
import pathlib
from typing import Dict, List, Sequence

import numpy as np

from .engine import Engine, TreePass
from .layout import Layout, LayoutError

# An additive mask value at or below this hides its cell: exp(-1e4) is 0 in
# float32, so the softmax weight is exactly 0.
HIDDEN_AT_OR_BELOW = -1.0e4


def applied_visibility(rows: np.ndarray) -> np.ndarray:
    """What an additive mask lets each query read: True where the value is above the hiding level."""
    return rows > HIDDEN_AT_OR_BELOW


def mask_misuse(rows: np.ndarray) -> List[str]:
    """Named misuses of an additive mask that HF accepts without a word."""
    values = set(np.unique(rows).tolist())
    if values <= {0.0, 1.0} and 1.0 in values:
        hidden_meant = int(np.sum(rows == 0.0))
        return [f"the 4D mask is 0/1 (1 = visible), but transformers adds it to the attention scores: "
                f"its {hidden_meant} zero cells are visible too; pass 0 for visible and -inf (or finfo.min) for hidden"]
    odd = sorted(v for v in values if v != 0.0 and v > HIDDEN_AT_OR_BELOW)
    if odd:
        return [f"the 4D mask holds values neither 0 nor <= {HIDDEN_AT_OR_BELOW:g} (e.g. {odd[0]:g}): "
                f"transformers adds them to the scores, which down-weights a cell instead of hiding it"]
    return []


class HfEngine(Engine):
    name = "hf-transformers"
    # fp32 reductions in another order (a tree pass vs one sequence): the floor is
    # measured each run; this only keeps a measured 0 from demanding bit equality.
    min_tolerance = 1.0e-4

    def __init__(self, model_path: str, threads: int = 0):
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        path = pathlib.Path(model_path)
        if not path.is_file():
            raise LayoutError(f"{model_path}: --model: no such file")
        if threads > 0:
            torch.set_num_threads(threads)
        kwargs = {"gguf_file": path.name} if path.suffix == ".gguf" else {}
        src = path.parent if path.suffix == ".gguf" else path
        self.model = AutoModelForCausalLM.from_pretrained(src, torch_dtype=torch.float32, tie_word_embeddings=True,
                                                          **kwargs).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(src, **kwargs)
        self._path = str(path)
        self._versions = {"transformers": transformers.__version__, "torch": torch.__version__}

    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    def vocab_labels(self) -> List[str]:
        toks = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        labels = [t if isinstance(t, str) else str(i) for i, t in enumerate(toks)]
        return labels + [str(i) for i in range(len(labels), self.vocab_size())]

    def tokenize(self, text: str) -> List[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def provenance(self) -> Dict:
        return {"engine": "transformers", "engine_version": self._versions["transformers"],
                "torch_version": self._versions["torch"], "path": self._path}

    def settings(self) -> Dict:
        return {"engine": "transformers", "attn_implementation": self.model.config._attn_implementation,
                "dtype": "float32", "mask_convention": "additive 4D mask (0 visible, -inf hidden), used as given"}

    def complete(self, layout: Layout) -> Layout:
        done = layout.completed()
        if done.mask is None:
            done.mask = layout.correct_mask()
        return done

    def _forward(self, ids: Sequence[int], cache=None, **kw):
        torch = self._torch
        with torch.no_grad():
            return self.model(torch.tensor([list(ids)]), past_key_values=cache, use_cache=True, **kw)

    def _prefill(self, prompt: Sequence[int]):
        from transformers import DynamicCache

        out = self._forward(prompt, DynamicCache())
        return out.past_key_values, out.logits[0, -1].numpy().astype(np.float32)

    def tree_pass(self, layout: Layout) -> TreePass:
        torch = self._torch
        p, n = len(layout.prompt), len(layout.nodes)
        cache, prompt_logits = self._prefill(layout.prompt)
        rows = np.array(layout.mask, dtype=np.float32)
        mask = torch.tensor(rows)[None, None, :, :]
        positions = [int(node.pos) for node in layout.nodes]
        out = self._forward([node.token for node in layout.nodes], cache, attention_mask=mask,
                            position_ids=torch.tensor([positions]))
        prompt_mask = np.tril(np.ones((p, p), dtype=bool))  # the prompt's own pass: HF's causal mask
        passed = [[("-inf" if v == -math.inf else float(v)) for v in row] for row in rows.tolist()]
        return TreePass(out.logits[0].numpy().astype(np.float32), prompt_logits, list(range(p)), list(range(p, p + n)),
                        prompt_mask, applied_visibility(rows), positions,
                        engine={"mask_as_passed": passed, "hidden_at_or_below": HIDDEN_AT_OR_BELOW},
                        problems=mask_misuse(rows))

    def sequential(self, prompt: Sequence[int], paths: Sequence[Sequence[int]], whole: bool) -> np.ndarray:
        out = []
        for path in paths:
            if whole:
                out.append(self._forward(list(prompt) + list(path)).logits[0, -1].numpy())
                continue
            cache, logits = self._prefill(prompt)
            for t in path:
                r = self._forward([t], cache)
                cache, logits = r.past_key_values, r.logits[0, -1].numpy()
            out.append(logits)
        return np.stack(out).astype(np.float32)
