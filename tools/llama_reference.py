#!/usr/bin/env python3
"""An independent pure-Python Llama forward (the formulas of Hugging Face's
modeling_llama: RMSNorm, rotate-half RoPE, GQA, SwiGLU), used to check the
LibTorch TorchTransformer's architecture, not just its self-consistency.

It writes a random checkpoint with `triescope make-checkpoint` (GQA, untied
head), reads it with its own safetensors parser (struct, F32), runs greedy
decoding here and beam search with num_beams = 1 (= greedy without EOS)
through `triescope run` (trie and batch), and compares the tokens and the
sum of log-probabilities (|diff| <= 1e-4).

  python3 tools/llama_reference.py --triescope build/app/triescope --out /tmp/llama_ref
Exit 0 on agreement, 1 on a mismatch.
"""
import argparse
import json
import math
import os
import struct
import subprocess
import sys


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", f"{name}: only F32 here"
        b, e = t["data_offsets"]
        vals = struct.unpack(f"<{(e - b) // 4}f", data[8 + n + b:8 + n + e])
        shape = t["shape"]
        if len(shape) == 2:
            out[name] = [list(vals[r * shape[1]:(r + 1) * shape[1]]) for r in range(shape[0])]
        else:
            out[name] = list(vals)
    return out


def linear(x, w):
    return [sum(a * b for a, b in zip(row, x)) for row in w]


def rmsnorm(x, w, eps):
    r = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [w[i] * (x[i] * r) for i in range(len(x))]


def rope(v, pos, theta):
    d = len(v)
    h = d // 2
    out = []
    for j in range(d):
        inv = 1.0 / (theta ** ((2 * (j % h)) / d))
        a = pos * inv
        rot = -v[j + h] if j < h else v[j - h]
        out.append(v[j] * math.cos(a) + rot * math.sin(a))
    return out


def logits_last(cfg, w, tokens):
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or H // nh
    g = nh // nkv
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    xs = [list(w["model.embed_tokens.weight"][t]) for t in tokens]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        hs = [rmsnorm(x, w[p + "input_layernorm.weight"], eps) for x in xs]
        qs, ks, vs = [], [], []
        for pos, h in enumerate(hs):
            q = linear(h, w[p + "self_attn.q_proj.weight"])
            k = linear(h, w[p + "self_attn.k_proj.weight"])
            v = linear(h, w[p + "self_attn.v_proj.weight"])
            qs.append([rope(q[i * hd:(i + 1) * hd], pos, theta) for i in range(nh)])
            ks.append([rope(k[i * hd:(i + 1) * hd], pos, theta) for i in range(nkv)])
            vs.append([v[i * hd:(i + 1) * hd] for i in range(nkv)])
        new = []
        for t in range(len(xs)):
            attn = []
            for head in range(nh):
                kv = head // g
                sc = [sum(a * b for a, b in zip(qs[t][head], ks[s][kv])) / math.sqrt(hd) for s in range(t + 1)]
                m = max(sc)
                e = [math.exp(x - m) for x in sc]
                z = sum(e)
                attn += [sum(e[s] / z * vs[s][kv][d] for s in range(t + 1)) for d in range(hd)]
            x = [a + b for a, b in zip(xs[t], linear(attn, w[p + "self_attn.o_proj.weight"]))]
            h2 = rmsnorm(x, w[p + "post_attention_layernorm.weight"], eps)
            gate = linear(h2, w[p + "mlp.gate_proj.weight"])
            up = linear(h2, w[p + "mlp.up_proj.weight"])
            act = [gv / (1.0 + math.exp(-gv)) * u for gv, u in zip(gate, up)]
            new.append([a + b for a, b in zip(x, linear(act, w[p + "mlp.down_proj.weight"]))])
        xs = new
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return linear(rmsnorm(xs[-1], w["model.norm.weight"], eps), head)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--triescope", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--new", type=int, default=6)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cfg = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 72, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "tie_word_embeddings": False}
    cfg_path = os.path.join(args.out, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    model_dir = os.path.join(args.out, "model")
    subprocess.run([args.triescope, "make-checkpoint", cfg_path, model_dir, "--seed", "5", "--init-std", "0.3"],
                   check=True, stdout=subprocess.DEVNULL)
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    prompt = [3, 17, 42, 8, 61, 5, 30]
    toks, total = list(prompt), 0.0
    for _ in range(args.new):
        lg = logits_last(cfg, w, toks)
        m = max(lg)
        lse = m + math.log(sum(math.exp(v - m) for v in lg))
        best = max(range(len(lg)), key=lambda i: (lg[i], -i))
        total += lg[best] - lse
        toks.append(best)
    ref = toks[len(prompt):]
    ok = True
    for algo in ("trie_beam_search", "batch_beam_search"):
        sample = {"schema": "triescope.sample", "version": 1, "name": "python reference", "algorithm": algo,
                  "model": {"type": "transformer", "path": os.path.abspath(model_dir)}, "prompt": prompt,
                  "beam": {"num_beams": 1, "max_new_tokens": args.new, "eos_token": -1, "length_penalty": 1.0,
                           "early_stopping": "never"}}
        sp = os.path.join(args.out, algo + ".json")
        tp = os.path.join(args.out, algo + ".trace.jsonl")
        with open(sp, "w") as f:
            json.dump(sample, f)
        subprocess.run([args.triescope, "run", sp, "--out", tp, "--quiet"], check=True)
        with open(tp) as f:
            best = [json.loads(l) for l in f if l.strip()][-1]["outputs"][0]
        d = abs(best["sum_logprobs"] - total)
        same = best["tokens"] == ref
        print(f"{algo}: tokens {'==' if same else '!='} reference {ref}; sum_logprobs {best['sum_logprobs']:.6f} vs "
              f"{total:.6f} (|diff| {d:.2e})")
        ok = ok and same and d <= 1e-4
    print("llama_reference:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
