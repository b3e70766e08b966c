"""What a Spark Connect server can run for this client: learned on first need, kept per server.

A shared cluster is not a copy of this venv. Its Python may lack pandas and pyarrow (the official
`apache/spark` image has neither), or be another minor version, and then everything that runs this client's
Python code on the server fails: Connect's foreachBatch worker (`foreach_batch`), Python data sources
(sparkscope's Kafka source), UDFs. (The bounded sink, the default, runs in the server's JVM: it needs no Python
there, only that the server loads its jar.) Worse, it fails late and says little: the
foreachBatch worker dies on its imports and the client only hears `Python worker failed to connect back` after
the server's ten-second connect timeout.

So sparkscope asks first. One small Python UDF (pickled, not Arrow: it must run where pyarrow is missing) reports
the server Python's version and which of the packages we need it can import; one analysed read says whether
Spark's Kafka connector is there; the configuration gives the checkpoint root. The answer is kept in memory and
in the state dir, keyed by the server's URL and its application id (a new one at every server start), so a
later session of the same server pays one configuration read, and the prompt pays nothing.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Cancelled
from ..error_reading import python_probe_failure, translate, translated
from ..logs import log, swallowed
from ..paths import write_private
from .._pyspark import client_version, version_tuple

CLIENT_PYTHON = "%d.%d.%d" % sys.version_info[:3]
# What Connect's foreachBatch worker imports on the server (pyspark.sql.connect.utils.check_dependencies); the
# server's own pyspark decides: zstandard since 4.1
CONNECT_PACKAGES = ("pandas", "pyarrow", "grpcio", "grpcio-status", "googleapis-common-protos", "zstandard")
ZSTANDARD_SINCE = (4, 1)
# What sparkscope's own Kafka source and sink import there (a Python data source exchanges Arrow batches)
KAFKA_PACKAGES = ("pyarrow", "confluent-kafka")
REQUIREMENTS = "server-config/requirements.txt"
ADD_PACKAGES = f"install {REQUIREMENTS} in the server's Python (pip install -r; server-config/Dockerfile does)"
PROBE_DEADLINE = 120.0  # a busy server starts its first Python worker slowly; the probe waits this long
CACHE_FILE = "servers.json"
CACHE_ENTRIES = 32

# The probe, as source: compiled here into a function of no module, so cloudpickle sends it by value (the
# server has no sparkscope to import it from). It must not fail where our packages are missing.
_PROBE_SOURCE = '''
def report(_):
    import importlib, importlib.metadata, json, sys
    packages = {}
    for name in NAMES:
        try:
            packages[name] = importlib.metadata.version(name)
        except Exception:
            packages[name] = None
    try:
        importlib.import_module("pyspark.sql.connect.session")
        connect = None
    except Exception as exc:
        connect = type(exc).__name__ + ": " + str(exc)
    try:
        from pyspark.version import __version__ as pyspark
    except Exception:
        pyspark = None
    return json.dumps({"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable,
                       "packages": packages, "connect": connect, "pyspark": pyspark})
'''


def minor(version: str | None) -> str | None:
    """'3.11' of '3.11.7'."""
    return ".".join(version.split(".")[:2]) if version else None


@dataclass(frozen=True)
class ServerPython:
    """What the probe found of the server's Python. `failure`: why no Python code ran there at all."""

    version: str | None = None
    executable: str | None = None
    packages: dict[str, str | None] = field(default_factory=dict)
    connect_error: str | None = None  # why pyspark's Connect client cannot be imported there
    failure: str | None = None
    pyspark: str | None = None  # the server Python's own pyspark, whose check_dependencies the worker runs

    def missing(self, names: tuple[str, ...]) -> list[str]:
        return [name for name in names if not self.packages.get(name)]

    def connect_packages(self) -> tuple[str, ...]:
        """What Connect's foreachBatch worker imports there, by the server's own pyspark (all, when unknown)."""
        version = version_tuple(self.pyspark or "")[:2]
        if version and version < ZSTANDARD_SINCE:
            return tuple(name for name in CONNECT_PACKAGES if name != "zstandard")
        return CONNECT_PACKAGES


@dataclass(frozen=True)
class Check:
    """One row of `sparkscope server check`. `ok` None: a fact, not a requirement."""

    capability: str
    ok: bool | None
    found: str
    enables: str
    fix: str = ""


@dataclass(frozen=True)
class Capabilities:
    url: str
    spark_version: str
    identity: str  # the server's application id: a new one at every start of the server
    python: ServerPython
    kafka_connector: bool
    checkpoint_root: str | None
    auth: bool
    tls: bool
    probe_seconds: float
    client_python: str = CLIENT_PYTHON
    client_pyspark: str = field(default_factory=client_version)
    sink_problem: str | None = None  # why the bounded sink's class does not load there (None: it does)
    sink_found: str = "not asked"  # where it loads from: the server's class path, or this client's jar
    users: str = "not asked"  # whether a user id there is an identity (checked against a token) or a label
    limits: str = "not asked"  # what one user may keep there (spark.sparkscope.limit.*), enforced by the server

    # -- what cannot run, in one line each (None: it can) ------------------------------------------
    def python_problem(self) -> str | None:
        """Why this client's Python code (UDFs, foreachBatch, data sources) cannot run on the server."""
        server, client = minor(self.python.version), minor(self.client_python)
        if server and server != client:
            return (f"the server's Python is {server} and this client's is {client}: Python code sent to the "
                    "server needs the same minor version on both sides")
        if self.python.failure:
            return f"the server could not run Python code ({self.python.failure})"
        return None

    def _lacking(self, packages: tuple[str, ...], why: str = "") -> str | None:
        """Why Python code that imports `packages` cannot run on the server: its Python, or what it lacks."""
        missing = self.python.missing(packages)
        return self.python_problem() or (f"the server's Python lacks {', '.join(missing)}{why}" if missing else None)

    def foreach_batch_problem(self) -> str | None:
        """Why Connect's foreachBatch (foreach_batch, pyspark's writeStream.foreachBatch) cannot run. The probe
        imported there what the worker imports (pyspark.sql.connect.session, whose import runs the server pyspark's
        own check_dependencies): when that worked, it runs, whatever the package list says."""
        if self.python_problem() is not None:
            return self.python_problem()
        if self.python.connect_error is None:
            return None
        return (self._lacking(self.python.connect_packages(), ", which Connect's foreachBatch worker imports")
                or f"the server's Python cannot import pyspark's Connect client ({self.python.connect_error})")

    def own_kafka_problem(self) -> str | None:
        """Why sparkscope's own Kafka source and sink cannot run on the server."""
        return self._lacking(KAFKA_PACKAGES)

    def kafka_problem(self) -> str | None:
        """Why Kafka cannot be read or written at all (neither Spark's connector nor our own source)."""
        if self.kafka_connector:
            return None
        problem = self.own_kafka_problem()
        return None if problem is None else f"the server has no spark-sql-kafka connector, and {problem}"

    def newer_server(self) -> str | None:
        """One line when the server's Spark is a newer line than this client's pyspark (Spark Connect's rule: a
        client works against servers of its own version and older ones), else None."""
        server, client = version_tuple(self.spark_version)[:2], version_tuple(self.client_pyspark)[:2]
        if not server or not client or server <= client:
            return None
        line = ".".join(str(n) for n in server)
        return (f"the server runs Spark {self.spark_version} and this client pyspark {self.client_pyspark}: a client "
                f"works against servers of its own version and older ones; install pyspark[connect]=={line}.* here")

    # -- the table --------------------------------------------------------------------------------
    def checks(self) -> list[Check]:
        python = self.python
        python_found = (f"{python.version}" + (f" ({python.executable})" if python.executable else "")
                        + (f", pyspark {python.pyspark}" if python.pyspark else "")
                        if python.version else f"not run: {python.failure}")
        python_fix = (f"use Python {minor(python.version)} for this client, or a server image with Python "
                      f"{minor(self.client_python)} (docs/clusters.md)" if self.python_problem() and python.version
                      else "set PYSPARK_PYTHON on the server to a working Python 3")
        connect_missing = python.missing(python.connect_packages()) if python.connect_error else []
        kafka_missing = python.missing(KAFKA_PACKAGES)
        own_kafka = self.own_kafka_problem()
        if self.kafka_connector:
            kafka_found = "Spark's connector (spark-sql-kafka)"
        elif own_kafka is None:
            kafka_found = "sparkscope's own source and sink (no spark-sql-kafka connector)"
        else:
            kafka_found = "none: no spark-sql-kafka connector" + (
                f", and no {', '.join(kafka_missing)} for sparkscope's own" if kafka_missing else "")
        return [
            Check("spark", self.newer_server() is None, f"{self.spark_version} at {self.url}; this client's pyspark: "
                  f"{self.client_pyspark}", "everything",
                  "" if self.newer_server() is None else str(self.newer_server())),
            Check("python", self.python_problem() is None,
                  python_found + (f"; this client: {self.client_python}" if python.version else ""),
                  "Python code on the server: UDFs, foreachBatch, Python data sources",
                  "" if self.python_problem() is None else python_fix),
            Check("bounded sink", self.sink_problem is None, self.sink_found if self.sink_problem is None else
                  f"not loaded: {self.sink_problem}",
                  "the default sink of append and update streams: the newest rows, bounded (peek, tail, display())",
                  "" if self.sink_problem is None else "start queries with --sink memory (every row is kept), or add "
                  "sparkscope's jar (sparkscope/jars/sparkscope.jar) to the server's class path"),
            Check("foreachBatch", self.foreach_batch_problem() is None,
                  "ok" if self.foreach_batch_problem() is None else (
                      f"missing {', '.join(connect_missing)}" if connect_missing and not self.python_problem()
                      else str(self.foreach_batch_problem())),
                  "foreach_batch, and pyspark's writeStream.foreachBatch",
                  "" if self.foreach_batch_problem() is None else (
                      ADD_PACKAGES if connect_missing and not self.python_problem() else python_fix)),
            Check("kafka", self.kafka_problem() is None, kafka_found, "Kafka sources and sinks, topic lag",
                  "" if self.kafka_problem() is None else
                  f"{ADD_PACKAGES}, or start the server with spark-sql-kafka (--packages)"),
            Check("checkpoints", self.checkpoint_root is not None,
                  self.checkpoint_root or "no spark.sql.streaming.checkpointLocation",
                  "restarting, and reading the state of, queries started without a checkpoint",
                  "" if self.checkpoint_root else
                  "give each query a checkpoint, or set spark.sql.streaming.checkpointLocation on the server"),
            Check("auth", None, "token" if self.auth else "none", "who may run code as the server's user"),
            Check("users", None, self.users, "who a user id is: what a user's sessions, queries and kept rows are "
                  "safe from", "" if self.users.startswith("identities") else "start the server with sparkscope "
                  "server start, and give each user a token: sparkscope server users add NAME"),
            Check("limits", None, self.limits, "what one user may keep in the server's memory, whatever a client "
                  "sends", ""),
            Check("tls", None, "on" if self.tls else "off", "a token sent over the network is encrypted"),
        ]

    @property
    def ok(self) -> bool:
        """Whether everything sparkscope uses works on this server."""
        return all(check.ok is not False for check in self.checks())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Capabilities:
        """Kept capabilities; what they say of this client (its Python, its pyspark) is this process's own."""
        return cls(**{**data, "python": ServerPython(**data["python"]), "client_python": CLIENT_PYTHON,
                      "client_pyspark": client_version()})


# -- learning it --------------------------------------------------------------------------------------
def probe_python(spark: Any) -> ServerPython:
    """Run the probe UDF once on the server; a failure is a finding, not an error."""
    from pyspark.sql.connect.functions import udf
    from pyspark.sql.types import StringType

    from .._pyspark import own_calls

    namespace: dict[str, Any] = {"NAMES": tuple(dict.fromkeys(CONNECT_PACKAGES + KAFKA_PACKAGES))}
    exec(compile(_PROBE_SOURCE, "<sparkscope probe>", "exec"), namespace)  # noqa: S102 - our own source
    report: Any = udf(namespace["report"], StringType(), useArrow=False)
    try:
        with own_calls():
            text = spark.range(1).select(report("id")).collect()[0][0]
    except Exception as exc:
        if isinstance(translate(exc), Cancelled):  # not a finding: the next command asks again
            raise translate(exc) from exc
        return python_failure(str(exc))
    found = json.loads(text)
    return ServerPython(version=found["python"], executable=found["executable"], packages=found["packages"],
                        connect_error=found["connect"], pyspark=found.get("pyspark"))


def python_failure(text: str) -> ServerPython:
    """What a failed probe says of the server's Python: its version, when Spark's check names it."""
    version, failure = python_probe_failure(text)
    return ServerPython(version=version, failure=failure)


def server_identity(spark: Any) -> str:
    """The server's application id (local-1795640307967, app-2026…): the same for every session of one run."""
    return str(spark.conf.get("spark.app.id", "") or "")


def learn(spark: Any, *, url: str, spark_version: str, identity: str, kafka_connector: Callable[[], bool],
          checkpoint_root: str | None, auth: bool, tls: bool, bounded_sink: Callable[[], tuple[str, str, str]]
          ) -> Capabilities:
    """`bounded_sink`: loads the bounded sink in this session and says from where, whether a user id is an identity
    there, and its limits (or raises why it cannot load)."""
    started = time.monotonic()
    users = limits = "not known: sparkscope's jar did not load"
    try:
        (sink_found, users, limits), sink_problem = bounded_sink(), None
    except Exception as exc:
        sink_found, sink_problem = "not loaded", str(getattr(exc, "message", exc))
    python = probe_python(spark)
    try:
        connector = kafka_connector()
    except Exception:  # the server answered something else than "no such source": say it has none
        log.debug("asking for Spark's Kafka connector failed", exc_info=True)
        connector = False
    return Capabilities(url=url, spark_version=spark_version, identity=identity, python=python,
                        kafka_connector=connector, checkpoint_root=checkpoint_root, auth=auth, tls=tls,
                        probe_seconds=round(time.monotonic() - started, 3), sink_problem=sink_problem,
                        sink_found=sink_found, users=users, limits=limits)


class KnownServers:
    """The capabilities learned of each server, in the state dir (mode 0600), by URL and application id."""

    def __init__(self, path: Path):
        self.path = path

    def get(self, url: str, identity: str) -> Capabilities | None:
        entry = self._read().get(url)
        if not entry or entry.get("identity") != identity or not identity:
            return None
        try:
            return Capabilities.from_dict(entry)
        except (TypeError, KeyError):  # written by another version of sparkscope
            return None

    def put(self, caps: Capabilities) -> None:
        with swallowed(f"writing {self.path}"):
            entries = self._read()
            entries.pop(caps.url, None)
            entries[caps.url] = caps.to_dict()
            write_private(self.path, json.dumps(dict(list(entries.items())[-CACHE_ENTRIES:]), indent=1))

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


class ServerFacts:
    """One per session: its server's capabilities, learned on the first call that needs them."""

    def __init__(self, spark: Any, *, url: str, spark_version: str, kafka_connector: Callable[[], bool],
                 checkpoint_root: Callable[[], str | None], auth: bool, tls: bool, known: KnownServers,
                 bounded_sink: Callable[[], tuple[str, str, str]]):
        self._spark = spark
        self._bounded_sink = bounded_sink
        self._url = url
        self._spark_version = spark_version
        self._kafka_connector = kafka_connector
        self._checkpoint_root = checkpoint_root
        self._auth = auth
        self._tls = tls
        self._known = known
        self._lock = threading.Lock()
        self._caps: Capabilities | None = None
        self._said: set[str] = set()

    def get(self, refresh: bool = False) -> Capabilities:
        """The server's capabilities: kept, or learned now (`refresh`: learned now, always). A server that cannot
        be asked raises the one-line SparkscopeError."""
        with self._lock, translated():
            if self._caps is not None and not refresh:
                return self._caps
            identity = server_identity(self._spark)
            caps = None if refresh else self._known.get(self._url, identity)
            if caps is None:
                caps = learn(self._spark, url=self._url, spark_version=self._spark_version, identity=identity,
                             kafka_connector=self._kafka_connector, checkpoint_root=self._checkpoint_root(),
                             auth=self._auth, tls=self._tls, bounded_sink=self._bounded_sink)
                log.debug("learned what %s can run in %.2f s", self._url, caps.probe_seconds)
                if caps.python.failure is None or caps.python.version:  # a timeout is not kept: it may pass
                    self._known.put(caps)
            self._caps = caps
            return caps

    def known(self) -> Capabilities | None:
        """What is known already, without asking the server."""
        return self._caps

    def first_time(self, what: str) -> bool:
        """True the first time this session says `what` (a fallback is said once, not at every start)."""
        with self._lock:
            if what in self._said:
                return False
            self._said.add(what)
            return True
