"""pyspark's methods that the REPL wraps for code written for pyspark (private names of pyspark 4.3.0 listed in
INTERNALS of this package)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_own = threading.local()  # depth of the SDK's own calls in this thread (own_calls)


# -- code written for pyspark, run in the REPL: the methods it calls, wrapped ---------------------
# The REPL (core/compat/) decides what the wrappers do; only the calls its own user code
# makes are affected, and sparkscope.connect() users keep pyspark's behaviour.
def intercept(owner: type, name: str, around: Any) -> None:
    """Replace `owner.name` by a function calling `around(original, self, *args, **kwargs)`. Installing
    again replaces the previous wrapper (never wraps a wrapper)."""
    import functools

    original = getattr(owner, name)
    original = getattr(original, "__sparkscope_original__", original)

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_own, "depth", 0):
            return original(self, *args, **kwargs)
        return around(original, self, *args, **kwargs)

    wrapper.__sparkscope_original__ = original  # type: ignore[attr-defined]
    setattr(owner, name, wrapper)


@contextlib.contextmanager
def own_calls() -> Iterator[None]:
    """The SDK's own calls into pyspark (ss.start's writeStream…start()), made while code of the user's
    runs in the REPL: the wrappers pass them straight on. The REPL's start wrapper would otherwise record
    the query a second time, as a foreach_batch query that cannot be restarted."""
    _own.depth = getattr(_own, "depth", 0) + 1
    try:
        yield
    finally:
        _own.depth -= 1


def pyspark_classes() -> dict[str, type]:
    """The classes whose methods the REPL wraps (public classes of pyspark 4.3.0): the classic and the
    Connect session builders, the Connect session, query, query manager and stream writer."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    from pyspark.sql.connect.streaming.query import StreamingQuery, StreamingQueryManager
    from pyspark.sql.connect.streaming.readwriter import DataStreamWriter
    from pyspark.sql.session import SparkSession as ClassicSession

    return {"ClassicBuilder": ClassicSession.Builder, "ConnectBuilder": ConnectSession.Builder,
            "ConnectSession": ConnectSession, "StreamingQuery": StreamingQuery,
            "StreamingQueryManager": StreamingQueryManager, "DataStreamWriter": DataStreamWriter}


def builder_options(builder: Any) -> dict[str, str]:
    """SparkSession.Builder._options (private, 4.3.0; both builders): what .config/.appName/.master set."""
    return {str(k): str(v) for k, v in dict(getattr(builder, "_options", {}) or {}).items()}


def connect_builder_create(options: dict[str, str]) -> Any:
    """A new Connect session from builder options that name their own spark.remote (public API)."""
    from pyspark.sql.connect.session import SparkSession

    return SparkSession.builder.config(map=dict[str, Any](options)).create()


class ReaderSettings:
    """What a Connect DataStreamReader or DataFrameReader will load (their _format, _options and _client,
    private, 4.3.0)."""

    def __init__(self, reader: Any):
        self._reader = reader

    @property
    def format(self) -> str:
        return str(self._reader._format or "")

    @format.setter
    def format(self, value: str) -> None:
        self._reader._format = value

    @property
    def options(self) -> dict[str, str]:
        return dict(self._reader._options)

    @property
    def session(self) -> Any:
        return self._reader._client


def connect_readers() -> tuple[type, type]:
    """The Connect stream reader (spark.readStream) and batch reader (spark.read)."""
    from pyspark.sql.connect.readwriter import DataFrameReader
    from pyspark.sql.connect.streaming.readwriter import DataStreamReader

    return DataStreamReader, DataFrameReader


class SaveSettings:
    """What a Connect DataFrameWriter (df.write) will save: its WriteOperation (_write: source, mode, options)
    and session (_spark), private, 4.3.0."""

    def __init__(self, writer: Any):
        self._write = writer._write
        self.session = writer._spark

    @property
    def format(self) -> str:
        return str(self._write.source or "")

    @format.setter
    def format(self, value: str) -> None:
        self._write.source = value

    @property
    def mode(self) -> str | None:
        return self._write.mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._write.mode = value

    @property
    def options(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self._write.options.items()}


def connect_save_method() -> tuple[type, str]:
    """DataFrameWriter.save (public): where df.write…save() ends."""
    from pyspark.sql.connect.readwriter import DataFrameWriter

    return DataFrameWriter, "save"


def connect_start_method() -> tuple[type, str]:
    """DataStreamWriter._start_internal (private, 4.3.0): the one method start() and toTable() call."""
    from pyspark.sql.connect.streaming.readwriter import DataStreamWriter

    return DataStreamWriter, "_start_internal"


class WriterSettings:
    """What a Connect DataStreamWriter will start (DataStreamWriter._write_proto, a public
    WriteStreamOperationStart message; _write_stream and _session, private, 4.3.0)."""

    def __init__(self, writer: Any):
        self._writer = writer
        self._proto = writer._write_proto

    @property
    def format(self) -> str:
        return str(self._proto.format)

    @format.setter
    def format(self, value: str) -> None:
        self._proto.format = value

    @property
    def query_name(self) -> str:
        return str(self._proto.query_name)

    @query_name.setter
    def query_name(self, value: str) -> None:
        self._proto.query_name = value

    @property
    def output_mode(self) -> str:
        return str(self._proto.output_mode)

    @property
    def options(self) -> Any:
        return self._proto.options  # a mutable map of str to str

    @property
    def trigger(self) -> str | None:
        """The trigger as sparkscope writes it (10 seconds, once, availableNow, continuous:1s), or None."""
        proto = self._proto
        if proto.processing_time_interval:
            return str(proto.processing_time_interval)
        if proto.once:
            return "once"
        if proto.available_now:
            return "availableNow"
        if proto.continuous_checkpoint_interval:
            return f"continuous:{proto.continuous_checkpoint_interval}"
        return None

    @property
    def foreach_sink(self) -> str | None:
        """"foreach_batch" or "foreach" when the sink is a Python function or writer, else None."""
        if self._proto.HasField("foreach_batch"):
            return "foreach_batch"
        return "foreach" if self._proto.HasField("foreach_writer") else None

    @property
    def session(self) -> Any:
        return self._writer._session

    def dataframe(self) -> Any:
        """The streaming DataFrame this writer writes (DataFrame(plan, session), public constructor)."""
        from pyspark.sql.connect.dataframe import DataFrame

        return DataFrame(self._writer._write_stream._child, self._writer._session)
