"""Traces written from Python validate against docs/trace-format.schema.json with --strict
(scripts/validate_trace_schema.py, run by the system Python with Debian's python3-jsonschema):
triescope.TraceWriter's, with every field it writes (gc, finished nodes, -inf, status
changes, a step without a pass, engine records, model provenance, keyframes);
from_hf_generate's two layouts; and the EAGLE / Medusa draft-tree recorders
(python/triescope/engines) where their packages are installed."""
import math
import os
import subprocess

import numpy as np
import pytest

import triescope

SYSTEM_PYTHON = os.environ.get("TRIESCOPE_SCHEMA_PYTHON", "/usr/bin/python3")


def validate(source_dir, *paths):
    cmd = [SYSTEM_PYTHON, str(source_dir / "scripts" / "validate_trace_schema.py"), "--strict", *map(str, paths)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_trace_writer_every_field(source_dir, tmp_path):
    path = tmp_path / "writer.jsonl"
    vocab = ["<s>", "a", "b", "c", "d", "<eos>"]
    with triescope.TraceWriter(path, algorithm="schema_test_engine", vocab=vocab, config={"draft_depth": 2},
                               keyframe_interval=2, model={"engine_version": "0.1", "path": "m.gguf"}) as w:
        prompt = w.step(added=[(-1, 0, 0), (0, 1, 1), (1, 2, 2)], queries=[0, 1, 2],
                        mask=np.tril(np.ones((3, 3), bool)), positions=[0, 1, 2], engine={"cells": 3, "topk": [[1, -0.5]]})
        # A draft of two children, one given probability 0 (-inf), and a node finished without a slot.
        draft = w.step(added=[(prompt[-1], 3, 3, -0.25), (prompt[-1], 4, 4, -math.inf), (prompt[-1], 5, -1, -1.0)],
                       queries=[3, 4], mask=np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 1]], bool), positions=[3, 3])
        # The verifier keeps the first: a step without a forward pass, only status changes.
        w.step(status={draft[0]: "accepted", draft[1]: "rejected"})
        # A compaction drops the rejected node's slot before the next pass.
        w.step(gc=[(0, 0), (1, 1), (2, 2), (3, 3)], added=[(draft[0], 1, 4)], queries=[6],
               mask=np.array([[1, 1, 1, 1, 1]], bool), positions=[4], engine={"cells": 5})
        w.close(outputs=[[3, 1]])
    kinds = [line.split('"kind":"', 1)[1].split('"', 1)[0] for line in path.read_text().splitlines()]
    assert kinds.count("gc") == 1 and kinds.count("keyframe") >= 2 and kinds[-1] == "summary", kinds
    assert '"-inf"' in path.read_text()
    p = validate(source_dir, path)
    assert p.returncode == 0, p.stdout + p.stderr


def test_hf_generate_import(source_dir, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=False,
                                   bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    prompt = torch.tensor([[5, 17, 33, 9]])
    with torch.no_grad():
        out = model.generate(prompt, num_beams=3, num_return_sequences=3, max_new_tokens=6, do_sample=False, eos_token_id=2,
                             pad_token_id=0, return_dict_in_generate=True, output_scores=True)
    triescope.from_hf_generate(out, prompt, num_beams=3, max_new_tokens=6, eos_token_id=2, pad_token_id=0, gc_interval=2,
                               keyframe_interval=2, config=model.config, trie_path=tmp_path / "trie.jsonl",
                               batch_path=tmp_path / "batch.jsonl")
    p = validate(source_dir, tmp_path / "trie.jsonl", tmp_path / "batch.jsonl")
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("engine", ["eagle", "medusa"])
def test_draft_tree_recorders(source_dir, tmp_path, engine):
    pytest.importorskip("eagle" if engine == "eagle" else "medusa")
    from triescope.engines import draft_trees

    record = draft_trees.record_eagle_tree if engine == "eagle" else draft_trees.record_medusa_tree
    clean = record(str(tmp_path / "clean.jsonl"))
    planted = record(str(tmp_path / "planted.jsonl"), fault="mask_sibling")
    assert clean.trace_path and planted.trace_path
    # A planted mask fault is check's to find; the trace itself is well-formed.
    p = validate(source_dir, clean.trace_path, planted.trace_path)
    assert p.returncode == 0, p.stdout + p.stderr
