"""Opening a trace in the inspector (triescope-gui) from Python."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
from typing import Optional, Union


def _gui_binary() -> Optional[pathlib.Path]:
    # The package lives in <build>/python/triescope; the inspector in <build>/gui.
    built = pathlib.Path(__file__).resolve().parents[2] / "gui" / "triescope-gui"
    if built.exists():
        return built
    found = shutil.which("triescope-gui")
    return pathlib.Path(found) if found else None


def open_in_gui(trace: Union[str, os.PathLike], wait: bool = False) -> Optional[subprocess.Popen]:
    """Opens `trace` in triescope-gui when a display is present; returns the process, or None
    (no display, or no inspector in this build) after saying why."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        print(f"triescope: no display; open it later with: triescope-gui {trace}")
        return None
    gui = _gui_binary()
    if gui is None:
        print("triescope: triescope-gui is not built (TRIESCOPE_BUILD_GUI needs Qt 6 and Graphviz)")
        return None
    proc = subprocess.Popen([str(gui), str(trace)])
    if wait:
        proc.wait()
    return proc
