"""Pure logic of client/durable: no server."""

from __future__ import annotations


import pytest



@pytest.mark.parametrize("text, seconds", [("24h", 86400.0), ("60m", 3600.0), ("5min", 300.0), ("300s", 300.0),
                                           ("90000", 90.0), ("1d", 86400.0), ("soon", None), ("", None)])
def test_spark_durations_as_the_session_timeout_is_written(text, seconds):
    from sparkscope.client.catalog.durable import spark_duration

    assert spark_duration(text) == seconds
