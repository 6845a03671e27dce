"""bench/bench_hf.py runs (tiny sizes) and its table says what the docs read from it:
one row per implementation and b, the same sequences as HF, and KV bytes that
follow from the shapes (HF and our batch layout hold b copies of prompt + output), by
the peer protocol (bench/peer_protocol.py, tested in test_peer_protocol.py)."""
import subprocess
import sys


def test_bench_hf_smoke(tmp_path, source_dir, triescope_cli):
    prompt, new, layers, hidden = 16, 6, 2, 64
    r = subprocess.run([sys.executable, str(source_dir / "bench" / "bench_hf.py"), "--triescope", str(triescope_cli),
                        "--work", str(tmp_path), "--layers", str(layers), "--hidden", str(hidden), "--vocab", "256",
                        "--prompt", str(prompt), "--new", str(new), "--beams", "3,5", "--gc", "2", "--runs", "3", "--reps", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in r.stdout.splitlines()
            if line.startswith("| 3 ") or line.startswith("| 5 ")]
    assert [(row[0], row[1]) for row in rows] == [(b, n) for b in ("3", "5")
                                                  for n in ("HF generate", "trie beam search", "batch beam search")], r.stdout
    assert all(row[6] == "yes" for row in rows), r.stdout
    # The protocol's trail: thread counts, and the load before each of the 3 runs per b.
    assert r.stdout.count("threads: HF generate 1, trie beam search 1, batch beam search 1") == 2, r.stdout
    assert sum("load average" in line for line in r.stdout.splitlines()) == 6, r.stdout
    slot = layers * 2 * 2 * (hidden // 4) * 4  # layers x (K, V) x kv_heads x head_dim x fp32
    for row in rows:
        b = int(row[0])
        kv = float(row[2]) * 2**20
        if row[1] == "HF generate":  # the last token is never fed
            assert abs(kv - b * (prompt + new - 1) * slot) < 0.0001 * 2**20, row
        if row[1] == "batch beam search":
            assert abs(kv - b * (prompt + new) * slot) < 0.0001 * 2**20, row
        if row[1] == "trie beam search":
            assert kv < b * (prompt + new) * slot, row
