"""The query catalog: every query started through sparkscope, kept on the client so it can be restarted.

A record holds the query's plan (the DataFrame's Relation protobuf), its sink, mode, trigger, options,
path/table and checkpoint, who started it and when, the last state and batch seen, and how it ended:
stopped by the user, failed, or lost (the server or its session went away). Started again with the
same checkpoint, a query continues where its last committed batch ended.

SQLite in the state dir (0600). Every change is one transaction, so a client killed at any point
leaves the previous or the next state, never a torn one. Records are keyed by the server (its URL
without the token or session) and the query name.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import delete_guard, file_lock
from ..errors import CatalogError, QueryNotFound
from ..logs import log
from ..paths import state_dir
from ..processes import alive

FILE_NAME = "catalog.sqlite3"

SCHEMA = """
CREATE TABLE IF NOT EXISTS queries (
    server TEXT NOT NULL, name TEXT NOT NULL, query_id TEXT, session_id TEXT, plan BLOB,
    sink TEXT, mode TEXT, trigger TEXT, options TEXT, path TEXT, table_name TEXT, checkpoint TEXT,
    started_by TEXT, started_at REAL, state TEXT, last_batch INTEGER, ended_at REAL, error TEXT,
    restartable INTEGER NOT NULL DEFAULT 1, reason TEXT, seen_at REAL, keep TEXT, view TEXT,
    PRIMARY KEY (server, name));
CREATE TABLE IF NOT EXISTS sessions (
    server TEXT NOT NULL, session_id TEXT NOT NULL, opened_at REAL, seen_at REAL, pid INTEGER,
    PRIMARY KEY (server, session_id));
CREATE TABLE IF NOT EXISTS set_aside (path TEXT NOT NULL, at REAL NOT NULL, reason TEXT);
"""

ACTIVE, STOPPED, FAILED, LOST = "active", "stopped", "failed", "lost"
START_LOCK_SECONDS = 300.0  # the longest one start of a name waits for another client's start of it


@dataclass(frozen=True)
class Record:
    server: str
    name: str
    query_id: str | None
    session_id: str | None
    plan: bytes | None
    sink: str
    mode: str
    trigger: str
    options: dict[str, str]
    path: str | None
    table_name: str | None
    checkpoint: str | None
    started_by: str
    started_at: float
    state: str  # active | stopped | failed | lost
    last_batch: int | None
    ended_at: float | None
    error: str | None
    restartable: bool
    reason: str | None  # why it is not restartable
    seen_at: float | None  # when this client last saw it run (its start, or a batch)
    keep: str | None = None  # bounded sink: what it keeps (planning.parse_keep reads it)
    view: str | None = None  # bounded sink: the global temporary view holding the kept rows


_COLUMNS = [f for f in Record.__dataclass_fields__]
_ADDED_COLUMNS = {"queries": {"keep": "TEXT", "view": "TEXT"},  # columns newer than the first catalogs
                  "sessions": {"pid": "INTEGER"}}


class Catalog:
    def __init__(self, path: Path | None = None):
        self.path = path or state_dir() / FILE_NAME
        self._lock = threading.Lock()

    @classmethod
    def in_home(cls, home: Path | None) -> Catalog:
        """The catalog of the server whose state dir is `home` (None: the default state dir)."""
        return cls(Path(home) / FILE_NAME if home else None)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """One connection per use, one transaction: committed when the block ends, else rolled back. A file
        SQLite cannot read is set aside (never deleted: its records may be recovered by hand) and a fresh
        catalog started, which remembers where the old one went."""
        with self._lock:
            try:
                db = self._open()
            except sqlite3.OperationalError as exc:  # cannot open or lock it: the file itself may be fine
                raise CatalogError(f"The query catalog {self.path} cannot be used ({exc})",
                                   "Check that its folder and file are yours and writable") from exc
            except sqlite3.DatabaseError as exc:  # not a database, or a corrupt one
                db = self._set_aside(exc)
            try:
                with db:
                    yield db
            finally:
                db.close()

    def _open(self) -> sqlite3.Connection:
        if not self.path.exists():
            os.close(delete_guard.open_fd(self.path, os.O_CREAT | os.O_WRONLY))
        db = sqlite3.connect(self.path, timeout=10)
        try:
            db.executescript(SCHEMA)
            _add_missing_columns(db)
        except BaseException:
            db.close()
            raise
        return db

    def _set_aside(self, exc: sqlite3.DatabaseError) -> sqlite3.Connection:
        aside = self.path.with_name(f"{self.path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            delete_guard.replace(self.path, aside)
        except OSError as move_error:
            raise CatalogError(f"The query catalog {self.path} cannot be read ({exc}) nor moved aside "
                               f"({move_error.strerror})", "Move or delete it by hand; sparkscope starts a "
                               "new one") from exc
        log.warning("The query catalog %s could not be read (%s); it was moved to %s and a new one started. "
                    "Queries recorded only there are no longer listed in it", self.path, exc, aside)
        db = self._open()
        with db:
            db.execute("INSERT INTO set_aside (path, at, reason) VALUES (?,?,?)", (str(aside), time.time(), str(exc)))
        return db

    def set_aside(self) -> list[tuple[str, float, str]]:
        """Unreadable catalogs moved aside, with when and why: their queries are not listed any more."""
        with self._db() as db:
            return [(row[0], row[1], row[2] or "") for row in
                    db.execute("SELECT path, at, reason FROM set_aside ORDER BY at").fetchall()]

    @contextlib.contextmanager
    def starting(self, server: str, name: str, timeout: float = START_LOCK_SECONDS) -> Iterator[None]:
        """Held while a query named `name` starts on `server`: from the check that it runs nowhere else until
        its record says where it runs. Two clients of this machine (two REPLs typing `restart same`, or
        threads) then start it one after the other, and the second finds the first one's run."""
        folder = self.path.parent / "starting"
        folder.mkdir(mode=0o700, exist_ok=True)
        lock = folder / hashlib.sha1(f"{server}\0{name}".encode()).hexdigest()[:20]
        try:
            with file_lock.held(lock, timeout):
                yield
        except file_lock.LockWaitExpired:
            raise CatalogError(f"Another client of this machine has been starting {name} for {timeout:.0f} s",
                               "Try again once it has started") from None

    # -- writing ------------------------------------------------------------------------------------
    def record_start(self, server: str, name: str, *, query_id: str, session_id: str, plan: bytes | None,
                     sink: str, mode: str, trigger: str, options: dict[str, str], path: str | None,
                     table_name: str | None, checkpoint: str | None, restartable: bool,
                     reason: str | None, keep: str | None = None, view: str | None = None) -> None:
        with self._db() as db:
            db.execute(
                "INSERT OR REPLACE INTO queries (server, name, query_id, session_id, plan, sink, mode, trigger, "
                "options, path, table_name, checkpoint, started_by, started_at, state, last_batch, ended_at, "
                "error, restartable, reason, seen_at, keep, view) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (server, name, query_id, session_id, plan, sink, mode, trigger, json.dumps(options), path,
                 table_name, checkpoint, _user(), time.time(), ACTIVE, None, None, None, int(restartable), reason,
                 time.time(), keep, view))

    def record_end(self, server: str, name: str, state: str, error: str | None = None,
                   query_id: str | None = None) -> None:
        """The query ended (stopped, failed or lost); `query_id` guards against a newer run of the name."""
        with self._db() as db:
            db.execute("UPDATE queries SET state=?, error=?, ended_at=? WHERE server=? AND name=? AND state=?"
                       + (" AND query_id=?" if query_id else ""),
                       (state, error, time.time(), server, name, ACTIVE, *([query_id] if query_id else [])))

    def record_batch(self, server: str, query_id: str, batch_id: int) -> None:
        with self._db() as db:
            db.execute("UPDATE queries SET last_batch=max(coalesce(last_batch, -1), ?), seen_at=? "
                       "WHERE server=? AND query_id=?", (batch_id, time.time(), server, query_id))

    def record_session(self, server: str, session_id: str, *, held: bool = False) -> None:
        """A session this client opened or joined; `held`: by this process, for its user (a REPL or a
        script), not only looked into, until release_session."""
        now = time.time()
        pid = os.getpid() if held else None
        with self._db() as db:
            db.execute("INSERT INTO sessions (server, session_id, opened_at, seen_at, pid) VALUES (?,?,?,?,?) "
                       "ON CONFLICT (server, session_id) DO UPDATE SET seen_at=excluded.seen_at, "
                       "pid=coalesce(excluded.pid, pid)", (server, session_id, now, now, pid))

    def release_session(self, server: str, session_id: str) -> None:
        """This process no longer holds the session (it closed it, or left it running)."""
        with self._db() as db:
            db.execute("UPDATE sessions SET pid=NULL WHERE server=? AND session_id=? AND pid=?",
                       (server, session_id, os.getpid()))

    def holder(self, server: str, session_id: str, *, this_process_too: bool = False) -> int | None:
        """The pid of another live process of this machine that holds the session (or this process, if asked),
        or None."""
        with self._db() as db:
            row = db.execute("SELECT pid FROM sessions WHERE server=? AND session_id=?", (server, session_id)).fetchone()
        pid = row[0] if row else None
        if not pid or (pid == os.getpid() and not this_process_too) or not alive(int(pid)):  # gone
            return None
        return int(pid)

    def remove(self, server: str, name: str) -> Record | None:
        record = self.get(server, name)
        if record is not None:
            with self._db() as db:
                db.execute("DELETE FROM queries WHERE server=? AND name=?", (server, name))
        return record

    # -- reading ------------------------------------------------------------------------------------
    def get(self, server: str, name: str) -> Record | None:
        rows = self._select("WHERE server=? AND name=?", (server, name))
        return rows[0] if rows else None

    def require(self, server: str, name: str) -> Record:
        """The record of `name`, or QueryNotFound saying what the catalog holds."""
        record = self.get(server, name)
        if record is None:
            raise QueryNotFound(f"No query named '{name}' in the catalog of {server}",
                                "See what it holds with ss.streams.queries(catalogued=True)", code="not_in_catalog",
                                data={"name": name})
        return record

    def records(self, server: str | None = None) -> list[Record]:
        if server is None:
            return self._select("ORDER BY started_at", ())
        return self._select("WHERE server=? ORDER BY started_at", (server,))

    def last_sessions(self, server: str) -> list[str]:
        """This server's sessions, most recently seen first."""
        with self._db() as db:
            rows = db.execute("SELECT session_id FROM sessions WHERE server=? ORDER BY seen_at DESC",
                              (server,)).fetchall()
        return [row[0] for row in rows]

    def _select(self, where: str, args: tuple) -> list[Record]:
        with self._db() as db:
            rows = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM queries {where}", args).fetchall()
        records = []
        for row in rows:
            data = dict(zip(_COLUMNS, row, strict=True))
            data["options"] = json.loads(data["options"] or "{}")
            data["restartable"] = bool(data["restartable"])
            records.append(Record(**data))
        return records


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """A catalog written by an older sparkscope gains the newer columns (empty for its records)."""
    for table, columns in _ADDED_COLUMNS.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for column, kind in columns.items():
            if column not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _user() -> str:
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return str(os.getuid())


def replay_problem(fields: list[tuple[str, str]], temp_views: set[str]) -> str | None:
    """Why a plan would not replay in another session, from its fields (see _pyspark.plan_fields)."""
    names = {name for name, _ in fields}
    if names & {"local_relation", "cached_local_relation", "cached_remote_relation"}:
        return "it reads data held in this session (a DataFrame built from a Python list or pandas)"
    if any(name == "format" and value.endswith(".feed.FeedSource") for name, value in fields):
        return "it reads a memory source (ss.source.memory), whose batches are its feeder's, and go with them"
    tables = {value.split(".")[-1].strip("`").lower() for name, value in fields if name == "unparsed_identifier"}
    sql_words = {word.lower() for name, value in fields if name == "query" for word in re.findall(r"\w+", value)}
    views = sorted((tables | sql_words) & {v.lower() for v in temp_views})
    if views:
        return f"it reads the temporary view {views[0]}, which lives only in this session"
    return None
