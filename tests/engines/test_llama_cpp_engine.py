"""llama.cpp (llama-cpp-python 0.3.36) checked on the real SmolLM2 GGUF: a token
tree in one llama_batch, its KV cells read back from the engine, llama.cpp's
mask rule applied to them, and every node's logits against a sequential decode
of its path in the same engine (python/triescope/engines/llama_cpp.py)."""
import json
import subprocess
import sys

import numpy as np
import pytest

import triescope
from triescope.engines import faults
from triescope.engines.check import check_engine
from triescope.engines.layout import LayoutError, load_layout
from triescope.engines.llama_cpp import EngineRefused, LlamaCppEngine, StateReader, first_seq
from triescope.engines.topk_tree import parse_branching, topk_tree

from engine_cases import PROMPT, SHAPES, assert_caught, assert_clean, model_path


@pytest.fixture(scope="module")
def engine(source_dir):
    e = LlamaCppEngine(model_path(source_dir), flash_attn="on", threads=1)
    yield e
    e.close()


@pytest.fixture(scope="module")
def prompt(engine):
    return engine.tokenize(PROMPT)


@pytest.fixture(scope="module")
def tree(engine, prompt):
    return engine.complete(topk_tree(engine, prompt, parse_branching("2,1,2")))


@pytest.mark.parametrize("shape", SHAPES)
def test_correct_trees_equal_sequential_decoding_bit_for_bit(engine, prompt, shape, tmp_path):
    result = check_engine(engine, topk_tree(engine, prompt, parse_branching(shape)), str(tmp_path / "t.jsonl"))
    assert_clean(result)
    # Flash attention on (the CPU default): exact, and the floor measured beside it is 0.
    assert result.diff.noise_floor == 0.0 and result.diff.tolerance == 0.0
    assert all(d.max_abs_delta == 0.0 and d.topk_agree for d in result.diff.nodes)


def test_a_tree_of_several_micro_batches_is_exact(engine, prompt, tmp_path):
    # 39 nodes: two micro-batches of 32 (llama.cpp's tiled flash attention, from 64
    # queries on, would not be bit-equal to token-by-token decoding). 4,4,4 (84 nodes,
    # three micro-batches) is exact too but costs twice the time.
    result = check_engine(engine, topk_tree(engine, prompt, parse_branching("3,3,3")), str(tmp_path / "t.jsonl"))
    assert_clean(result)
    assert len(result.layout.nodes) == 39 and result.diff.tolerance == 0.0


def test_cells_are_read_back_from_the_engine(engine, tree, tmp_path):
    result = check_engine(engine, tree, str(tmp_path / "t.jsonl"))
    p = len(tree.prompt)
    cells = result.tree.engine["cells"]
    assert len(cells) == p + len(tree.nodes)
    # The prompt's cells hold seq 0 and the copy of every leaf's seq id; each node's
    # cell holds its position and exactly the leaf sequences below it.
    leaf_seqs = sorted(s for leaf in tree.leaves() for s in tree.nodes[leaf].seq)
    assert all(c["pos"] == k and c["seq"] == [0] + leaf_seqs for k, c in enumerate(cells[:p]))
    for i, n in enumerate(tree.nodes):
        assert cells[p + i] == {"slot": p + i, "pos": n.pos, "seq": sorted(n.seq)}
    step = next(r for r in triescope.Trace(result.trace_path).records if r["kind"] == "step" and r["step"] == 1)
    assert step["engine"]["cells"] == cells and len(step["engine"]["topk"]) == len(tree.nodes)


def test_first_seq_is_llama_cpps_not_the_callers():
    # llama.cpp keeps a token's seq ids in a std::unordered_set: with few small ids
    # it iterates them in reverse, so [4, 1] is read as seq 1 first.
    assert first_seq([4, 1]) == 1 and first_seq([1, 4]) == 4 and first_seq([3]) == 3


@pytest.mark.parametrize("kind", [k for k in faults.LLAMA_CPP if k not in faults.LLAMA_CPP_REFUSED])
def test_planted_faults_fail_both_checks_and_name_the_node(engine, tree, kind, tmp_path):
    bad = faults.plant(tree, engine.name, kind)
    node = next(i for i, (a, b) in enumerate(zip(tree.nodes, bad.nodes)) if (a.pos, a.seq) != (b.pos, b.seq))
    result = check_engine(engine, bad, str(tmp_path / "t.jsonl"))
    assert_caught(result, node)


@pytest.mark.parametrize("kind", faults.LLAMA_CPP_REFUSED)
def test_faults_llama_decode_refuses_are_named(engine, tree, kind, tmp_path):
    with pytest.raises(EngineRefused, match="sequence .* positions are (not continuous|decreasing)|inconsistent sequence positions"):
        check_engine(engine, faults.plant(tree, engine.name, kind), str(tmp_path / "t.jsonl"))
    assert not (tmp_path / "t.jsonl").exists()


def test_flash_attention_off_is_not_exact_but_under_its_floor(source_dir, prompt, tmp_path):
    e = LlamaCppEngine(model_path(source_dir), flash_attn="off", threads=1)
    try:
        lay = topk_tree(e, prompt, parse_branching("2,2,1"))
        result = check_engine(e, lay, str(tmp_path / "t.jsonl"))
    finally:
        e.close()
    assert_clean(result)
    assert result.diff.noise_floor > 0.0  # results depend on batch size with an F16 cache and no flash attention
    header = triescope.Trace(result.trace_path).header
    assert header["config"]["engine_check"]["flash_attn"] == "off"


def test_state_reader_names_a_truncated_blob():
    blob = (5).to_bytes(4, "little") + b"llama" + (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + b"\x00\x00"
    with pytest.raises(RuntimeError, match="ends inside cell 0"):
        StateReader(blob, 4096).cells()


def test_layout_file_round_trip_and_user_positions(engine, tree, tmp_path):
    path = tmp_path / "layout.json"
    path.write_text(json.dumps(tree.to_json()))
    again = load_layout(path, engine.vocab_size())
    assert [(n.parent, n.token, n.pos, n.seq) for n in again.nodes] == [(n.parent, n.token, n.pos, n.seq) for n in tree.nodes]
    # pos and seq left out: the adapter builds them, and the pass is the same.
    doc = tree.to_json()
    for n in doc["nodes"]:
        del n["pos"], n["seq"]
    path.write_text(json.dumps(doc))
    built = engine.complete(load_layout(path, engine.vocab_size()))
    assert [(n.pos, n.seq) for n in built.nodes] == [(n.pos, n.seq) for n in tree.nodes]


@pytest.mark.parametrize("doc, field", [
    ({"engine_layout": 2, "prompt": [1], "nodes": [{"parent": -1, "token": 1}]}, "engine_layout"),
    ({"engine_layout": 1, "prompt": [], "nodes": [{"parent": -1, "token": 1}]}, "prompt"),
    ({"engine_layout": 1, "prompt": [1], "nodes": [{"parent": 0, "token": 1}]}, r"nodes\[0\].parent"),
    ({"engine_layout": 1, "prompt": [1], "nodes": [{"parent": -1, "token": 10**9}]}, r"nodes\[0\].token"),
    ({"engine_layout": 1, "prompt": [1], "nodes": [{"parent": -1, "token": 1, "seq": [300]}]}, r"nodes\[0\].seq\[0\]"),
    ({"engine_layout": 1, "prompt": [1], "nodes": [{"parent": -1, "token": 1, "pos": "3"}]}, r"nodes\[0\].pos"),
    ({"engine_layout": 1, "prompt": [1], "nodes": [{"parent": -1, "token": 1, "depth": 1}]}, "unknown field 'depth'"),
])
def test_bad_layouts_are_named(engine, doc, field, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(LayoutError, match=f"{path}.*{field}"):
        load_layout(path, engine.vocab_size())


def test_command_line_exit_codes(source_dir, build_dir, tree, tmp_path):
    layout = tmp_path / "layout.json"
    layout.write_text(json.dumps(tree.to_json()))
    base = [sys.executable, "-m", "triescope.engines", "check", "--engine", "llama.cpp", "--model", model_path(source_dir),
            "--layout", str(layout), "--threads", "1"]

    def run(*extra):
        return subprocess.run(base + list(extra), capture_output=True, text=True, timeout=300)

    ok = run("--out", str(tmp_path / "ok.jsonl"))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASS" in ok.stdout and "noise floor" in ok.stdout
    cli = subprocess.run([str(build_dir / "app" / "triescope"), "check", str(tmp_path / "ok.jsonl")], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout
    bad = run("--out", str(tmp_path / "bad.jsonl"), "--plant", "parent_seq")
    assert bad.returncode == 1 and "first divergent node" in bad.stdout and "sees a sibling's slot" in bad.stdout
    cli = subprocess.run([str(build_dir / "app" / "triescope"), "check", str(tmp_path / "bad.jsonl")], capture_output=True, text=True)
    assert cli.returncode == 1
    refused = run("--out", str(tmp_path / "r.jsonl"), "--plant", "pos_plus_one")
    assert refused.returncode == 1 and "refused the layout" in refused.stdout
    (tmp_path / "broken.json").write_text("{")
    broken = subprocess.run(base[:-4] + ["--layout", str(tmp_path / "broken.json"), "--out", str(tmp_path / "x.jsonl")],
                            capture_output=True, text=True)
    assert broken.returncode == 2 and "broken.json: not JSON" in broken.stderr
    assert not (tmp_path / "x.jsonl").exists()
