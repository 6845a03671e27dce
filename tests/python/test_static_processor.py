"""STATIC as a Hugging Face LogitsProcessor: every sequence generate() returns with it lies
in the constraint set (a random Llama from transformers, 3000 constraint sequences)."""
import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, LogitsProcessorList

import triescope

VOCAB, L, ITEMS = 256, 6, 3000


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False, bos_token_id=1,
                      eos_token_id=2, pad_token_id=0)
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def constraint():
    rng = np.random.default_rng(3)
    # Tokens 0..2 (pad, bos, eos) stay out of the set, so no hypothesis ends early on EOS.
    seqs = rng.integers(3, VOCAB, size=(ITEMS, L))
    return seqs, triescope.ConstraintIndex(seqs, vocab_size=VOCAB)


def generate(model, prompt, beams, processor=None):
    kw = dict(logits_processor=LogitsProcessorList([processor])) if processor else {}
    with torch.no_grad():
        return model.generate(prompt, num_beams=beams, num_return_sequences=beams, max_new_tokens=L, do_sample=False,
                              pad_token_id=0, **kw)


@pytest.mark.parametrize("beams", [1, 4, 8])
@pytest.mark.parametrize("prompt", [[5, 17, 33], [200, 7, 7, 7, 9, 120]])
def test_every_output_in_the_set(model, constraint, beams, prompt):
    seqs, index = constraint
    valid = {tuple(r) for r in seqs.tolist()}
    ids = torch.tensor([prompt])
    out = generate(model, ids, beams, triescope.StaticLogitsProcessor(index, prompt_length=len(prompt)))
    assert out.shape == (beams, len(prompt) + L)
    gens = [tuple(r[len(prompt):]) for r in out.tolist()]
    assert all(g in valid for g in gens), [g for g in gens if g not in valid]
    assert all(index.contains(list(g)) for g in gens)
    assert len(set(gens)) == beams  # beam search returns distinct hypotheses


def test_unconstrained_outputs_leave_the_set(model, constraint):
    """Without the processor the same search leaves the set: the check above can fail."""
    seqs, index = constraint
    out = generate(model, torch.tensor([[5, 17, 33]]), 4)
    assert not any(index.contains(r[3:]) for r in out.tolist())


def test_processor_from_an_array(model, constraint):
    seqs, _ = constraint
    proc = triescope.StaticLogitsProcessor(seqs, prompt_length=3, vocab_size=VOCAB)
    out = generate(model, torch.tensor([[5, 17, 33]]), 2, proc)
    assert all(proc.index.contains(r[3:]) for r in out.tolist())


def test_processor_masks_like_the_index(constraint):
    """One call: the allowed tokens after each prefix are exactly the set's continuations."""
    seqs, index = constraint
    rng = np.random.default_rng(0)
    picks = seqs[rng.integers(0, ITEMS, size=5)]
    proc = triescope.StaticLogitsProcessor(index, prompt_length=2)
    for t in range(L):
        input_ids = torch.tensor(np.concatenate([np.full((5, 2), 9), picks[:, :t]], axis=1))
        scores = torch.randn(5, VOCAB)
        masked = proc(input_ids, scores.clone())
        for r in range(5):
            want = {s[t] for s in seqs.tolist() if list(s[:t]) == picks[r, :t].tolist()}
            got = set(torch.nonzero(torch.isfinite(masked[r])).flatten().tolist())
            assert got == want
            assert torch.equal(masked[r][list(want)], scores[r][list(want)])


def test_processor_state_cache_equals_a_walk_from_the_root(constraint):
    """The beam states the processor keeps across calls (keyed by the generated tokens) mask
    exactly as the index's own walk from the root does: stepping on with the beams reordered
    every call, a dead prefix, and a fresh processor's first call past step 0."""
    seqs, index = constraint
    rng = np.random.default_rng(1)
    picks = seqs[rng.integers(0, ITEMS, size=6)].copy()
    picks[5, 1] = 0  # token 0 is never in the set: a dead prefix from level 2 on
    proc = triescope.StaticLogitsProcessor(index, prompt_length=2)
    for t in range(L):
        order = rng.permutation(6)
        input_ids = torch.tensor(np.concatenate([np.full((6, 2), 9), picks[order, :t]], axis=1))
        scores = torch.randn(6, VOCAB)
        want = scores.clone()
        index.mask_(input_ids[:, 2:], want)
        assert torch.equal(proc(input_ids, scores.clone()), want)
        assert torch.equal(triescope.StaticLogitsProcessor(index, prompt_length=2)(input_ids, scores.clone()), want)
    assert torch.isinf(want[order.tolist().index(5)]).all()  # the dead beam allows nothing


def test_processor_rejects_bad_input(constraint):
    _, index = constraint
    with pytest.raises(TypeError, match="prompt_length"):
        triescope.StaticLogitsProcessor(index, prompt_length=0)
    with pytest.raises(TypeError, match="vocab_size"):
        triescope.StaticLogitsProcessor([[1, 2]], prompt_length=1)
    proc = triescope.StaticLogitsProcessor(index, prompt_length=3)
    with pytest.raises(triescope.Error, match="input_ids"):
        proc(torch.zeros(2, 2, dtype=torch.long), torch.zeros(2, VOCAB))
    with pytest.raises(triescope.Error, match="scores: 5 columns"):
        proc(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 5))
    with pytest.raises(triescope.Error, match="generated: 6 tokens already"):
        proc(torch.zeros(2, 3 + L, dtype=torch.long), torch.zeros(2, VOCAB))
    # float64 and non-contiguous scores are masked on a float32 copy and come back in their dtype.
    s = torch.zeros(VOCAB, 2, dtype=torch.float64).T
    out = proc(torch.zeros(2, 3, dtype=torch.long), s)
    assert out.dtype == torch.float64 and torch.isfinite(out).sum() > 0
