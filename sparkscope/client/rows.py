"""The result of a peek or a batch query: columns plus rows, fetched in one Arrow batch."""

from __future__ import annotations

import csv
import os
import datetime as _dt
from datetime import tzinfo
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from . import delete_guard

EXPORT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv")


class MapValue(dict):
    """A Spark map's value: its entries, as a dict (Arrow hands a map over as a list of key-value pairs, which would
    read as an array). It is shown as Spark shows a map, {key -> value}, and as a JSON object."""


@dataclass(frozen=True)
class Rows:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    types: list[str] = field(default_factory=list)
    truncated: bool = False  # the query had more rows than were asked for

    def __len__(self) -> int:
        return len(self.rows)

    def as_dicts(self) -> list[dict]:
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)

    @classmethod
    def from_arrow(cls, table: Any, zone: tzinfo | None = None) -> Rows:
        """The rows of an Arrow table; with `zone` (the session's time zone), each timestamp as the wall-clock time
        of that zone, as Spark shows it (Arrow hands them over in UTC)."""
        columns = list(table.column_names)
        data: Sequence[list] = [_python_values(col.to_pylist(), col.type, zone) for col in table.columns]
        rows = list(zip(*data, strict=False)) if data else [()] * table.num_rows  # rows without columns count too
        return cls(columns=columns, rows=[tuple(r) for r in rows], types=[str(t) for t in table.schema.types])


def export_path(path: str | Path, *, replace: bool = False) -> Path:
    """Check an export file name: its suffix says the format (JSON lines or CSV), its folder exists, and it names no
    file already there unless `replace` (the guard then judges where the write lands: through a link, its target)."""
    from .errors import ConfigError

    target = Path(path).expanduser()
    if target.suffix.lower() not in EXPORT_SUFFIXES:
        raise ConfigError(f"Cannot tell the export format from '{target.name}'",
                          "Name the file .jsonl (JSON lines) or .csv")
    if not target.parent.is_dir():
        raise ConfigError(f"The folder {target.parent} does not exist", "Create it or pick another path")
    if os.path.lexists(target) and not replace:
        raise ConfigError(f"{target} exists", "Pass replace=True to write over it, or pick another name",
                          code="export_exists", data={"path": str(target)})
    return target


def open_export(path: str | Path, *, replace: bool = False) -> IO[str]:
    """The export file, opened for writing (after export_path's checks, and the delete guard's); one clear error
    when the system refuses it (a folder that cannot be written, a full disk, a name that is a folder)."""
    from .errors import ConfigError

    target = export_path(path, replace=replace)
    try:
        return delete_guard.open_file(target, "w", newline="")
    except OSError as exc:
        raise ConfigError(f"Cannot write {target}: {exc.strerror or exc}",
                          "Pick a path in a folder you can write to") from None


def write_rows(rows: Rows, path: str | Path, *, replace: bool = False) -> int:
    """Write rows as JSON lines or CSV (by the file's suffix); returns the row count. A file already there is
    written over only with `replace`."""
    def plain(value: Any) -> Any:
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.isoformat()
        return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)

    with open_export(path, replace=replace) as out:
        if Path(out.name).suffix.lower() == ".csv":
            writer = csv.writer(out)
            writer.writerow(rows.columns)
            writer.writerows([[plain(v) for v in row] for row in rows.rows])
        else:
            for row in rows.rows:
                out.write(json.dumps({c: plain(v) for c, v in zip(rows.columns, row, strict=False)}) + "\n")
    return len(rows)


SESSION_TIME_ZONE = "spark.sql.session.timeZone"
_OFFSET = r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?"


def session_zone(spark: Any) -> tzinfo | None:
    """The session's time zone (spark.sql.session.timeZone: a region such as Asia/Kolkata, or an offset such as
    +05:30); None when Python knows no zone of that name."""
    return time_zone(str(spark.conf.get(SESSION_TIME_ZONE)))


def time_zone(name: str) -> tzinfo | None:
    import re
    import zoneinfo

    offset = re.fullmatch(_OFFSET, name.strip(), re.IGNORECASE)
    if offset:
        sign, hours, minutes = offset.groups()
        delta = _dt.timedelta(hours=int(hours), minutes=int(minutes or 0))
        return _dt.timezone(-delta if sign == "-" else delta)
    try:
        return zoneinfo.ZoneInfo(name.strip())
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return None


def _python_values(values: list[Any], arrow_type: Any, zone: tzinfo | None) -> list[Any]:
    """A column's values with every map in them (at any depth) a MapValue and, with `zone`, every timestamp that
    zone's wall-clock time; as they are when the type holds neither."""
    if not holds(arrow_type, _is_map) and not (zone is not None and holds(arrow_type, is_zoned_time)):
        return values
    return [_converted(value, arrow_type, zone) for value in values]


def _is_map(arrow_type: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_map(arrow_type))


def is_zoned_time(arrow_type: Any) -> bool:
    """A TimestampType column (an instant); TimestampNTZType has no zone and shows as it is."""
    import pyarrow as pa

    return bool(pa.types.is_timestamp(arrow_type) and arrow_type.tz)


def zone_of(arrow_type: Any) -> str | None:
    """The time zone of the first instant in a column's type, at any depth: the server's Arrow stream writes the
    session's zone into it (spark.sql.session.timeZone); None for a type that holds no instant."""
    import pyarrow as pa

    if is_zoned_time(arrow_type):
        return str(arrow_type.tz)
    inner = ([arrow_type.key_type, arrow_type.item_type] if pa.types.is_map(arrow_type) else
             [arrow_type.value_type] if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) else
             [arrow_type.field(i).type for i in range(arrow_type.num_fields)] if pa.types.is_struct(arrow_type)
             else [])
    return next((found for found in map(zone_of, inner) if found), None)


def holds(arrow_type: Any, kind: Any) -> bool:
    import pyarrow as pa

    if kind(arrow_type):
        return True
    if pa.types.is_map(arrow_type):
        return holds(arrow_type.key_type, kind) or holds(arrow_type.item_type, kind)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return holds(arrow_type.value_type, kind)
    if pa.types.is_struct(arrow_type):
        return any(holds(arrow_type.field(i).type, kind) for i in range(arrow_type.num_fields))
    return False


def _converted(value: Any, arrow_type: Any, zone: tzinfo | None) -> Any:
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_map(arrow_type):
        return MapValue((_key(_converted(k, arrow_type.key_type, zone)), _converted(v, arrow_type.item_type, zone))
                        for k, v in value)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return [_converted(item, arrow_type.value_type, zone) for item in value]
    if pa.types.is_struct(arrow_type):
        return {field.name: _converted(value.get(field.name), field.type, zone) for field in arrow_type}
    if zone is not None and isinstance(value, _dt.datetime) and value.tzinfo is not None:
        return value.astimezone(zone).replace(tzinfo=None)
    return value


def _key(key: Any) -> Any:
    """A map's key as a dict key: a struct or array key (Spark allows them) as a tuple."""
    if isinstance(key, dict):
        return tuple(_key(v) for v in key.values())
    if isinstance(key, list):
        return tuple(_key(v) for v in key)
    return key
