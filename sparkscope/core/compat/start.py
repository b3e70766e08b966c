"""writeStream…start() of the user's code: a console sink printed here (console.py), Kafka through what the server has
(kafka.py), a fresh checkpoint for a query that names none (as pyspark gives one, instead of resuming
`<root>/<name>` from the server's spark.sql.streaming.checkpointLocation), the query started without the cell's
operation tag (a Ctrl-C of a later call in the same cell cannot stop it), and recorded in the catalog."""

from __future__ import annotations

from typing import Any

from ...client import _pyspark
from ...client.kafka.connector import is_kafka
from ...client.logs import swallowed
from .console import CONSOLE_ROWS, CONSOLE_TRUNCATE, console_options, free_query_name, printed_here
from .kafka import kafka_format
from .user_code import current


def start(original: Any, writer: Any, path: Any = None, tableName: Any = None, format: Any = None,  # noqa: A002, N803
           outputMode: Any = None, partitionBy: Any = None, queryName: Any = None, **options: Any) -> Any:  # noqa: N803
    call = current()
    if call is None:
        return original(writer, path=path, tableName=tableName, format=format, outputMode=outputMode,
                        partitionBy=partitionBy, queryName=queryName, **options)
    settings = _pyspark.WriterSettings(writer)
    # what start()'s own arguments set, first, so that the decisions below see them
    if format is not None:
        settings.format = format
    if queryName is not None:
        settings.query_name = queryName
    if outputMode is not None:
        writer.outputMode(outputMode)
    writer.options(**options)
    session = call.executor.session
    ours = settings.session is session.spark
    if ours and settings.foreach_sink == "foreach_batch":
        _check_foreach_batch(session)
    console = ours and settings.format == "console"
    rows: int = CONSOLE_ROWS
    truncate: int | None = CONSOLE_TRUNCATE
    if console:  # printed here instead, from a memory sink
        rows, truncate = console_options(settings.options)
        settings.format = "memory"
        if not settings.query_name:
            settings.query_name = free_query_name(session, "console")
    kafka = ours and is_kafka(settings.format)
    if kafka:
        settings.format = kafka_format(call)
        session.server.kafka.remember(dict(settings.options))
    checkpoint = settings.options.get("checkpointLocation")
    if ours and not checkpoint:  # a fresh one, as pyspark would have
        checkpoint = session.client.fresh_checkpoint(settings.query_name or "query")
        if checkpoint:
            settings.options["checkpointLocation"] = checkpoint
    users = []
    if ours:
        with swallowed("looking for queries on the same checkpoint"):
            users = session.client.on_checkpoint(checkpoint)
    spark = settings.session
    tags = list(spark.getTags())
    spark.clearTags()  # a query started under the cell's tag would stop when that tag is interrupted
    try:
        handle = original(writer, path=path, tableName=tableName, partitionBy=partitionBy)
    finally:
        for tag in tags:
            spark.addTag(tag)
    if ours:
        sink = settings.foreach_sink or ("table" if tableName else "kafka" if kafka else (settings.format or "parquet"))
        with swallowed(f"recording {handle.name or handle.id} in the catalog"):
            query = session.client.record_started(handle, settings.dataframe(), sink=sink, mode=settings.output_mode,
                                           trigger=settings.trigger, checkpoint=checkpoint,
                                           options={k: v for k, v in settings.options.items()
                                                    if k != "checkpointLocation"},
                                           path=path, table=tableName, checkpoint_users=users)
            if console:
                call.executor.live().tail(query, limit=rows, truncate=truncate, from_start=True, empty=True)
                printed_here(handle.runId)
    return handle


def _check_foreach_batch(session: Any) -> None:
    """A foreachBatch on a server found to lack what its Python worker imports: one line naming it now. Its worker
    would fail after the server's ten-second wait, saying less. (What it lacks was asked before: not asked now.)"""
    known = session.server.facts.known()
    problem = known.foreach_batch_problem() if known is not None else None
    if problem:
        from ...client.connection.capabilities import ADD_PACKAGES
        from ...client.errors import UnsupportedOperation

        raise UnsupportedOperation(f"foreachBatch runs Python on the server, and this server cannot: {problem}",
                                   ADD_PACKAGES, code="server_lacks_python", data={"problem": problem})
