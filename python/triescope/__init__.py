"""TrieScope from Python: record and check any engine's tree attention masks, STATIC as a
Hugging Face logits processor, and Hugging Face generate() runs opened in the inspector.

Everything here calls TrieScope's C++ core (the module ``triescope._core``); see docs/python.md.
"""
from ._core import (
    TRACE_FORMAT,
    TRACE_VERSION,
    CheckReport,
    ConstraintIndex,
    Error,
    Forward,
    Node,
    StepView,
    Trace,
    TraceWriter,
    Violation,
    check,
)
from .hf import StaticLogitsProcessor, from_hf_generate
from .gui import open_in_gui

__all__ = [
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "CheckReport",
    "ConstraintIndex",
    "Error",
    "Forward",
    "Node",
    "StepView",
    "StaticLogitsProcessor",
    "Trace",
    "TraceWriter",
    "Violation",
    "check",
    "from_hf_generate",
    "open_in_gui",
]
