"""The columns of a state read: the key's and the value's fields side by side, a TTL's expiry and a timer as
times, and the old and new values of a change."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..error_reading import call

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

OPENED = ("key", "value", "list_element", "user_map_key", "user_map_value")  # structs shown as their fields
EXPIRY = ("expiration_timestamp_ms", "ttlExpirationMs")  # of a timer, or of a value with a TTL


def flattened_columns(schema: Any) -> list[str]:
    """The fields of the key and the value (and of a list element, a map's key and value, for transformWithState)
    as columns, a name taken twice prefixed by its struct's; then the rest. A struct that is the only field of
    the value (applyInPandasWithState's groupState) is opened too, and so is the value beside the expiry of a
    variable with a TTL. An expiry or a timer (milliseconds) also shows as a time. A window in a key stays one
    column."""
    names = [f.name for f in schema.fields]
    columns: list[str] = []
    taken: set[str] = set()

    def add(expression: str, name: str, part: str) -> None:
        alias = name if name not in taken else f"{part}_{name}"
        columns.append(f"{expression} AS `{alias}`")
        taken.add(alias)
        if name in EXPIRY:
            columns.append(f"timestamp_millis({expression}) AS `{'fires_at' if part == 'timer' else 'expires_at'}`")

    for part in [n for n in OPENED if n in names]:
        path, kind = f"`{part}`", schema[part].dataType
        inner = getattr(kind, "fields", None)
        while (part == "value" and inner is not None and len(inner) == 1
               and getattr(inner[0].dataType, "fields", None) is not None):
            path, kind = f"{path}.`{inner[0].name}`", inner[0].dataType
            inner = kind.fields
        if inner is None:
            columns.append(f"`{part}`")
            taken.add(part)
            continue
        expires = any(sub.name in EXPIRY for sub in inner)
        for sub in inner:
            nested = getattr(sub.dataType, "fields", None)
            if expires and nested is not None:  # {value, expiration_timestamp_ms}: the value's own fields
                for field in nested:
                    add(f"{path}.`{sub.name}`.`{field.name}`", field.name, part)
            else:
                add(f"{path}.`{sub.name}`", sub.name, part)
    for name in names:
        if name in EXPIRY:  # a timer: when it fires
            add(f"`{name}`", name, "timer")
        elif name not in OPENED:
            columns.append(f"`{name}`")
    return columns


def flatten_change(df: DataFrame) -> DataFrame:
    """batch_id, change_type, the key's fields, then old_<field> and new_<field> of the value; in batch and
    key order."""
    from pyspark.sql import functions as F

    schema = call(lambda: df.schema)
    columns = [F.col("batch_id"), F.col("change_type")]
    key_fields = getattr(schema["key"].dataType, "fields", None)
    columns += [F.col(f"key.`{f.name}`").alias(f.name) for f in key_fields] if key_fields else [F.col("key")]
    value_fields = getattr(schema["value"].dataType, "fields", None)
    for side, column in (("old", "old_value"), ("new", "value")):
        if value_fields:
            columns += [F.col(f"{column}.`{f.name}`").alias(f"{side}_{f.name}") for f in value_fields]
        else:
            columns.append(F.col(column).alias(f"{side}_value"))
    return df.select(*columns).orderBy("batch_id", *([f.name for f in key_fields] if key_fields else ["key"]))
