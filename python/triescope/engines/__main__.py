"""python -m triescope.engines: check an engine's tree pass, or record a draft tree.

    check --engine llama.cpp|hf|libtorch --model M.gguf (--layout L.json | --prompt-text T [--branching 2,2,1]) --out t.jsonl
    draft-tree --engine eagle|medusa --out t.jsonl

Exit status: 0 clean, 1 a divergence, a violation or a layout the engine refused,
2 bad input (named).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

from . import draft_trees
from .check import check_engine, format_report
from .faults import plant
from .layout import LayoutError, load_layout
from .topk_tree import parse_branching, topk_tree

ENGINE_NAMES = ("llama.cpp", "hf", "libtorch")


def _open_engine(args):
    if args.engine == "llama.cpp":
        from .llama_cpp import LlamaCppEngine

        return LlamaCppEngine(args.model, flash_attn=args.flash_attn, kv_type=args.kv_type, threads=args.threads)
    if args.engine == "libtorch":
        from .libtorch import LibTorchEngine

        return LibTorchEngine(args.model)
    from .hf_transformers import HfEngine

    return HfEngine(args.model, threads=args.threads)


def _layout(args, engine):
    if args.layout:
        return load_layout(args.layout, engine.vocab_size())
    if args.prompt_text is None:
        raise LayoutError("give --layout FILE, or --prompt-text TEXT to grow a top-k tree under it")
    prompt = engine.tokenize(args.prompt_text)
    if not prompt:
        raise LayoutError("--prompt-text: the text encodes to no tokens")
    return topk_tree(engine, prompt, parse_branching(args.branching))


def _plant(args, engine, layout):
    if not args.plant:
        return layout
    kind, _, node = args.plant.partition("@")
    try:
        at = int(node) if node else None
    except ValueError:
        raise LayoutError(f"--plant: expected KIND or KIND@NODE, got {args.plant!r}") from None
    return plant(engine.complete(layout), engine.name, kind, at)


def run_check(args) -> int:
    from .llama_cpp import EngineRefused

    engine = _open_engine(args)
    layout = _plant(args, engine, _layout(args, engine))
    if args.save_layout:
        pathlib.Path(args.save_layout).write_text(json.dumps(engine.complete(layout).to_json(), indent=1) + "\n")
    try:
        result = check_engine(engine, layout, args.out, top_k=args.top_k)
    except EngineRefused as e:
        print(f"FAIL: {engine.name} refused the layout: {e}")
        return 1
    print(format_report(result, engine.vocab_labels() if args.labels else None))
    return 0 if result.ok else 1


def _check_parser(sub) -> None:
    p = sub.add_parser("check", help="one tree pass: trace check + differential against sequential decoding")
    p.add_argument("--engine", required=True, choices=ENGINE_NAMES)
    p.add_argument("--model", required=True, help="a GGUF file (llama.cpp; hf too) or an HF model directory")
    p.add_argument("--layout", help="layout file (docs/engines.md); pos, seq, mask left out are built correctly")
    p.add_argument("--prompt-text", help="without --layout: a prompt, tokenized by the engine")
    p.add_argument("--branching", default="2,2,1", help="without --layout: the engine's k best per depth (default 2,2,1)")
    p.add_argument("--plant", help="plant a fault: KIND or KIND@NODE (kinds: docs/engines.md)")
    p.add_argument("--save-layout", help="write the completed (or planted) layout here")
    p.add_argument("--out", required=True, help="the trace to write")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--flash-attn", default="on", help="llama.cpp: on | off | auto (default on)")
    p.add_argument("--kv-type", default="f16", help="llama.cpp: f16 | f32 | q8_0 (default f16)")
    p.add_argument("--threads", type=int, default=0, help="0: the engine's default")
    p.add_argument("--labels", action="store_true", help="print token strings instead of ids")
    p.set_defaults(run=run_check)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m triescope.engines", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _check_parser(sub)
    d = sub.add_parser("draft-tree", help="record and check EAGLE's or Medusa's tree buffers")
    draft_trees.add_arguments(d)
    d.set_defaults(run=draft_trees.run)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        return args.run(args)
    except (LayoutError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
