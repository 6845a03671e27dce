"""Every planted layout fault of both engines on one real tree, as the markdown
table of docs/engines.md: what the trace check names, which nodes the
differential flags, and the largest |delta logit|.

    PYTHONPATH=build/python .cache/venv/bin/python scripts/engine-faults.py [--branching 2,1,2]
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--branching", default="2,1,2")
    args = ap.parse_args()
    print("| engine | fault | trace check names | differential: divergent nodes (max abs delta logit) | verdict |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for engine, kinds in ((LlamaCppEngine(str(MODEL), threads=1), faults.LLAMA_CPP),
                              (HfEngine(str(MODEL), threads=1), faults.HF)):
            prompt = engine.tokenize(PROMPT)
            layout = engine.complete(topk_tree(engine, prompt, parse_branching(args.branching)))
            for kind in kinds:
                print(row(engine, layout, kind, f"{tmp}/t.jsonl"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
