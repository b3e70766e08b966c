"""What a query's stateful operators hold, read from its checkpoint with Spark's state data sources
("state-metadata" and "statestore", Spark 4): now, at a batch, batch by batch, and per partition. Works on
running, stopped, failed and lost queries alike, since it needs only the checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..catalog.records import Catalog
from ..errors import ConfigError, QueryNotFound, UnsupportedOperation
from ..error_reading import call, state_unreadable, translate
from .columns import flatten_change, flattened_columns

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..rows import Rows


class StatefulQuery(Protocol):
    """What reading the state uses of a query (queries/query.py's Query): where its checkpoint is."""

    @property
    def name(self) -> str: ...

    @property
    def checkpoint(self) -> str | None: ...


class StatefulSession(Protocol):
    @property
    def catalog(self) -> Catalog: ...

    @property
    def spark(self) -> Any: ...


    @property
    def url(self) -> str: ...

    @property
    def streams(self) -> StatefulQueries: ...


class StatefulQueries(Protocol):
    """What reading state asks of a Session's queries (ss.streams)."""

    def get(self, name_or_id: str) -> StatefulQuery: ...

    def known_queries(self) -> Sequence[StatefulQuery]: ...


@dataclass(frozen=True)
class Operator:
    """One stateful operator of a checkpoint, as state-metadata describes it."""

    id: int
    name: str
    store: str
    partitions: int
    first_batch: int
    last_batch: int
    variables: tuple[str, ...] = ()  # transformWithState's state variables
    kinds: tuple[str, ...] = ()  # each variable's kind: value, list or map, " with TTL" when it expires
    timers: str = ""  # transformWithState's time mode when it keeps timers: "processing time", "event time"

    def described_variables(self) -> str:
        return ", ".join(f"{name} ({kind})" for name, kind in zip(self.variables, self.kinds, strict=True)) or "-"


@dataclass(frozen=True)
class StateOf:
    """A query's checkpoint and its operators."""

    name: str
    checkpoint: str
    operators: list[Operator]

    def operator(self, operator_id: int | None) -> Operator:
        if operator_id is None:
            return self.operators[0]
        for operator in self.operators:
            if operator.id == operator_id:
                return operator
        ids = ", ".join(str(o.id) for o in self.operators)
        raise ConfigError(f"{self.name} has no stateful operator {operator_id}", f"Its operators: {ids}",
                          code="no_such_operator", data={"name": self.name})

    def check_batch(self, operator: Operator, batch: int | None) -> None:
        if batch is None or operator.first_batch <= batch <= operator.last_batch:
            return
        kept = f"batches {operator.first_batch}-{operator.last_batch}"
        if batch < operator.first_batch:
            raise ConfigError(f"Batch {batch} of {self.name} was cleaned up: its state keeps {kept}",
                              "Pick one of those (spark.sql.streaming.minBatchesToRetain sets how many are kept)",
                              code="batch_cleaned_up", data={"name": self.name})
        raise ConfigError(f"{self.name} has no batch {batch} yet: its state keeps {kept}",
                          "Pick one of those", code="no_such_batch", data={"name": self.name})


def checkpoint_of(session: StatefulSession, name: str) -> tuple[str, str]:
    """(name, checkpoint) of a query this session knows, or of one in the catalog."""
    for known in reversed(session.streams.known_queries()):  # no RPC for the queries this process started
        if known.name == name and known.checkpoint:
            return known.name, known.checkpoint
    try:
        query = session.streams.get(name)
        if query.checkpoint:
            return query.name, query.checkpoint
    except QueryNotFound:
        pass
    record = session.catalog.require(session.url, name)
    if not record.checkpoint:
        raise UnsupportedOperation(f"{name} has no checkpoint, so no state to read",
                                   "Start it with a checkpoint location", code="no_checkpoint", data={"name": name})
    return record.name, record.checkpoint


KINDS = {"ValueState": "value", "ListState": "list", "MapState": "map"}
TIME_MODES = {"ProcessingTime": "processing time", "EventTime": "event time"}


def described_state(properties: Any) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """transformWithState's state variables from an operator's properties (JSON): their names, their
    kinds, and the time mode when the operator keeps timers (Spark's own "$…" variables hold those)."""
    import json

    try:
        parsed = json.loads(properties) if properties else {}
    except ValueError:
        parsed = {}
    found = parsed.get("stateVariables", []) if isinstance(parsed, dict) else []
    found = [v for v in found if isinstance(v, dict) and v.get("stateName")]
    mine = [v for v in found if not str(v["stateName"]).startswith("$")]
    kinds = tuple(KINDS.get(str(v.get("stateVariableType")), str(v.get("stateVariableType")).lower())
                  + (" with TTL" if v.get("ttlEnabled") else "") for v in mine)
    timers = any(v.get("stateVariableType") == "TimerState" for v in found)
    mode = TIME_MODES.get(str(parsed.get("timeMode")), "") if timers else ""
    return tuple(str(v["stateName"]) for v in mine), kinds, mode


_known: dict[str, StateOf] = {}  # by checkpoint: a query's operators do not change while it runs
_columns: dict[tuple[Any, ...], list[str]] = {}  # by checkpoint and store read: the flattened columns


def state_of(session: StatefulSession, name: str, fresh: bool = True) -> StateOf:
    """The checkpoint of `name` and its stateful operators; one clear error when it has none. Not `fresh`:
    the operators read before for this checkpoint, if any (their batch range may be older)."""
    name, checkpoint = checkpoint_of(session, name)
    if not fresh and checkpoint in _known:
        return _known[checkpoint]
    try:
        rows = call(lambda: session.spark.read.format("state-metadata").load(checkpoint).collect())
    except Exception as exc:
        raise _state_error(name, checkpoint, exc) from exc
    if not rows:  # no operator: a stateless query, or a checkpoint that is gone (the state reader tells which)
        try:
            session.spark.read.format("statestore").load(checkpoint).schema  # noqa: B018 - raw: its error class tells
        except Exception as exc:
            if state_unreadable(exc) == "gone":
                raise _state_error(name, checkpoint, exc) from exc
        raise UnsupportedOperation(f"{name} keeps no state: it has no stateful operator (aggregation, "
                                   "dropDuplicates, stream-stream join, or a state function)",
                                   f"Its rows are in its sink: ss.peek('{name}') shows them", code="stateless",
                                   data={"name": name})
    operators = [Operator(int(r["operatorId"]), str(r["operatorName"]), str(r["stateStoreName"]),
                          int(r["numPartitions"]), int(r["minBatchId"]), int(r["maxBatchId"]),
                          *described_state(r["operatorProperties"])) for r in rows]
    state = StateOf(name, checkpoint, sorted(operators, key=lambda o: (o.id, o.store)))
    _known[checkpoint] = state
    return state


def _state_error(name: str, checkpoint: str, exc: BaseException) -> Exception:
    why = state_unreadable(exc)
    if why == "gone" and _not_begun(checkpoint):
        return UnsupportedOperation(f"{name} has committed no batch yet, so it holds no state yet",
                                    "Read it after its first batch", code="no_batch_yet", data={"name": name})
    if why == "gone":
        return UnsupportedOperation(f"The checkpoint of {name} is gone or holds no committed batch ({checkpoint})",
                                    f"Its state went with it; ss.streams.forget('{name}') removes the record",
                                    code="checkpoint_gone",
                                    data={"name": name})
    if why == "no_changelog":
        return UnsupportedOperation(f"The state changes of {name} were not kept: its server wrote RocksDB state "
                                    "without changelogs", "Start the server with spark.sql.streaming.stateStore."
                                    "rocksdb.changelogCheckpointing.enabled=true (sparkscope's server config sets "
                                    "it) and run the query again", code="no_changelog", data={"name": name})
    return translate(exc)


def _not_begun(checkpoint: str) -> bool:
    """A checkpoint of this machine that is there, and has committed no batch (a query before its first)."""
    from ..catalog.checkpoints import committed_batch

    folder = Path(checkpoint.removeprefix("file:"))
    return folder.is_dir() and committed_batch(checkpoint) is None


def _reader(session: StatefulSession, state: StateOf, operator: Operator, store: str | None,
            variable: str | None, timers: bool = False) -> Any:
    reader = session.spark.read.format("statestore").option("operatorId", operator.id)
    if timers:
        if not operator.timers:
            raise ConfigError(f"{state.name} keeps no timers in operator {operator.id}",
                              "Timers belong to transformWithState queries with a ProcessingTime or EventTime "
                              "time mode", code="no_timers", data={"name": state.name})
        return reader.option("readRegisteredTimers", True)
    if variable:
        if operator.variables and variable not in operator.variables:
            raise ConfigError(f"{state.name} has no state variable '{variable}'",
                              f"Its variables: {', '.join(operator.variables)}", code="no_such_variable")
        reader = reader.option("stateVarName", variable)
    elif store:
        stores = sorted({o.store for o in state.operators if o.id == operator.id})
        joined = operator.name.startswith("symmetricHashJoin")
        if store not in stores and (store not in ("left", "right") or not joined):
            raise ConfigError(f"{state.name} has no state store '{store}' in operator {operator.id}",
                              f"Its stores: {', '.join(stores)}", code="no_such_store")
        reader = reader.option("joinSide", store) if store in ("left", "right") else reader.option("storeName", store)
    elif operator.name.startswith("symmetricHashJoin"):
        reader = reader.option("joinSide", "left")
    elif operator.variables:
        reader = reader.option("stateVarName", operator.variables[0])
    return reader


def read_state(session: StatefulSession, name: str, *, batch: int | None = None, operator: int | None = None,
               store: str | None = None, variable: str | None = None, timers: bool = False) -> DataFrame:
    """The rows a stateful operator of `name` holds (after its newest committed batch, or `batch`); with
    `timers`, the timers a transformWithState query has registered, and when each fires."""
    state = state_of(session, name, fresh=False)
    try:
        state.operator(operator)
        state.check_batch(state.operator(operator), batch)
    except ConfigError:  # perhaps only news to the operators read before: read them again
        state = state_of(session, name)
    chosen = state.operator(operator)
    state.check_batch(chosen, batch)
    reader = _reader(session, state, chosen, store, variable, timers)
    if batch is not None:
        reader = reader.option("batchId", batch)
    try:
        df = reader.load(state.checkpoint)
        key = (state.checkpoint, chosen.id, store, variable, timers)
        if key not in _columns:
            _columns[key] = flattened_columns(df.schema)  # raw: _state_error reads its error class
        return df.selectExpr(*_columns[key])
    except Exception as exc:
        _known.pop(state.checkpoint, None)
        raise _state_error(state.name, state.checkpoint, exc) from exc


def state_changes(session: StatefulSession, name: str, *, start: int | None = None, end: int | None = None,
                  operator: int | None = None, store: str | None = None,
                  variable: str | None = None) -> DataFrame:
    """How the state changed batch by batch, from `start` to `end` (both kept batches; by default the
    last three): batch_id, change_type, the key, and the value before and after."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    state = state_of(session, name)
    chosen = state.operator(operator)
    last = chosen.last_batch if end is None else end
    first = max(chosen.first_batch, last - 2) if start is None else start
    if chosen.name.startswith("symmetricHashJoin") and store in (None, "left", "right"):  # Spark: joinSide and readChangeFeed cannot go together
        raise UnsupportedOperation(f"Spark's state reader keeps no change feed for a stream-stream join ({name}'s "
                                   f"operator {chosen.id})", "Read its state after a batch instead, one side "
                                   "at a time (store left or right)", code="no_join_changes", data={"name": name})
    if first > last:
        raise ConfigError(f"--from {first} is after --to {last}", "Give --from N --to M with N ≤ M",
                          code="bad_range")
    if first > 0:  # the state before the first batch shown: its old values (batch 0 has none before it)
        state.check_batch(chosen, first - 1)
    state.check_batch(chosen, last)
    reader = _reader(session, state, chosen, store, variable).option("readChangeFeed", True) \
        .option("changeStartBatchId", first).option("changeEndBatchId", last)
    try:
        changes = reader.load(state.checkpoint)
        by_key = Window.partitionBy(F.to_json(F.col("key"))).orderBy("batch_id")
        if first > 0:
            before = _reader(session, state, chosen, store, variable).option("batchId", first - 1) \
                .load(state.checkpoint).select(F.col("key"), F.col("value").alias("old_value"))
            joined = changes.join(before, "key", "left") \
                .withColumn("old_value", F.coalesce(F.lag("value").over(by_key), F.col("old_value")))
        else:
            joined = changes.withColumn("old_value", F.lag("value").over(by_key))
        flat = joined.select("batch_id", "change_type", F.col("key"), F.col("old_value"), F.col("value"),
                             "partition_id")
        return flatten_change(flat)
    except Exception as exc:
        raise _state_error(state.name, state.checkpoint, exc) from exc


def state_info(session: StatefulSession, name: str) -> tuple[StateOf, list[tuple[Operator, str, Any]]]:
    """The operators, and for each (each state variable, for transformWithState) its state schema and rows
    and bytes per partition (a DataFrame)."""
    from pyspark.sql import functions as F

    state = state_of(session, name)
    details = []
    for operator in state.operators:
        for variable in operator.variables or (None,):
            try:
                df = _reader(session, state, operator, operator.store if operator.store != "default" else None,
                             variable).load(state.checkpoint)
                schema = call(lambda df=df: df.schema)
                held = [f.name for f in schema.fields if f.name != "partition_id"]
                parts = df.groupBy("partition_id").agg(
                    F.count(F.lit(1)).alias("rows"),
                    F.sum(F.octet_length(F.to_json(F.struct(*held)))).alias("bytes (as JSON)")) \
                    .orderBy("partition_id")
            except Exception as exc:
                raise _state_error(state.name, state.checkpoint, exc) from exc
            described = ", ".join(f"{field} {schema[field].dataType.simpleString()}" for field in held)
            details.append((operator, (f"{variable}: " if variable else "") + described, parts))
    return state, details


def fetch_state(session: StatefulSession, name: str, df: DataFrame, n: int) -> Rows:
    """Up to `n` rows of a state DataFrame, a failure to read the checkpoint told in one line."""
    from .._pyspark.arrow import fetch

    try:
        return fetch(df, n)
    except Exception as exc:
        name, checkpoint = checkpoint_of(session, name)
        _known.pop(checkpoint, None)
        raise _state_error(name, checkpoint, exc) from exc
