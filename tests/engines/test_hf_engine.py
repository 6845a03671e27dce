"""Hugging Face transformers 4.45.2 checked on the real SmolLM2 GGUF: a token tree
in one forward with an additive 4D mask, position ids and a cache holding the
prompt, against a sequential decode of each node's path in the same model
(python/triescope/engines/hf_transformers.py)."""
import subprocess
import sys

import numpy as np
import pytest

import triescope
from triescope.engines import faults
from triescope.engines.check import check_engine
from triescope.engines.hf_transformers import HfEngine, applied_visibility, mask_misuse
from triescope.engines.topk_tree import parse_branching, topk_tree

from engine_cases import PROMPT, SHAPES, assert_caught, assert_clean, model_path


@pytest.fixture(scope="module")
def engine(source_dir):
    return HfEngine(model_path(source_dir), threads=1)


@pytest.fixture(scope="module")
def prompt(engine):
    return engine.tokenizer(PROMPT, add_special_tokens=False).input_ids


@pytest.fixture(scope="module")
def tree(engine, prompt):
    return engine.complete(topk_tree(engine, prompt, parse_branching("2,1,2")))


@pytest.mark.parametrize("shape", SHAPES[:3])
def test_correct_trees_match_sequential_decoding_under_the_floor(engine, prompt, shape, tmp_path):
    result = check_engine(engine, topk_tree(engine, prompt, parse_branching(shape)), str(tmp_path / "t.jsonl"))
    assert_clean(result)
    # fp32 in another reduction order: not bit-equal, but within 8x the floor measured in the same run.
    assert 0.0 < result.diff.noise_floor < 1e-3
    assert all(d.topk_agree for d in result.diff.nodes)
    header = triescope.Trace(result.trace_path).header
    assert header["model"]["engine_version"] == "4.45.2"
    assert header["config"]["engine_check"]["attn_implementation"] == "eager"


@pytest.mark.parametrize("kind", list(faults.HF))
def test_planted_faults_fail_both_checks_and_name_the_node(engine, tree, kind, tmp_path):
    bad = faults.plant(tree, engine.name, kind)
    changed = [i for i, (a, b) in enumerate(zip(tree.nodes, bad.nodes)) if a.pos != b.pos]
    changed += [i for i in range(len(tree.nodes)) if tree.mask[i] != bad.mask[i]]
    result = check_engine(engine, bad, str(tmp_path / "t.jsonl"))
    assert_caught(result, max(changed))


def test_a_binary_mask_is_named_as_such(engine, tree, tmp_path):
    result = check_engine(engine, faults.plant(tree, engine.name, "binary_mask"), str(tmp_path / "t.jsonl"))
    assert len(result.tree.problems) == 1 and "0/1" in result.tree.problems[0]
    # transformers adds the mask: every cell is visible, so every node sees past its ancestors.
    assert result.tree.mask.all()
    step = next(r for r in triescope.Trace(result.trace_path).records if r["kind"] == "step" and r["step"] == 1)
    assert step["engine"]["problems"] == result.tree.problems


def test_mask_conventions():
    rows = np.array([[0.0, -np.inf, np.finfo(np.float32).min, -1e4, -50.0]], dtype=np.float32)
    assert applied_visibility(rows).tolist() == [[True, False, False, False, True]]
    assert "down-weights" in mask_misuse(rows)[0]
    assert mask_misuse(np.array([[0.0, -np.inf]], dtype=np.float32)) == []


def test_command_line(source_dir, tree, tmp_path):
    import json

    layout = tmp_path / "layout.json"
    doc = tree.to_json()
    del doc["mask"]  # the adapter builds the correct additive mask
    layout.write_text(json.dumps(doc))
    base = [sys.executable, "-m", "triescope.engines", "check", "--engine", "hf", "--model", model_path(source_dir),
            "--layout", str(layout), "--threads", "1"]
    ok = subprocess.run(base + ["--out", str(tmp_path / "ok.jsonl")], capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run(base + ["--out", str(tmp_path / "bad.jsonl"), "--plant", "binary_mask"], capture_output=True,
                         text=True, timeout=600)
    assert bad.returncode == 1 and "engine misuse: the 4D mask is 0/1" in bad.stdout
