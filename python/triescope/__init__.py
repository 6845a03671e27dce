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
    StaticDecoder,
    StepView,
    Trace,
    TraceWriter,
    Violation,
    check,
)
from ._core import __version__  # what `triescope --version` prints (core/common/version.h)
from typing import TYPE_CHECKING

from .gui import open_in_gui

if TYPE_CHECKING:  # for type checkers; at run time they load on first use (below)
    from .hf import StaticLogitsProcessor, from_hf_generate

_HF = ("StaticLogitsProcessor", "from_hf_generate")


def __getattr__(name: str):
    # The Hugging Face glue imports transformers (seconds): only when it is asked for.
    if name in _HF:
        from . import hf

        return getattr(hf, name)
    raise AttributeError(f"module 'triescope' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_HF))

__all__ = [
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "CheckReport",
    "ConstraintIndex",
    "Error",
    "Forward",
    "Node",
    "StaticDecoder",
    "StepView",
    "StaticLogitsProcessor",
    "Trace",
    "TraceWriter",
    "Violation",
    "check",
    "from_hf_generate",
    "open_in_gui",
]
