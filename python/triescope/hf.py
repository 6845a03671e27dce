"""Hugging Face glue: STATIC as a LogitsProcessor, and generate() runs as TrieScope traces.

Both hand the work to the C++ core: ConstraintIndex.mask_states_ (STATIC's VNTK) and
_core.hf_generate_replay (our batch and trie beam search over generate()'s scores).
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

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
        # Each beam's state by its generated tokens, from the last call: a beam's state is
        # its parent's (the prefix one token shorter) advanced by one token, so a step
        # walks one level per beam instead of re-deriving the whole prefix. A state is a
        # function of the prefix alone, so an entry is never stale.
        self._states: Dict[Tuple[int, ...], int] = {(): index.root_state}

    def _beam_states(self, generated: Any) -> Any:
        rows = [tuple(r) for r in generated.tolist()]
        t = generated.shape[1]
        parents = [self._states.get(r[:-1]) for r in rows] if t else []
        if t == 0:
            states = [self.index.root_state] * len(rows)
        elif all(p is not None for p in parents):
            states = self.index.next_states(parents, [r[-1] for r in rows], t - 1).tolist()
        else:  # a first call past step 0: walk every prefix from the root
            states = self.index.states(generated).tolist()
        self._states = dict(zip(rows, states))
        return states

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if input_ids.shape[1] < self.prompt_length:
            raise _core.Error(
                f"input_ids: {input_ids.shape[1]} tokens, fewer than prompt_length = {self.prompt_length}"
            )
        generated = input_ids[:, self.prompt_length :]
        if generated.shape[1] >= self.index.length:
            raise _core.Error(
                f"generated: {generated.shape[1]} tokens already, every sequence of the set has {self.index.length} "
                "(generate at most that many new tokens)"
            )
        # The C++ mask works in place on float32 CPU memory; other scores are masked on a copy.
        inplace = scores.dtype == torch.float32 and scores.device.type == "cpu" and scores.is_contiguous()
        work = scores if inplace else scores.detach().to(device="cpu", dtype=torch.float32).contiguous()
        self.index.mask_states_(self._beam_states(generated), generated.shape[1], work)
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
    batch_index: Optional[int] = None,
    attention_mask: Any = None,
) -> Dict[str, Any]:
    """Turns a ``generate(num_beams=b, return_dict_in_generate=True, output_scores=True)``
    result into TrieScope traces: ``batch_path`` gets HF's batch layout
    (algorithm batch_beam_search, one KV row per beam) and ``trie_path`` the equivalent
    trie (trie_beam_search, GC every ``gc_interval`` steps), both opened by triescope-gui,
    ``triescope inspect`` and ``triescope diff``.

    The traces come from TrieScope's own beam search re-run over the scores generate()
    recorded; the beam settings must be the ones generate() used (num_beams,
    max_new_tokens, eos_token_id, length_penalty, early_stopping). The replay is checked
    against ``result.sequences`` and ``result.beam_indices``: triescope.Error says where
    they disagree. ``config`` (the model's config) sizes the KV bytes; ``tokenizer``
    labels tokens. Returns the replayed outputs and metrics of both layouts.

    A batched run (``prompt`` of B rows, left-padded as generate() wants for a
    decoder-only model): ``batch_index`` picks the item to import; its prompt is its row
    less the left padding (the zeros of ``attention_mask`` when given, else the leading
    ``pad_token_id``), and generate()'s rows for the item are taken from ``scores``,
    ``sequences`` and ``beam_indices``. Steps generate() ran after the item finished
    (for the other items) are not replayed.
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
    scores = list(result.scores)
    batch_item = False
    if prompt_ids and isinstance(prompt_ids[0], list):
        batch = len(prompt_ids)
        item = _batch_item(prompt_ids, scores, sequences, beam_indices, num_beams, batch_index, attention_mask, pad_token_id)
        prompt_ids, scores, sequences, beam_indices = item
        if batch > 1:
            batch_item = True
            model = {**model, "hf_batch_index": batch_index, "hf_batch_size": batch}
    elif batch_index not in (None, 0):
        raise _core.Error(f"batch_index: {batch_index}, but the prompt is one row")
    return _core.hf_generate_replay(
        prompt=prompt_ids,
        scores=scores,
        sequences=sequences,
        beam_indices=beam_indices,
        batch_item=batch_item,
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


def _rows(tensor: Any) -> int:
    return int(tensor.shape[0])


def _batch_item(
    prompt_rows: list,
    scores: list,
    sequences: Any,
    beam_indices: Any,
    num_beams: int,
    batch_index: Optional[int],
    attention_mask: Any,
    pad_token_id: Optional[int],
) -> tuple:
    """Item ``batch_index`` of a batched generate(): its prompt without left padding, and
    its rows of scores, sequences and beam_indices (beam numbers made local)."""
    batch = len(prompt_rows)
    if batch == 1 and batch_index in (None, 0):
        return prompt_rows[0], scores, sequences, beam_indices
    if batch_index is None:
        raise _core.Error(f"prompt: {batch} rows; pass batch_index= to pick the batch item to import")
    if isinstance(batch_index, bool) or not isinstance(batch_index, int) or not 0 <= batch_index < batch:
        raise _core.Error(f"batch_index: {batch_index!r} is not a row of the prompt's {batch}")
    row = prompt_rows[batch_index]
    if attention_mask is not None:
        mask = attention_mask.tolist() if hasattr(attention_mask, "tolist") else list(attention_mask)
        if len(mask) != batch or len(mask[batch_index]) != len(row):
            raise _core.Error(f"attention_mask: {len(mask)} rows, expected the prompt's shape [{batch} x {len(row)}]")
        lead = 0
        while lead < len(row) and mask[batch_index][lead] == 0:
            lead += 1
        if any(v == 0 for v in mask[batch_index][lead:]):
            raise _core.Error(f"attention_mask[{batch_index}]: padding after the prompt's first token (pad on the left)")
    elif pad_token_id is not None:
        lead = 0
        while lead < len(row) and row[lead] == pad_token_id:
            lead += 1
    else:
        lead = 0
    for t, s in enumerate(scores):
        if _rows(s) != batch * num_beams:
            raise _core.Error(f"scores[{t}]: {_rows(s)} rows, expected batch size x num_beams = {batch} x {num_beams}")
    seq_rows = sequences.tolist() if hasattr(sequences, "tolist") else [list(r) for r in sequences]
    if len(seq_rows) % batch:
        raise _core.Error(f"sequences: {len(seq_rows)} rows, not a multiple of the batch size {batch}")
    per_item = len(seq_rows) // batch
    mine = slice(batch_index * per_item, (batch_index + 1) * per_item)
    first_beam = batch_index * num_beams
    item_scores = [s[first_beam:first_beam + num_beams] for s in scores]
    item_sequences = [r[lead:] for r in seq_rows[mine]]
    item_beams = None
    if beam_indices is not None:
        bi_rows = beam_indices.tolist() if hasattr(beam_indices, "tolist") else [list(r) for r in beam_indices]
        if len(bi_rows) != len(seq_rows):
            raise _core.Error(f"beam_indices: {len(bi_rows)} rows for {len(seq_rows)} sequences")
        item_beams = [[b - first_beam if b >= 0 else b for b in r] for r in bi_rows[mine]]
    return row[lead:], item_scores, item_sequences, item_beams
