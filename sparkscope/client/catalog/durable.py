"""Queries that outlive their session: what a plan needs to replay, which catalogued queries were lost, how long
the server keeps an idle session, and forgetting a record. Session's methods of the same names call these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .._pyspark import plan_bytes, plan_fields
from .. import delete_guard
from .checkpoints import kept_because
from .records import ACTIVE, LOST, STOPPED, Catalog, Record, replay_problem
from ..errors import ConfigError, UnsupportedOperation
from ..error_reading import call
from ..logs import log, swallowed
from ..connection.remote import Target


class RecordedQuery(Protocol):
    """What forgetting and finding lost queries read of a query (queries/query.py's Query)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def state(self) -> str: ...


class CatalogedSession(Protocol):
    """What these functions use of a Session."""

    @property
    def catalog(self) -> Catalog: ...

    @property
    def server(self) -> ServerOfSession: ...

    @property
    def spark(self) -> Any: ...


    @property
    def url(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    @property
    def streams(self) -> RecordedQueries: ...


class ServerOfSession(Protocol):
    """What these functions ask of a Session's server (session_server.py)."""

    target: Target

    def checkpoint_root(self) -> str | None: ...


class RecordedQueries(Protocol):
    """What these functions ask of a Session's queries (ss.streams)."""

    def running(self) -> Sequence[RecordedQuery]: ...

    def running_in(self, other_session: str) -> set[str] | None: ...

    def known_queries(self) -> Sequence[RecordedQuery]: ...


def replay_check(spark: Any, df: Any, sink: str) -> tuple[bytes | None, str | None]:
    """The plan to keep, and why it would not replay in another session (None when it would)."""
    if sink == "foreach_batch":
        return None, "its foreachBatch function lives only in this Python process"
    if sink == "foreach":
        return None, "its foreach writer lives only in this Python process"
    try:
        plan = plan_bytes(df)
    except Exception:
        log.debug("could not read the plan", exc_info=True)
        return None, "its plan could not be read"
    fields = plan_fields(plan)
    temp_views: set[str] = set()
    if any(name in ("unparsed_identifier", "query") for name, _ in fields):  # one RPC, when it reads tables
        with swallowed("listing temporary views"):
            rows = call(lambda: spark.sql("SHOW VIEWS").collect())
            temp_views = {row["viewName"] for row in rows if row["isTemporary"]}
    return plan, replay_problem(fields, temp_views)


def forget(session: CatalogedSession, name: str, *, delete_checkpoint: bool = False) -> Record:
    """Remove a stopped, failed or lost query from the catalog. Its checkpoint stays unless asked, and even then
    unless sparkscope made it for this very query and no other record uses it (checkpoints.kept_because): a
    checkpoint the user gave is theirs, and stays."""
    record = session.catalog.require(session.url, name)
    if any(q.name == name for q in session.streams.running()):
        raise ConfigError(f"{name} is running", f"Stop it first (ss.streams.stop('{name}'))",
                          code="query_running", data={"name": name})
    elsewhere = record.state == ACTIVE and record.session_id not in (None, session.session_id)
    if elsewhere and record.query_id in (session.streams.running_in(str(record.session_id)) or set()):
        holder = session.catalog.holder(session.url, str(record.session_id))
        who = f", where another sparkscope (pid {holder}) works" if holder else ""
        raise ConfigError(f"{name} is running in session {str(record.session_id)[:8]}{who}: forgetting it would "
                          "leave a query nobody can restart", f"Stop it first (ss.streams.stop('{name}')), then "
                          "forget it", code="query_running", data={"name": name, "session_id": str(record.session_id)})
    if delete_checkpoint and record.checkpoint:
        if not session.server.target.on_this_machine:
            raise UnsupportedOperation(f"The checkpoint of {name} is on the server, not on this machine",
                                       "Delete it there; the record was kept")
        kept = kept_because(record, session.catalog.records(session.url), session.server.checkpoint_root())
        if kept is None:
            delete_guard.remove_tree(record.checkpoint.removeprefix("file:"))
        else:
            log.info("the checkpoint of %s stays at %s: %s", name, record.checkpoint, kept)
    session.catalog.remove(session.url, name)
    return record


def find_lost(session: CatalogedSession) -> list[Record]:
    """Catalogued queries recorded as running that no longer run: their session is gone from the
    server (restarted, or timed out), so they are marked lost. Each other session they ran in costs a look
    into it: about five RPCs (the probe, its marker, its active queries twice, its release)."""
    active = [r for r in session.catalog.records(session.url) if r.state == ACTIVE]
    if not active:
        return []
    running = {q.id for q in session.streams.running()}
    lost: list[Record] = []
    by_session: dict[str, list[Record]] = {}
    for record in active:
        if record.query_id in running:
            continue
        by_session.setdefault(record.session_id or "", []).append(record)
    for sid, records in by_session.items():
        if sid == session.session_id:  # ended in this session while nobody was looking
            known = {query.id: query for query in session.streams.known_queries()}
            for record in records:
                query = known.get(record.query_id or "")
                if query is not None and query.state != "active":  # its end, read from Spark, is recorded as it
                    continue  # was: failed with its error, or stopped
                session.catalog.record_end(session.url, record.name, STOPPED, None, query_id=record.query_id)
            continue
        still = session.streams.running_in(sid)
        for record in records:
            if still is None or record.query_id not in still:
                state = LOST if still is None else STOPPED
                session.catalog.record_end(session.url, record.name, state, None, query_id=record.query_id)
                if state == LOST:
                    lost.append(record)
    return lost


SESSION_TIMEOUT_CONF = "spark.connect.session.manager.defaultSessionTimeout"
SPARK_DEFAULT_SESSION_TIMEOUT = 3600.0  # Spark's own default, 60m
_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def spark_duration(text: str) -> float | None:
    """A Spark time string ('24h', '60m', '5min', '300s'; a bare number is milliseconds for this
    setting) in seconds, or None when it is not one."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", (text or "").lower())
    if not match or match.group(2) not in (*_TIME_UNITS, ""):
        return None
    return float(match.group(1)) * _TIME_UNITS[match.group(2) or "ms"]


def idle_timeout(spark: Any) -> tuple[float, bool]:
    """How long the server keeps a session without a client before it closes it and stops its queries:
    (seconds, known). Not known when the server does not tell (Spark's default, 60 minutes, is assumed)."""
    with swallowed("reading the server's session timeout"):
        text = call(lambda: spark.conf.get(SESSION_TIMEOUT_CONF, None))
        seconds = spark_duration(str(text)) if text else None
        if seconds is not None:
            return seconds, True
    return SPARK_DEFAULT_SESSION_TIMEOUT, False
