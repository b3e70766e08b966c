"""What the parts of a Session (QueryBook, SinkReader, QueryStarter) use of the Session that holds them: its
shared state, and what the catalog, state and monitoring functions they call are handed."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

from ..catalog.durable import CatalogedSession
from ..monitoring.events import WatchedSession
from ..state.store import StatefulSession

if TYPE_CHECKING:  # pragma: no cover
    from ..connection.capabilities import ServerFacts
    from ..kafka.connector import KafkaSupport
    from ..monitoring.monitor import Monitor
    from .query import Query


class OwningSession(CatalogedSession, StatefulSession, WatchedSession, Protocol):
    facts: ServerFacts
    kafka: KafkaSupport
    _queries: dict[str, Query]  # every query this process knows in the session, by id
    _monitor: Monitor | None
    _started_here: set[str]  # ids of the queries this process started (not found)
    _batch_recorded: dict[str, float]  # when each query's last batch was written to the catalog

    def on_embedded_server(self) -> bool: ...

    @property
    def _lock(self) -> contextlib.AbstractContextManager[Any]:
        """Guards _queries and _monitor."""
