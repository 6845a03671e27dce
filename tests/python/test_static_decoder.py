"""triescope.StaticDecoder: the whole STATIC step exposed to Python (states in, top-k beams and
next states out) decodes exactly what a full-vocabulary reference written here decodes:
numpy log-softmax, the index's own mask (ConstraintIndex.mask_ over the prefixes), and a
per-group top-k by score then flat index; at dense levels 0, 1 and 2."""
import numpy as np
import pytest

import triescope

V, L, GROUPS, K = 16, 4, 2, 4


def reference_step(index, logits, prefixes, beam_scores):
    lp = logits.astype(np.float64)
    lp = lp - (np.log(np.exp(lp - lp.max(1, keepdims=True)).sum(1, keepdims=True)) + lp.max(1, keepdims=True))
    masked = lp.astype(np.float32)
    index.mask_(prefixes, masked)
    total = np.where(np.isfinite(masked), lp + beam_scores[:, None], -np.inf)
    per = len(logits) // GROUPS
    picks = []
    for g in range(GROUPS):
        block = total[g * per:(g + 1) * per].ravel()
        order = np.lexsort((np.arange(block.size), -block))
        picks.append([(g * per + int(i) // V, int(i) % V, float(block[i])) for i in order[:K] if np.isfinite(block[i])])
    return picks


@pytest.mark.parametrize("items", [3000, 3])
@pytest.mark.parametrize("dense_levels", [0, 1, 2])
def test_decoder_equals_the_full_vocabulary_reference(dense_levels, items):
    """3000 ids: every group keeps k beams; 3: fewer ids than k, so groups run short (dead beams)."""
    rng = np.random.default_rng(5 + dense_levels)
    seqs = rng.integers(0, V, size=(items, L))
    index = triescope.ConstraintIndex(seqs, vocab_size=V, dense_levels=dense_levels)
    dec = triescope.StaticDecoder(index)
    # Step 0: one live beam per group, at the root.
    short = 0
    prefixes = [[] for _ in range(GROUPS)]
    states = np.full(GROUPS, dec.root_state, dtype=np.int64)
    scores = np.zeros(GROUPS)
    for t in range(L):
        logits = rng.normal(0, 3, size=(len(prefixes), V)).astype(np.float32)
        got = dec.step(logits, states, scores, GROUPS, K, t)
        want = reference_step(index, logits, prefixes, scores)
        new_prefixes, new_states, new_scores = [], [], []
        for g in range(GROUPS):
            assert got["count"][g] == len(want[g])
            short += len(want[g]) < K
            for j in range(K):
                if j < len(want[g]):
                    row, tok, sc = want[g][j]
                    assert (got["parents"][g, j], got["tokens"][g, j]) == (row, tok), (t, g, j)
                    assert got["scores"][g, j] == pytest.approx(sc, rel=1e-9, abs=1e-9)
                    new_prefixes.append(prefixes[row] + [tok])
                    new_states.append(got["next_states"][g, j])
                    new_scores.append(got["scores"][g, j])
                else:  # fewer continuations than k: a dead beam
                    assert got["tokens"][g, j] == -1 and got["next_states"][g, j] == -1
                    new_prefixes.append(prefixes[0] + [-1])
                    new_states.append(-1)
                    new_scores.append(-np.inf)
        prefixes, states, scores = new_prefixes, np.array(new_states, dtype=np.int64), np.array(new_scores)
    live = [p for p, s in zip(prefixes, scores) if np.isfinite(s)]
    assert live and all(index.contains(p) for p in live)
    assert (short > 0) == (items == 3)


def test_bad_arguments_are_named():
    index = triescope.ConstraintIndex([[1, 2], [3, 1]], vocab_size=4)
    dec = triescope.StaticDecoder(index)
    z = np.zeros((2, 4), dtype=np.float32)
    with pytest.raises(triescope.Error, match="logits: 5 columns"):
        dec.step(np.zeros((2, 5), dtype=np.float32), [0, 0], [0.0, 0.0], 1, 2, 0)
    with pytest.raises(triescope.Error, match="groups: 3"):
        dec.step(z, [0, 0], [0.0, 0.0], 3, 2, 0)
    with pytest.raises(triescope.Error, match="step: 2 outside"):
        dec.step(z, [0, 0], [0.0, 0.0], 1, 2, 2)
    with pytest.raises(triescope.Error, match="states, beam_scores: 1 and 2 entries"):
        dec.step(z, [0], [0.0, 0.0], 1, 2, 0)
    with pytest.raises(triescope.Error, match=r"k: must be in \[1, 8\]"):
        dec.step(z, [0, 0], [0.0, 0.0], 1, 9, 0)
    with pytest.raises(triescope.Error, match=r"k: must be in \[1, 8\]"):
        dec.step(z, [0, 0], [0.0, 0.0], 1, 2**30, 0)
    with pytest.raises(triescope.Error, match=r"beam_scores\[1\]: nan"):
        dec.step(z, [0, 0], [0.0, float("nan")], 1, 2, 0)
    with pytest.raises(triescope.Error, match=r"beam_scores\[0\]: inf"):
        dec.step(z, [0, 0], [float("inf"), 0.0], 1, 2, 0)
    dead = dec.step(z, [0, -1], [0.0, -np.inf], 1, 2, 0)  # -inf: a dead beam, allowed
    assert dead["count"][0] == 2


def test_one_decoder_stepped_from_many_threads_gives_every_call_its_own_answer():
    """The step runs without the GIL on the decoder's workspace: calls from several threads
    must take turns (two at once corrupted the heap or gave wrong beams)."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(11)
    vocab, rows, k = 4096, 32, 32
    index = triescope.ConstraintIndex(rng.integers(0, vocab, size=(20000, 3)), vocab_size=vocab)
    dec = triescope.StaticDecoder(index)
    cases = [rng.normal(0, 3, size=(rows, vocab)).astype(np.float32) for _ in range(16)]
    states = np.full(rows, dec.root_state, dtype=np.int64)
    scores = -np.arange(rows, dtype=np.float64)
    want = [dec.step(c, states, scores, 1, k, 0) for c in cases]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda i: (i, dec.step(cases[i], states, scores, 1, k, 0)), [i % 16 for i in range(400)]))
    wrong = sum(any(not np.array_equal(g[key], want[i][key]) for key in want[i]) for i, g in got)
    assert wrong == 0, f"{wrong} of {len(got)} threaded calls differ from the same call made alone"
