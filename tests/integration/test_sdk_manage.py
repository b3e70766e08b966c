"""Managing queries through the SDK: lookups, waiting, explain, unreadable sinks, closing."""

from __future__ import annotations

import pytest

from sparkscope.client.errors import ConfigError, QueryNotFound, UnsupportedOperation


def test_lookup_by_name_id_and_id_prefix(ss):
    query = ss.start(ss.source.rate(5), "lookup_me")
    try:
        assert ss.streams.get("lookup_me") is query
        assert ss.streams.get(query.id) is query
        assert ss.streams.get(query.id[:6]) is query
        with pytest.raises(QueryNotFound) as err:
            ss.streams.get("zzz")
        assert str(err.value).startswith("No query named 'zzz'. Queries in this session: ")
        assert "lookup_me" in str(err.value)
    finally:
        query.stop()


def test_waiting_and_explaining(ss):
    ss.start(ss.source.rate(1), "ended").stop()
    query = ss.start(ss.source.rate(5).selectExpr("value * 2 AS doubled"), "waited")
    try:
        assert query.await_termination(1) is False  # still running after a second
        assert ss.streams.await_any_termination(1) is True  # `ended` has ended…
        ss.streams.reset_terminated()
        assert ss.streams.await_any_termination(1) is False  # …and once forgotten, nothing has
        plan = query.explain()
        assert "== Physical Plan ==" in plan and "doubled" in plan
        assert "== Analyzed Logical Plan ==" in query.explain(extended=True)
        assert query.status["message"]
    finally:
        query.stop()
    assert query.await_termination(5) is True
    assert query.state == "stopped"


def test_peek_bad_counts_and_unreadable_sinks(ss):
    query = ss.start(ss.source.rate(5), "to_console", sink="console")
    try:
        with pytest.raises(UnsupportedOperation) as err:
            ss.peek("to_console")
        assert str(err.value) == ("Query to_console writes to a console sink, which cannot be read back. "
                                  "Start it with the default sink to peek at its rows.")
        with pytest.raises(ConfigError, match="Cannot show -1 rows"):
            ss.peek("to_console", -1)
        assert query.is_active
    finally:
        query.stop()


def test_rate_source_needs_a_positive_rate(ss):
    with pytest.raises(ConfigError) as err:
        ss.source.rate(0)
    assert str(err.value) == "rows_per_second must be positive, not 0. Pass 1 or more."


def test_a_name_used_again_gets_a_fresh_checkpoint(ss, data_dir):
    (data_dir / "a.json").write_text('{"n": 1}\n')
    first = ss.start(ss.source.files("json", str(data_dir), schema="n INT"), "reused", sink="console",
                     trigger="available-now")
    first.await_termination(60)
    second = ss.start(ss.source.rate(5), "reused", sink="console")  # another source under the same name
    try:
        assert second.checkpoint != first.checkpoint
        assert second.await_termination(3) is False  # still running: it did not pick up first's offsets
    finally:
        second.stop()
