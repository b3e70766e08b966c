"""Spark's Structured Streaming Programming Guide as a corpus: the Python blocks of apache/spark's docs/streaming/,
in the guide's order, with only the data paths, the placeholders the guide leaves for the reader (`df = ...`) and
the reader's imports filled in. The guide's text is not kept here: it is read at test time from a checkout of apache/spark, named by
SPARKSCOPE_SPARK_DOCS (its docs/ or docs/streaming/ folder).

`run_plain` runs the snippets as the pyspark shell would, in one namespace on a Spark Connect session, and says what
each did: None, or the exception it raised. tests/e2e/test_guide.py pastes the same snippets into sparkscope."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGES = ("getting-started.md", "apis-on-dataframes-and-datasets.md", "performance-tips.md",  # the guide's order
         "structured-streaming-state-data-source.md")
_BLOCK = re.compile(r"\{% highlight python %\}\n(.*?)\{% endhighlight %\}", re.S)
_PLACEHOLDER = re.compile(r"^(\w+) = (?:spark\.read(?:Stream)?\. |SparkSession\. |)\.\.\.(?:\s*#.*)?$", re.M)

# What each placeholder stands for, as the comment beside it describes it; rate streams, so that queries make rows.
_RATE = 'spark.readStream.format("rate").option("rowsPerSecond", 5).load()'
STANDS_FOR = {
    "df": f"{_RATE}.selectExpr(\"concat('device', value % 3) AS device\", \"concat('type', value % 2) AS "
          "deviceType\", 'CAST(value AS DOUBLE) AS signal', 'CAST(timestamp AS DATE) AS time')",
    "deviceDataDf": "df",
    "words": f"{_RATE}.selectExpr('timestamp', \"concat('word', value % 4) AS word\")",
    "events": f"{_RATE}.selectExpr('timestamp', \"concat('user', value % 3) AS userId\")",
    "staticDf": "spark.createDataFrame([('type0', 'zero'), ('type1', 'one')], 'type string, label string')",
    "streamingDf": f"{_RATE}.selectExpr(\"concat('type', value % 2) AS type\", 'CAST(value % 7 AS STRING) AS guid', "
                   "'timestamp AS eventTime')",
    "streamingDF": f"{_RATE}.selectExpr('value', 'timestamp')",
    "impressions": f"{_RATE}.selectExpr('value % 5 AS impressionAdId', 'timestamp AS impressionTime')",
    "clicks": f"{_RATE}.selectExpr('value % 5 AS clickAdId', 'timestamp AS clickTime')",
    "query": f"{_RATE}.writeStream.format('memory').queryName('a_streaming_query').start()",
}
_NEVER_DEFINED = ("deviceDataDf", "streamingDF")  # names the guide uses in a snippet without a placeholder line


@dataclass(frozen=True)
class Snippet:
    page: str
    number: int  # 1-based, within its page
    source: str  # as the guide has it

    @property
    def label(self) -> str:
        return f"{self.page}#{self.number}"


def guide_folder() -> Path | None:
    given = os.environ.get("SPARKSCOPE_SPARK_DOCS")
    if not given:
        return None
    folder = Path(given).expanduser()
    return folder / "streaming" if (folder / "streaming").is_dir() else folder


# The imports the guide leaves to the reader (its blocks call window(), session_window(), StructType(), expr() and
# StreamingQueryListener without importing them), given to both runs as the first block.
READER_IMPORTS = Snippet("the reader's imports", 0, "from pyspark.sql.functions import *\n"
                                                    "from pyspark.sql.types import *\n"
                                                    "from pyspark.sql.streaming import StreamingQueryListener\n")


# The state data source page reads "<checkpointLocation>": the checkpoint of a stateful query the reader has run.
# This block runs one before that page's blocks: a count per key over three files, a batch each, then it ends.
STATEFUL_CHECKPOINT = "/path/to/stateful/checkpoint"
STATEFUL_QUERY = Snippet("a stateful query's checkpoint", 0, f"""\
spark.range(30).selectExpr("id % 3 AS key").repartition(3).write.mode("overwrite").json("/path/to/stateful/input")
_stateful = (spark.readStream.schema("key LONG").option("maxFilesPerTrigger", 1).json("/path/to/stateful/input")
             .groupBy("key").count()
             .writeStream.format("memory").queryName("guide_stateful").outputMode("complete")
             .option("checkpointLocation", "{STATEFUL_CHECKPOINT}").trigger(availableNow=True).start())
_stateful.awaitTermination()
""")


def snippets(folder: Path) -> list[Snippet]:
    """The reader's imports, then every Python block of the guide's pages, in order."""
    found = [READER_IMPORTS]
    for page in PAGES:
        blocks = _BLOCK.findall((folder / page).read_text(encoding="utf-8"))
        if any("<checkpointLocation>" in block for block in blocks):
            found.append(STATEFUL_QUERY)
        found += [Snippet(page, number, block) for number, block in enumerate(blocks, 1)]
    return found


def prepared(snippet: Snippet, data: Path, socket_port: int) -> str:
    """The snippet with its data paths under `data`, its socket on `socket_port`, and its placeholders filled."""
    source = snippet.source
    for name in _NEVER_DEFINED:
        if re.search(rf"\b{name}\b", source) and not re.search(rf"^{name} = ", source, re.M):
            source = f"{name} = {STANDS_FOR[name]}\n{source}"

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return "" if name == "spark" else f"{name} = {STANDS_FOR[name]}"

    source = _PLACEHOLDER.sub(fill, source).replace("<checkpointLocation>", STATEFUL_CHECKPOINT)
    for path in sorted(set(re.findall(r'"(/?path/to/[^"]*)"', source))):
        (data / path.strip("/")).mkdir(parents=True, exist_ok=True)  # an input folder must exist; Spark fills the others
        source = source.replace(f'"{path}"', f'"{data / path.strip("/")}"')
    return source.replace('"localhost"', '"127.0.0.1"').replace("9999", str(socket_port))


def blocks_until(source: str) -> str | None:
    """What a snippet waits on for ever, which a person ends with Ctrl-C: the query it awaits, or None."""
    if "awaitAnyTermination()" in source:
        return "any query"
    match = re.search(r"^(\w+)\.awaitTermination\(\)", source, re.M)
    return match.group(1) if match and ".stop()" not in source else None


def run_plain(spark: Any, snippets_now: list[tuple[Snippet, str]], wait_seconds: float = 20) -> dict[str, str | None]:
    """Each prepared snippet run as the pyspark shell runs a pasted cell, one after another in one namespace, with
    every query stopped after each (as the sparkscope run does). A snippet that waits on a query for ever is let
    wait until the query has made progress (or `wait_seconds`), then its query is stopped, as Ctrl-C would end it.
    Returns, per label, None or "TypeName: first line of the message"."""
    from pyspark.sql import SparkSession

    namespace: dict[str, Any] = {"spark": spark, "SparkSession": SparkSession, "__name__": "__main__"}
    outcome: dict[str, str | None] = {}
    for snippet, source in snippets_now:
        outcome[snippet.label] = _run_one(spark, namespace, source, wait_seconds)
        for query in spark.streams.active:
            query.stop()
    return outcome


def _run_one(spark: Any, namespace: dict[str, Any], source: str, wait_seconds: float) -> str | None:
    result: list[BaseException | None] = []

    def run() -> None:
        try:
            exec(compile(source, "<guide>", "exec"), namespace)
            result.append(None)
        except BaseException as exc:  # what the shell would print
            result.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    deadline = time.monotonic() + wait_seconds
    while worker.is_alive() and time.monotonic() < deadline:
        if blocks_until(source) and any(q.lastProgress and q.lastProgress["numInputRows"]
                                        for q in spark.streams.active):
            break  # it waits on a query that has made rows: what a person waits to see before Ctrl-C
        worker.join(0.2)
    if worker.is_alive():  # awaiting a query for ever: end it, as Ctrl-C would
        for query in spark.streams.active:
            query.stop()
        worker.join(60)
    error = result[0] if result else TimeoutError("still running after its queries stopped")
    if error is None:
        return None
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {first}"


def main(argv: list[str]) -> None:
    """`python -m tests.corpus.guide URL DATA PORT`: the plain run, in a process of its own (sparkscope's REPL
    habits never loaded), as `pyspark --remote URL` gives it: SPARK_REMOTE set, `spark` from getOrCreate().
    Prints {label: outcome} as JSON."""
    import json

    from pyspark.sql import SparkSession

    from sparkscope.server.connecting import resolve_target

    url, data, port = argv
    folder = guide_folder()
    assert folder is not None
    os.environ["SPARK_REMOTE"] = resolve_target(url, start_server=False).url(with_token=True, with_session=False)
    spark = SparkSession.builder.getOrCreate()
    todo = [(snippet, prepared(snippet, Path(data), int(port))) for snippet in snippets(folder)]
    print(json.dumps(run_plain(spark, todo)))
    spark.stop()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
