"""A Kafka query's records carry their Kafka timestamp to sparkscope's sink, so the sink can say how long each took to
arrive: the end-to-end latency (from the record's timestamp in Kafka to the moment the sink has it), which
open-source Spark does not report.

A user's query usually drops Kafka's `timestamp` column (`select(col("value").cast("string"))`). So before a query
that reads Kafka starts into the bounded sink, its plan is rewritten: right above each Kafka read, the read's
`timestamp` is copied into a column of sparkscope's own (EVENT_COLUMN), and every projection above passes it on.
An aggregation passes on the newest timestamp of each group (max), so an updated row's latency is that of the newest
record it counts. The sink takes the column off every row it shows: a user sees their own columns only.

Only plans made of operators that keep rows apart are rewritten (read, filter, projection, withColumn(s),
watermark, alias, drop, dropDuplicates on columns, and a grouped aggregation); any other (a join, a union, SQL text,
a function over groups) leaves the plan as it is, and the query reports no latency (`why_not` says why).

Pure proto logic on the plan's bytes (Spark Connect's Relation).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

EVENT_COLUMN = "__sparkscope_event_time"
KAFKA_FORMATS = ("kafka", "sparkscope_kafka")
_PASS_THROUGH = ("filter", "with_watermark", "subquery_alias", "drop", "with_columns", "with_columns_renamed",
                 "limit", "sort", "hint", "repartition", "repartition_by_expression")


@dataclass(frozen=True)
class Carried:
    """A plan rewritten to carry EVENT_COLUMN (`plan`, the Relation's bytes), or why not (`plan` None)."""

    plan: bytes | None
    why_not: str | None = None


def carry(plan: bytes) -> Carried:
    """The plan of a query with each record's Kafka timestamp carried to its output as EVENT_COLUMN."""
    from pyspark.sql.connect.proto import Relation

    relation = Relation()
    relation.ParseFromString(plan)
    if _star_inside(relation):  # struct("*"), to_json(struct("*")): every column, sparkscope's too
        return Carried(None, "it takes every column inside an expression (a * in struct() or the like), which would "
                             "take sparkscope's column too")
    try:
        reads = _carry(relation)
    except _Unsupported as why:
        return Carried(None, str(why))
    if not reads:
        return Carried(None, "it reads no Kafka topic")
    return Carried(relation.SerializeToString())


class _Unsupported(Exception):
    pass


def _attribute(expression: Any, name: str) -> None:
    expression.unresolved_attribute.unparsed_identifier = f"`{name}`"


def _carry(relation: Any) -> bool:
    """Rewrite `relation` in place so that its output ends with EVENT_COLUMN; whether it reads Kafka (False: the
    relation is left as it was)."""
    kind = relation.WhichOneof("rel_type")
    if kind == "read":
        source = relation.read.data_source if relation.read.HasField("data_source") else None
        if source is None or source.format.lower() not in KAFKA_FORMATS or not relation.read.is_streaming:
            return False
        read = type(relation)()
        read.CopyFrom(relation)
        relation.Clear()
        relation.with_columns.input.CopyFrom(read)
        alias = relation.with_columns.aliases.add()
        _attribute(alias.expr, "timestamp")
        alias.name.append(EVENT_COLUMN)
        return True
    if kind in _PASS_THROUGH:
        inner = getattr(relation, kind)
        if kind == "drop" and any(EVENT_COLUMN in c.unresolved_attribute.unparsed_identifier for c in inner.columns):
            raise _Unsupported("it drops sparkscope's column")
        return _carry(inner.input)
    if kind == "project":
        if not _carry(relation.project.input):
            return False
        if not any(e.WhichOneof("expr_type") == "unresolved_star" or
                   (e.WhichOneof("expr_type") == "expression_string" and e.expression_string.expression.strip() == "*")
                   for e in relation.project.expressions):
            _attribute(relation.project.expressions.add(), EVENT_COLUMN)
        return True
    if kind == "deduplicate":
        if relation.deduplicate.all_columns_as_keys or not relation.deduplicate.column_names:
            if _reads_kafka(relation.deduplicate.input):
                raise _Unsupported("dropDuplicates() over all columns would count sparkscope's column")
            return False
        return _carry(relation.deduplicate.input)
    if kind == "aggregate":
        aggregate = relation.aggregate
        if not _carry(aggregate.input):
            return False
        if aggregate.group_type != aggregate.GROUP_TYPE_GROUPBY:
            raise _Unsupported("it aggregates by rollup, cube or pivot")
        newest = aggregate.aggregate_expressions.add()
        newest.alias.name.append(EVENT_COLUMN)
        function = newest.alias.expr.unresolved_function
        function.function_name = "max"
        _attribute(function.arguments.add(), EVENT_COLUMN)
        return True
    if _reads_kafka(relation):
        raise _Unsupported(f"its plan has a {kind.replace('_', ' ')}, which sparkscope does not follow")
    return False


_STAR_IN_TEXT = re.compile(r"(^|[(,\s])(\w+\.)?\*\s*($|[),])")


def _walk(relation: Any) -> Iterator[tuple[Any, bool]]:
    """Every message of the plan, each with whether it is a projection's own column (an element of its list)."""
    stack: list[tuple[Any, bool]] = [(relation, False)]
    while stack:
        message, own_column = stack.pop()
        yield message, own_column
        projection = message.DESCRIPTOR.name == "Project"
        for field, value in message.ListFields():
            if field.message_type is None:
                continue
            items = [value] if hasattr(value, "ListFields") else list(value.values() if hasattr(value, "values")
                                                                     else value)
            stack.extend((item, projection and field.name == "expressions") for item in items
                         if hasattr(item, "ListFields"))


def _star_inside(relation: Any) -> bool:
    """Whether an expression anywhere in the plan takes every column (a *) other than as a projection's own
    column (which passes sparkscope's column on, as it should)."""
    for message, own_column in _walk(relation):
        if message.DESCRIPTOR.name != "Expression":
            continue
        kind = message.WhichOneof("expr_type")
        if kind == "unresolved_star" and not own_column:
            return True
        if kind == "expression_string":
            text = message.expression_string.expression
            if _STAR_IN_TEXT.search(text) and not (own_column and text.strip() == "*"):
                return True
    return False


def _reads_kafka(relation: Any) -> bool:
    """Whether any read below `relation` is a Kafka read."""
    return any(message.DESCRIPTOR.name == "DataSource" and message.format.lower() in KAFKA_FORMATS
               for message, _ in _walk(relation))
