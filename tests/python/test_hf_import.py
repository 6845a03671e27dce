"""triescope.from_hf_generate: a Hugging Face beam search becomes the batch-layout and trie
traces our own decoders write, and the trie equals what our trie beam search produces on
the same checkpoint (saved with save_pretrained, decoded by `triescope run`).

Settings: length_penalty 1.0 / 2.0 and early_stopping False / True / "never", with and
without EOS-finished beams. On these, HF's selection and ours already agree (the replay
checks generate()'s sequences and beam_indices); the comparison with our own run adds the
LibTorch model's logits (floats within 1e-4 relative)."""
import json
import math

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import triescope

PROMPT = [5, 17, 33, 9, 71]
BEAMS, NEW = 3, 8


def load(path):
    return [json.loads(line) for line in open(path)]


def same(a, b, where):
    if isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4), (where, a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), (where, sorted(a.keys() ^ b.keys()))
        for k in a:
            if k != "seconds":
                same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def same_trace(ours, imported):
    """Every record after the header equal (the header's model and backend say where the logits came from)."""
    a, b = load(ours), load(imported)
    assert len(a) == len(b), (len(a), len(b))
    assert a[0]["algorithm"] == b[0]["algorithm"] and a[0]["config"] == b[0]["config"]
    assert b[0]["backend"] == "hf-generate" and b[0]["model"]["type"] == "hf_generate_scores"
    for i, (x, y) in enumerate(zip(a[1:], b[1:]), 1):
        same(x, y, f"record {i} ({x['kind']} step {x.get('step')})")


@pytest.fixture(scope="module", params=[0.0, 1.5], ids=["no-eos", "eos-likely"])
def checkpoint(request, tmp_path_factory):
    """A random Llama; `eos boost` scales the EOS row of lm_head so beams finish early."""
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, tie_word_embeddings=False,
                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                torch.nn.init.normal_(p, std=0.3)
        model.lm_head.weight[2] *= 1 + request.param
    path = tmp_path_factory.mktemp("ckpt")
    model.save_pretrained(path, safe_serialization=True)
    return model, path, request.param


CASES = [(1.0, False), (2.0, True), (1.0, "never"), (2.0, "never")]


@pytest.mark.parametrize("length_penalty, early_stopping", CASES)
def test_import_equals_our_decode(checkpoint, tmp_path, run_cli, length_penalty, early_stopping):
    model, ckpt, boost = checkpoint
    prompt = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(prompt, num_beams=BEAMS, num_return_sequences=BEAMS, max_new_tokens=NEW, do_sample=False,
                             early_stopping=early_stopping, length_penalty=length_penalty, eos_token_id=2, pad_token_id=0,
                             return_dict_in_generate=True, output_scores=True)
    r = triescope.from_hf_generate(out, prompt, num_beams=BEAMS, max_new_tokens=NEW, eos_token_id=2, pad_token_id=0,
                                   length_penalty=length_penalty, early_stopping=early_stopping, gc_interval=4,
                                   keyframe_interval=8, config=model.config, trie_path=tmp_path / "trie.jsonl",
                                   batch_path=tmp_path / "batch.jsonl")
    hf = [[t for t in s[len(PROMPT):] if t not in (0, 2)] for s in out.sequences.tolist()]
    assert [o["tokens"] for o in r["trie_outputs"]] == hf
    assert any(len(h) < NEW for h in hf) == (boost > 0)  # the EOS case has beams that finished early
    assert [o["tokens"] for o in r["batch_outputs"]] == hf
    for o, s in zip(r["batch_outputs"], out.sequences_scores.tolist()):
        assert math.isclose(o["score"], s, rel_tol=1e-4, abs_tol=1e-5)
    assert r["trie_metrics"]["peak_slots"] < r["batch_metrics"]["peak_slots"]
    for name in ("trie", "batch"):
        assert triescope.check(tmp_path / f"{name}.jsonl").ok

    sample = {"schema": "triescope.sample", "version": 1, "name": "hf import", "algorithm": "trie_beam_search",
              "model": {"type": "transformer", "path": str(ckpt), "device": "cpu"}, "prompt": PROMPT,
              "beam": {"num_beams": BEAMS, "max_new_tokens": NEW, "eos_token": 2, "length_penalty": length_penalty,
                       "early_stopping": early_stopping, "gc_interval": 4},
              "trace": {"keyframe_interval": 8}}
    (tmp_path / "trie.json").write_text(json.dumps(sample))
    run_cli("run", tmp_path / "trie.json", "--out", tmp_path / "ours_trie.jsonl")
    same_trace(tmp_path / "ours_trie.jsonl", tmp_path / "trie.jsonl")
    # `triescope diff` says so too: the header's backend and model are provenance, the
    # config is compared (LibTorch's logits equal HF's within 1e-4).
    out = run_cli("diff", tmp_path / "ours_trie.jsonl", tmp_path / "trie.jsonl", "--tolerance", "1e-4", expect=0).stdout
    assert out.startswith("equivalent:"), out
    if (length_penalty, early_stopping) == CASES[0]:  # the batch layout once per checkpoint
        sample["algorithm"] = "batch_beam_search"
        sample["beam"].pop("gc_interval")
        sample.pop("trace")
        (tmp_path / "batch.json").write_text(json.dumps(sample))
        run_cli("run", tmp_path / "batch.json", "--out", tmp_path / "ours_batch.jsonl")
        same_trace(tmp_path / "ours_batch.jsonl", tmp_path / "batch.jsonl")
        run_cli("diff", tmp_path / "ours_batch.jsonl", tmp_path / "batch.jsonl", "--tolerance", "1e-4", expect=0)
        # A different decode setting is config, not provenance: the same diff fails at the header.
        sample["beam"]["length_penalty"] = length_penalty + 1
        (tmp_path / "batch2.json").write_text(json.dumps(sample))
        run_cli("run", tmp_path / "batch2.json", "--out", tmp_path / "ours_batch2.jsonl")
        out = run_cli("diff", tmp_path / "ours_batch2.jsonl", tmp_path / "batch.jsonl", "--tolerance", "1e-4", expect=1).stdout
        assert "header" in out and "config.beam.length_penalty" in out, out


def word_tokenizer(size):
    """A real fast tokenizer of `size` tokens t0 .. t{size-1} (no download)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({f"t{i}": i for i in range(size)}, unk_token="t0")))


def test_vocab_padded_past_the_tokenizer_as_run_does(checkpoint, tmp_path):
    """The model's 128 ids, a tokenizer of 120: the header holds 128 labels, ids 120..127 by
    number (what `triescope run` writes for ids its tokenizer lacks); a tokenizer larger
    than the scores is a named error."""
    model, _, _ = checkpoint
    prompt = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(prompt, num_beams=BEAMS, max_new_tokens=NEW, do_sample=False, eos_token_id=2, pad_token_id=0,
                             return_dict_in_generate=True, output_scores=True)
    kw = dict(num_beams=BEAMS, max_new_tokens=NEW, eos_token_id=2, pad_token_id=0)
    triescope.from_hf_generate(out, prompt, **kw, tokenizer=word_tokenizer(120), trie_path=tmp_path / "t.jsonl",
                               batch_path=tmp_path / "b.jsonl")
    for name in ("t", "b"):
        header = load(tmp_path / f"{name}.jsonl")[0]
        assert header["model"]["vocab_size"] == 128
        assert header["vocab"] == [f"t{i}" for i in range(120)] + [str(i) for i in range(120, 128)]
    with pytest.raises(triescope.Error, match=r"vocab: 130 token strings for the scores' 128 ids"):
        triescope.from_hf_generate(out, prompt, **kw, tokenizer=word_tokenizer(130), trie_path=tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


def test_settings_that_differ_from_the_run_are_named(checkpoint, tmp_path):
    model, _, _ = checkpoint
    prompt = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(prompt, num_beams=BEAMS, max_new_tokens=NEW, do_sample=False, eos_token_id=2, pad_token_id=0,
                             return_dict_in_generate=True, output_scores=True)
    kw = dict(num_beams=BEAMS, max_new_tokens=NEW, eos_token_id=2, pad_token_id=0, trie_path=tmp_path / "t.jsonl")
    with pytest.raises(triescope.Error, match=r"scores\[0\]: 3 rows, expected num_beams = 2"):
        triescope.from_hf_generate(out, prompt, **{**kw, "num_beams": 2})
    with pytest.raises(triescope.Error, match="sequences|scores"):
        triescope.from_hf_generate(out, prompt, **{**kw, "max_new_tokens": NEW - 2})
    with pytest.raises(triescope.Error, match=r"sequences\[0\]\[0\]"):
        triescope.from_hf_generate(out, [6] + PROMPT[1:], **kw)
    with pytest.raises(TypeError, match="early_stopping"):
        triescope.from_hf_generate(out, prompt, **kw, early_stopping="sometimes")
    with pytest.raises(triescope.Error, match="result.scores"):
        triescope.from_hf_generate(model.generate(prompt, num_beams=BEAMS, max_new_tokens=2, return_dict_in_generate=True,
                                                  pad_token_id=0), prompt, **kw)
    assert not (tmp_path / "t.jsonl").exists() and list(tmp_path.iterdir()) == []


def test_batched_run_imports_each_item(checkpoint, tmp_path, run_cli):
    """generate() on two left-padded prompts of different lengths: each item imports (its rows
    of scores, sequences and beam_indices, its prompt without the padding) and equals our own
    decode of that prompt alone; with EOS likely, one item finishes while the other runs on."""
    model, ckpt, boost = checkpoint
    prompts = [PROMPT, [40, 12, 88]]
    width = max(map(len, prompts))
    ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, num_beams=BEAMS, num_return_sequences=BEAMS, max_new_tokens=NEW,
                             do_sample=False, early_stopping=True, eos_token_id=2, pad_token_id=0,
                             return_dict_in_generate=True, output_scores=True)
    steps_used = []
    for i, p in enumerate(prompts):
        trie = tmp_path / f"trie{i}.jsonl"
        r = triescope.from_hf_generate(out, ids, batch_index=i, attention_mask=mask if i == 0 else None, num_beams=BEAMS,
                                       max_new_tokens=NEW, eos_token_id=2, pad_token_id=0, early_stopping=True,
                                       gc_interval=4, keyframe_interval=8, config=model.config, trie_path=trie)
        rows = out.sequences[i * BEAMS:(i + 1) * BEAMS, width:].tolist()
        assert [o["tokens"] for o in r["batch_outputs"]] == [[t for t in s if t not in (0, 2)] for s in rows]
        for o, s in zip(r["batch_outputs"], out.sequences_scores[i * BEAMS:(i + 1) * BEAMS].tolist()):
            assert math.isclose(o["score"], s, rel_tol=1e-4, abs_tol=1e-5)
        header = load(trie)[0]
        assert header["model"]["hf_batch_index"] == i and header["model"]["hf_batch_size"] == 2
        steps_used.append(max(rec.get("step", 0) for rec in load(trie)))
        sample = {"schema": "triescope.sample", "version": 1, "name": "hf batch item", "algorithm": "trie_beam_search",
                  "model": {"type": "transformer", "path": str(ckpt), "device": "cpu"}, "prompt": p,
                  "beam": {"num_beams": BEAMS, "max_new_tokens": NEW, "eos_token": 2, "early_stopping": True,
                           "gc_interval": 4}, "trace": {"keyframe_interval": 8}}
        (tmp_path / f"ours{i}.json").write_text(json.dumps(sample))
        run_cli("run", tmp_path / f"ours{i}.json", "--out", tmp_path / f"ours{i}.jsonl")
        same_trace(tmp_path / f"ours{i}.jsonl", trie)
    if boost > 0:  # one item stopped while generate() went on for the other
        assert min(steps_used) < max(steps_used) == len(out.scores), (steps_used, len(out.scores))
    with pytest.raises(triescope.Error, match="batch_index="):
        triescope.from_hf_generate(out, ids, num_beams=BEAMS, max_new_tokens=NEW, eos_token_id=2, pad_token_id=0)
    with pytest.raises(triescope.Error, match="batch_index: 2"):
        triescope.from_hf_generate(out, ids, batch_index=2, num_beams=BEAMS, max_new_tokens=NEW, eos_token_id=2, pad_token_id=0)
    with pytest.raises(triescope.Error, match=r"scores\[0\]: 6 rows, expected batch size x num_beams = 2 x 2"):
        triescope.from_hf_generate(out, ids, batch_index=0, num_beams=2, max_new_tokens=NEW, eos_token_id=2, pad_token_id=0)
