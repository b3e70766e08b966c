"""What the parts of a Session (QueryManager, SinkReader, QueryStarter) use of the Session that holds them: its public
face only. Each part owns its own state (the book its queries, their lock and the monitor); this is what they share,
and what the catalog, state and monitoring functions they call are handed (their own Protocols are narrower)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..monitoring.events import SessionPlumbing
from .query import SinkReading

if TYPE_CHECKING:  # pragma: no cover

    from ..catalog.records import Catalog
    from ..connection.capabilities import ServerFacts
    from ..connection.remote import Target
    from ..kafka.connector import KafkaSupport
    from ..monitoring.monitor import Monitor
    from .query import Query


class OwningSession(Protocol):
    @property
    def spark(self) -> Any: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def server(self) -> ServerOfSession: ...

    @property
    def url(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    @property
    def client(self) -> ClientOfSession: ...

    @property
    def streams(self) -> QueriesOfSession: ...


class ClientOfSession(SinkReading, SessionPlumbing, Protocol):
    """What the parts use of a Session's plumbing (ss.client, plumbing.py): its sinks as DataFrames, and whether it
    inherits a gone client's listener."""


class QueriesOfSession(Protocol):
    """What the catalog, state and monitoring functions ask of the session's QueryManager (tracking.py)."""

    def get(self, name_or_id: str | Query) -> Query: ...

    def running(self) -> list[Query]: ...

    @property
    def monitor(self) -> Monitor: ...

    def running_in(self, other_session: str) -> set[str] | None: ...

    def known_queries(self) -> list[Query]: ...


class ServerOfSession(Protocol):
    """What the parts use of the session's server (session_server.py)."""

    target: Target
    version: str
    kafka: KafkaSupport

    @property
    def facts(self) -> ServerFacts: ...

    def checkpoint_root(self) -> str | None: ...

    def embedded(self) -> bool: ...
