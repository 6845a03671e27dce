"""TrieScope's own LibTorch transformer as the third engine, on the same GGUF:
`triescope logits --tree` runs the layout's tree in one forward through the
Model seam, `--prompts` (and `--incremental-from`) decode the paths as
sequences (python/triescope/engines/libtorch.py)."""
import json

import pytest

from triescope.engines import faults
from triescope.engines.check import check_engine
from triescope.engines.layout import LayoutError, Layout, TreeNode
from triescope.engines.libtorch import LibTorchEngine

from engine_cases import assert_caught, assert_clean, model_path

# SmolLM2's ids for "Once upon a time" and a tree of the model's own best tokens under it
# (grown with --branching 2,1,2 by llama.cpp and transformers on the same file).
PROMPT = [6403, 1980, 253, 655]
TREE = [(-1, 28), (-1, 281), (0, 260), (1, 260), (2, 2240), (2, 2727), (3, 216), (3, 3008)]


@pytest.fixture(scope="module")
def engine(source_dir, build_dir):
    return LibTorchEngine(model_path(source_dir), vocab_size=49152)


@pytest.fixture(scope="module")
def tree(engine):
    return engine.complete(Layout(PROMPT, [TreeNode(p, t) for p, t in TREE]))


def test_a_correct_tree_matches_sequential_decoding(engine, tree, tmp_path):
    result = check_engine(engine, tree, str(tmp_path / "t.jsonl"))
    assert_clean(result)
    assert 0.0 < result.diff.noise_floor < 1e-3


@pytest.mark.parametrize("kind", ["sibling_visible", "parent_pos"])
def test_planted_faults_fail_both_checks(engine, tree, kind, tmp_path):
    bad = faults.plant(tree, engine.name, kind)
    changed = [i for i, (a, b) in enumerate(zip(tree.nodes, bad.nodes)) if a.pos != b.pos]
    changed += [i for i in range(len(tree.nodes)) if tree.mask[i] != bad.mask[i]]
    assert_caught(check_engine(engine, bad, str(tmp_path / "t.jsonl")), max(changed))


def test_the_cli_names_a_bad_layout(engine, tree, tmp_path):
    doc = tree.to_json()
    doc["mask"][0] = doc["mask"][0][:-1]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(LayoutError, match=r"bad.json: mask\[0\]: 12 columns"):
        engine._run("--tree", path)
