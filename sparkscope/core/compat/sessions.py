"""The session of the user's code is the REPL's: `SparkSession.builder…getOrCreate()` returns it (runtime SQL confs
given to the builder are set on it; appName, master and static confs are not, and one line says so, once), and
`spark.stop()` on it closes it after the input ends, asking first as :quit does, and a new session takes its
place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...client import _pyspark
from ...client.connection.remote import LOCAL_HOSTS, parse_url
from ...client.error_reading import translate
from ...client.logs import swallowed
from .user_code import current

if TYPE_CHECKING:  # pragma: no cover
    from ..context import ReplContext

NOT_APPLIED = {"spark.master": "master", "spark.app.name": "appName", "spark.api.mode": "spark.api.mode"}

CONF_SET_AT_START = ("CANNOT_MODIFY_CONFIG", "CANNOT_MODIFY_STATIC_CONFIG")  # Spark's conditions for those



def get_or_create(original: Any, builder: Any) -> Any:
    call = current()
    if call is None:
        return original(builder)
    options = _pyspark.builder_options(builder)
    session = call.executor.session
    remote = options.pop("spark.remote", None)
    if remote and not _same_server(remote, session.server.target):
        return _pyspark.connect_builder_create({**options, "spark.remote": remote})  # the user's own choice
    ignored = []
    for key, value in options.items():
        if key in NOT_APPLIED or key.startswith("spark.local."):
            ignored.append(NOT_APPLIED.get(key, key))
            continue
        try:
            session.spark.conf.set(key, value)
        except Exception as exc:
            error = translate(exc)
            if not (error.error_class or "").startswith(CONF_SET_AT_START):
                raise error from None  # a wrong value (INVALID_CONF_VALUE), as classic getOrCreate() raises it
            ignored.append(key)
    if ignored:
        call.executor.notice_once(
            "getOrCreate", f"note: getOrCreate() gives sparkscope's session; {', '.join(ignored)} "
            f"{'is' if len(ignored) == 1 else 'are'} set when a server starts, so not applied here "
            "(sparkscope server start --conf KEY=VALUE sets a server's)")
    return session.spark


def _same_server(remote: str, target: Any) -> bool:
    if not remote.startswith("sc://"):
        return True  # local, local[*]: "a local Spark", which the REPL's session is
    try:
        other = parse_url(remote)
    except Exception:
        return False
    same_host = other.host == target.host or (other.host in LOCAL_HOSTS and target.host in LOCAL_HOSTS)
    return same_host and other.port == target.port


def stop_session(original: Any, spark: Any) -> Any:
    call = current()
    if call is None or not call.executor.owns_spark(spark):
        return original(spark)
    call.executor.request_session_stop()  # closed when this input ends: the REPL asks, then opens a new one
    return None


def replace_stopped_session(executor: ReplContext) -> None:
    """spark.stop() ran on the REPL's session: close it as pyspark would (asking first, as :quit does,
    when queries run; a script's own queries stop with it), then open a new session on the same
    server, so that spark, ss and every command work again. The REPL says so in one line; a script says nothing,
    as pyspark says nothing."""
    from ...client.deadline import within
    from ...client.errors import SparkscopeError
    from ...server.connecting import open_session
    from ..leaving import LEAVE_DEADLINE
    from ..rendering.render import error_line

    old = executor.session
    try:
        queries = within(LEAVE_DEADLINE, old.streams.running, "listing running queries")
    except SparkscopeError:
        queries = []
    if not executor.interactive:  # a script stops what it started, never what it found
        queries = [q for q in queries if old.streams.started_here(q)]
    names = ", ".join(q.name for q in queries)
    stop = not queries or not executor.interactive or executor.confirm(
        f"spark.stop() closes this session. {len(queries)} quer{'y is' if len(queries) == 1 else 'ies are'} "
        f"still running ({names}). Stop {'it' if len(queries) == 1 else 'them'}? [y/N] ")
    if stop:
        for query in queries:
            with swallowed(f"stopping {query.name}"):
                query.stop()
    try:
        new, _, left = executor.switch_session(lambda: open_session(old.server.target.with_session(None), server_home=old.server.home))
    except SparkscopeError as exc:
        executor.err.write(error_line(exc) + "\n")
        return
    if not executor.interactive:  # as pyspark's spark.stop(): silent; the script's own queries ended with it
        return
    ended = f"; stopped {names}" if stop and queries else ""
    kept = f"; left running in the old session: {', '.join(left)} (:stop NAME ends one)" if left else ""
    executor.err.write(f"spark.stop() closed session {old.session_id[:8]}{ended}{kept}. "
                       f"A new session {new.session_id[:8]} is ready: spark, ss and the commands use it.\n")
    executor.err.flush()
