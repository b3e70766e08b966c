"""The server that records the class archive (class_cache.py), off the path of the user's first start:
started in the background at the lowest CPU priority, in a state dir of its own beside the archive, it
answers one query so that those classes are recorded too, then stops cleanly, and its recording becomes
the archive.

    python -m sparkscope.client.class_recording FOLDER   (class_cache.record_later runs it)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .class_cache import RECORDER_LOCK
from .logs import swallowed
from .paths import private_dir
from .processes import free_port
from .server import LocalServer


def record(folder: Path) -> None:
    try:
        server = LocalServer(private_dir(folder / "recorder"))
        info = server.start(port=free_port(), timeout=600)
        try:
            with swallowed("running the recording server's query"):  # the start's classes are the most
                from pyspark.sql import SparkSession

                spark = SparkSession.builder.remote(f"sc://localhost:{info.port}/;token={info.token}").create()
                spark.range(3).selectExpr("id % 2 AS k").groupBy("k").count().collect()
                spark.stop()
        finally:
            server.stop()
    finally:
        (folder / RECORDER_LOCK).unlink(missing_ok=True)


if __name__ == "__main__":
    os.nice(19)  # before the JVM starts, which inherits it: the user's own server comes first
    record(Path(sys.argv[1]))
