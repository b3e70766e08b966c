"""`ss.server`: the server a Session talks to, as that session sees it. Where it is and which Spark it runs; what
it can run (its facts); its Kafka support; and, for a server sparkscope started on this machine, its UI and the
tasks that keep it busy. What needs a call to the server is a method; the attributes are known without one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import SparkscopeError
from .error_reading import call
from .logs import swallowed

if TYPE_CHECKING:  # pragma: no cover
    from .connection.capabilities import ServerFacts
    from .connection.remote import Target
    from .kafka.connector import KafkaSupport

CHECKPOINT_ROOT_CONF = "spark.sql.streaming.checkpointLocation"
WARM_UP_WAIT = 30.0  # a warm-up that takes longer is not waited for


def warm_up_query(spark: Any) -> None:
    """A query through the paths most queries take: code generation, a shuffle, an aggregation."""
    spark.range(8).selectExpr("id % 2 AS k").groupBy("k").count().collect()


class LocalServerView(Protocol):
    """The embedded server of this machine, as a Session looks at it (sparkscope.server.connecting makes one).
    Each answer is about the server on `port` only, and only reads: none starts, stops or deletes anything."""

    def ui(self, port: int) -> str | None: ...

    def restarted_under(self, port: int, token: str | None) -> bool: ...

    def serves(self, port: int) -> bool: ...

    def busy_tasks(self, port: int, window: float) -> list[float] | None: ...

    def out_of_memory_exit(self) -> SparkscopeError | None: ...


class SessionServer:
    """The server of one session (`ss.server`): `version` (its Spark), `target` (its URL, the token's source),
    `kafka` (how its Kafka source runs), `facts` (what it can run, asked once) and `home` (the state dir of the
    embedded server it may be, None for the default) need no call to it."""

    def __init__(self, spark: Any, target: Target, version: str, *, kafka: KafkaSupport,
                 facts: ServerFacts, here: LocalServerView | None, home: Path | None):
        self._spark = spark
        self.target = target
        self.version = version
        self.kafka = kafka
        self.home = home
        self._facts = facts
        self._here = here
        self._checkpoint_root: str | None = None
        self._warming: threading.Thread | None = None

    @property
    def facts(self) -> ServerFacts:
        """What the server can run (its Python, Kafka connector, checkpoint root): `.get()` asks it once."""
        return self._facts

    def __repr__(self) -> str:
        return f"<sparkscope server {self.target.with_session(None).display} Spark {self.version}>"

    def checkpoint_root(self) -> str | None:
        """The server's spark.sql.streaming.checkpointLocation (asked once), or None when it has none."""
        if self._checkpoint_root is None:
            self._checkpoint_root = call(self._spark.conf.get, CHECKPOINT_ROOT_CONF, "") or ""
        return self._checkpoint_root or None

    def idle_timeout(self) -> tuple[float, bool]:
        """(seconds, known): how long the server keeps a session, and its queries, once no client calls it;
        assumed to be Spark's default 60 minutes when the server does not say."""
        from .catalog.durable import idle_timeout

        return idle_timeout(self._spark)

    def embedded(self) -> bool:
        """Whether it is a server sparkscope started on this machine (embedded, or on its --workers cluster): then
        the paths its queries read and write are this machine's."""
        port = self.target.port
        return self._here is not None and self.target.on_this_machine and port is not None and self._here.serves(port)

    def ui(self) -> str | None:
        """Where the Spark UI is and who can read it, for the embedded server (None for another one)."""
        if self._here is None or not self.target.on_this_machine or self.target.port is None:
            return None
        return self._here.ui(self.target.port)

    def warm_up(self) -> None:
        """One small aggregation, in the background. A server that just started loads and compiles its query
        path on its first query (1.5 s on 2 cores); done now, the user's first query finds it ready."""
        def run() -> None:
            with swallowed("warming up the server"):
                warm_up_query(self._spark)

        self._warming = threading.Thread(target=run, name="sparkscope-warm-up", daemon=True)
        self._warming.start()

    def warmed(self, timeout: float = WARM_UP_WAIT) -> None:
        """Wait for the warm-up, if one runs: a query sent meanwhile would compete with it for the same cold
        code paths (measured: 2.5 s instead of 1.7 s for both together)."""
        if self._warming is not None:
            self._warming.join(timeout)

    def busy_tasks(self, window: float = 1.0) -> list[float] | None:
        """The cores each computing task of the embedded server uses now, sampled over `window` seconds (tasks of
        every session, streams' too); None for another server, whose threads this machine cannot see."""
        if self._here is None or not self.target.on_this_machine or self.target.port is None:
            return None
        return self._here.busy_tasks(self.target.port, window)
