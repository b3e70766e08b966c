"""`%load_ext sparkscope`: one Notebook per IPython shell (kernel.py), its magics (magics.py) and its display()
(streams.py), put together when the extension loads and taken apart when it unloads."""

from __future__ import annotations

from typing import Any

from .kernel import Notebook
from .magics import Magics
from .streams import NotebookDisplay

_loaded: dict[int, tuple[Notebook, Magics]] = {}  # one per IPython shell


def load(shell: Any) -> None:
    if id(shell) in _loaded:
        return
    notebook = Notebook(shell)
    magics = Magics(notebook)
    magics.register()
    notebook.load(display=NotebookDisplay(notebook))
    _loaded[id(shell)] = (notebook, magics)


def unload(shell: Any) -> None:
    """Everything load put in the shell, taken away, and what it replaced, given back; a later load starts anew."""
    loaded = _loaded.pop(id(shell), None)
    if loaded is not None:
        notebook, magics = loaded
        magics.unregister()
        notebook.unload()
