#!/usr/bin/env python3
"""Parity of TrieScope's beam search with Hugging Face transformers.

Saves a small random Llama with transformers (safetensors), runs
generate(num_beams=b, do_sample=False, length_penalty=1.0) on it, then runs
`triescope run` (trie and batch beam search) on the same directory and prompt
and compares the returned sequences and scores.

Only runs where `transformers` and `torch` are installed (the GPU machine);
elsewhere it prints why and exits 77 (the ctest skip code).

  python3 tools/hf_parity.py --triescope build/app/triescope --out /tmp/hf_parity \
      [--beams 3,9,15] [--new 24] [--seed 0] [--layers 2] [--hidden 64] [--heads 4] [--kv-heads 2] [--vocab 512]
"""
import argparse
import json
import os
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triescope", required=True, help="path to the triescope binary (built with LibTorch)")
    ap.add_argument("--out", required=True, help="work directory")
    ap.add_argument("--beams", default="3,9,15")
    ap.add_argument("--new", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--prompt-len", type=int, default=16)
    args = ap.parse_args()
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as e:
        print(f"hf_parity: skipped: {e}")
        return 77

    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    model_dir = os.path.join(args.out, "model")
    cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.hidden * 3,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads, max_position_embeddings=1024, rms_norm_eps=1e-6,
                      rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=None, eos_token_id=None,
                      pad_token_id=0, initializer_range=0.2)
    model = LlamaForCausalLM(cfg).eval().to(torch.float32)
    model.save_pretrained(model_dir, safe_serialization=True)
    g = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(1, args.vocab, (1, args.prompt_len), generator=g)
    failures = 0
    for b in [int(x) for x in args.beams.split(",")]:
        with torch.no_grad():
            out = model.generate(prompt, num_beams=b, num_return_sequences=b, do_sample=False, length_penalty=1.0,
                                 early_stopping=False, max_new_tokens=args.new,
                                 output_scores=True, return_dict_in_generate=True, pad_token_id=0,
                                 eos_token_id=None)
        hf = [seq[args.prompt_len:].tolist() for seq in out.sequences]
        hf_scores = out.sequences_scores.tolist()
        results = {}
        for algo in ("trie_beam_search", "batch_beam_search"):
            sample = {"schema": "triescope.sample", "version": 1, "name": f"hf parity b={b}", "algorithm": algo,
                      "model": {"type": "transformer", "path": os.path.abspath(model_dir), "attention": "auto"},
                      "prompt": prompt[0].tolist(),
                      "beam": {"num_beams": b, "max_new_tokens": args.new, "eos_token": -1, "length_penalty": 1.0,
                               "early_stopping": "never", "gc_interval": 8 if algo == "trie_beam_search" else 0}}
            sp = os.path.join(args.out, f"{algo}_b{b}.json")
            tp = os.path.join(args.out, f"{algo}_b{b}.trace.jsonl")
            with open(sp, "w") as f:
                json.dump(sample, f)
            subprocess.run([args.triescope, "run", sp, "--out", tp, "--quiet"], check=True)
            with open(tp) as f:
                summary = [json.loads(l) for l in f if l.strip()][-1]
            results[algo] = summary["outputs"]
        for algo, outs in results.items():
            ours = [o["tokens"] for o in outs]
            scores = [o["score"] for o in outs]
            same = ours == hf
            close = same and all(abs(a - c) <= 1e-3 for a, c in zip(scores, hf_scores))
            print(f"b={b} {algo}: sequences {'==' if same else '!='} HF generate; "
                  f"scores {'within 1e-3' if close else 'differ'} (ours {scores[:3]}..., HF {hf_scores[:3]}...)")
            failures += 0 if close else 1
    print("hf_parity:", "PASS" if failures == 0 else f"FAIL ({failures})")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
