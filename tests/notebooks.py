"""Notebooks run headless for the tests: nbclient executes the cells in a real ipykernel (this venv's Python), and a
cell marked `interrupt_after` (or `interrupt_on`) is interrupted once its output was updated that many times (or
printed what the test waits for): a fact, not a timeout;
how a person stops a display() of a stream by pressing the stop button after watching it change."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import nbformat
from nbclient import NotebookClient

CELL_TIMEOUT = 240  # a cell's own limit; a cell that waits on a stream is interrupted long before, by its updates


class _Interrupting(NotebookClient):
    """nbclient, counting the updates of each cell's displays (update_display_data), and interrupting the kernel in
    a cell whose `interrupt_after` updates have come."""

    def __init__(self, nb: Any, **kwargs: Any):
        super().__init__(nb, **kwargs)
        self.updates: dict[int, list[dict]] = {}  # cell index -> the data of each update, in order
        self._printed: dict[int, str] = {}  # cell index -> the text its streams printed so far
        self._interrupted: set[int] = set()

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg["msg_type"] == "update_display_data":
            self.updates.setdefault(cell_index, []).append(msg["content"].get("data", {}))
        if msg["msg_type"] == "stream":
            self._printed[cell_index] = self._printed.get(cell_index, "") + msg["content"].get("text", "")
        elif msg["msg_type"] in ("display_data", "update_display_data"):  # what its displays showed, too
            shown = msg["content"].get("data", {}).get("text/plain", "")
            self._printed[cell_index] = self._printed.get(cell_index, "") + shown + "\n"
        updates = cell.metadata.get("interrupt_after")
        printed = cell.metadata.get("interrupt_on")
        if cell_index not in self._interrupted and (
                (updates is not None and len(self.updates.get(cell_index, [])) >= updates) or
                (printed is not None and len(re.findall(printed[0], self._printed.get(cell_index, ""))) >= printed[1])):
            self._interrupted.add(cell_index)
            asyncio.ensure_future(self.km.interrupt_kernel())
        return super().process_message(msg, cell, cell_index)


def cell(source: str, interrupt_after: int | None = None, interrupt_on: tuple[str, int] | None = None) -> Any:
    """A code cell; the kernel is interrupted in it once its output was updated `interrupt_after` times, or once
    what it printed or displayed matches the regex interrupt_on[0] interrupt_on[1] times."""
    made = nbformat.v4.new_code_cell(source)
    if interrupt_after is not None:
        made.metadata["interrupt_after"] = interrupt_after
    if interrupt_on is not None:
        made.metadata["interrupt_on"] = list(interrupt_on)
    return made


def run(cells: list[Any], cwd: str | None = None, allow_errors: bool = True) -> tuple[Any, dict[int, list[dict]]]:
    """Execute `cells` in a new kernel; the executed notebook, and the updates each cell's displays got."""
    nb = nbformat.v4.new_notebook(cells=cells)
    client = _Interrupting(nb, timeout=CELL_TIMEOUT, kernel_name="python3", allow_errors=allow_errors,
                           resources={"metadata": {"path": cwd}} if cwd else {})
    client.execute()
    return nb, client.updates


def text_of(executed_cell: Any) -> str:
    """Everything a cell showed, as text: its streams, the text/plain of its results and displays (as they ended),
    and its error's lines."""
    parts = []  # IPython's tracebacks come coloured: the colours go
    for output in executed_cell.get("outputs", []):
        if output["output_type"] == "stream":
            parts.append(output["text"])
        elif output["output_type"] in ("display_data", "execute_result"):
            parts.append(output["data"].get("text/plain", ""))
        elif output["output_type"] == "error":
            parts.append(re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output["traceback"])))
    return "\n".join(parts)


def html_of(executed_cell: Any) -> str:
    return "\n".join(output["data"].get("text/html", "") for output in executed_cell.get("outputs", [])
                     if output["output_type"] in ("display_data", "execute_result"))
