"""`%load_ext sparkscope`: one NotebookFrontEnd per IPython shell (kernel.py), its magics (magics.py) and its display()
(streams.py), put together when the extension loads and taken apart when it unloads."""

from __future__ import annotations

from typing import Any

from .kernel import NotebookFrontEnd
from .magics import TakenMagics, register
from .streams import NotebookDisplay

_loaded: dict[int, tuple[NotebookFrontEnd, TakenMagics]] = {}  # one per IPython shell


def load(shell: Any) -> None:
    if id(shell) in _loaded:
        return
    notebook = NotebookFrontEnd(shell)
    taken = register(shell, notebook)
    notebook.load(display=NotebookDisplay(notebook))
    _loaded[id(shell)] = (notebook, taken)


def unload(shell: Any) -> None:
    """Everything load put in the shell, taken away, and what it replaced, given back; a later load starts anew."""
    loaded = _loaded.pop(id(shell), None)
    if loaded is not None:
        notebook, taken = loaded
        taken.give_back()
        notebook.unload()
