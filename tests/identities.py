"""Users of the test server, as its owner makes them: `sparkscope server users add NAME` (the real command), and the
hostile second user's tools: a plain pyspark client with a user's token, and calls into sparkscope's jar that
sparkscope's own client never makes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from tests.helpers import run_sparkscope

CONTROL = "sparkscope.v3.Control"
RING = "sparkscope.v3.sink.KeepNewest"
FEED_WRITER = "sparkscope.v3.feed.FeedWriter"


def add_user(name: str) -> str:
    """A new user of the test server (the sandbox's state dir), by the real command: their token."""
    added = run_sparkscope("server", "users", "add", name, "--format", "json")
    assert added.returncode == 0, added.stderr
    answer = json.loads(added.stdout)
    assert answer["user"] == name  # {"user": …, "token": …}, beside the command and its message
    return str(answer["token"])


def remove_user(name: str) -> None:
    removed = run_sparkscope("server", "users", "remove", name)
    assert removed.returncode == 0, removed.stderr


@contextlib.contextmanager
def users(*names: str) -> Iterator[dict[str, str]]:
    """Each of `names` a user of the test server while the block runs: {name: token}."""
    tokens = {name: add_user(name) for name in names}
    try:
        yield tokens
    finally:
        for name in names:
            remove_user(name)


@contextlib.contextmanager
def pyspark_client(port: int, token: str | None, *, user_id: str | None = None,
                   session_id: str | None = None) -> Iterator[Any]:
    """A plain pyspark Connect session (no sparkscope), as another user would open one: stopped after the block."""
    from pyspark.sql import SparkSession

    url = f"sc://localhost:{port}/" + "".join(
        f";{key}={value}" for key, value in (("token", token), ("user_id", user_id), ("session_id", session_id))
        if value)
    spark = SparkSession.builder.remote(url).create()
    try:
        yield spark
    finally:
        with contextlib.suppress(Exception):
            spark.stop()


def call(spark: Any, call: str, **options: Any) -> list[dict[str, Any]]:
    """One call into sparkscope's jar, with any options at all (what sparkscope's own client never sends too)."""
    rows = spark.read.format(CONTROL).option("call", call).options(
        **{key: str(value) for key, value in options.items()}).load().collect()
    return [json.loads(row[0]) for row in rows]
