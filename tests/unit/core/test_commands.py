"""The colon commands through a fake context: what each family returns for what it is given, with no server. A
command sees only its CommandContext (core/context.py) and returns what it changes (core/rendering/results.py), so
its arguments, its one-line errors and its effects (leaving, another session, a wait Ctrl-C ends) are tested here;
what Spark answers is tested against a real server in tests/integration/test_commands.py."""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from sparkscope.client.errors import SparkscopeError, UnsupportedOperation
from sparkscope.core.commands.listing import REGISTRY
from sparkscope.core.commands.registry import UsageError
from sparkscope.core.rendering.results import Block, Exit, Follow, Message, SwitchSession, Table


class FakeLive:
    """The REPL's alerts and tails, as far as the commands use them."""

    def __init__(self) -> None:
        self.alerts_on = True
        self.latency_over_ms: float | None = None
        self.tailed: dict[str, Any] = {}

    def tail(self, query: Any, limit: int = 20, **_: Any) -> Any:
        feed = SimpleNamespace(active=True)
        self.tailed[query.name] = feed
        return feed

    def untail(self, name: str | None = None) -> list[str]:
        names = [name] if name in self.tailed else [] if name else list(self.tailed)
        for each in names:
            self.tailed.pop(each).active = False
        return names


@dataclass
class FakeQuery:
    name: str
    state: str = "active"


class FakeSession:
    """A session that answers from what a test gave it: no server behind it."""

    url = "sc://localhost:15002"
    session_id = "4e891c44-0000-0000-0000-000000000000"

    def __init__(self, queries: list[FakeQuery] | None = None):
        self._queries = {q.name: q for q in queries or []}
        self.catalog = SimpleNamespace(get=lambda url, name: None)
        self.server = SimpleNamespace(version="4.3.0", target=SimpleNamespace(bare_url="sc://localhost:15002"))
        self.streams = SimpleNamespace(lost_queries=lambda: [], known_queries=lambda: [], get=self._get)

    def _get(self, name: str) -> FakeQuery:
        if name not in self._queries:
            raise SparkscopeError(f"No query named '{name}'")
        return self._queries[name]


@dataclass
class FakeContext:
    """A CommandContext (core/context.py) with a fake session."""

    session: Any = field(default_factory=FakeSession)
    namespace: dict[str, object] = field(default_factory=dict)
    interactive: bool = True
    vi_mode: bool = False
    fmt: str = "table"
    last_traceback: str | None = None
    stop_requested: bool = False
    connecting: bool = False
    opener: Any = None
    answers: list[bool] = field(default_factory=list)
    live_: FakeLive = field(default_factory=FakeLive)
    out: io.StringIO = field(default_factory=io.StringIO)
    err: io.StringIO = field(default_factory=io.StringIO)
    cancelled: threading.Event = field(default_factory=threading.Event)

    @property
    def registry(self) -> Any:
        return REGISTRY

    def request_session_stop(self) -> None:
        self.stop_requested = True

    def confirm(self, question: str) -> bool:
        return self.answers.pop(0) if self.answers else False

    def session_or_none(self) -> Any:
        return self.session

    def live(self) -> FakeLive:
        return self.live_

    def evaluate(self, source: str) -> object:
        return eval(source, dict(self.namespace))  # noqa: S307 - the test's own expressions

    def reattach_command(self) -> str:
        return f"sparkscope --remote {self.session.url} --session-id {self.session.session_id}"

    def notice_once(self, key: str, text: str) -> None:
        self.err.write(text + "\n")

    def owns_spark(self, spark: object) -> bool:
        return False


def run(ctx: FakeContext, line: str) -> Any:
    invocation = REGISTRY.parse(line)
    return invocation.command.func(ctx, invocation.args, invocation.opts)


# -- session.py: leaving, connecting, help, trace --------------------------------------------------------------
def test_quit_returns_an_exit_instead_of_leaving_itself():
    assert run(FakeContext(), ":quit") == Exit()
    assert run(FakeContext(), ":q") == Exit()


def test_leaving_while_the_server_does_not_list_its_queries_asks_about_those_this_process_knows():
    """A busy server that does not answer in time must not make the REPL leave as if nothing ran."""
    from sparkscope.core.leaving import leave

    class Busy(FakeSession):
        closed_with: bool | None = None

        def close(self, stop_queries: bool) -> list[str]:
            self.closed_with = stop_queries
            return ["leaving"] if stop_queries else []

    asked: list[str] = []
    ctx = FakeContext(session=Busy(), answers=[True])
    ctx.confirm = lambda question: asked.append(question) or True  # type: ignore[method-assign]
    ctx.session.server = SimpleNamespace(target=SimpleNamespace(source="remote", token_source=None))
    known = [SimpleNamespace(name="leaving", known_state=lambda: None),
             SimpleNamespace(name="ended", known_state=lambda: "stopped")]
    def running() -> list[Any]:
        raise SparkscopeError("Listing running queries got no answer within 5 s")

    ctx.session.streams = SimpleNamespace(known_queries=lambda: known, started_here=lambda query: True, running=running)
    assert leave(ctx, None, None) == "Stopped leaving."
    assert asked == ["1 query is still running (leaving). Stop it? [y/N] "]
    assert ctx.session.closed_with is True
    assert ctx.err.getvalue() == ("note: the server did not list its running queries (Listing running queries got no "
                                  "answer within 5 s); these are the ones this process knows of.\n")


def test_leaving_says_which_query_the_server_did_not_stop_in_time_and_how_to_end_it():
    """A busy server that does not stop a query within close()'s deadline: "Stopped" would be untrue, and the
    query's name stays taken while it runs on (a start of that name in a new REPL is refused)."""
    from sparkscope.core.leaving import leave

    class Slow(FakeSession):
        def close(self, stop_queries: bool) -> list[str]:
            return ["fast"]

    ctx = FakeContext(session=Slow(), answers=[True])
    ctx.confirm = lambda question: True  # type: ignore[method-assign]
    ctx.session.server = SimpleNamespace(target=SimpleNamespace(source="remote", token_source=None))
    ctx.session.streams = SimpleNamespace(started_here=lambda query: True, running=lambda: [
        SimpleNamespace(name="fast"), SimpleNamespace(name="slow")])
    assert leave(ctx, None, None) == ("Stopped fast.\nThe server did not stop slow in time: it runs on in session "
                                      "4e891c44. Start sparkscope again and :stop NAME to end it.")


def test_connect_returns_the_switch_and_says_what_it_left_in_the_previous_session():
    ctx = FakeContext(opener=lambda: FakeSession())
    ctx.session = FakeSession()
    ctx.session.server.target = SimpleNamespace(bare_url="sc://localhost:15002", with_session=lambda sid: None)
    switched = run(ctx, ":connect sc://elsewhere:15002")
    assert isinstance(switched, SwitchSession)
    said = switched.said(FakeSession(), ctx.session, ["counts"])
    assert isinstance(said, Message) and said.text == (
        "Connected to sc://localhost:15002 (session 4e891c44, Spark 4.3.0). Left counts running in the previous "
        "session; reattach with :connect sc://localhost:15002 --session-id 4e891c44-0000-0000-0000-000000000000")


def test_connect_while_connecting_is_one_line():
    with pytest.raises(UsageError, match="Still connecting"):
        run(FakeContext(connecting=True), ":connect")


def test_trace_shows_the_last_traceback_or_says_there_is_none():
    assert run(FakeContext(), ":trace") == Block("No error yet.")
    assert run(FakeContext(last_traceback="Traceback …"), ":trace") == Block("Traceback …")


def test_help_lists_every_command_and_one_command_s_usage():
    listed = run(FakeContext(), ":help")
    assert isinstance(listed, Table) and {row[0].split()[0] for row in listed.rows} >= {":start", ":peek", ":quit"}
    with pytest.raises(SparkscopeError):
        run(FakeContext(), ":help nonsense")


# -- live.py: alerts and tails -----------------------------------------------------------------------------------
def test_alerts_turn_on_and_off_and_refuse_anything_else():
    ctx = FakeContext()
    assert run(ctx, ":alerts off").data == {"alerts": False, "latency_over_ms": None}
    assert ctx.live_.alerts_on is False
    assert run(ctx, ":alerts on").data == {"alerts": True, "latency_over_ms": None}
    with pytest.raises(UsageError, match="'loud' is not on, off or latency LIMIT"):
        run(ctx, ":alerts loud")


def test_alerts_on_latency_take_a_limit_and_say_it():
    ctx = FakeContext()
    said = run(ctx, ":alerts latency 500ms")
    assert said.text.endswith("state without bound, p99 latency over 500 ms)")
    assert ctx.live_.latency_over_ms == 500.0
    assert run(ctx, ":alerts latency 2s").data["latency_over_ms"] == 2000.0
    with pytest.raises(UsageError, match="'soon' is not a duration"):
        run(ctx, ":alerts latency soon")
    with pytest.raises(UsageError, match="needs a limit, like 500ms"):
        run(ctx, ":alerts latency")
    assert ctx.live_.latency_over_ms == 2000.0  # a refused limit changes nothing
    assert run(ctx, ":alerts latency off").data["latency_over_ms"] is None


def test_tail_follow_returns_a_wait_that_ctrl_c_ends_by_untailing():
    ctx = FakeContext(session=FakeSession([FakeQuery("counts")]))
    follow = run(ctx, ":tail counts --follow")
    assert isinstance(follow, Follow) and follow.waiting()
    assert follow.cancelled() == "Stopped tailing counts"  # Ctrl-C: the tail ends, and says so
    assert not follow.waiting() and "counts" not in ctx.live_.tailed
    assert follow.cancelled() is None  # nothing left to stop


def test_tail_of_a_query_that_is_not_running_is_one_line():
    ctx = FakeContext(session=FakeSession([FakeQuery("done", state="stopped")]))
    with pytest.raises(UsageError, match=r"done is not running \(stopped\)"):
        run(ctx, ":tail done")
    assert run(FakeContext(), ":tail --stop") == Message("Nothing is being tailed")


# -- streams.py: starting needs a streaming DataFrame ------------------------------------------------------------
def test_start_names_what_is_missing_or_is_not_a_dataframe():
    with pytest.raises(UsageError, match="No DataFrame named 'events'"):
        run(FakeContext(), ":start events")
    with pytest.raises(UnsupportedOperation, match="'numbers' is a list, not a streaming DataFrame"):
        run(FakeContext(namespace={"numbers": [1, 2]}), ":start counts numbers")


# -- catalog.py: forgetting asks first -----------------------------------------------------------------------------
def test_forget_with_delete_checkpoint_changes_nothing_unless_confirmed():
    assert run(FakeContext(), ":forget counts --delete-checkpoint") == Message("Nothing was changed.")


# -- state.py and kafka.py: their arguments ------------------------------------------------------------------------
def test_state_and_produce_say_what_they_need():
    with pytest.raises(UsageError):
        REGISTRY.parse(":state")
    with pytest.raises(UsageError):
        REGISTRY.parse(":produce")
