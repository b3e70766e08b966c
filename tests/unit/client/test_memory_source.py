"""What the memory source takes in a row, decided before anything is sent: each value for its column's type, a
string for a timestamp read in the session's time zone, and one line for anything else."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, TimestampNTZType, TimestampType

from sparkscope.client.errors import ConfigError
from sparkscope.client.queries.memory_source import _holds_rows, _value

TS = StructField("ts", TimestampType())
TOKYO = zoneinfo.ZoneInfo("Asia/Tokyo")


def test_a_string_for_a_timestamp_is_a_wall_clock_time_of_the_session_s_zone():
    value = _value("2024-01-01 10:00:00", TS, TOKYO)
    assert value == dt.datetime(2024, 1, 1, 10, 0, tzinfo=TOKYO)  # 10:00 in Tokyo, as TIMESTAMP'…' reads it
    assert value.astimezone(dt.timezone.utc).hour == 1
    assert _value("2024-01-01 10:00:00", StructField("t", TimestampNTZType()), TOKYO) == dt.datetime(2024, 1, 1, 10)


@pytest.mark.parametrize("value, field, said", [
    (5, TS, "5 is not a datetime or an ISO 8601 string ('2018-03-02 10:00:00'), for column ts (timestamp). Give "
            "column ts a datetime or an ISO 8601 string ('2018-03-02 10:00:00')."),
    ("notatime", TS, "'notatime' is not an ISO 8601 time, for column ts (timestamp). Write it like '2018-03-02 "
                     "10:00:00' (or '2018-03-02' for a date)."),
    ("7", StructField("n", IntegerType()), "'7' is not an integer, for column n (int). Give column n an integer."),
    (True, StructField("n", IntegerType()), "True is not an integer, for column n (int). Give column n an integer."),
    (3, StructField("s", StringType()), "3 is not a string, for column s (string). Give column s a string."),
])
def test_a_value_the_column_cannot_take_is_one_line_naming_both(value, field, said):
    with pytest.raises(ConfigError) as wrong:
        _value(value, field, None)
    assert str(wrong.value) == said


def test_a_batch_is_a_list_of_rows_and_a_lone_row_or_value_is_not():
    assert _holds_rows(((1, "a"), (2, "b"))) and not _holds_rows((1, "a"))
