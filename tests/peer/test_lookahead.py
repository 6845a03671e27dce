"""Lookahead decoding equals transformers' greedy generate() token for token.

Our lookahead (Jacobi window + n-gram candidates, verified as a trie or as
independent chains; `triescope run`, algorithm "lookahead") against HF
generate(do_sample=False, num_beams=1) on the same checkpoint: the same
tokens, EOS included when it ends the output. Random models with a small
vocabulary fall into repeating cycles, so the n-gram pool does find
continuations there: at least one run must accept tokens from candidates,
else the lookahead's own path was never exercised.
"""
import pytest
import torch

from peer_llama import hf_llama, hf_save, our_run, run_parallel

MAX_NEW = 40
# (model, prompt, eos, verify, window, ngram); eos k: the first token of the
# greedy output (no EOS) that first occurs there at position >= k.
CASES = [
    ("v128", [5, 77, 31, 9, 120, 64, 3, 18, 44, 101], None, "trie", 6, 4),
    ("v128", [5, 77, 31, 9, 120, 64, 3, 18, 44, 101], None, "independent", 6, 4),
    ("v128", [1, 2, 3, 1, 2, 3, 1, 2, 3], 4, "trie", 4, 3),
    ("v32", [7, 3, 7, 3, 7, 3, 9], None, "trie", 10, 5),
    ("v32", [30, 1, 17, 22, 5], None, "independent", 5, 3),
    ("v32", [30, 1, 17, 22, 5], 10, "trie", 5, 3),
]
MODELS = {"v128": dict(seed=31), "v32": dict(seed=32, vocab_size=32)}


def hf_greedy(model, prompt, eos):
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1, max_new_tokens=MAX_NEW,
                             eos_token_id=eos, pad_token_id=eos if eos is not None else 0)
    return out[0, len(prompt):].tolist()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, triescope_cli):
    work = tmp_path_factory.mktemp("lookahead")
    models, dirs = {}, {}
    for name, kw in MODELS.items():
        kw = dict(kw)
        models[name] = hf_llama(kw.pop("seed"), **kw)
        dirs[name] = hf_save(models[name], work / name)
    hf, jobs = [], []
    for i, (m, prompt, eos, verify, window, ngram) in enumerate(CASES):
        if eos is not None:
            free = hf_greedy(models[m], prompt, None)
            eos = next(t for k, t in enumerate(free) if k >= eos - 1 and free.index(t) == k)
        hf.append((hf_greedy(models[m], prompt, eos), eos))
        settings = {"max_new_tokens": MAX_NEW, "eos_token": eos if eos is not None else -1, "window": window, "ngram": ngram,
                    "max_candidates": 5, "verify": verify}
        jobs.append(lambda i=i, m=m, prompt=prompt, settings=settings:
                    our_run(triescope_cli, work, f"lookahead_{i}", "lookahead", dirs[m], prompt, "lookahead", settings))
    return {"hf": hf, "ours": run_parallel(jobs)}


@pytest.mark.parametrize("i", range(len(CASES)))
def test_lookahead_equals_hf_greedy(runs, i):
    want, eos = runs["hf"][i]
    got = runs["ours"][i]["outputs"][0]["tokens"]
    assert got == want, f"case {CASES[i]} (eos {eos}):\n ours {got}\n HF   {want}"
    if eos is not None:
        assert want[-1] == eos and len(want) < MAX_NEW, f"case {CASES[i]}: EOS {eos} does not end HF's output {want}"


def test_candidates_were_accepted(runs):
    accepted = [r["metrics"]["accepted_from_candidates"] for r in runs["ours"]]
    assert max(accepted) > 0, f"no run accepted a candidate token: {accepted}"
