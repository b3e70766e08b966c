"""The state every Session layer shares: the pyspark session, its target, the queries it knows, and who it is."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ._pyspark import make_active, user_id
from .catalog.records import Catalog
from .errors import call
from .queries.query import Query
from .connection.remote import Target

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.connect.session import SparkSession

    from .monitoring.monitor import Monitor

KEEPALIVE_SECONDS = 300.0
# Set in every session sparkscope opens: a session id the server does not know comes back without it.
SESSION_MARKER = "sparkscope.session.opened"


class SessionBase:
    """What every layer of a Session holds. `spark` is the real pyspark SparkSession."""

    def __init__(self, spark: SparkSession, target: Target, server_version: str, server_home: Path | None = None):
        from .connection.capabilities import KnownServers, ServerFacts
        from .kafka.connector import KafkaSupport
        from .paths import state_dir
        from .queries.sources import Sources

        self.spark = spark
        self.target = target
        self.server_version = server_version
        self.kafka = KafkaSupport(spark, server_version, target.profile)
        # what the server can run (its Python, Kafka connector, checkpoint root), asked on first need
        self.facts = ServerFacts(spark, url=target.with_session(None).display, spark_version=server_version,
                                 kafka_connector=self.kafka.has_connector, checkpoint_root=lambda: self.checkpoint_root,
                                 auth=bool(target.token), tls=target.needs_tls,
                                 known=KnownServers(Path(server_home or state_dir()) / "servers.json"))
        self.kafka.own_source_problem = lambda: self.facts.get().own_kafka_problem()
        self.source = Sources(spark, self.kafka, same_machine=target.on_this_machine)
        self._queries: dict[str, Query] = {}
        self._started_here: set[str] = set()  # ids of the queries this process started (not found)
        self._lock = threading.RLock()
        self._closed = False
        self._checkpoint_root: str | None = None
        self._stop_keepalive = threading.Event()
        self._monitor: Monitor | None = None
        self.catalog = Catalog.in_home(server_home)
        self._batch_recorded: dict[str, float] = {}
        self._stop_explaining: Callable[[], None] = lambda: None
        self.server_home = server_home  # the state dir of the embedded server it talks to (None: the default)

    def activate(self) -> None:
        """Make this the session pyspark's getActiveSession() returns in the calling thread (and the
        default one in every thread)."""
        make_active(self.spark)

    def running_in(self, other_session: str) -> set[str] | None:
        """The ids of the queries running in another session of this server; None when it is gone."""
        raise NotImplementedError

    def _known_to_server(self) -> bool:
        """Whether this session existed before we attached: our marker, or queries of its own."""
        if call(self.spark.conf.get, SESSION_MARKER, None):
            return True
        return bool(self._queries)

    # -- identity -------------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return str(self.target.session_id)

    @property
    def user(self) -> str | None:
        """The user name the server sees (SPARK_USER or USER on this machine)."""
        return user_id(self.spark)

    @property
    def url(self) -> str:
        """The server URL with the token hidden."""
        return self.target.with_session(None).display

    def __repr__(self) -> str:
        return f"<sparkscope.Session {self.url} session_id={self.session_id}>"

    @property
    def checkpoint_root(self) -> str | None:
        if self._checkpoint_root is None:
            value = call(self.spark.conf.get, "spark.sql.streaming.checkpointLocation", "")
            self._checkpoint_root = value or ""
        return self._checkpoint_root or None
