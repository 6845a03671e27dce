"""The two measured tables of docs/engines.md, on the real SmolLM2 GGUF and a
chat prompt: correct trees of several shapes in both engines (noise floor,
tolerance, largest |delta logit|), and every planted layout fault on one tree
(what the trace check names, which nodes the differential flags).

    PYTHONPATH=build/python .cache/venv/bin/python scripts/engine-tables.py correct|faults
"""
import argparse
import pathlib
import sys
import tempfile

from triescope.engines import faults
from triescope.engines.check import check_engine
from triescope.engines.hf_transformers import HfEngine
from triescope.engines.llama_cpp import EngineRefused, LlamaCppEngine
from triescope.engines.topk_tree import parse_branching, topk_tree

REPO = pathlib.Path(__file__).resolve().parent.parent
MODEL = REPO / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
          "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")


def row(engine, layout, kind, out) -> str:
    bad = faults.plant(layout, engine.name, kind)
    try:
        r = check_engine(engine, bad, out)
    except EngineRefused as e:
        said = str(e).split(": ", 1)[1].split(" decode:")[0].split("\n")[0]
        return f"| {engine.name} | `{kind}` | refused by the engine: \"{said}\" | | |"
    p = r.prompt_nodes
    named = sorted({f"n{v.query - p} {v.fault}" for v in r.violations if v.query >= p})[:3]
    named += [f"misuse: {t.split(':')[0]}" for t in r.tree.problems]
    div = [d.node for d in r.diff.nodes if d.divergent]
    worst = max(d.max_abs_delta for d in r.diff.nodes)
    verdict = "both fail" if not r.check_ok and not r.diff_ok else "check only" if not r.check_ok else "differential only" if not r.diff_ok else "NEITHER"
    return (f"| {engine.name} | `{kind}` | {'; '.join(named)}{' ...' if len(r.violations) > 3 else ''} "
            f"| {', '.join(f'n{d}' for d in div)} ({worst:.3g}) | {verdict} |")


def engines():
    return ((LlamaCppEngine(str(MODEL), threads=1), faults.LLAMA_CPP), (HfEngine(str(MODEL), threads=1), faults.HF))


def faults_table(tmp: str) -> None:
    print("| engine | fault | trace check names | differential: divergent nodes (max abs delta logit) | verdict |")
    print("| --- | --- | --- | --- | --- |")
    for engine, kinds in engines():
        layout = engine.complete(topk_tree(engine, engine.tokenize(PROMPT), parse_branching("2,1,2")))
        for kind in kinds:
            print(row(engine, layout, kind, f"{tmp}/t.jsonl"), flush=True)


def correct_table(tmp: str) -> None:
    print("| engine | shape (k best per depth) | nodes | noise floor | tolerance | max abs delta logit | top-5 equal | check |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
    for engine, _ in engines():
        for shape in ("2,2,1", "2,1,2", "3,2", "1,1,1,1", "4"):
            r = check_engine(engine, topk_tree(engine, engine.tokenize(PROMPT), parse_branching(shape)), f"{tmp}/t.jsonl")
            worst = max(d.max_abs_delta for d in r.diff.nodes)
            print(f"| {engine.name} | {shape} | {len(r.layout.nodes)} | {r.diff.noise_floor:.3g} | {r.diff.tolerance:.3g} "
                  f"| {worst:.3g} | {all(d.topk_agree for d in r.diff.nodes)} | {'ok' if r.check_ok else 'FAIL'} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("table", choices=("correct", "faults"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (correct_table if args.table == "correct" else faults_table)(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
