"""What the llama.cpp and Hugging Face engine tests share: the real model, the
prompt, the tree shapes, and assertions on one checked tree pass."""
import pathlib

import numpy as np

import triescope
from triescope.engines.check import EngineCheck

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
# SmolLM2's chat template around a question (tokenized by each engine itself).
PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")
# Correct trees of several shapes: the engine's own k best per depth.
SHAPES = ["2,2,1", "2,1,2", "3,2", "1,1,1,1", "4"]


def model_path(source_dir: pathlib.Path) -> str:
    path = source_dir / ".cache" / "models" / MODEL
    assert path.exists(), f"{path} is missing: scripts/install-deps.sh installs it"
    return str(path)


def assert_clean(result: EngineCheck) -> None:
    assert result.violations == [], [str(v) for v in result.violations]
    assert result.tree.problems == []
    bad = [(d.node, d.max_abs_delta) for d in result.diff.nodes if d.divergent]
    assert bad == [], f"divergent nodes {bad} (tolerance {result.diff.tolerance})"
    assert result.ok and result.agree
    # The trace is an ordinary trace: it reads back, and the CLI's reader agrees.
    trace = triescope.Trace(result.trace_path)
    assert list(trace.steps) == [0, 1]
    assert triescope.check(result.trace_path).ok


def named_nodes(result: EngineCheck) -> set:
    """Layout nodes a violation names: as the query, or as the node in the slot at fault."""
    p = result.prompt_nodes
    return {n - p for v in result.violations for n in (v.query, v.slot_node) if n >= p}


def assert_caught(result: EngineCheck, node: int) -> None:
    """A planted fault at `node` fails both checks; the check names the node, and
    every node whose own row or position it flags also diverges in the logits."""
    assert not result.check_ok and not result.diff_ok
    assert node in named_nodes(result), (node, [str(v) for v in result.violations])
    queries = {result.node_of_violation(v) for v in result.violations} - {None}
    divergent = {d.node for d in result.diff.nodes if d.divergent}
    assert queries <= divergent, (queries, divergent)


def max_delta(result: EngineCheck) -> float:
    return float(np.max([d.max_abs_delta for d in result.diff.nodes]))
