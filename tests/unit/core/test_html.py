"""Results as HTML: every value escaped, and each cell as the terminal writes it (render.cell)."""

from __future__ import annotations

import datetime as dt

from sparkscope.client.rows import MapValue
from sparkscope.core.rendering.html import WIDE_CELL, to_html
from sparkscope.core.rendering.results import Block, Message, Table


def test_a_value_never_becomes_markup_or_script():
    table = Table(["<b>name</b>", "note"], [["<script>alert(1)</script>", 'a "quoted" & <i>tag</i>']],
                  title="<h1>t</h1>", footer="<img src=x onerror=alert(2)>")
    html = to_html(table)
    assert "<script>" not in html and "<img" not in html and "<h1>" not in html and "<b>name" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "a &quot;quoted&quot; &amp; &lt;i&gt;tag&lt;/i&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert to_html(Message("<x>")) .endswith("&lt;x&gt;</pre>") and "&lt;y&gt;" in to_html(Block("<y>"))


def test_cells_read_as_the_terminal_writes_them():
    instant = dt.datetime(2024, 1, 1, 10, 0, 0, 250000)
    table = Table(["map", "struct", "nan", "time", "none", "text"],
                  [[MapValue({"a": 1}), {"x": 1, "y": "b"}, float("nan"), instant, None, "line\nnext\tx"]])
    html = to_html(table)
    for shown in ("{a -&gt; 1}", "{1, b}", ">NaN<", ">2024-01-01 10:00:00.250<", ">NULL<", "line\\nnext\\tx"):
        assert shown in html, (shown, html)
    assert html.count("<tr>") == 2 and "(1 row)" in html


def test_a_wide_value_is_cut_as_a_terminal_cuts_it_and_whole_in_its_tooltip():
    wide = "w" * (WIDE_CELL + 50)
    html = to_html(Table(["v"], [[wide]]))
    assert f'title="{wide}"' in html and f">{'w' * (WIDE_CELL - 1)}…</td>" in html
    whole = to_html(Table(["v"], [[wide]], layout="whole"))
    assert f">{wide}</td>" in whole and "title=" not in whole


def test_a_vertical_table_shows_one_record_at_a_time():
    html = to_html(Table(["a", "b"], [[1, "x"], [2, "y"]], layout="vertical"))
    assert html.count("RECORD") == 2 and "<th>a</th>" in html and "(2 rows)" in html
