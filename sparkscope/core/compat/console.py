"""`format("console")` prints each batch here: Spark prints it on the server, out of sight of a Connect client, so
the query writes to a memory sink that the REPL tails, `numRows` and `truncate` honoured, and its stop() prints
its last batches before it returns, as Spark's console sink does."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from ...client.logs import swallowed
from ..rendering.live import WHOLE
from .user_code import current

CONSOLE_ROWS = 20  # Spark's console sink: numRows

CONSOLE_TRUNCATE = 20  # and truncate=true: cells cut to 20 characters

_printed_here: set[str] = set()  # the run ids of console-sink queries printed here (start.py records them)
_numbers: dict[str, Iterator[int]] = {}  # per name prefix


def printed_here(run_id: str) -> None:
    """A console-sink query of this run id is printed here (its stop waits for its last batches)."""
    _printed_here.add(run_id)


def console_options(options: Any) -> tuple[int, int | None]:
    """The console sink's numRows and truncate, taken out of the writer's options: (rows, cells cut to)."""
    return _int_option(_take(options, "numRows"), CONSOLE_ROWS), _truncate_option(_take(options, "truncate"))


def stop_query(original: Any, query: Any) -> Any:
    """query.stop() of a console-sink query printed here: its batches written before the end print before
    stop() returns, as Spark's console sink printed each batch inside it; nothing prints after the code
    that follows (a script's "Query stopped" line)."""
    result = original(query)
    call = current()
    if call is not None and query.runId in _printed_here:
        _printed_here.discard(query.runId)
        with swallowed(f"printing the last batches of {query.name}"):
            call.executor.live().finish_tails([query.name])
    return result


def _take(options: Any, key: str) -> Any:
    value = options.get(key)
    if key in options:
        del options[key]
    return value


def free_query_name(session: Any, prefix: str) -> str:
    """`prefix_N`, the first N no query of this session has (console_1, display_query_1 …)."""
    taken = {q.name for q in session.streams.known_queries()}
    numbers = _numbers.setdefault(prefix, itertools.count(1))
    while True:
        name = f"{prefix}_{next(numbers)}"
        if name not in taken:
            return name


def _int_option(value: Any, default: int) -> int:
    try:
        return max(1, int(str(value))) if value is not None else default
    except ValueError:
        return default


def _truncate_option(value: Any) -> int | None:
    """Spark's console sink: truncate=false shows whole cells; true (the default) cuts at 20."""
    if value is None or str(value).strip().lower() == "true":
        return CONSOLE_TRUNCATE
    if str(value).strip().lower() == "false":
        return WHOLE
    return _int_option(value, CONSOLE_TRUNCATE)
