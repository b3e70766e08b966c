"""Pure logic of repl/render: no server."""

from __future__ import annotations

import datetime as dt
import json


from sparkscope.core.rendering.render import cell, render_table, render_vertical, to_json
from sparkscope.core.rendering.results import Table
from sparkscope.core.rendering.render import fit_widths, render


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


def test_fit_widths_is_linear_and_fits():
    rows = [["h"] * 200, ["x" * 10_000] * 200]
    widths = fit_widths(rows, 3000)
    assert sum(widths) <= 3000 and min(widths) >= 6
    assert fit_widths([["ab", "c" * 50]], 30) == [2, 28]


def test_every_line_fits_the_terminal():
    wide = Table([f"column{i}" for i in range(200)], [["v" * 10_000] * 200])
    narrow = Table(["a", "b"], [["x" * 10_000, "y" * 50]])
    for table in (wide, narrow):
        out = render(table, width=80)
        assert max(len(line) for line in out.splitlines()) <= 80
    assert "RECORD 1" in render(wide, width=80)  # too many columns for 80: one record at a time
    assert "RECORD" not in render(narrow, width=80)


def test_control_characters_in_values_and_errors_print_as_escapes_and_keep_the_borders():
    from sparkscope.core.rendering.render import error_line, render_table, visible
    from sparkscope.core.rendering.results import Table

    value = "a\x1b]0;pwned\x07b\tc\x9bd\r"
    text = render_table(Table(["v", "n"], [[value, 1], ["x", 2]]), width=120)
    assert "\x1b" not in text and "\x07" not in text and "\t" not in text and "\x9b" not in text
    assert "| a\\x1b]0;pwned\\x07b\\tc\\x9bd\\r | 1 |" in text
    assert len({len(line) for line in text.splitlines()[:-1]}) == 1  # every line of the table as wide
    assert visible("plain, ünïcode ✓") == "plain, ünïcode ✓"
    assert "\x1b" not in error_line(ValueError("bad \x1b[31mred"))


# -- what the screen shows, as Spark shows it (issue 51) ----------------------------------------------------------
def test_not_a_number_and_the_infinities_are_spelled_as_spark_prints_them_and_json_stays_json():
    import json

    from sparkscope.core.rendering.render import cell, to_json
    from sparkscope.core.rendering.results import Table

    assert [cell(v) for v in (float("nan"), float("inf"), float("-inf"), 1.5)] == ["NaN", "Infinity", "-Infinity",
                                                                                     "1.5"]
    text = to_json("sql", Table(["x"], [(float("nan"),), (float("inf"),)]))
    assert json.loads(text)["rows"] == [{"x": "NaN"}, {"x": "Infinity"}]  # parses: no bare NaN token


def test_a_map_is_shown_as_spark_shows_it_and_is_an_object_in_json():
    import json

    import pyarrow as pa

    from sparkscope.client.rows import Rows
    from sparkscope.core.rendering.render import cell, to_json
    from sparkscope.core.rendering.results import Table

    nested = pa.map_(pa.string(), pa.list_(pa.map_(pa.string(), pa.int64())))
    rows = Rows.from_arrow(pa.table({"m": pa.array([[("k", [[("x", 1)]])]], type=nested)}))
    assert cell(rows.rows[0][0]) == "{k -> [{x -> 1}]}"  # map('k', array(map('x', 1)))
    assert json.loads(to_json("sql", Table(rows.columns, rows.rows)))["rows"] == [{"m": {"k": [{"x": 1}]}}]
    structs = Rows.from_arrow(pa.table({"s": [{"a": 1, "b": "x"}]}))
    assert cell(structs.rows[0][0]) == "{1, x}"  # a struct stays as Spark prints one


def test_zero_width_characters_are_escaped_so_the_borders_line_up():
    text = render_table(Table(["s"], [("a\u200bb\u200dc",), ("abc",)]), 80)
    widths = {len(line) for line in text.splitlines() if line.startswith(("|", "+"))}
    assert len(widths) == 1 and "a\\u200bb\\u200dc" in text


def test_a_result_of_rows_without_columns_says_both():
    assert render_table(Table([], [(), (), ()]), 80) == "(3 rows, 0 columns)"


def test_timestamps_show_in_the_session_time_zone_as_spark_shows_them():
    import pyarrow as pa

    from sparkscope.client.rows import Rows, time_zone

    instant = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    table = pa.table({"t": pa.array([instant], type=pa.timestamp("us", tz="UTC")),
                      "local": pa.array([dt.datetime(2024, 1, 1)], type=pa.timestamp("us")),  # TIMESTAMP_NTZ
                      "nested": pa.array([[{"at": instant}]], type=pa.list_(pa.struct([("at", pa.timestamp("us", tz="UTC"))])))})
    for zone in ("Asia/Kolkata", "+05:30", "UTC+05:30", "GMT+5:30"):
        row = Rows.from_arrow(table, time_zone(zone)).rows[0]
        assert [cell(value) for value in row] == ["2024-01-01 05:30:00", "2024-01-01 00:00:00", "[{2024-01-01 05:30:00}]"]
    assert time_zone("Mars/Olympus") is None
    assert cell(Rows.from_arrow(table).rows[0][0]) == "2024-01-01 00:00:00 UTC"  # a zone Python does not know: named


def test_a_tailed_batch_counts_the_rows_it_shows():
    """:tail counts --limit 2 of a result of 3 rows: the footer counts what is shown, of how many."""
    from sparkscope.client.queries.tail import TailBatch
    from sparkscope.client.rows import Rows
    from sparkscope.core.rendering.live import batch_footer

    shown = Rows(["bucket", "count"], [(0, 7), (1, 7)])
    assert batch_footer(TailBatch("counts", 4, shown, total=3, mode="complete")) == "(2 of 3 rows in the result)"
    assert batch_footer(TailBatch("ticks", 4, shown, total=2, mode="append")) == "(2 new rows)"


def test_the_checkpoints_footer_names_the_command_that_prunes(tmp_path):
    """:checkpoints names :checkpoints --prune AGE, the command that exists (not the CLI's words)."""
    from sparkscope.client.catalog.checkpoints import Checkpoint
    from sparkscope.core.commands.catalog import checkpoints_table

    table = checkpoints_table([Checkpoint(tmp_path / "ticks-0a1b2c3d", 2048, 0.0, None)])
    assert table.footer == ("needed: a restartable query resumes from it. :checkpoints --prune AGE deletes the "
                            "others older than AGE that sparkscope made")


def test_json_of_two_tables_is_two_objects_each_with_its_title():
    """Issue 55 row 30: :state --info's two tables were merged into one list of rows, the schema line dropped."""
    import json

    from sparkscope.core.rendering.render import to_json
    from sparkscope.core.rendering.results import Table

    result = [Table(["operator", "name"], [[0, "stateStoreSave"]], title="wc: state in /ck"),
              Table(["partition", "rows"], [[0, 3], [1, 2]], title="operator 0 (stateStoreSave): k STRING")]
    assert json.loads(to_json("state", result)) == {
        "command": "state", "ok": True,
        "tables": [{"title": "wc: state in /ck", "rows": [{"operator": 0, "name": "stateStoreSave"}]},
                   {"title": "operator 0 (stateStoreSave): k STRING",
                    "rows": [{"partition": 0, "rows": 3}, {"partition": 1, "rows": 2}]}]}
