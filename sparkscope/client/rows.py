"""The result of a peek or a batch query: columns plus rows, fetched in one Arrow batch."""

from __future__ import annotations

import csv
import datetime as _dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

EXPORT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv")


@dataclass(frozen=True)
class Rows:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    types: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def as_dicts(self) -> list[dict]:
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)

    @classmethod
    def from_arrow(cls, table: Any) -> Rows:
        columns = list(table.column_names)
        data: Sequence[list] = [col.to_pylist() for col in table.columns]
        rows = list(zip(*data, strict=False)) if data else []
        return cls(columns=columns, rows=[tuple(r) for r in rows], types=[str(t) for t in table.schema.types])


def export_path(path: str | Path) -> Path:
    """Check an export file name: its suffix says the format (JSON lines or CSV), its folder exists."""
    from .errors import ConfigError

    target = Path(path).expanduser()
    if target.suffix.lower() not in EXPORT_SUFFIXES:
        raise ConfigError(f"Cannot tell the export format from '{target.name}'",
                          "Name the file .jsonl (JSON lines) or .csv")
    if not target.parent.is_dir():
        raise ConfigError(f"The folder {target.parent} does not exist", "Create it or pick another path")
    return target


def open_export(path: str | Path) -> IO[str]:
    """The export file, opened for writing (after export_path's checks); one clear error when the
    system refuses it (a folder that cannot be written, a full disk, a name that is a folder)."""
    from .errors import ConfigError

    target = export_path(path)
    try:
        return target.open("w", newline="")
    except OSError as exc:
        raise ConfigError(f"Cannot write {target}: {exc.strerror or exc}",
                          "Pick a path in a folder you can write to") from None


def write_rows(rows: Rows, path: str | Path) -> int:
    """Write rows as JSON lines or CSV (by the file's suffix); returns the row count."""
    def plain(value: Any) -> Any:
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.isoformat()
        return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)

    with open_export(path) as out:
        if Path(out.name).suffix.lower() == ".csv":
            writer = csv.writer(out)
            writer.writerow(rows.columns)
            writer.writerows([[plain(v) for v in row] for row in rows.rows])
        else:
            for row in rows.rows:
                out.write(json.dumps({c: plain(v) for c, v in zip(rows.columns, row, strict=False)}) + "\n")
    return len(rows)


def fetch(df: Any, n: int) -> Rows:
    """`df.limit(n)` collected as Arrow: the limit runs on the server, only n rows travel."""
    return Rows.from_arrow(df.limit(n).toArrow())
