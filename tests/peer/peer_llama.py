"""Small random Llama checkpoints made by transformers, and our CLI run on them.

Shared by the peer tests: the model factory (seeded, HF's own initialisation),
`triescope logits` (our forward pass as a safetensors file) and `triescope run`
(a sample written here, its trace's summary read back).
"""
import concurrent.futures
import copy
import json
import os
import pathlib
import subprocess

import torch
from safetensors.numpy import load_file
from transformers import LlamaConfig, LlamaForCausalLM

# hidden 64, 2 layers, 4 query heads over 2 KV heads (GQA), untied head.
# initializer_range 0.2 (HF's default is 0.02) spreads the logits of a random
# model over a few units, so the beam's candidates are rarely near-ties.
BASE = dict(vocab_size=128, hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0,
            tie_word_embeddings=False, initializer_range=0.2)


def hf_llama(seed: int, **overrides) -> LlamaForCausalLM:
    """A LlamaForCausalLM with HF's seeded random initialisation, fp32, eval mode."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(**{**BASE, **overrides}, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return LlamaForCausalLM(cfg).eval()


def hf_save(model: LlamaForCausalLM, out: pathlib.Path, dtype=torch.float32, max_shard_size=None) -> pathlib.Path:
    """save_pretrained in `dtype` (safetensors); sharded with an index when max_shard_size is given."""
    kw = {"safe_serialization": True}
    if max_shard_size is not None:
        kw["max_shard_size"] = max_shard_size
    (copy.deepcopy(model).to(dtype) if dtype != torch.float32 else model).save_pretrained(out, **kw)  # `model` stays fp32
    return out


def hf_load_fp32(path: pathlib.Path) -> LlamaForCausalLM:
    """transformers' own reading of a checkpoint, computed in fp32 (half weights upcast exactly)."""
    return LlamaForCausalLM.from_pretrained(path, torch_dtype=torch.float32).eval()


def hf_batch_logits(model: LlamaForCausalLM, prompts) -> list:
    """One batched forward over right-padded prompts; each prompt's [len, vocab] rows."""
    n = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), n), dtype=torch.long)
    mask = torch.zeros((len(prompts), n), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, :len(p)] = torch.tensor(p)
        mask[i, :len(p)] = 1
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
    return [logits[i, :len(p)].numpy() for i, p in enumerate(prompts)]


def run_cli(cli: pathlib.Path, *args) -> str:
    r = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{cli.name} {' '.join(map(str, args))} exited {r.returncode}:\n{r.stderr}")
    return r.stdout


def our_logits(cli: pathlib.Path, model_dir: pathlib.Path, prompts, work: pathlib.Path, dtype: str = "") -> list:
    """`triescope logits` (with `--dtype dtype` when given): our forward pass over each prompt, read back with the safetensors library."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "prompts.json").write_text(json.dumps(prompts))
    out = work / "logits.safetensors"
    run_cli(cli, "logits", model_dir, "--prompts", work / "prompts.json", "--out", out, *(["--dtype", dtype] if dtype else []))
    t = load_file(str(out))
    return [t[f"logits.{i}"] for i in range(len(prompts))]


def our_run(cli: pathlib.Path, work: pathlib.Path, name: str, algorithm: str, model_dir: pathlib.Path, prompt,
            section: str, settings: dict) -> dict:
    """`triescope run` on a sample written here; the trace's summary record (outputs, metrics)."""
    work.mkdir(parents=True, exist_ok=True)
    sample = {"schema": "triescope.sample", "version": 1, "name": name, "algorithm": algorithm,
              "model": {"type": "transformer", "path": os.path.abspath(model_dir)}, "prompt": list(prompt),
              section: settings}
    sp, tp = work / f"{name}.json", work / f"{name}.trace.jsonl"
    sp.write_text(json.dumps(sample))
    run_cli(cli, "run", sp, "--out", tp, "--quiet")
    with open(tp) as f:
        return json.loads(f.read().strip().splitlines()[-1])


def run_parallel(jobs, workers: int = 2) -> list:
    """Runs the zero-argument callables on `workers` threads (our runs are processes); results in order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(lambda j: j(), jobs))
