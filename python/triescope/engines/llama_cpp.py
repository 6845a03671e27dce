"""llama.cpp (through llama-cpp-python 0.3.36's C API) as an engine.

A tree pass is one `llama_batch`: every node at its position with its seq ids
(by default the leaf sequences below it), the prompt decoded as seq 0 and
copied into every other seq id the nodes use (`llama_memory_seq_cp`), in a
context with `kv_unified = true` (llama_decode refuses coupled sequences
without it).

Which seq id is "first" is llama.cpp's, not the caller's: this version keeps a
batch token's seq ids in a std::unordered_set (src/llama-batch.cpp), so the mask
rule reads that set's iteration order, reproduced here by the same libstdc++
(`triescope._core.unordered_set_order`); with a few small ids it is the
REVERSE of the order the caller listed them in. A correct layout does not care
(every leaf below a node gives the node's path); a wrong one does.

The KV layout is read back from the engine, not assumed: `llama_state_get_data`
(internal format of this version, llama_kv_cache::state_write) starts with the
model's arch, the stream count and, per stream, every occupied cell's position
and seq ids in cell order. The mask the engine applied is llama.cpp's rule
(src/llama-kv-cache.cpp, set_input_kq_mask, in this version): a token sees a
cell iff the cell holds the token's FIRST seq id and the cell's position is
<= the token's.
"""
from __future__ import annotations

import ctypes
import pathlib
import struct
from typing import Dict, List, Sequence, Tuple

import numpy as np

from .. import _core
from .engine import Engine, TreePass
from .layout import Layout, LayoutError

PINNED_VERSION = "0.3.36"
# Architectures whose cells carry no extension in the state blob (has_cell_ext() false).
READABLE_ARCHS = ("llama",)
KV_TYPES = {"f32": 0, "f16": 1, "q8_0": 8}
# Tokens per micro-batch. From 64 queries on, llama.cpp's CPU flash attention switches to a
# tiled kernel whose sums depend on which cells share a tile: a batch of that size is no
# longer bit-equal to token-by-token decoding (found with core/model/llama_cpp). A tree or
# prompt longer than this runs as several micro-batches in batch order, parents first.
N_UBATCH = 32
FLASH_ATTN = {"on": 1, "off": 0, "auto": -1}


# What llama.cpp logged last (its log callback is process-wide: one callback for the
# process, kept alive here, so no engine's garbage collection leaves llama.cpp a
# dangling function pointer).
_LOG: List[str] = []
_LOG_CALLBACK = None


def _on_log(level, text, user_data) -> None:
    _LOG.append(text.decode("utf-8", "replace") if text else "")
    del _LOG[:-200]


def _capture_log(lc) -> None:
    global _LOG_CALLBACK
    if _LOG_CALLBACK is None:
        _LOG_CALLBACK = lc.llama_log_callback(_on_log)
        lc.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))


class EngineRefused(RuntimeError):
    """llama_decode refused the batch; the message carries what llama.cpp logged."""


Cell = Tuple[int, Tuple[int, ...]]  # (pos, seq ids)


class StateReader:
    """The cell metadata at the start of a llama_state_get_data blob (this version's format)."""

    def __init__(self, blob: bytes, n_ctx: int):
        self.blob, self.off, self.n_ctx = blob, 0, n_ctx

    def _take(self, fmt: str, what: str):
        size = struct.calcsize(fmt)
        if self.off + size > len(self.blob):
            raise RuntimeError(f"llama.cpp state blob: ends inside {what} at byte {self.off} (format of {PINNED_VERSION} expected)")
        v = struct.unpack_from(fmt, self.blob, self.off)
        self.off += size
        return v[0] if len(v) == 1 else v

    def cells(self) -> Tuple[str, List[Cell]]:
        n = self._take("<I", "the arch string's length")
        if n > 64:
            raise RuntimeError(f"llama.cpp state blob: arch string of {n} bytes (format of {PINNED_VERSION} expected)")
        arch = self.blob[self.off:self.off + n].decode("ascii", "replace")
        self.off += n
        streams = self._take("<I", "the stream count")
        if streams != 1:
            raise RuntimeError(f"llama.cpp state blob: {streams} KV streams; a unified cache has 1")
        count = self._take("<I", "the cell count")
        if count > self.n_ctx:
            raise RuntimeError(f"llama.cpp state blob: {count} cells in a context of {self.n_ctx}")
        out = []
        for c in range(count):
            pos, n_seq = self._take("<iI", f"cell {c}")
            if n_seq > 256:
                raise RuntimeError(f"llama.cpp state blob: cell {c} lists {n_seq} seq ids (at most 256)")
            seqs = struct.unpack_from(f"<{n_seq}i", self.blob, self.off) if n_seq else ()
            self.off += 4 * n_seq
            out.append((pos, tuple(seqs)))
        return arch, out


def first_seq(seq_ids: Sequence[int]) -> int:
    """The seq id llama.cpp's mask rule uses for a token given these seq ids."""
    return _core.unordered_set_order(list(seq_ids))[0]


def visible_cells(cells: Sequence[Cell], first_seq: int, pos: int) -> List[int]:
    """llama.cpp's mask rule: the cells a token with this first seq id and position reads."""
    return [k for k, (p, seqs) in enumerate(cells) if first_seq in seqs and p <= pos]


class LlamaCppEngine(Engine):
    name = "llama.cpp"

    def __init__(self, model_path: str, flash_attn: str = "on", kv_type: str = "f16", threads: int = 0,
                 n_ctx: int = 4096):
        import llama_cpp as lc

        if lc.__version__ != PINNED_VERSION:
            raise RuntimeError(f"llama-cpp-python {lc.__version__}: the state reader and mask rule are pinned to {PINNED_VERSION}")
        if flash_attn not in FLASH_ATTN:
            raise LayoutError(f"--flash-attn: one of {', '.join(FLASH_ATTN)}, got {flash_attn!r}")
        if kv_type not in KV_TYPES:
            raise LayoutError(f"--kv-type: one of {', '.join(KV_TYPES)}, got {kv_type!r}")
        if not pathlib.Path(model_path).is_file():
            raise LayoutError(f"{model_path}: --model: no such file")
        self.lc, self.path, self.n_ctx = lc, model_path, n_ctx
        _capture_log(lc)
        lc.llama_backend_init()
        self.model = lc.llama_model_load_from_file(model_path.encode(), lc.llama_model_default_params())
        if not self.model:
            raise LayoutError(f"{model_path}: llama.cpp could not load the model: {self._last_log()}")
        self.arch = self._meta("general.architecture")
        if self.arch not in READABLE_ARCHS:
            raise LayoutError(f"{model_path}: architecture {self.arch!r}: the KV read-back knows {READABLE_ARCHS} only")
        self.vocab = lc.llama_model_get_vocab(self.model)
        self.n_vocab = lc.llama_vocab_n_tokens(self.vocab)
        self.flash_attn, self.kv_type, self.threads = flash_attn, kv_type, threads
        self.ctx = self._context()

    # --- set-up --------------------------------------------------------------
    @staticmethod
    def _last_log() -> str:
        return " ".join(t.strip() for t in _LOG[-6:] if t.strip())

    def _meta(self, key: str) -> str:
        buf = ctypes.create_string_buffer(256)
        n = self.lc.llama_model_meta_val_str(self.model, key.encode(), buf, 256)
        return buf.value.decode() if n >= 0 else ""

    def _context(self):
        lc = self.lc
        p = lc.llama_context_default_params()
        p.n_ctx = p.n_batch = self.n_ctx
        p.n_ubatch = N_UBATCH
        p.n_seq_max = 256
        p.kv_unified = True
        p.flash_attn_type = FLASH_ATTN[self.flash_attn]
        p.type_k = p.type_v = KV_TYPES[self.kv_type]
        if self.threads > 0:
            p.n_threads = p.n_threads_batch = self.threads
        self._threads_used = p.n_threads
        ctx = lc.llama_init_from_model(self.model, p)
        if not ctx:
            raise RuntimeError(f"llama.cpp refused the context settings: {self._last_log()}")
        return ctx

    # --- Engine ----------------------------------------------------------------
    def vocab_size(self) -> int:
        return self.n_vocab

    def vocab_labels(self) -> List[str]:
        buf = ctypes.create_string_buffer(256)
        out = []
        for t in range(self.n_vocab):
            n = self.lc.llama_token_to_piece(self.vocab, t, buf, 256, 0, True)
            out.append(buf.raw[:max(n, 0)].decode("utf-8", "replace"))
        return out

    def tokenize(self, text: str) -> List[int]:
        raw = text.encode()
        arr = (self.lc.llama_token * (len(raw) + 8))()
        n = self.lc.llama_tokenize(self.vocab, raw, len(raw), arr, len(arr), False, True)
        return list(arr[:n])

    def provenance(self) -> Dict:
        return {"engine": "llama.cpp", "engine_version": f"llama-cpp-python {self.lc.__version__}",
                "arch": self.arch, "path": self.path,
                "system_info": self.lc.llama_print_system_info().decode().strip()}

    def settings(self) -> Dict:
        return {"engine": "llama.cpp", "kv_unified": True, "n_ubatch": N_UBATCH, "flash_attn": self.flash_attn, "type_k": self.kv_type,
                "type_v": self.kv_type, "n_threads": self._threads_used,
                "mask_rule": "a token sees a cell iff the cell holds its first seq id (in llama.cpp's unordered_set order) "
                             "and the cell's pos <= its pos",
                "prompt": "decoded as seq 0, then llama_memory_seq_cp into every other seq id the nodes use"}

    def complete(self, layout: Layout) -> Layout:
        if layout.mask is not None:
            raise LayoutError(f"{layout.origin}: mask: llama.cpp builds its mask from seq ids and positions; "
                              "`mask` is for the Hugging Face engine")
        return layout.completed()

    # --- decoding ----------------------------------------------------------------
    def _decode(self, tokens: Sequence[int], positions: Sequence[int], seqs: Sequence[Sequence[int]],
                logits: Sequence[bool]) -> None:
        lc = self.lc
        n = len(tokens)
        batch = lc.llama_batch_init(n, 0, max(len(s) for s in seqs))
        try:
            for i in range(n):
                batch.token[i], batch.pos[i], batch.logits[i] = tokens[i], positions[i], bool(logits[i])
                batch.n_seq_id[i] = len(seqs[i])
                for k, s in enumerate(seqs[i]):
                    batch.seq_id[i][k] = s
            batch.n_tokens = n
            _LOG.clear()
            rc = lc.llama_decode(self.ctx, batch)
            if rc != 0:
                raise EngineRefused(f"llama_decode refused the batch (returned {rc}): {self._last_log()}")
        finally:
            lc.llama_batch_free(batch)

    def _logits(self, i: int) -> np.ndarray:
        ptr = self.lc.llama_get_logits_ith(self.ctx, i)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()

    def _clear(self) -> None:
        self.lc.llama_memory_clear(self.lc.llama_get_memory(self.ctx), True)

    def read_cells(self) -> List[Cell]:
        size = self.lc.llama_state_get_size(self.ctx)
        buf = (ctypes.c_uint8 * size)()
        n = self.lc.llama_state_get_data(self.ctx, buf, size)
        arch, cells = StateReader(bytes(buf[:n]), self.n_ctx).cells()
        if arch != self.arch:
            raise RuntimeError(f"llama.cpp state blob: arch {arch!r}, the model is {self.arch!r}")
        return cells

    def _prefill(self, prompt: Sequence[int]) -> np.ndarray:
        self._clear()
        p = len(prompt)
        self._decode(prompt, range(p), [[0]] * p, [k == p - 1 for k in range(p)])
        return self._logits(p - 1)

    def tree_pass(self, layout: Layout) -> TreePass:
        p, nodes = len(layout.prompt), layout.nodes
        prompt_logits = self._prefill(layout.prompt)
        prompt_cells = self.read_cells()
        prompt_mask = _rows(prompt_cells, [(0, k) for k in range(p)], len(prompt_cells))
        mem = self.lc.llama_get_memory(self.ctx)
        for s in sorted({s for n in nodes for s in n.seq} - {0}):
            self.lc.llama_memory_seq_cp(mem, 0, s, -1, -1)
        self._decode([n.token for n in nodes], [n.pos for n in nodes], [n.seq for n in nodes], [True] * len(nodes))
        logits = np.stack([self._logits(i) for i in range(len(nodes))])
        cells = self.read_cells()
        node_slots = _match_cells(cells, p, [(n.pos, tuple(sorted(n.seq))) for n in nodes])
        queries = [(first_seq(n.seq), n.pos) for n in nodes]
        engine = {"cells": [{"slot": k, "pos": c[0], "seq": list(c[1])} for k, c in enumerate(cells)],
                  "cells_note": "read back from llama_state_get_data; slot = the cell's rank among occupied cells"}
        return TreePass(logits, prompt_logits, list(range(p)), node_slots, prompt_mask,
                        _rows(cells, queries, len(cells)), [n.pos for n in nodes], engine)

    def sequential(self, prompt: Sequence[int], paths: Sequence[Sequence[int]], whole: bool) -> np.ndarray:
        out = []
        for path in paths:
            if whole:
                toks = list(prompt) + list(path)
                self._clear()
                self._decode(toks, range(len(toks)), [[0]] * len(toks), [k == len(toks) - 1 for k in range(len(toks))])
                out.append(self._logits(len(toks) - 1))
                continue
            self._prefill(prompt)
            for k, t in enumerate(path):
                self._decode([t], [len(prompt) + k], [[0]], [True])
            out.append(self._logits(0))
        return np.stack(out)

    def close(self) -> None:
        if getattr(self, "ctx", None):
            self.lc.llama_free(self.ctx)
            self.ctx = None
        if getattr(self, "model", None):
            self.lc.llama_model_free(self.model)
            self.model = None


def _rows(cells: Sequence[Cell], queries: Sequence[Tuple[int, int]], cols: int) -> np.ndarray:
    """Mask rows by llama.cpp's rule: query (first seq id, pos) over the cells."""
    out = np.zeros((len(queries), cols), dtype=bool)
    for r, (seq, pos) in enumerate(queries):
        out[r, visible_cells(cells, seq, pos)] = True
    return out


def _match_cells(cells: Sequence[Cell], prompt: int, wanted: Sequence[Cell]) -> List[int]:
    """The cell each batch token landed in: the cells past the prompt's, in batch
    order, each checked against the (pos, seq ids) the batch gave it."""
    if len(cells) != prompt + len(wanted):
        raise RuntimeError(f"llama.cpp holds {len(cells)} cells after the tree pass; expected {prompt} prompt + {len(wanted)} node cells")
    slots = []
    for i, want in enumerate(wanted):
        got = cells[prompt + i]
        if got != want:
            raise RuntimeError(f"node {i}: its cell (slot {prompt + i}) holds pos {got[0]}, seq {list(got[1])}; "
                               f"the batch gave pos {want[0]}, seq {list(want[1])}")
        slots.append(prompt + i)
    return slots
