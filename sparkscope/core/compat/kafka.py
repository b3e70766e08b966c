"""`format("kafka")`, reading or writing, uses Spark's connector when the server has it and sparkscope's own Kafka
source and sink when it does not; one line says which, and why."""

from __future__ import annotations

from typing import Any

from ...client import _pyspark
from ...client.kafka.connector import is_kafka
from ...client.queries.sources import check_kafka_options
from .user_code import UserCall, choosing_kafka, current, is_choosing_kafka


def kafka_format(call: UserCall) -> str:
    """The format that reads and writes Kafka in this session, the first use saying which and why."""
    kafka = call.executor.session.server.kafka
    with choosing_kafka():
        fmt = kafka.format()
    call.executor.notice_once(f"kafka {call.executor.session.session_id}", f"note: {kafka.describe()}")
    return fmt


def save(original: Any, writer: Any, path: Any = None, format: Any = None,  # noqa: A002 - pyspark's names
          mode: Any = None, partitionBy: Any = None, **options: Any) -> Any:  # noqa: N803
    """df.write.format("kafka")…save(): through sparkscope's own sink where the server has no connector. Spark's
    connector writes in its default mode (errorifexists) as in append, and refuses overwrite; a Python data source
    writes in append, so the default mode becomes that."""
    call = current()
    settings = _pyspark.SaveSettings(writer)
    if (call is not None and is_kafka(format or settings.format) and call.executor.owns_spark(settings.session)):
        format = None  # noqa: A001
        settings.format = kafka_format(call)
        call.executor.session.server.kafka.remember({**settings.options, **{str(k): str(v) for k, v in options.items()}})
        if settings.format != "kafka" and (mode or settings.mode) in (None, "error", "errorifexists", "default"):
            mode = "append"
    return original(writer, path=path, format=format, mode=mode, partitionBy=partitionBy, **options)


def load(original: Any, reader: Any, path: Any = None, format: Any = None, schema: Any = None,  # noqa: A002
          **options: Any) -> Any:
    call = current()
    settings = _pyspark.ReaderSettings(reader)
    if (call is not None and not is_choosing_kafka() and is_kafka(format or settings.format)
            and call.executor.owns_spark(settings.session)):
        format = None  # noqa: A001
        settings.format = kafka_format(call)
        given = {**{str(k): str(v) for k, v in settings.options.items()}, **{str(k): str(v) for k, v in options.items()}}
        check_kafka_options(given)
        call.executor.session.server.kafka.remember(given)
    return original(reader, path=path, format=format, schema=schema, **options)
