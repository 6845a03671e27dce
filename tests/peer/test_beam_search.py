"""Beam search against transformers' generate() on the same checkpoint and prompt.

For b in {1, 3, 8, 15}, early_stopping in {True, False, "never"}, with no
EOS and with an EOS the search reaches, length penalties {1.0, 2.0, -0.5}:
HF generate(num_beams=b, num_return_sequences=b, do_sample=False, ...) and
our trie beam search and our batch beam search (`triescope run`) return the
same b token sequences in the same order, with sequence scores within 1e-4.
HF keeps beam scores in fp32, we in double: over 12 steps that is a relative
error up to ~12 x 2^-24 = 7e-7 on scores up to ~80 here (length_penalty -0.5
multiplies a sum of log-probabilities by len^0.5); measured: at most 1.6e-5.

HF's generate() with num_beams=1 is greedy search, not a one-beam beam
search: the two differ once EOS can be picked (a beam search puts the EOS
hypothesis aside and extends its second-best token), except with
early_stopping=True, where the first finished hypothesis ends both. So b = 1
with EOS is compared under early_stopping=True only; b = 1 without EOS in
every mode. The score of a greedy output is the sum of its tokens'
log-probabilities (from HF's output scores) / length ** length_penalty.

Length penalty only changes the ranking between hypotheses of different
lengths, so without EOS (all hypotheses as long as max_new_tokens) it is
varied under "never" only, where it also changes the stopping rule. With EOS,
each stopping rule meets each penalty (at different b).
"""

import pytest
import torch

from peer_llama import hf_llama, hf_save, our_run, run_parallel

PROMPT = [5, 77, 31, 9, 120, 64, 3, 18, 44, 101]
MAX_NEW = 12
BEAMS = (1, 3, 8, 15)
ES = (True, False, "never")
LPS = (1.0, 2.0, -0.5)
SCORE_TOL = 1e-4
ALGORITHMS = ("trie_beam_search", "batch_beam_search")


def case_list():
    """Every (b, EOS, early_stopping); length penalties laid as a Latin square over (b, early_stopping),
    so each stopping rule meets each penalty with EOS, at a different b (each run costs a process start)."""
    out = []
    for bi, b in enumerate(BEAMS):
        for ei, es in enumerate(ES):
            out.append((b, False, es, LPS[bi % len(LPS)] if es == "never" else 1.0))
            if b > 1 or es is True:  # HF's num_beams=1 is greedy search (module docstring)
                out.append((b, True, es, LPS[(bi + ei) % len(LPS)]))
    return out


CASES = case_list()


def case_id(c):
    b, eos, es, lp = c
    return f"b{b}-{'eos' if eos else 'noeos'}-es_{es}-lp{lp}"


def hf_generate(model, b, eos, es, lp):
    """HF's returned sequences (generated part, EOS and padding cut) and scores, best first."""
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), num_beams=b, num_return_sequences=b, do_sample=False,
                             length_penalty=lp, early_stopping=es, eos_token_id=eos, pad_token_id=eos if eos is not None else 0,
                             max_new_tokens=MAX_NEW, output_scores=True, return_dict_in_generate=True)
    res = []
    if b == 1:  # greedy search: no sequences_scores; the sum of the chosen tokens' log-probabilities
        gen = out.sequences[0, len(PROMPT):].tolist()
        lps = [torch.log_softmax(s[0].double(), -1)[t].item() for s, t in zip(out.scores, gen)]
        res.append((gen, sum(lps) / len(gen) ** lp))
    else:
        for seq, sc in zip(out.sequences, out.sequences_scores):
            res.append((seq[len(PROMPT):].tolist(), float(sc)))
    finished = []
    for i, (gen, sc) in enumerate(res):
        ended = eos is not None and eos in gen
        finished.append(ended)
        res[i] = (gen[:gen.index(eos)] if ended else gen, sc)
    return res, any(finished)


def pick_eos(model) -> int:
    """An EOS the search reaches: the first of the tokens of HF's greedy output
    (no EOS) that, as EOS, leaves HF's b = 8 search returning both hypotheses
    that end with it and hypotheses that do not."""
    with torch.no_grad():
        greedy = model.generate(torch.tensor([PROMPT]), do_sample=False, max_new_tokens=MAX_NEW, eos_token_id=None, pad_token_id=0)
    for tok in greedy[0, len(PROMPT):].tolist():
        res, _ = hf_generate(model, 8, tok, False, 1.0)
        lengths = {len(t) for t, _ in res}
        if min(lengths) < MAX_NEW and MAX_NEW in lengths:
            return tok
    raise AssertionError("no token of the greedy output ends some but not all of HF's b = 8 hypotheses")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, triescope_cli):
    """Every case run by HF and by both of ours (ours two at a time), once per module."""
    work = tmp_path_factory.mktemp("beams")
    model = hf_llama(21)
    model_dir = hf_save(model, work / "model")
    eos_token = pick_eos(model)
    hf, jobs = {}, []
    for c in CASES:
        b, eos, es, lp = c
        e = eos_token if eos else None
        hf[c] = hf_generate(model, b, e, es, lp)
        for algo in ALGORITHMS:
            settings = {"num_beams": b, "max_new_tokens": MAX_NEW, "eos_token": e if e is not None else -1,
                        "length_penalty": lp, "early_stopping": es, "gc_interval": 4 if algo == "trie_beam_search" else 0}
            jobs.append(lambda c=c, algo=algo, settings=settings:
                        (c, algo, our_run(triescope_cli, work, f"{algo}_{case_id(c)}", algo, model_dir, PROMPT, "beam", settings)))
    ours = {(c, algo): summary for c, algo, summary in run_parallel(jobs)}
    return {"hf": hf, "ours": ours, "eos_token": eos_token}


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
@pytest.mark.parametrize("algo", ALGORITHMS)
def test_beam_search_equals_hf_generate(runs, case, algo):
    b, eos, es, lp = case
    hf, hf_finished = runs["hf"][case]
    ours = [(o["tokens"], o["score"]) for o in runs["ours"][(case, algo)]["outputs"]]
    where = f"{algo}, num_beams {b}, eos {runs['eos_token'] if eos else None}, early_stopping {es}, length_penalty {lp}"
    assert [t for t, _ in ours] == [t for t, _ in hf], f"{where}:\n ours {ours}\n HF   {hf}"
    for i, ((_, so), (_, sh)) in enumerate(zip(ours, hf)):
        assert abs(so - sh) <= SCORE_TOL, f"{where}: hypothesis {i}: score {so!r} vs HF {sh!r}"


@pytest.mark.parametrize("b", BEAMS)
def test_eos_cases_return_finished_hypotheses(runs, b):
    """At every b, EOS really ends hypotheses that the search returns (else the EOS cases test nothing)."""
    finished = [c for c in CASES if c[0] == b and c[1] and runs["hf"][c][1]]
    assert finished, f"num_beams {b}: no EOS case returns a hypothesis that ended with EOS {runs['eos_token']}"
