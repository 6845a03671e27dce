"""TrieScope's own LibTorch transformer as an engine, through the CLI:
`triescope logits MODEL --tree L.json` runs the tree in one forward (mask rows
over the KV slots, as the Model seam takes them; an additive row value <= -1e4
hides its column, the convention of hf_transformers.py), and `triescope logits
--prompts` (with `--incremental-from`) decodes paths as ordinary sequences."""
from __future__ import annotations

import json
import pathlib
import subprocess
import tempfile
from typing import Dict, List, Sequence

import numpy as np

from .engine import Engine, TreePass
from .hf_transformers import applied_visibility, mask_misuse
from .layout import Layout, LayoutError


def _cli() -> pathlib.Path:
    """The triescope CLI next to this package in a build tree (build/python -> build/app)."""
    here = pathlib.Path(__file__).resolve()
    cli = here.parents[3] / "app" / "triescope"
    if not cli.exists():
        raise LayoutError(f"{cli}: the triescope CLI (a LibTorch build) is needed for --engine libtorch")
    return cli


class LibTorchEngine(Engine):
    name = "libtorch"
    min_tolerance = 1.0e-4  # fp32 reductions in another order, as for transformers

    def __init__(self, model_path: str, vocab_size: int = 0):
        if not pathlib.Path(model_path).exists():
            raise LayoutError(f"{model_path}: --model: no such file")
        self.path, self.cli = model_path, _cli()
        self._vocab = vocab_size or self._read_vocab_size()

    def _run(self, *args) -> Dict[str, np.ndarray]:
        from safetensors.numpy import load_file

        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "logits.safetensors"
            r = subprocess.run([str(self.cli), "logits", self.path, *map(str, args), "--out", str(out)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise LayoutError(f"triescope logits: {r.stderr.strip()}")
            return load_file(str(out))

    def _read_vocab_size(self) -> int:
        with tempfile.TemporaryDirectory() as tmp:
            prompts = pathlib.Path(tmp) / "p.json"
            prompts.write_text("[[0]]")
            return int(self._run("--prompts", prompts)["logits.0"].shape[1])

    def vocab_size(self) -> int:
        return self._vocab

    def vocab_labels(self) -> List[str]:
        return [str(i) for i in range(self._vocab)]

    def tokenize(self, text: str) -> List[int]:
        raise LayoutError("--engine libtorch: --prompt-text needs a tokenizer this adapter does not call; give --layout")

    def provenance(self) -> Dict:
        return {"engine": "triescope LibTorch transformer", "path": self.path}

    def settings(self) -> Dict:
        return {"engine": "libtorch", "dtype": "float32",
                "mask_convention": "rows over KV slots; additive values, <= -1e4 hidden (as transformers)"}

    def complete(self, layout: Layout) -> Layout:
        done = layout.completed()
        if done.mask is None:
            done.mask = layout.correct_mask()
        return done

    def tree_pass(self, layout: Layout) -> TreePass:
        p, n = len(layout.prompt), len(layout.nodes)
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "layout.json"
            path.write_text(json.dumps(layout.to_json()))
            out = self._run("--tree", path)
        rows = np.array(layout.mask, dtype=np.float32)
        return TreePass(out["tree"], out["prompt"], list(range(p)), list(range(p, p + n)),
                        np.tril(np.ones((p, p), dtype=bool)), applied_visibility(rows), [x.pos for x in layout.nodes],
                        engine={"mask_as_passed": layout.to_json()["mask"]}, problems=mask_misuse(rows))

    def sequential(self, prompt: Sequence[int], paths: Sequence[Sequence[int]], whole: bool) -> np.ndarray:
        with tempfile.TemporaryDirectory() as tmp:
            prompts = pathlib.Path(tmp) / "p.json"
            prompts.write_text(json.dumps([list(prompt) + list(path) for path in paths]))
            extra = [] if whole else ["--incremental-from", len(prompt)]
            out = self._run("--prompts", prompts, *extra)
        return np.stack([out[f"logits.{i}"][-1] for i in range(len(paths))])
