"""The result of a peek or a batch query: columns plus rows, fetched in one Arrow batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Rows:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    types: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def as_dicts(self) -> list[dict]:
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=self.columns)

    @classmethod
    def from_arrow(cls, table) -> Rows:
        columns = list(table.column_names)
        data: Sequence[list] = [col.to_pylist() for col in table.columns]
        rows = list(zip(*data, strict=False)) if data else []
        return cls(columns=columns, rows=[tuple(r) for r in rows], types=[str(t) for t in table.schema.types])


def fetch(df, n: int) -> Rows:
    """`df.limit(n)` collected as Arrow: the limit runs on the server, only n rows travel."""
    return Rows.from_arrow(df.limit(n).toArrow())
