"""Results as HTML, for a notebook's output: the same cells as the terminal's tables (render.cell: NULL, maps as
key -> value, structs, NaN, instants in the session's time zone, control characters as escapes), every one of them
escaped, so that data never becomes markup or script in the page."""

from __future__ import annotations

from html import escape
from typing import Any

from .render import MARKER, cell, table_footer
from .results import Block, Message, Result, Table

WIDE_CELL = 100  # a value longer than this is cut, as a terminal cuts it to fit; the whole value is its tooltip
_STYLE = "white-space: pre-wrap; margin: 0"


def to_html(result: Result) -> str:
    """A command's result (a table, a message, a block, or a list of them) as HTML."""
    if result is None:
        return ""
    if isinstance(result, list):
        return "\n".join(filter(None, (to_html(item) for item in result)))
    if isinstance(result, Table):
        return table_html(result)
    if isinstance(result, (Message, Block)):
        return f'<pre class="sparkscope" style="{_STYLE}">{escape(result.text)}</pre>'
    return f'<pre class="sparkscope" style="{_STYLE}">{escape(str(result))}</pre>'


def table_html(table: Table) -> str:
    whole = table.layout == "whole"
    if table.layout == "vertical":
        return _vertical(table)
    parts = ['<div class="sparkscope">']
    if table.title:
        parts.append(f"<p><b>{escape(table.title)}</b></p>")
    parts.append('<table class="sparkscope"><thead><tr>')
    parts += [f"<th>{escape(column)}</th>" for column in table.columns]
    parts.append("</tr></thead><tbody>")
    for row in table.rows:
        parts.append("<tr>" + "".join(_td(value, whole) for value in row) + "</tr>")
    parts.append("</tbody></table>")
    parts.append(f'<pre style="{_STYLE}">{escape(table_footer(table))}</pre></div>')
    return "".join(parts)


def _td(value: Any, whole: bool) -> str:
    text = cell(value).replace("\n", "\\n")
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    align = ' style="text-align: right"' if numeric else ' style="text-align: left"'
    if whole or len(text) <= WIDE_CELL:
        return f"<td{align}>{escape(text)}</td>"
    return f'<td{align} title="{escape(text)}">{escape(text[:WIDE_CELL - 1] + MARKER)}</td>'


def _vertical(table: Table) -> str:
    """One record at a time (:peek --vertical): a two-column table per record."""
    parts = ['<div class="sparkscope">']
    if table.title:
        parts.append(f"<p><b>{escape(table.title)}</b></p>")
    for index, row in enumerate(table.rows, 1):
        parts.append(f'<table class="sparkscope"><thead><tr><th colspan="2">RECORD {index}</th></tr></thead><tbody>')
        parts += [f"<tr><th>{escape(column)}</th>{_td(value, False)}</tr>"
                  for column, value in zip(table.columns, row, strict=False)]
        parts.append("</tbody></table>")
    parts.append(f'<pre style="{_STYLE}">{escape(table_footer(table))}</pre></div>')
    return "".join(parts)
