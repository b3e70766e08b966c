"""Whether a value is a Spark Connect DataFrame, answered without importing pyspark."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def is_dataframe(value: object) -> TypeGuard[DataFrame]:
    """Whether `value` is a Spark Connect DataFrame (False, without importing pyspark, before it is loaded).
    The connecting thread may be importing that module right now: a partly run module has no class yet."""
    dataframe_class = getattr(sys.modules.get("pyspark.sql.connect.dataframe"), "DataFrame", None)
    return dataframe_class is not None and isinstance(value, dataframe_class)
