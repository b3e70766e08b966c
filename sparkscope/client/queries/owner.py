"""What the parts of a Session (QueryBook, SinkReader, QueryStarter) use of the Session that holds them: its public
face only. Each part owns its own state (the book its queries, their lock and the monitor); this is what they share,
and what the catalog, state and monitoring functions they call are handed (their own Protocols are narrower)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..catalog.records import Catalog
    from ..connection.capabilities import ServerFacts
    from ..connection.remote import Target
    from ..kafka.connector import KafkaSupport
    from .query import Query


class OwningSession(Protocol):
    spark: Any
    catalog: Catalog
    target: Target
    facts: ServerFacts
    kafka: KafkaSupport

    @property
    def url(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    @property
    def inherits_listener(self) -> bool: ...

    @property
    def checkpoint_root(self) -> str | None: ...

    def on_embedded_server(self) -> bool: ...

    def running_in(self, other_session: str) -> set[str] | None: ...

    def query(self, name_or_id: str | Query) -> Query: ...

    def running(self) -> list[Query]: ...

    def known_queries(self) -> list[Query]: ...

    def sink_dataframe(self, name_or_query: str | Query) -> DataFrame: ...

    def batch_dataframe(self, query: Query, batch_id: int) -> DataFrame: ...
