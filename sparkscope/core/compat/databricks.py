"""Databricks habits in the REPL: display(), and one clear line for what exists only there.

`display(df)` is how Databricks users look at a DataFrame, and the seeds use it. A batch DataFrame
is shown as a table. A streaming one starts as a query into the bounded sink (display_query_N, or
streamName=), and its batches are printed as they come, as :tail prints them, until Ctrl-C; the
query keeps running, as in Databricks, until :stop. `%sql` runs as :sql; dbutils and the other magics
say what to use here instead (dbutils.py: dbutils.fs works on this machine's files).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from ...client.errors import FileOperationFailed
from ...client.queries.dataframes import is_dataframe
from ...client._pyspark.arrow import fetch
from .console import free_query_name
from ..commands.registry import UsageError
from ..rendering.render import show
from ..rendering.results import Block, Message, Result, Table

if TYPE_CHECKING:  # pragma: no cover
    from ..context import CommandContext

DISPLAY_ROWS = 1000  # Databricks shows the first 1,000 rows of a batch DataFrame


class Display:
    """`display` in the REPL's namespace."""

    def __init__(self, executor: CommandContext):
        self._executor = executor

    def __repr__(self) -> str:
        return "display(df): a table of a DataFrame, or a streaming DataFrame's batches as they come"

    def __call__(self, df: Any, *, streamName: str | None = None, processingTime: str | None = None,  # noqa: N803
                 checkpointLocation: str | None = None, **_ignored: Any) -> None:  # noqa: N803
        executor = self._executor
        session = executor.session
        if not is_dataframe(df):
            executor.out.write(repr(df) + "\n")
            return None
        if not df.isStreaming:
            executor.out.write(show("display", batch_table(df), executor.fmt) + "\n")  # --format json: one object
            return None
        query = start_displayed(session, df, streamName, processingTime, checkpointLocation)
        executor.err.write(f"display: started {query.name} (:stop {query.name} ends it); its batches follow"
                           + ("; Ctrl-C stops showing them, the query keeps running" if executor.interactive else "")
                           + "\n")
        executor.err.flush()
        live = executor.live()
        live.tail(query, from_start=True)
        if not executor.interactive:
            return None  # a script goes on; the batches print as they come
        try:
            query.handle.awaitTermination()  # Ctrl-C ends this wait, not the query (compat/waits.py)
        finally:
            live.untail(query.name)
        return None


def batch_table(df: Any) -> Table:
    """display() of a batch DataFrame: its first DISPLAY_ROWS rows, as Databricks shows them."""
    rows = fetch(df, DISPLAY_ROWS + 1)
    more = len(rows.rows) > DISPLAY_ROWS
    return Table(rows.columns, rows.rows[:DISPLAY_ROWS], footer=f"(first {DISPLAY_ROWS:,} rows)" if more else None)


def start_displayed(session: Any, df: Any, stream_name: str | None, trigger: str | None,
                    checkpoint: str | None) -> Any:
    """display() of a streaming DataFrame: a query into the bounded sink, named by streamName= or display_query_N,
    that runs on until it is stopped, as in Databricks."""
    name = stream_name or free_query_name(session, "display_query")
    return session.start(df, name, trigger=trigger, checkpoint=checkpoint)


def magic(line: str) -> str | None:
    """A cell starting with a Databricks magic (`%sql …`): the colon command to run instead; None for the magics
    that run otherwise (%python as Python, %fs through fs_magic); UsageError, saying what to do, for the others."""
    name = line.strip()[1:].split(None, 1)[0] if line.strip()[1:].strip() else ""
    body = line.strip()[1 + len(name):].strip()
    if name == "sql":
        if not body:
            raise UsageError("%sql needs a statement", "e.g. %sql SELECT * FROM counts")
        return f":sql {body}"  # the SQL as written: its line breaks end its -- comments, its literals keep their spaces
    if name in ("python", "fs"):
        return None
    instead = {"md": "Markdown cells are notes: leave them out, or keep them as # comments",
               "sh": "Run shell commands in your terminal, or with subprocess.run in Python",
               "pip": "Install packages into sparkscope's environment with pip, outside the REPL",
               "run": "Run another script with: sparkscope -f FILE, or exec(open(FILE).read()) here",
               "scala": "Only Python and SQL run here (Spark Connect's Python client)"}.get(
        name, "Magics are a notebook's: write Python, a colon command or %sql")
    raise UsageError(f"%{name} is a Databricks notebook magic", instead)


# %fs's commands: how many paths (or values) each takes, and the flags each knows, as dbutils.fs names them
_FS_COMMANDS = {"ls": 1, "head": 1, "mkdirs": 1, "rm": 1, "cp": 2, "mv": 2, "put": 2}
_FS_FLAGS = {"rm": ("recurse",), "cp": ("recurse",), "mv": ("recurse",), "head": ("maxBytes",), "put": ("overwrite",)}
_FS_SHORT = {"-r": "recurse", "-f": "overwrite"}
FS_USAGE = ("Use %fs ls|head|mkdirs|rm PATH, %fs cp|mv FROM TO or %fs put PATH TEXT; flags: -r (--recurse) for rm, "
            "cp and mv, --maxBytes=N for head, -f (--overwrite) for put; quote a path with spaces")


def fs_words(line: str) -> tuple[str, list[str], dict[str, object]]:
    """A %fs line as a shell reads it (quotes keep spaces): its command, its paths and its flags as dbutils.fs's
    keyword arguments (`-r` and `--recurse` are recurse=True, `--maxBytes=3` is maxBytes=3)."""
    try:
        words = shlex.split(line)[1:]
    except ValueError as exc:  # an unclosed quote
        raise UsageError(f"%fs cannot read {line.strip()[3:].strip()!r} ({exc})", "Close the quote") from None
    command = words[0] if words else ""
    if command not in _FS_COMMANDS:
        raise UsageError(f"%fs {' '.join(words)}".rstrip() + " is not a %fs command sparkscope runs", FS_USAGE)
    values: list[str] = []
    flags: dict[str, object] = {}
    for word in words[1:]:
        if not word.startswith("-") or word == "-":
            values.append(word)
            continue
        name, _, value = (_FS_SHORT.get(word, "") or word.lstrip("-")).partition("=")
        if name not in _FS_FLAGS.get(command, ()):
            known = ", ".join(f"--{flag}" for flag in _FS_FLAGS.get(command, ())) or "none"
            raise UsageError(f"%fs {command} has no flag {word} (its flags: {known})", FS_USAGE)
        flags[name] = _flag_value(command, name, value)
    if len(values) != _FS_COMMANDS[command]:
        raise UsageError(f"%fs {command} takes {_FS_COMMANDS[command]} path{'s' if _FS_COMMANDS[command] > 1 else ''}"
                         f"{' and a text' if command == 'put' else ''}, not {len(values)}", FS_USAGE)
    return command, values, flags


def _flag_value(command: str, name: str, value: str) -> object:
    if name == "maxBytes":
        if not value.isdigit():
            raise UsageError(f"%fs head --maxBytes needs a number of bytes, not {value or 'nothing'}",
                             "e.g. %fs head --maxBytes=100 PATH")
        return int(value)
    if value.lower() in ("", "true"):
        return True
    if value.lower() == "false":
        return False
    raise UsageError(f"%fs {command} --{name} is true or false, not {value}", FS_USAGE)


def fs_magic(line: str, fs: Any) -> Result:
    """`%fs ls PATH`, `%fs head --maxBytes=N PATH`, `%fs rm -r PATH`, `%fs cp [-r] FROM TO` …: the dbutils.fs call
    Databricks runs for it, shown as Databricks shows it (ls as a table, head as the text itself). A path that is
    not there (or cannot be removed, copied …) is one line."""
    command, paths, flags = fs_words(line)
    try:
        value = getattr(fs, command)(*paths, **flags)
    except FileOperationFailed as exc:
        raise UsageError(exc.message, exc.hint.replace("dbutils.fs.ls", "%fs ls")) from None
    if command == "ls":
        rows = [[info.path, info.name, info.size, info.modificationTime] for info in value]
        return Table(["path", "name", "size", "modificationTime"], rows,
                     footer=f"({len(rows)} entr{'y' if len(rows) == 1 else 'ies'})",
                     droppable=("path",))  # the folder's own path, repeated: the names matter more
    if command == "head":
        return Block(value)
    return Message(str(value))
