"""Real engines checked by TrieScope (docs/engines.md).

- ``check_engine(engine, layout, out)``: one tree pass of llama.cpp
  (``llama_cpp.LlamaCppEngine``) or Hugging Face transformers
  (``hf_transformers.HfEngine``), recorded as a trace with the engine's own KV
  layout and mask, checked by ``triescope.check`` and by the differential
  against the same engine's sequential decode.
- ``draft_trees.record_eagle_tree`` / ``record_medusa_tree``: EAGLE's and
  Medusa's tree buffers, built by the released packages, recorded and checked.

Engines are imported only when used; the command line is ``python -m triescope.engines``.
"""
from .check import EngineCheck, check_engine, format_report
from .layout import Layout, LayoutError, TreeNode, layout_from_json, load_layout

__all__ = ["EngineCheck", "Layout", "LayoutError", "TreeNode", "check_engine", "format_report", "layout_from_json",
           "load_layout"]
