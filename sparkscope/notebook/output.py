"""A result as a notebook shows it: HTML for a notebook, the terminal's text for a console, and the JSON that
--format json prints under a type of sparkscope's own (JSON_TYPE), for a program that reads the notebook: a front end
shows the HTML (JupyterLab would draw plain application/json as a tree in its place). The rendering itself is
core/rendering's."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from ..core.rendering.html import to_html
from ..core.rendering.render import render, to_json
from ..core.rendering.results import Block, Message, Table


JSON_TYPE = "application/vnd.sparkscope.result+json"


class NotebookResult:
    """A command's result, for IPython's display(); `spell` names colon commands as this kernel's magics."""

    def __init__(self, name: str, result: Any, spell: Callable[[str], str] = str):
        self.name = name
        self.result = _spelled(result, spell)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": render(self.result), "text/html": to_html(self.result),
                JSON_TYPE: json.loads(to_json(self.name, self.result))}

    def __repr__(self) -> str:
        return render(self.result)


def _spelled(result: Any, spell: Callable[[str], str]) -> Any:
    """The same result, its words (a message, a table's title and footer) naming colon commands as magics."""
    if isinstance(result, list):
        return [_spelled(item, spell) for item in result]
    if isinstance(result, (Message, Block)):
        return dataclasses.replace(result, text=spell(result.text))
    if isinstance(result, Table):
        return dataclasses.replace(result, title=spell(result.title) if result.title else result.title,
                                   footer=spell(result.footer) if result.footer else result.footer)
    return result
