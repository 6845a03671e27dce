"""Checkpoints shared with transformers, in both directions, and safetensors bit for bit.

- HF -> ours: random LlamaForCausalLM checkpoints saved by transformers (GQA,
  MHA with tied embeddings, a 4:1 GQA with another rope_theta and an explicit
  head_dim, fp16, bf16, a sharded checkpoint with an index, attention biases)
  are loaded by our loader; `triescope logits` over a batch of prompts equals
  HF's batched forward. What HF loads but we do not compute (llama3
  rope_scaling, mlp_bias, a non-SiLU activation) is refused naming the key.
- ours -> HF: `triescope make-checkpoint` (F32, F16, BF16, tied) loads in
  transformers with no missing or unexpected tensor and the same logits.
- safetensors: files the safetensors library wrote in every dtype we read
  (F32, F16, BF16), with subnormals, signed zeros, infinities, NaN and the
  extremes of each type, come back bit-exact through `triescope
  convert-checkpoint --dtype F32`; our F16/BF16 writer rounds as torch does.

Tolerance: 1e-4 absolute on logits (a few units in size) in fp32. Half-typed
checkpoints are compared in fp32 too: every fp16/bf16 value is exactly an fp32
value, our loader widens on load and transformers does the same with
torch_dtype=float32, so both compute in fp32 on identical weights and the fp32
tolerance applies unchanged. Transformers computing natively in bf16 is a
different function (8-bit mantissas in every matmul): it lands about 0.1 away
from fp32 on these models, and we only check that ours is no farther from it
than transformers' own fp32 forward is (x 1.5). Ours computing in bf16 too
(`triescope logits --dtype bf16`) equals it bit for bit, prompt by prompt.
"""
import json
import subprocess

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from safetensors.torch import load_file as load_torch
from safetensors.torch import save_file
from transformers import LlamaForCausalLM

from peer_llama import hf_batch_logits, hf_llama, hf_load_fp32, hf_save, our_logits, run_cli

TOL = 1e-4
PROMPTS = [[5], [17, 3, 99, 42, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17],
           [(7 * i + 3) % 128 for i in range(40)]]

CONFIGS = {
    "gqa_fp32": dict(cfg={}, dtype=torch.float32),
    "mha_tied": dict(cfg=dict(num_key_value_heads=4, tie_word_embeddings=True), dtype=torch.float32),
    "gqa4_theta5e5_head_dim32": dict(cfg=dict(num_attention_heads=8, num_key_value_heads=2, head_dim=32, rope_theta=500000.0,
                                              hidden_size=128, intermediate_size=256), dtype=torch.float32),
    "float16": dict(cfg={}, dtype=torch.float16),
    "bfloat16": dict(cfg=dict(tie_word_embeddings=True), dtype=torch.bfloat16),
    "sharded_index": dict(cfg={}, dtype=torch.float32, max_shard_size="150KB"),
    "attention_bias": dict(cfg=dict(attention_bias=True), dtype=torch.float32),  # q, k, v and o_proj biases
}


def max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max())


@pytest.mark.parametrize("name", list(CONFIGS))
def test_hf_checkpoint_loads_with_hf_logits(name, tmp_path, triescope_cli):
    c = CONFIGS[name]
    model = hf_llama(11, **c["cfg"])
    with torch.no_grad():  # HF initialises biases to zero: random ones, so a bias we skipped would show
        for n, p in model.named_parameters():
            if n.endswith(".bias"):
                p.normal_(0.0, 0.3, generator=torch.Generator().manual_seed(len(n)))
    model_dir = hf_save(model, tmp_path / "model", c["dtype"], c.get("max_shard_size"))
    if name == "sharded_index":
        assert (model_dir / "model.safetensors.index.json").exists() and len(list(model_dir.glob("model-*.safetensors"))) > 1
    hf = hf_batch_logits(hf_load_fp32(model_dir), PROMPTS)
    ours = our_logits(triescope_cli, model_dir, PROMPTS, tmp_path / "ours")
    for i, (h, o) in enumerate(zip(hf, ours)):
        assert o.shape == h.shape, f"{name}: prompt {i}: shape {o.shape} vs HF {h.shape}"
        d = max_diff(o, h)
        assert d <= TOL, f"{name}: prompt {i} (len {len(PROMPTS[i])}): max |ours - HF| = {d:.3g} > {TOL} (|logits| <= {np.abs(h).max():.3g})"


def test_bf16_checkpoint_against_native_bf16_compute(tmp_path, triescope_cli):
    model_dir = hf_save(hf_llama(12), tmp_path / "model", torch.bfloat16)
    native = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.bfloat16).eval()
    hf16 = hf_batch_logits(native, PROMPTS)
    hf32 = hf_batch_logits(hf_load_fp32(model_dir), PROMPTS)
    ours = our_logits(triescope_cli, model_dir, PROMPTS, tmp_path / "ours")
    for i in range(len(PROMPTS)):
        bound = 1.5 * max_diff(hf32[i], hf16[i]) + TOL
        d = max_diff(ours[i], hf16[i])
        print(f"prompt {i}: |ours - HF bf16| {d:.3g}, |HF fp32 - HF bf16| {max_diff(hf32[i], hf16[i]):.3g}")
        assert d <= bound, f"prompt {i}: ours is {d:.3g} from HF's bf16 forward, HF's fp32 is {bound:.3g}"


@pytest.mark.parametrize("seed", [12, 13])
def test_bf16_compute_equals_native_bf16_prompt_by_prompt(seed, tmp_path, triescope_cli):
    """`triescope logits --dtype bf16` (docs/transformer.md, "dtype") against transformers computing
    in bf16 with eager attention, one prompt at a time: HF's batched, right-padded bf16 forward
    differs from its own unpadded one, so each prompt runs alone. Both round every matmul and the
    attention probabilities to bf16 at the same places and accumulate in fp32: equal bit for bit."""
    model_dir = hf_save(hf_llama(seed), tmp_path / "model", torch.bfloat16)
    native = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.bfloat16, attn_implementation="eager").eval()
    ours = our_logits(triescope_cli, model_dir, PROMPTS, tmp_path / "ours", dtype="bf16")
    for i, p in enumerate(PROMPTS):
        hf = hf_batch_logits(native, [p])[0]
        assert ours[i].shape == hf.shape, f"prompt {i}: shape {ours[i].shape} vs HF {hf.shape}"
        d = max_diff(ours[i], hf)
        assert d == 0.0, f"seed {seed}, prompt {i} (len {len(p)}): max |ours bf16 - HF bf16| = {d:.3g}"


@pytest.mark.parametrize("dtype,tied", [("F32", False), ("F16", True), ("BF16", False)])
def test_make_checkpoint_loads_in_transformers(dtype, tied, tmp_path, triescope_cli):
    cfg = {"model_type": "llama", "vocab_size": 96, "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 1, "rms_norm_eps": 1e-5, "rope_theta": 20000.0,
           "max_position_embeddings": 128, "tie_word_embeddings": tied}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model_dir = tmp_path / "ours"
    run_cli(triescope_cli, "make-checkpoint", tmp_path / "config.json", model_dir, "--seed", 3, "--init-std", 0.2, "--dtype", dtype)
    model, info = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    prompts = [[p % 96 for p in q] for q in PROMPTS]
    hf = hf_batch_logits(model.eval(), prompts)
    ours = our_logits(triescope_cli, model_dir, prompts, tmp_path / "logits")
    for i, (h, o) in enumerate(zip(hf, ours)):
        d = max_diff(o, h)
        assert d <= TOL, f"make-checkpoint {dtype} tied={tied}: prompt {i}: max |ours - HF| = {d:.3g}"


def special_values(dtype: torch.dtype) -> torch.Tensor:
    """Every class of value a reader can get wrong, representable in `dtype`."""
    fi = torch.finfo(dtype)
    v = [0.0, -0.0, 1.0, -1.0, fi.max, -fi.max, fi.tiny, -fi.tiny, fi.eps, float("inf"), float("-inf"), float("nan"),
         1.0 / 3.0, np.pi, 1e-3]
    if dtype != torch.float32:
        v += [fi.tiny / 2, fi.tiny / 1024, -fi.tiny / 4]  # subnormals of the half type
    else:
        v += [1e-40, -1e-45]  # fp32 subnormals
    return torch.tensor(v, dtype=torch.float32).to(dtype)


def bits32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("dtype,name", [(torch.float32, "F32"), (torch.float16, "F16"), (torch.bfloat16, "BF16")])
def test_safetensors_library_files_read_bit_exact(dtype, name, tmp_path, triescope_cli):
    model = hf_llama(13)
    sd = {k: v.to(dtype).contiguous() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(14)
    sd["model.embed_tokens.weight"].view(-1)[:len(special_values(dtype))] = special_values(dtype)
    # Values spread over the type's whole exponent range, both signs.
    k = "model.layers.0.mlp.down_proj.weight"
    spread = torch.randn(sd[k].numel(), generator=gen) * torch.exp2(torch.randint(-30, 30, (sd[k].numel(),), generator=gen).float())
    sd[k] = spread.reshape(sd[k].shape).to(dtype)
    src = tmp_path / "src"
    src.mkdir()
    save_file(sd, str(src / "model.safetensors"))
    model.config.save_pretrained(src)
    run_cli(triescope_cli, "convert-checkpoint", src, tmp_path / "f32", "--dtype", "F32")
    back = load_file(str(tmp_path / "f32" / "model.safetensors"))
    assert set(back) == set(sd)
    for key, t in sd.items():
        want = bits32(t.float().numpy())
        got = bits32(back[key])
        nan = np.isnan(t.float().numpy())
        assert np.array_equal(np.isnan(back[key]), nan), f"{name} {key}: NaN positions differ"
        bad = np.flatnonzero((want != got) & ~nan)
        assert bad.size == 0, (f"{name} {key}: {bad.size} values differ from the safetensors library's, first at {bad[0]}: "
                               f"ours {back[key].reshape(-1)[bad[0]]!r} vs {t.float().reshape(-1)[bad[0]].item()!r}")


@pytest.mark.parametrize("dtype,name", [(torch.float16, "F16"), (torch.bfloat16, "BF16")])
def test_our_half_writer_rounds_as_torch(dtype, name, tmp_path, triescope_cli):
    model = hf_llama(15)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(16)
    k = "model.layers.1.mlp.up_proj.weight"
    n = sd[k].numel()
    # fp32 values at every exponent of the half type and just past its range (overflow to inf, underflow to 0).
    sd[k] = (torch.randn(n, generator=gen) * torch.exp2(torch.randint(-28, 18, (n,), generator=gen).float())).reshape(sd[k].shape)
    src = tmp_path / "src"
    src.mkdir()
    save_file(sd, str(src / "model.safetensors"))
    model.config.save_pretrained(src)
    run_cli(triescope_cli, "convert-checkpoint", src, tmp_path / "half", "--dtype", name)
    back = load_torch(str(tmp_path / "half" / "model.safetensors"))
    for key, t in sd.items():
        assert back[key].dtype == dtype, f"{key}: written as {back[key].dtype}"
        want = t.to(dtype).view(torch.int16)
        got = back[key].view(torch.int16)
        bad = (want != got).nonzero()
        assert bad.numel() == 0, f"{name} {key}: {bad.shape[0]} values rounded differently from torch, e.g. {t.reshape(-1)[bad[0, 0]].item()!r}"


UNSUPPORTED = {
    "rope_scaling": dict(rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 64}),
    "mlp_bias": dict(mlp_bias=True),
    "hidden_act": dict(hidden_act="gelu"),
}


@pytest.mark.parametrize("key", list(UNSUPPORTED))
def test_checkpoint_hf_loads_but_we_cannot_is_named(key, tmp_path, triescope_cli):
    """transformers loads these; we refuse them naming the config key, and write nothing."""
    model_dir = hf_save(hf_llama(18, **UNSUPPORTED[key]), tmp_path / "model")
    hf_load_fp32(model_dir)
    (tmp_path / "p.json").write_text("[[1, 2, 3]]")
    r = subprocess.run([str(triescope_cli), "logits", str(model_dir), "--prompts", str(tmp_path / "p.json"), "--out",
                        str(tmp_path / "x")], capture_output=True, text=True)
    assert r.returncode == 2 and key in r.stderr and "config.json" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_unsupported_dtype_is_named(tmp_path, triescope_cli):
    model = hf_llama(17)
    src = tmp_path / "src"
    src.mkdir()
    save_file({k: v.double() for k, v in model.state_dict().items()}, str(src / "model.safetensors"))
    model.config.save_pretrained(src)
    r = subprocess.run([str(triescope_cli), "logits", str(src), "--prompts", "/dev/null", "--out", str(tmp_path / "x")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "F64" in r.stderr and "model.safetensors" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()
