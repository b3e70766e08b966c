"""sparkscope's own classes on the server (`sparkscope/jars/sparkscope.jar`: the bounded sink, KeepNewest.java, and
the memory source of sparkscope.testing, sparkscope/feed/): on its class path already (the embedded server starts
with the jar), or sent as an artifact of this session (`spark.addArtifacts`), once, the first time a session needs
them. Nothing of the jar runs in a task (its writers and readers are Spark's own), because Spark's streaming tasks
do not see a session's artifacts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..errors import UnsupportedOperation, missing_data_source, translate, translated

JAR = Path(__file__).resolve().parent.parent.parent / "jars" / "sparkscope.jar"
PROBE_CLASS = "sparkscope.sink.KeepNewest"


class ServerClasses:
    """The jar's classes as one session uses them: loaded on the server once."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._loaded: str | None = None  # where the classes load from, once they do
        self._lock = threading.Lock()

    def load(self) -> str:
        """Where the classes load from on the server: its own class path (the embedded server has the jar), or
        this session's artifact, sent now. One line (UnsupportedOperation) when the server cannot load them."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> str:
        try:
            check_loaded(self._spark)
            return "on the server's class path"
        except Exception as exc:
            if not missing_data_source(exc):
                raise translate(exc) from exc
        with translated():
            self._spark.addArtifacts(str(JAR))
        try:
            check_loaded(self._spark)
        except Exception as again:
            problem = translate(again).message
            raise UnsupportedOperation(f"The server could not load sparkscope's classes from the jar this session "
                                       f"sent it: {problem}", "Start the query with --sink memory (it keeps every "
                                       "row), or add sparkscope's jar to the server's class path",
                                       code="bounded_sink_not_loaded", data={"problem": problem}) from again
        return f"sent by this client ({JAR.name}, a session artifact)"


def check_loaded(spark: Any) -> None:
    """Raise what the server says when it cannot load the jar's classes (DATA_SOURCE_NOT_FOUND): one RPC."""
    spark.read.format(PROBE_CLASS).option("ring", "sparkscope_check").option("forget", "true").load().schema  # noqa: B018
