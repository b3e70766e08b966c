"""Pure logic of repl/render: no server."""

from __future__ import annotations

import datetime as dt
import json


from sparkscope.repl.output.render import cell, render_table, render_vertical, to_json
from sparkscope.repl.output.results import Table


def test_rendering():
    ts = dt.datetime(2018, 3, 2, 10, 10)
    table = Table(["window", "action", "count"], [[{"start": ts, "end": ts}, "open", 2], [None, "x" * 300, 1]])
    text = render_table(table, width=80)
    assert "{2018-03-02 10:10:00, 2018-03-02 10:10:00}" in render_table(table, width=400)
    assert "NULL" in text and "…" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "(2 rows)" in text
    assert "-[ RECORD 1 ]" in render_vertical(table)
    assert json.loads(to_json("peek", table))["rows"][0]["action"] == "open"
    assert cell(1.5) == "1.5"
