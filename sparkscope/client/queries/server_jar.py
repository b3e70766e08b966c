"""sparkscope's jar on the server (`sparkscope/jars/sparkscope.jar`): the bounded sink's rings and the memory source's
feeds live in the server's JVM, and this is how a session loads the jar, agrees on its protocol, and sees and frees
what it keeps there.

- Loading: the embedded server has the jar on its class path; any other server gets it from this client as an
  artifact of the session (`spark.addArtifacts`), the first time the session needs it.
- Protocol: the jar's classes live in a package named after the protocol they speak (`sparkscope.v3`), so a server
  where another sparkscope's jar is loaded keeps both side by side, each with its own registry. The first call is
  `hello`: the jar says its protocol, and whether it can tell who calls (Spark Connect's user and session) and which
  sessions are open (what ends a ring or a feed with no client).
- Every call is a read of `sparkscope.v2.Control` whose rows are the answer (one JSON object a row), run as an
  operation of this session: the server knows the caller by it (Control.java).
- What the jar keeps has an owner (the Spark Connect user that made it: its names are that user's, and nobody else's
  session finds them), limits the server enforces (`spark.sparkscope.limit.*`: rows, grace, how many, bytes), and an
  end that needs no client: its query's end plus a grace period (`spark.sparkscope.grace` on the server, 15 minutes
  by default; `grace` per query), or its session's end. `kept()` lists the caller's, `free()` frees the caller's
  that nothing uses. On a server sparkscope started, a user is an identity (each token acts as its own user: the
  jar's interceptor); the server's owner also sees each other user's totals (`kept_by_others()`), never their
  sessions.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._pyspark import first_column
from ..errors import UnsupportedOperation
from ..error_reading import missing_data_source, translate, translated

JAR = Path(__file__).resolve().parent.parent.parent / "jars" / "sparkscope.jar"
PROTOCOL = 3
PACKAGE = f"sparkscope.v{PROTOCOL}"
CONTROL = f"{PACKAGE}.Control"


@dataclass(frozen=True)
class Kept:
    """One thing sparkscope keeps on the server: a ring (the rows a bounded query keeps) or a feed (the batches of a
    memory source). `state`: running (a query that uses it runs), waiting (no query has used it yet; its session is
    open), open (a feed whose session is open), ended (nothing uses it: it is freed `grace` seconds after `ended`)."""

    kind: str
    name: str
    query: str
    query_id: str
    user: str | None  # None: made where the server could not tell who called (then anyone's)
    session: str
    state: str
    rows: int
    bytes: int
    age: float
    ended: float | None
    grace: float
    yours: bool
    scratch: str | None = None
    last_batch_received: int | None = None  # a ring's: the rows its writers sent the driver in the last batch
    trimmed_by: str | None = None  # a ring's: the byte limit (a setting's name) that made it keep fewer rows
    reading: bool = False  # a real-time query's ring: its writers run (its batch reads from offsets now fixed)


    @property
    def ends_in(self) -> float | None:
        """Seconds until the sweeper frees it, once nothing uses it (None while something does)."""
        return None if self.ended is None else max(0.0, self.grace - self.ended)

    @classmethod
    def of(cls, facts: dict[str, Any]) -> Kept:
        ended = facts.get("ended_ms")
        return cls(kind=str(facts.get("kind")), name=str(facts.get("name")), query=str(facts.get("query") or ""),
                   query_id=str(facts.get("query_id") or ""), user=facts.get("user"),
                   session=str(facts.get("session") or ""), state=str(facts.get("state")),
                   rows=int(facts.get("rows") or 0), bytes=int(facts.get("bytes") or 0),
                   age=int(facts.get("age_ms") or 0) / 1000, ended=None if ended is None else int(ended) / 1000,
                   grace=int(facts.get("grace_ms") or 0) / 1000, yours=bool(facts.get("yours")),
                   scratch=facts.get("scratch"), last_batch_received=facts.get("last_batch_received"),
                   trimmed_by=facts.get("trimmed_by"), reading=bool(facts.get("reading")))


@dataclass(frozen=True)
class KeptTotal:
    """What another user keeps on the server, in totals: what its owner sees of each other user (no name of a ring,
    no session)."""

    user: str | None
    rings: int
    feeds: int
    bytes: int
    in_use: int  # how many of them a query or an open session uses (the rest are in their grace period)


def _mib(value: object) -> str:
    return f"{int(str(value or 0)) / 2**20:,.0f} MiB"


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


class ServerJar:
    """The jar as one session uses it: loaded on the server once, then called."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._loaded: str | None = None  # where the classes load from, once they do
        self._hello: dict[str, Any] = {}
        self._lock = threading.Lock()

    def load(self) -> str:
        """Where the classes load from on the server: its own class path (the embedded server has the jar), or
        this session's artifact, sent now. One line (UnsupportedOperation) when the server cannot load them, or
        when the jar it has speaks another protocol."""
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def describe(self) -> str:
        """Where the jar loads from and what it can do there, in words (`sparkscope server check`)."""
        where = self.load()
        said = [f"{where}; protocol {PROTOCOL}"]
        if self._hello.get("caller") is None:
            said.append("this server does not say who calls, so any user may read what sparkscope keeps")
        if not self._hello.get("sessions"):
            said.append("this server does not list its sessions, so only a query's end ends its rows")
        return "; ".join(said)

    def users(self) -> str:
        """Whether a user id on this server is an identity or a label, in words (`sparkscope server check`)."""
        if self.hello.get("identities"):
            return ("identities: the server checks every request's token, and a user's token acts as that user only "
                    "(sparkscope server users)")
        return ("labels: the server checks no user id against a token, so a client may name any user, and reach "
                "that user's sessions (docs/security.md)")

    def limits(self) -> str:
        """What one user may keep on this server, in words (`sparkscope server check`)."""
        limits = self.hello.get("limits") or {}
        if not limits:
            return "none known"
        grace = int(limits.get("spark.sparkscope.limit.grace_ms", 0)) / 1000
        return (f"{int(limits.get('spark.sparkscope.limit.rows', 0)):,} rows a ring, a grace period of at most "
                f"{_duration(grace)}, {int(limits.get('spark.sparkscope.limit.holdings', 0))} rings and feeds and "
                f"{_mib(limits.get('spark.sparkscope.limit.bytes', 0))} a user, "
                f"{_mib(limits.get('spark.sparkscope.limit.totalBytes', 0))} for every user together "
                "(spark.sparkscope.limit.* on the server)")

    @property
    def hello(self) -> dict[str, Any]:
        """What the jar said at the first call: its protocol, the caller it saw, whether it lists sessions."""
        self.load()
        return dict(self._hello)

    def _load(self) -> str:
        try:
            self._hello = self._call("hello", protocol=PROTOCOL)[0]
            where = "on the server's class path"
        except Exception as exc:
            if not missing_data_source(exc):
                raise translate(exc) from exc
            with translated():
                self._spark.addArtifacts(str(JAR))
            try:
                self._hello = self._call("hello", protocol=PROTOCOL)[0]
            except Exception as again:
                problem = translate(again).message
                raise UnsupportedOperation(f"The server could not load sparkscope's classes from the jar this "
                                           f"session sent it: {problem}", "Start the query with --sink memory (it "
                                           "keeps every row), or add sparkscope's jar to the server's class path",
                                           code="bounded_sink_not_loaded", data={"problem": problem}) from again
            where = f"sent by this client ({JAR.name}, a session artifact)"
        spoken = self._hello.get("protocol")
        if spoken != PROTOCOL:
            raise UnsupportedOperation(f"The server's sparkscope jar speaks protocol {spoken}, this client protocol "
                                       f"{PROTOCOL}", "Use a sparkscope of the same version as the jar on the "
                                       "server's class path, or take the jar off it (the client then sends its own)",
                                       code="jar_protocol", data={"server": str(spoken), "client": str(PROTOCOL)})
        return where

    def call(self, call: str, **options: Any) -> list[dict[str, Any]]:
        """One call into the jar (Control.java): its answer, one dict a row. Loads the jar first."""
        self.load()
        with translated():
            return self._call(call, **options)

    def _call(self, call: str, **options: Any) -> list[dict[str, Any]]:
        given = {key: str(value).lower() if isinstance(value, bool) else str(value)
                 for key, value in options.items() if value is not None}
        answers = first_column(self._spark.read.format(CONTROL).option("call", call).options(**given).load())
        return [json.loads(answer) for answer in answers]

    def listing(self) -> tuple[list[Kept], list[KeptTotal]]:
        """What sparkscope keeps on this server for the caller's user; and, for the server's owner, each other
        user's totals (an empty list for anyone else)."""
        rows = self.call("list")
        totals = [KeptTotal(user=facts.get("user"), rings=int(facts.get("rings") or 0),
                            feeds=int(facts.get("feeds") or 0), bytes=int(facts.get("bytes") or 0),
                            in_use=int(facts.get("in_use") or 0))
                  for facts in rows if facts.get("kind") == "totals"]
        return [Kept.of(facts) for facts in rows if facts.get("kind") != "totals"], totals

    def free(self, *, every_user: bool = False) -> list[Kept]:
        """Free now what this user keeps on the server that nothing uses (ended, in its grace period); `every_user`:
        what every user keeps that nothing uses (the server's owner only: anyone else frees their own)."""
        return [Kept.of(facts) for facts in self.call("free", all=every_user or None)]

    def drop(self, name: str) -> bool:
        """Drop one ring or feed of this user now; whether it was there."""
        return bool(self.call("forget", name=name)[0].get("forgotten"))
