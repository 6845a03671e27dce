"""EAGLE's and Medusa's draft-tree buffers, built by the released packages (eagle-llm 1.2.1,
medusa-llm 0.1), recorded as traces and checked (python/triescope/engines/draft_trees.py):
the default trees are clean, every planted off-by-one fails naming its node or retrieve row,
custom trees work, and choices that are not a tree are refused by name."""
import importlib.metadata
import itertools

import pytest
import torch

import triescope
from triescope.engines import draft_trees as dt

P = 4  # the importers' default prompt length


def eagle_default():
    from eagle.model.choices import mc_sim_7b_63

    return [list(p) for p in mc_sim_7b_63]


def medusa_default():
    return [1, 7, 6]  # MedusaModel.medusa_generate's default, medusa/model/medusa_model.py


def builder_buffers(engine, choices):
    """The package's buffers, called here directly: what the trace must agree with."""
    if engine == "eagle":
        from eagle.model.utils import generate_tree_buffers

        b = generate_tree_buffers(choices, device="cpu")
        return b["tree_attn_mask"][0, 0], b["tree_position_ids"], b["retrieve_indices"]
    from medusa.model.utils import generate_medusa_buffers

    b = generate_medusa_buffers(choices, device="cpu")
    return b["medusa_attn_mask"][0, 0], b["medusa_position_ids"], b["retrieve_indices"]


def paths_of(engine, choices):
    """Every draft node's path of ranks, in the builders' order (depth, then path)."""
    if engine == "eagle":
        paths = [tuple(p) for p in choices]
    else:
        paths = [p for d in range(1, len(choices)) for p in itertools.product(*(range(c) for c in choices[1:d + 1]))]
    return sorted(paths, key=lambda p: (len(p), p))


def record(engine, path, **kw):
    return (dt.record_eagle_tree if engine == "eagle" else dt.record_medusa_tree)(str(path), **kw)


DEFAULTS = {"eagle": eagle_default, "medusa": medusa_default}


@pytest.mark.parametrize("engine", ["eagle", "medusa"])
def test_default_tree_recorded_and_clean(engine, tmp_path, run_cli):
    choices = DEFAULTS[engine]()
    mask, positions, retrieve = builder_buffers(engine, choices)
    paths = paths_of(engine, choices)
    leaves = [p for p in paths if not any(q[:-1] == p for q in paths)]
    r = record(engine, tmp_path / "t.jsonl")
    assert r.ok, "\n".join(r.problems)
    assert r.problems == [] and r.report.violation_count == 0
    assert r.nodes == mask.shape[0] == len(paths) + 1 == positions.numel()
    assert r.depth == max(len(p) for p in paths) == int(positions.max())
    assert retrieve.shape[0] == len(leaves) and retrieve.shape[1] == r.depth + 1
    assert r.report.passes == 2 and r.report.rows == P + r.nodes

    trace = triescope.Trace(tmp_path / "t.jsonl")
    assert trace.header["model"]["engine_version"] == importlib.metadata.version(f"{engine}-llm")
    verify = trace.at(1).forward
    assert list(verify.queries) == [P + k for k in range(r.nodes)]
    assert list(verify.positions) == (positions + P).tolist()  # the engine offsets by the past length
    m = torch.as_tensor(verify.mask)
    assert m.shape == (r.nodes, P + r.nodes)
    assert bool(m[:, :P].all())  # every node reads the whole prompt
    assert torch.equal(m[:, P:], mask.bool())  # the builder's rows, lower triangular, pass the causal mask as they are
    step1 = next(rec for rec in trace.records if rec.get("kind") == "step" and rec.get("step") == 1)
    assert step1["engine"]["retrieve_indices"] == retrieve.tolist()
    assert step1["engine"]["node_paths"][1:] == [list(p) for p in paths]
    run_cli("check", tmp_path / "t.jsonl", expect=0)


# The check's words for each trace-visible fault (core/analysis/mask_check.cpp).
TRACE_FAULTS = {"position": "wrong position id", "mask_sibling": "sees a sibling's slot",
                "mask_parent": "missing ancestor bit"}


@pytest.mark.parametrize("kind", list(TRACE_FAULTS))
@pytest.mark.parametrize("engine", ["eagle", "medusa"])
def test_planted_mask_or_position_fault_fails_at_its_node(engine, kind, tmp_path, run_cli):
    paths = paths_of(engine, DEFAULTS[engine]())
    node, path = len(paths), paths[-1]  # the last node; in both default trees it has an earlier sibling
    assert path[-1] > 0
    r = record(engine, tmp_path / "t.jsonl", fault=kind)
    assert not r.ok
    assert r.planted.node == node
    assert [(v.query, v.fault) for v in r.report.violations] == [(P + node, TRACE_FAULTS[kind])]
    assert len(r.problems) == 1 and r.problems[0].startswith(f"node {node} {list(path)}: ")
    if kind == "mask_sibling":
        assert r.report.violations[0].slot == P + node - 1  # its sibling just before it
    if kind == "mask_parent":
        parent = paths.index(path[:-1]) + 1
        assert r.report.violations[0].slot == P + parent
    run_cli("check", tmp_path / "t.jsonl", expect=1)


@pytest.mark.parametrize("engine", ["eagle", "medusa"])
def test_planted_retrieve_fault_names_the_row(engine, tmp_path, run_cli):
    _, _, retrieve = builder_buffers(engine, DEFAULTS[engine]())
    r = record(engine, tmp_path / "t.jsonl", fault="retrieve")
    assert not r.ok and r.planted.row == 0
    assert r.report.ok  # masks and positions are untouched: only the retrieve check sees it
    assert any(p.startswith("retrieve row 0 ") for p in r.problems), r.problems
    assert not any(p.startswith("retrieve row 1 ") for p in r.problems)
    recorded = next(rec for rec in triescope.Trace(tmp_path / "t.jsonl").records if rec.get("step") == 1)
    changed = torch.tensor(recorded["engine"]["retrieve_indices"]) - retrieve
    assert changed.abs().sum() == 1 and changed[0, 1] == 1
    run_cli("check", tmp_path / "t.jsonl", expect=0)


@pytest.mark.parametrize("engine", ["eagle", "medusa"])
def test_planted_tree_indices_fault_names_the_node(engine, tmp_path):
    paths = paths_of(engine, DEFAULTS[engine]())
    r = record(engine, tmp_path / "t.jsonl", fault="tree_indices")
    assert not r.ok and r.report.ok
    assert len(r.problems) == 1 and r.problems[0].startswith(f"tree_indices[{len(paths)}] = "), r.problems


@pytest.mark.parametrize("engine,choices,nodes", [
    ("eagle", [[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0]], 7),
    ("eagle", [[2], [0], [2, 3], [0, 9]], 5),  # unsorted, sparse ranks
    ("medusa", [1, 3, 2], 10),
    ("medusa", [1, 2, 2, 2], 15),
])
@pytest.mark.parametrize("prompt_length", [1, 7])
def test_custom_tree(engine, choices, nodes, prompt_length, tmp_path):
    r = record(engine, tmp_path / "t.jsonl", choices=choices, prompt_length=prompt_length)
    assert r.ok, "\n".join(r.problems)
    assert r.nodes == nodes and r.report.rows == prompt_length + nodes
    verify = triescope.Trace(tmp_path / "t.jsonl").at(1).forward
    assert verify.positions[0] == prompt_length  # the root, the token sampled last, follows the prompt
    for fault in ("position", "mask_parent"):
        assert not record(engine, tmp_path / f"{fault}.jsonl", choices=choices, prompt_length=prompt_length,
                          fault=fault).report.ok


def test_engine_combines_the_tree_mask_with_causal_and_past():
    """The mask recorded is the one the package's _prepare_decoder_attention_mask makes:
    a tree-mask bit above the diagonal (a later sibling) is hidden by the causal mask,
    one below it is not; the prompt's columns are all visible."""
    engine = dt.ENGINES["eagle"]
    choices = [[0], [1], [2]]
    for later, seen in ((False, True), (True, False)):
        buffers = engine.build(choices)
        row, col = (1, 2) if later else (2, 1)
        buffers["tree_attn_mask"][0, 0, row, col] = 1
        calls, error = engine.replay(buffers, 3)
        (prefill, prefill_positions), (verify, positions) = calls
        assert error is None
        assert torch.equal(prefill, torch.ones(3, 3).tril().bool()) and prefill_positions.tolist() == [0, 1, 2]
        assert bool(verify[row, 3 + col]) == seen and bool(verify[:, :3].all())
        assert positions.tolist() == [3, 4, 4, 4]


@pytest.mark.parametrize("engine,choices,words", [
    ("eagle", [[0], [0, 1, 2]], ["choices[1] = [0, 1, 2]", "parent path [0, 1]", "not a tree"]),
    ("eagle", [[0], [0], [0, 0]], ["choices[1] = [0]", "duplicate"]),
    ("eagle", [[0], [10]], ["choices[1] = [10]", "top-10"]),
    ("eagle", [], ["non-empty list of paths"]),
    ("eagle", [[0], []], ["choices[1] = []"]),
    ("medusa", [2, 3], ["choices[0] = 2", "must be 1"]),
    ("medusa", [1, 0, 2], ["choices[1] = 0"]),
    ("medusa", [1], ["no level after the root"]),
    ("medusa", [[0], [1]], ["list of ints"]),
])
def test_choices_that_are_not_a_tree_are_named(engine, choices, words, tmp_path):
    with pytest.raises(dt.DraftTreeError) as e:
        record(engine, tmp_path / "t.jsonl", choices=choices)
    for w in words:
        assert w in str(e.value)
    assert not (tmp_path / "t.jsonl").exists()


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(dt.DraftTreeError, match="prompt_length 0"):
        dt.record_eagle_tree(str(tmp_path / "t.jsonl"), prompt_length=0)
    with pytest.raises(dt.DraftTreeError, match="fault 'off_by_two'"):
        dt.record_medusa_tree(str(tmp_path / "t.jsonl"), fault="off_by_two")
    with pytest.raises(dt.DraftTreeError, match="no node of this tree has an earlier sibling"):
        dt.record_eagle_tree(str(tmp_path / "t.jsonl"), choices=[[0], [0, 0]], fault="mask_sibling")


def test_command_line(tmp_path, capsys):
    out = str(tmp_path / "t.jsonl")
    assert dt.main_draft_tree(["--engine", "eagle", "--out", out]) == 0
    table = capsys.readouterr().out
    assert f"nodes       {len(eagle_default()) + 1} " in table and "check       ok" in table
    assert dt.main_draft_tree(["--engine", "medusa", "--fault", "mask_sibling", "--prompt-length", "2", "--out", out]) == 1
    table = capsys.readouterr().out
    last = paths_of("medusa", medusa_default())[-1]
    assert "FAILED, 1 problem\n" in table and f"node {len(paths_of('medusa', medusa_default()))} {list(last)}: step 1" in table
    assert dt.main_draft_tree(["--engine", "medusa", "--choices", "[1, 2, 3]", "--out", out]) == 0
    capsys.readouterr()
    assert dt.main_draft_tree(["--engine", "eagle", "--choices", "[[1, 0]]", "--out", out]) == 2
    assert "choices[0] = [1, 0]: its parent path [1]" in capsys.readouterr().err
    assert dt.main_draft_tree(["--engine", "eagle", "--choices", "[[0],", "--out", out]) == 2
    assert "--choices is not JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        dt.main_draft_tree(["--engine", "vllm", "--out", out])
    assert e.value.code == 2
