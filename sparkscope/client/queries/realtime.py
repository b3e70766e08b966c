"""Real-time mode (`trigger="realtime"`, `realtime:10s`): what it needs, checked before the start, each missing need
one line. Spark starts such a query and then fails it, or waits for task slots that never come free: a start that
hangs, or a failure after it, where one line before it says what to change.

What Spark's real-time mode needs (Spark 4.1 added it in Scala; Python's `trigger(realTime=…)` and its Spark Connect
field came with 4.2):
- a server of Spark 4.2 or later, and a client pyspark of 4.2 or later;
- Spark's Kafka source, only (its connector: `sparkscope server start --kafka`);
- a Kafka, foreach or console sink (Spark refuses its memory sink and every other). sparkscope's default sink is
  a foreach writer in real time (the jar's sink/RingRows.java puts each row into the query's ring as it arrives),
  where the server's tasks run in its driver (local mode), as on every server sparkscope starts;
- update output mode;
- stateless operators, and from Spark 4.3 aggregations and dropDuplicates too; never a stream-stream join,
  transformWithState, applyInPandasWithState or a session window;
- a batch of at least 5 seconds (spark.sql.streaming.realTimeMode.minBatchDuration): a checkpoint interval, not a
  latency;
- a task slot for each partition of its topics at once (and for stateful queries, each shuffle partition too).
"""

from __future__ import annotations

from dataclasses import dataclass

from .planning import BOUNDED, PlanShape

SINKS = ("kafka", "console", "foreach")
MIN_BATCH_SECONDS = 5.0


def _version(text: str | None) -> tuple[int, int]:
    try:
        major, minor = (int(part) for part in (text or "").split(".")[:2])
    except ValueError:
        return (99, 99)  # a version we cannot read: taken as new
    return major, minor


@dataclass(frozen=True)
class Needs:
    """What a real-time start has, to be checked: the versions, its sources and sink, its mode, its plan, its
    batch, and the partitions of its topics next to the server's task slots (None where unknown)."""

    server: str
    client: str
    sources: tuple[str, ...]  # the formats it reads
    connector: bool  # the server has Spark's Kafka connector
    sink: str
    mode: str | None
    shape: PlanShape
    batch_seconds: float
    partitions: dict[str, int] | None = None  # topic -> partitions
    slots: int | None = None
    tasks_in_driver: bool | None = None  # the server runs its tasks in its driver's JVM (local mode); None: unknown


def problem(needs: Needs) -> tuple[str, str] | None:
    """The first thing a real-time start lacks, as (what, what to do); None when it has everything."""
    if _version(needs.server) < (4, 2):
        return (f"Real-time mode needs a Spark 4.2 server or later (Python's trigger(realTime=…) and its Spark "
                f"Connect field came with 4.2), and this one is {needs.server}",
                "Use a micro-batch trigger (5s), or a newer server")
    if _version(needs.client) < (4, 2):
        return (f"Real-time mode needs pyspark 4.2 or later on this client, and this one is {needs.client}",
                "Install a newer pyspark beside sparkscope, or use a micro-batch trigger")
    others = sorted({fmt for fmt in needs.sources if fmt.lower() != "kafka"})
    if others or not needs.sources:
        return (f"Real-time mode reads Spark's Kafka source only, and this query reads {', '.join(others) or 'none'}",
                "Read the stream with spark.readStream.format('kafka'), or use a micro-batch trigger")
    if not needs.connector:
        return ("Real-time mode reads Spark's Kafka source only, and this server has no Kafka connector (sparkscope's "
                "own Kafka source cannot run in real time)", "Start the server with sparkscope server start --kafka")
    if needs.sink == BOUNDED and needs.tasks_in_driver is False:
        return ("In real time, sparkscope's default sink keeps a query's rows only on a server whose tasks run in its "
                "driver (local mode), and this server runs them on executors", "Give sink='kafka' with options "
                "topic=…, and read that topic")
    if needs.sink not in (*SINKS, BOUNDED):
        return (f"Real-time mode writes to Kafka, foreach or the console only, and this query writes to {needs.sink} "
                "(Spark refuses its memory sink)", "Leave out the sink (sparkscope's keeps the newest rows), or give "
                "sink='kafka' with options topic=…")
    if needs.mode not in (None, "update"):
        return (f"Real-time mode writes in update mode only, and this query asks for {needs.mode}",
                "Leave out the mode, or give update")
    shape, stateful_too = needs.shape, _version(needs.server) >= (4, 3)
    never = [what for what, there in (("a stream-stream join", shape.stream_stream_join),
                                       ("transformWithState or applyInPandasWithState", shape.stateful_function),
                                       ("a session window", shape.session_window)) if there]
    if never:
        return (f"Real-time mode cannot run {never[0]}", "Use a micro-batch trigger for this query")
    if (shape.aggregation or shape.deduplication) and not stateful_too:
        what = "an aggregation" if shape.aggregation else "dropDuplicates"
        return (f"Real-time mode runs {what} from Spark 4.3 on, and this server is {needs.server}",
                "Use a micro-batch trigger, or a Spark 4.3 server")
    if needs.batch_seconds < MIN_BATCH_SECONDS:
        return (f"A real-time batch lasts at least {MIN_BATCH_SECONDS:g} seconds "
                "(spark.sql.streaming.realTimeMode.minBatchDuration), and this one asks for "
                f"{needs.batch_seconds:g}: it is how often the query checkpoints, not its latency",
                "Use realtime (5 seconds) or a longer batch, e.g. realtime:10s")
    if needs.partitions and needs.slots is not None and sum(needs.partitions.values()) > needs.slots:
        topics = ", ".join(f"topic {name} has {count} partition{'s' * (count != 1)}"
                           for name, count in sorted(needs.partitions.items()))
        return (f"{topics[:1].upper()}{topics[1:]} and this server has {needs.slots} task slot"
                f"{'s' * (needs.slots != 1)}: real-time mode runs one task per partition at once",
                "Give the server more task slots (cores), or read fewer partitions")
    return None
