"""`%load_ext sparkscope`: one Notebook per IPython shell (kernel.py), its magics (magics.py) and its display()
(streams.py), put together when the extension loads and taken apart when it unloads."""

from __future__ import annotations

from typing import Any

from .kernel import Notebook
from .magics import Magics, databricks_cell
from .streams import NotebookDisplay

_loaded: dict[int, Notebook] = {}  # one per IPython shell


def load(shell: Any) -> None:
    if id(shell) in _loaded:
        return
    notebook = Notebook(shell)
    Magics(notebook).register()
    notebook.load(display=NotebookDisplay(notebook))
    _loaded[id(shell)] = notebook


def unload(shell: Any) -> None:
    notebook = _loaded.pop(id(shell), None)
    if notebook is not None:
        if databricks_cell in shell.input_transformers_cleanup:
            shell.input_transformers_cleanup.remove(databricks_cell)
        notebook.unload()
