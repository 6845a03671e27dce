#!/usr/bin/env python3
"""Writes the seed corpora (corpus/<reader>/) and the reproducers of issue 16's
findings (regressions/<reader>/). Seeds are small valid files of every kind;
traces come from running every bundled sample through the CLI.
usage: make_corpus.py TRIESCOPE_BINARY   (run from anywhere; rewrites both trees)"""
import json, os, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def put(tree, reader, name, data):
    d = os.path.join(HERE, tree, reader)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def dumps(j):
    return json.dumps(j, separators=(",", ":"))


def byte_char(b):
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    if b in keep:
        return chr(b)
    return chr(256 + sorted(set(range(256)) - set(keep)).index(b))


def tokenizer(digits=False, prefix_space=False):
    vocab = {byte_char(b): b for b in range(256)}
    G = byte_char(ord(" "))
    merges = [(G, "t"), ("h", "e"), (G + "t", "he"), ("e", "r"), (G, "w"), ("o", "r"), (G + "w", "or"), ("l", "d"),
              (G + "wor", "ld"), ("1", "2"), (byte_char(0xC3), byte_char(0xA9))]
    for i, (a, b) in enumerate(merges):
        vocab[a + b] = 256 + i
    pre = {"type": "ByteLevel", "add_prefix_space": prefix_space, "use_regex": True}
    if digits:
        pre = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, pre]}
    return {"version": "1.0",
            "added_tokens": [{"id": 300, "content": "<|endoftext|>", "special": True},
                             {"id": 301, "content": "<|im_start|>", "special": True}],
            "pre_tokenizer": pre, "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "vocab": vocab, "merges": [a + " " + b for a, b in merges]}}


def safetensors(tensors, metadata=True):
    """tensors: name -> (dtype, shape, raw bytes)"""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = {"format": "pt"}
    h = dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def npy(shape, descr, raw, fortran=False, version=1):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False", ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else ""))
    lead = 10 if version == 1 else 12
    header += " " * ((64 - (lead + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + raw


def gguf(kv, tensors, alignment=32):
    """kv: (key, type, value bytes); tensors: (name, ne, ggml type, data bytes)"""
    le = lambda v, n: v.to_bytes(n, "little")
    gstr = lambda s: le(len(s.encode()), 8) + s.encode()
    body = b"".join(gstr(k) + le(t, 4) + v for k, t, v in kv)
    infos, data = b"", b""
    for name, ne, t, raw in tensors:
        data += b"\0" * ((alignment - len(data) % alignment) % alignment)
        infos += gstr(name) + le(len(ne), 4) + b"".join(le(d, 8) for d in ne) + le(t, 4) + le(len(data), 8)
        data += raw
    out = b"GGUF" + le(3, 4) + le(len(tensors), 8) + le(len(kv), 8) + body + infos
    return out + b"\0" * ((alignment - len(out) % alignment) % alignment) + data


def tiny_llama_gguf(with_tokenizer):
    le = lambda v, n: v.to_bytes(n, "little")
    gstr = lambda s: le(len(s.encode()), 8) + s.encode()
    u32 = lambda k, v: (k, 4, le(v, 4))
    f32v = lambda k, v: (k, 6, struct.pack("<f", v))
    V, H, I, heads, kvh = 8, 4, 6, 2, 1
    kv = [("general.architecture", 8, gstr("llama")), u32("llama.context_length", 64), u32("llama.embedding_length", H),
          u32("llama.block_count", 1), u32("llama.feed_forward_length", I), u32("llama.attention.head_count", heads),
          u32("llama.attention.head_count_kv", kvh), u32("llama.rope.dimension_count", H // heads),
          f32v("llama.rope.freq_base", 10000.0), f32v("llama.attention.layer_norm_rms_epsilon", 1e-6), u32("llama.vocab_size", V)]
    if with_tokenizer:
        toks = [byte_char(b) for b in range(256)] + [byte_char(ord(" ")) + "t"]
        kv += [("tokenizer.ggml.model", 8, gstr("gpt2")), ("tokenizer.ggml.pre", 8, gstr("smollm")),
               ("tokenizer.ggml.tokens", 9, le(8, 4) + le(len(toks), 8) + b"".join(gstr(t) for t in toks)),
               ("tokenizer.ggml.token_type", 9, le(5, 4) + le(len(toks), 8) + b"".join(le(1, 4) for _ in toks)),
               ("tokenizer.ggml.merges", 9, le(8, 4) + le(1, 8) + gstr(byte_char(ord(" ")) + " t")),
               ("tokenizer.ggml.eos_token_id", 4, le(0, 4))]
    f32 = lambda n: struct.pack("<%df" % n, *[0.01 * (i % 7) for i in range(n)])
    t = [("token_embd.weight", [H, V], 0, f32(V * H)), ("blk.0.attn_norm.weight", [H], 0, f32(H)),
         ("blk.0.attn_q.weight", [H, H], 0, f32(H * H)), ("blk.0.attn_k.weight", [H, 2], 0, f32(2 * H)),
         ("blk.0.attn_v.weight", [H, 2], 0, f32(2 * H)), ("blk.0.attn_output.weight", [H, H], 0, f32(H * H)),
         ("blk.0.ffn_norm.weight", [H], 0, f32(H)), ("blk.0.ffn_gate.weight", [H, I], 0, f32(H * I)),
         ("blk.0.ffn_up.weight", [H, I], 0, f32(H * I)), ("blk.0.ffn_down.weight", [I, H], 0, f32(H * I)),
         ("output_norm.weight", [H], 0, f32(H))]
    return gguf(kv, t)


def deep(levels, kind="array"):
    return ("[" * levels + "1" + "]" * levels) if kind == "array" else ('{"a":' * levels + "1" + "}" * levels)


def seeds(cli):
    for tree in ("corpus",):
        shutil.rmtree(os.path.join(HERE, tree), ignore_errors=True)
    samples = sorted(f for f in os.listdir(os.path.join(REPO, "samples")) if f.endswith(".json"))
    tmp = tempfile.mkdtemp()
    for f in samples:
        put("corpus", "sample", f, open(os.path.join(REPO, "samples", f), "rb").read())
        out = os.path.join(tmp, f + ".jsonl")
        r = subprocess.run([cli, "run", os.path.join(REPO, "samples", f), "--quiet", "--out", out], capture_output=True)
        if r.returncode == 0 and os.path.getsize(out) <= 64 * 1024:
            put("corpus", "trace", f.replace(".json", ".jsonl"), open(out, "rb").read())
    shutil.rmtree(tmp)
    f32 = lambda *v: struct.pack("<%df" % len(v), *v)
    put("corpus", "safetensors", "f32.safetensors", safetensors({"w": ("F32", [2, 3], f32(1, 2, 3, 4, 5, 6)), "b": ("F32", [3], f32(0, 1, 2))}))
    put("corpus", "safetensors", "f16_bf16.safetensors", safetensors({"h": ("F16", [2], b"\x00\x3c\x00\xc0"), "g": ("BF16", [1, 2], b"\x80\x3f\x00\x40")}, False))
    put("corpus", "safetensors", "empty_dim.safetensors", safetensors({"z": ("F32", [0, 4], b""), "s": ("F32", [], f32(7))}))
    base = {"model_type": "llama", "vocab_size": 96, "hidden_size": 32, "intermediate_size": 72, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "max_position_embeddings": 2048, "tie_word_embeddings": False, "hidden_act": "silu", "eos_token_id": 2}
    put("corpus", "llama_config", "llama.json", dumps(base))
    put("corpus", "llama_config", "qwen2.json", dumps(dict(base, model_type="qwen2", attention_bias=True, eos_token_id=[2, 3], head_dim=16)))
    put("corpus", "llama_config", "mistral.json", dumps(dict(base, model_type="mistral", sliding_window=None, rope_scaling=None, tie_word_embeddings=True)))
    put("corpus", "tokenizer", "gpt2_style.json", dumps(tokenizer()))
    put("corpus", "tokenizer", "digits_with_text.json", dumps(tokenizer(True)) + "\0" + "room 1234 of 56, the world <|endoftext|> caf\u00e9")
    put("corpus", "tokenizer", "prefix_space.json", dumps(dict(tokenizer(False, True), model=dict(tokenizer()["model"], ignore_merges=True))) + "\0there world")
    put("corpus", "gguf", "tiny_llama.gguf", tiny_llama_gguf(False))
    put("corpus", "gguf", "tiny_llama_tokenizer.gguf", tiny_llama_gguf(True))
    i4 = lambda *v: struct.pack("<%di" % len(v), *v)
    put("corpus", "constraint_npy", "i4_3x2.npy", npy((3, 2), "<i4", i4(0, 1, 0, 2, 3, 1)))
    put("corpus", "constraint_npy", "u1_fortran.npy", npy((2, 3), "|u1", bytes([1, 2, 3, 4, 5, 6]), fortran=True))
    put("corpus", "constraint_npy", "i8_v2.npy", npy((2, 1), "<i8", struct.pack("<2q", 5, 4), version=2))
    put("corpus", "constraint_npy", "u2_v3.npy", npy((1, 2), "<u2", struct.pack("<2H", 9, 8), version=3))
    put("corpus", "constraint_text", "figure1.txt", open(os.path.join(REPO, "samples", "static_figure1.txt"), "rb").read())
    put("corpus", "constraint_text", "dups_unsorted.txt", "# comment\n3 1 2\n0 0 0\r\n3 1 2\n\n\t1  2 3\n")


def regressions():
    """One file per finding of issue 16 (test_reader_findings.cpp asserts each exact error)."""
    # Reproducers a fuzzer found (found_*) are kept as found, not generated.
    kept = {}
    for root, _, names in os.walk(os.path.join(HERE, "regressions")):
        for n in names:
            if n.startswith("found_"):
                kept[os.path.join(root, n)] = open(os.path.join(root, n), "rb").read()
    shutil.rmtree(os.path.join(HERE, "regressions"), ignore_errors=True)
    for path, data in kept.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "wb").write(data)
    sample = json.load(open(os.path.join(REPO, "samples", "figure1_once_upon_a_time.json")))
    s = dumps(sample)
    # 1. deep values: 65 levels is one past the limit (the crashes needed 80,000; test_reader_findings.cpp builds those)
    put("regressions", "sample", "deep_unknown_key.json", s[:-1] + ',"extra":' + deep(65, "object") + "}")
    put("regressions", "sample", "deep_name.json", s.replace('"name":"trie paper Figure 1: Once upon a time, b = 3"', '"name":' + deep(65)))
    # 3. a number outside double range
    put("regressions", "sample", "number_overflow.json", s.replace('"default_logit":-20.0', '"default_logit":4e404'))
    fig1 = open(os.path.join(REPO, "tests", "fuzz", "corpus", "trace", "figure1_once_upon_a_time.jsonl")).read().splitlines()
    hdr, rest = json.loads(fig1[0]), [json.loads(l) for l in fig1[1:]]
    def trace(name, header, recs, raw_tail=""):
        put("regressions", "trace", name, "\n".join(dumps(r) for r in [header] + recs) + "\n" + raw_tail)
    trace("deep_step_value.jsonl", hdr, [], '{"kind":"step","step":0,"extra":' + deep(65) + "}\n")
    put("regressions", "trace", "deep_vocab.jsonl", dumps(hdr)[:-1].replace('"vocab":[', '"vocab":[' + deep(64) + ",") + "}\n")
    trace("number_overflow.jsonl", hdr, [], '{"kind":"step","step":0,"seconds":4e404}\n')
    step0 = rest[0]
    trace("phase_number.jsonl", hdr, [dict(step0, phase=5)])
    gc = next(r for r in rest if r["kind"] == "gc")
    upto_gc = rest[:rest.index(gc)]
    after_gc = rest[rest.index(gc) + 1]  # the step record the gc precedes (the replay reads the gc for it)
    trace("gc_slots_before_string.jsonl", hdr, upto_gc + [dict(gc, slots_before="x"), after_gc])
    trace("gc_slots_before_2e9.jsonl", hdr, upto_gc + [dict(gc, slots_before=2000000000), after_gc])
    trace("mask_cols_int32_max.jsonl", hdr, [dict(step0, forward=dict(step0["forward"], mask={"cols": 2147483647, "rows": ["01"]}))])
    added = step0["added"]
    trace("added_id_2e9.jsonl", hdr, [dict(step0, added=added + [dict(added[-1], id=2000000000)])])
    trace("added_id_2p32_plus_1.jsonl", hdr, [dict(step0, added=added + [dict(added[-1], id=2**32 + 1)])])
    trace("kv_slots_2e9.jsonl", hdr, [dict(step0, kv=dict(step0["kv"], slots=2000000000))])
    trace("chosen_node_99999.jsonl", hdr, [dict(step0, chosen=[{"beam": 0, "node": 99999, "token": 3, "score": 0.0}])])
    put("regressions", "trace", "truncated_mid_line.jsonl", "\n".join(fig1[:3]) + "\n" + fig1[3][: len(fig1[3]) // 2])
    # 2. .npy shapes whose byte count wraps
    put("regressions", "constraint_npy", "shape_2p62_x4_i1.npy", npy((2**62, 4), "<i1", bytes(16)))
    put("regressions", "constraint_npy", "shape_2p61_x1_i8.npy", npy((2**61, 1), "<i8", bytes(16)))
    # 7. a safetensors shape whose element count wraps to 0
    put("regressions", "safetensors", "shape_wraps_to_zero.safetensors", safetensors({"w": ("F32", [2**39, 2**25], b"")}))
    put("regressions", "safetensors", "deep_shape.safetensors", safetensors({"w": ("F32", json.loads(deep(65)), b"")}))
    le = lambda v, n: v.to_bytes(n, "little")
    put("regressions", "gguf", "ne_wraps_to_zero.gguf", gguf([], [("w", [2**39, 2**25], 0, b"")]))
    # found_byte_count_wraps_to_zero.gguf (kept above): the 30-minute gguf run's find, a Llama
    # whose tensor of 2^62 F32 values declared 2^64 bytes, a count that wrapped to 0.
    # config.json
    cfg = {"vocab_size": 96, "hidden_size": 32, "intermediate_size": 72, "num_hidden_layers": 2, "num_attention_heads": 4}
    put("regressions", "llama_config", "eos_2p32_plus_2.json", dumps(dict(cfg, eos_token_id=4294967298)))
    put("regressions", "llama_config", "number_overflow.json", dumps(cfg)[:-1] + ',"rope_theta":4e404}')
    put("regressions", "llama_config", "deep_field.json", dumps(cfg)[:-1] + ',"architectures":' + deep(65) + "}")
    # tokenizer.json
    t = tokenizer()
    put("regressions", "tokenizer", "pre_tokenizer_type_number.json", dumps({"pre_tokenizer": {"type": 2}, "model": {}}))
    put("regressions", "tokenizer", "pre_tokenizer_number.json", dumps({"pre_tokenizer": 5, "model": {}}))
    put("regressions", "tokenizer", "added_id_2p32_plus_97.json", dumps(dict(t, added_tokens=[{"id": 2**32 + 97, "content": "<x>"}])))
    put("regressions", "tokenizer", "vocab_id_int32_max.json", dumps(dict(t, model=dict(t["model"], vocab=dict(t["model"]["vocab"], big=2147483647)))))
    put("regressions", "tokenizer", "vocab_id_2e9.json", dumps(dict(t, model=dict(t["model"], vocab=dict(t["model"]["vocab"], big=2000000000)))))
    v = dict(t["model"]["vocab"]); v[byte_char(ord("b"))] = v[byte_char(ord("a"))]; v["spare"] = ord("b")
    put("regressions", "tokenizer", "duplicate_vocab_id.json", dumps(dict(t, model=dict(t["model"], vocab=v))) + "\0ab cab")
    put("regressions", "tokenizer", "added_takes_vocab_id.json", dumps(dict(t, added_tokens=[{"id": ord("a"), "content": "zz"}])) + "\0a")
    put("regressions", "tokenizer", "number_overflow.json", dumps(t)[:-2] + ',"dropout":4e404}}')
    # text constraint sets: a token beyond int64, an id longer than any reader accepts
    put("regressions", "constraint_text", "token_beyond_int64.txt", "1 2\n3 99999999999999999999\n")
    put("regressions", "constraint_text", "id_too_long.txt", " ".join(["1"] * 1025) + "\n")
    put("regressions", "tokenizer", "deep_vocab_id.json", dumps(dict(t, model=dict(t["model"], vocab=dict(t["model"]["vocab"], deep=json.loads(deep(65)))))))


if __name__ == "__main__":
    seeds(sys.argv[1])
    regressions()
