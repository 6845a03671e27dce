#!/usr/bin/env python3
"""Trie and batch beam search beside Hugging Face generate(num_beams=b), by the peer protocol.

One seeded random Llama saved by transformers; for each b: HF
generate(num_beams=b, num_return_sequences=b, do_sample=False, no EOS,
early_stopping="never") and `triescope run` (trie, then batch beam search) on
the same checkpoint, prompt, device and thread count, interleaved rep by rep
(bench/peer_protocol.py: warm-up, --runs >= 3 runs of --reps reps, load
average before each run, sequences asserted equal to HF's: exit 1 on any
difference). Prints a Markdown table.

- seconds: HF, the generate() call; ours, the decode as the trace's summary
  times it (prefill included, model load and process start excluded, trace
  recording included). tokens/s = b x steps / seconds: the median over runs
  of the per-run median, with its min .. max over the runs.
- CPU seconds: HF, this thread's CPU time in generate() (torch's other
  threads not counted: run with --threads 1); ours, the child process's user +
  system time, model load and process start included (an upper bound).
- peak KV bytes: HF, the bytes of the key and value tensors of the cache
  generate() returns (it only grows: its final size is its peak); ours, the
  trace's peak_bytes (peak slots in use x bytes per slot; the cache tensor's
  capacity grows by doubling between compactions, so it can hold up to 2x).
- --device cuda runs generate() and our LibTorch model on the GPU (the
  sample's model "device": "cuda"); ours needs a build with CUDA LibTorch.

  .cache/venv/bin/python bench/bench_hf.py --triescope build/app/triescope --work /tmp/bench_hf \\
      [--layers 4] [--hidden 256] [--vocab 4096] [--prompt 512] [--new 128] [--beams 3,9,15] [--gc 16] [--threads 1] \\
      [--device cpu|cuda] [--runs 3] [--reps 3] [--warmup 1]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peer_protocol  # noqa: E402


def hf_cache_bytes(past) -> int:
    if hasattr(past, "key_cache"):  # DynamicCache
        tensors = list(past.key_cache) + list(past.value_cache)
    else:  # legacy tuple of (key, value) per layer
        tensors = [t for layer in past for t in layer]
    return sum(t.numel() * t.element_size() for t in tensors)


def ours(args, work, model_dir, algo, prompt, b):
    sample = {"schema": "triescope.sample", "version": 1, "name": f"bench_hf {algo} b={b}", "algorithm": algo,
              "model": {"type": "transformer", "path": str(model_dir), "device": args.device}, "prompt": prompt,
              "beam": {"num_beams": b, "max_new_tokens": args.new, "eos_token": -1, "length_penalty": 1.0,
                       "early_stopping": "never", "gc_interval": args.gc if algo == "trie_beam_search" else 0}}
    sp, tp = work / f"{algo}_b{b}.json", work / f"{algo}_b{b}.trace.jsonl"
    sp.write_text(json.dumps(sample))
    subprocess.run([args.triescope, "run", str(sp), "--out", str(tp), "--quiet"], check=True)
    with open(tp, "rb") as f:
        f.seek(max(0, os.path.getsize(tp) - (1 << 22)))
        summary = json.loads(f.read().decode(errors="replace").strip().splitlines()[-1])
    m = summary["metrics"]
    # The trie sample also runs the batch baseline after the trie decode; the summary times the trie alone.
    return {"seconds": summary["seconds"], "tokens": b * m["steps"], "kv": m["peak_bytes"],
            "seqs": [o["tokens"] for o in summary["outputs"]]}


def side(name, threads, fn, store):
    """A protocol side: its output is the sequences; `store` keeps the last call's figures."""
    def call():
        r = fn()
        store[name] = r
        return r["seqs"], r.get("own_seconds"), None
    return peer_protocol.Side(name, call, threads)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triescope", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--beams", default="3,9,15")
    ap.add_argument("--gc", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args()
    # Same threads for both: ATen's OpenMP pool and OpenBLAS's own, set before either library loads,
    # and our beam step's selection pool (our runs inherit the environment).
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    os.environ["TRIESCOPE_HOST_THREADS"] = str(args.threads)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.set_num_threads(args.threads)
    work = pathlib.Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=(args.hidden * 8 // 3 + 63) // 64 * 64,
                      num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=args.prompt + args.new + 8, rms_norm_eps=1e-6, rope_theta=10000.0,
                      tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(cfg).eval()
    model_dir = work / "model"
    model.save_pretrained(model_dir, safe_serialization=True)
    dev = torch.device(args.device)
    model.to(dev)
    g = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(0, args.vocab, (args.prompt,), generator=g).tolist()
    ids = torch.tensor([prompt], device=dev)
    torch.ones(2, 2) @ torch.ones(2, 2)  # the BLAS actually loaded (an alternative, or LD_LIBRARY_PATH's)
    with open("/proc/self/maps") as f:
        blas = sorted({line.split()[-1] for line in f if "blas" in line.split()[-1]})
    print(f"model: layers {args.layers}, hidden {args.hidden}, 4 heads, 2 KV heads, vocab {args.vocab}, fp32, device {args.device}; "
          f"prompt {args.prompt}, {args.new} new tokens, no EOS, trie gc {args.gc}; threads {args.threads} (torch "
          f"{torch.get_num_threads()}); torch {torch.__version__}; BLAS loaded: {', '.join(blas)}")

    def hf(b, new):
        with torch.no_grad():
            if args.device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model.generate(ids, attention_mask=torch.ones_like(ids), num_beams=b, num_return_sequences=b, do_sample=False,
                                 early_stopping="never", length_penalty=1.0, max_new_tokens=new, eos_token_id=None,
                                 pad_token_id=0, return_dict_in_generate=True)
            if args.device == "cuda":
                torch.cuda.synchronize()
            s = time.perf_counter() - t0
        steps = out.sequences.shape[1] - args.prompt
        return {"seconds": s, "own_seconds": s, "tokens": b * steps, "kv": hf_cache_bytes(out.past_key_values),
                "seqs": [q[args.prompt:].tolist() for q in out.sequences]}

    def trie_or_batch(algo, b):
        r = ours(args, work, model_dir, algo, prompt, b)
        r["own_seconds"] = r["seconds"]
        return r

    print("| b | implementation | peak KV MiB | seconds | tokens/s [runs min .. max] | CPU s | same as HF | HF KV / ours | "
          "ours / HF tokens/s [min .. max] |")
    print("|---|---|---|---|---|---|---|---|---|")
    for b in [int(x) for x in args.beams.split(",")]:
        last = {}
        sides = [side("HF generate", torch.get_num_threads(), lambda: hf(b, args.new), last),
                 side("trie beam search", args.threads, lambda: trie_or_batch("trie_beam_search", b), last),
                 side("batch beam search", args.threads, lambda: trie_or_batch("batch_beam_search", b), last)]
        peer_protocol.run(sides, reps=args.reps, warmup=args.warmup, runs=args.runs, label=f"b = {b}: ")
        hf_side = sides[0]
        h = last["HF generate"]
        for s in sides:
            r = last[s.name]
            tokens = r["tokens"]
            secs = peer_protocol.spread(s.wall)
            tps = {"median": tokens / secs["median"], "min": tokens / secs["max"], "max": tokens / secs["min"]}
            cpu = peer_protocol.spread(s.cpu)
            ratio = ""
            if s is not hf_side:
                speed = peer_protocol.ratio_range(hf_side.wall, s.wall)  # ours / HF tokens/s = HF seconds / our seconds
                ratio = f"{h['kv'] / r['kv']:.2f}x | {peer_protocol.fmt(speed, 'x', 2)}"
            print(f"| {b} | {s.name} | {r['kv'] / 2**20:.4f} | {secs['median']:.2f} | {peer_protocol.fmt(tps)} | {cpu['median']:.2f} | "
                  f"yes | {ratio or ' | '} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
