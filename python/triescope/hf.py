"""Hugging Face glue: STATIC as a LogitsProcessor, and generate() runs as TrieScope traces.

Both hand the work to the C++ core: ConstraintIndex.mask_ (STATIC's VNTK) and
_core.hf_generate_replay (our batch and trie beam search over generate()'s scores).
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Union

from . import _core

try:  # transformers is optional: the processor subclasses its LogitsProcessor when present
    from transformers import LogitsProcessor as _LogitsProcessorBase
except ImportError:  # pragma: no cover - exercised only without transformers
    _LogitsProcessorBase = object  # type: ignore[assignment,misc]


class StaticLogitsProcessor(_LogitsProcessorBase):  # type: ignore[misc,valid-type]
    """STATIC constrained decoding as a ``transformers`` LogitsProcessor.

    Pass it to ``model.generate(..., logits_processor=LogitsProcessorList([proc]),
    num_beams=b, max_new_tokens=index.length)``: at every step each row's scores are
    masked to the tokens that keep its generated prefix inside the index's set, so
    every returned sequence is one of the set's sequences.

    index: a ConstraintIndex (or an integer array [n x L] of valid sequences, then
    ``vocab_size`` is required); prompt_length: the number of prompt tokens in each row
    of ``input_ids`` (``input_ids.shape[1]`` of the prompt you pass to generate()).
    """

    def __init__(
        self,
        index: Union[_core.ConstraintIndex, Any],
        prompt_length: int,
        vocab_size: Optional[int] = None,
    ) -> None:
        if not isinstance(index, _core.ConstraintIndex):
            if vocab_size is None:
                raise TypeError("vocab_size: required when index is an array of sequences")
            index = _core.ConstraintIndex(index, vocab_size)
        if not isinstance(prompt_length, int) or isinstance(prompt_length, bool) or prompt_length < 1:
            raise TypeError(f"prompt_length: expected a positive int, got {prompt_length!r}")
        self.index = index
        self.prompt_length = prompt_length

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if input_ids.shape[1] < self.prompt_length:
            raise _core.Error(
                f"input_ids: {input_ids.shape[1]} tokens, fewer than prompt_length = {self.prompt_length}"
            )
        generated = input_ids[:, self.prompt_length :]
        # The C++ mask works in place on float32 CPU memory; other scores are masked on a copy.
        inplace = scores.dtype == torch.float32 and scores.device.type == "cpu" and scores.is_contiguous()
        work = scores if inplace else scores.detach().to(device="cpu", dtype=torch.float32).contiguous()
        self.index.mask_(generated, work)
        return work if inplace else work.to(device=scores.device, dtype=scores.dtype)


def _early_stopping(value: Any) -> Union[bool, str]:
    if value in (True, False, "never"):
        return value
    raise TypeError(f"early_stopping: expected True, False or 'never', got {value!r}")


def from_hf_generate(
    result: Any,
    prompt: Sequence[int],
    *,
    num_beams: int,
    max_new_tokens: int,
    trie_path: Optional[Union[str, os.PathLike]] = None,
    batch_path: Optional[Union[str, os.PathLike]] = None,
    eos_token_id: Optional[int] = None,
    pad_token_id: Optional[int] = None,
    length_penalty: float = 1.0,
    early_stopping: Union[bool, str] = False,
    gc_interval: int = 0,
    config: Any = None,
    tokenizer: Any = None,
    keyframe_interval: int = 16,
) -> Dict[str, Any]:
    """Turns a ``generate(num_beams=b, return_dict_in_generate=True, output_scores=True)``
    result (batch size 1) into TrieScope traces: ``batch_path`` gets HF's batch layout
    (algorithm batch_beam_search, one KV row per beam) and ``trie_path`` the equivalent
    trie (trie_beam_search, GC every ``gc_interval`` steps), both opened by triescope-gui,
    ``triescope inspect`` and ``triescope diff``.

    The traces come from TrieScope's own beam search re-run over the scores generate()
    recorded; the beam settings must be the ones generate() used (num_beams,
    max_new_tokens, eos_token_id, length_penalty, early_stopping). The replay is checked
    against ``result.sequences`` and ``result.beam_indices``: triescope.Error says where
    they disagree. ``config`` (the model's config) sizes the KV bytes; ``tokenizer``
    labels tokens. Returns the replayed outputs and metrics of both layouts.
    """
    for field in ("sequences", "scores"):
        if getattr(result, field, None) is None:
            raise _core.Error(
                f"result.{field}: missing (call generate() with return_dict_in_generate=True, output_scores=True)"
            )
    sequences = result.sequences
    if getattr(sequences, "ndim", 2) != 2:
        raise _core.Error("result.sequences: expected a 2-D [sequences x length] tensor")
    beam_indices = getattr(result, "beam_indices", None)
    kv_shape = None
    model: Dict[str, Any] = {}
    if config is not None:
        heads = config.num_attention_heads
        kv_shape = {
            "layers": config.num_hidden_layers,
            "kv_heads": getattr(config, "num_key_value_heads", None) or heads,
            "head_dim": getattr(config, "head_dim", None) or config.hidden_size // heads,
            "dtype_bytes": 4,
        }
        model = {"hf_model_type": getattr(config, "model_type", ""), "hf_vocab_size": config.vocab_size}
    vocab = None
    if tokenizer is not None:
        vocab = [tokenizer.convert_ids_to_tokens(i) or "" for i in range(len(tokenizer))]
    prompt_ids = prompt.tolist() if hasattr(prompt, "tolist") else list(prompt)
    if prompt_ids and isinstance(prompt_ids[0], list):
        if len(prompt_ids) != 1:
            raise _core.Error(f"prompt: {len(prompt_ids)} rows; from_hf_generate reads batch size 1")
        prompt_ids = prompt_ids[0]
    return _core.hf_generate_replay(
        prompt=prompt_ids,
        scores=list(result.scores),
        sequences=sequences,
        beam_indices=beam_indices,
        num_beams=num_beams,
        max_new_tokens=max_new_tokens,
        eos_token_id=-1 if eos_token_id is None else int(eos_token_id),
        pad_token_id=-1 if pad_token_id is None else int(pad_token_id),
        length_penalty=float(length_penalty),
        early_stopping=_early_stopping(early_stopping),
        gc_interval=gc_interval,
        kv_shape=kv_shape,
        model=model,
        vocab=vocab,
        trie_path=None if trie_path is None else os.fspath(trie_path),
        batch_path=None if batch_path is None else os.fspath(batch_path),
        keyframe_interval=keyframe_interval,
    )
