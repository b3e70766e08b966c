"""The colon commands that follow queries as they run: the dashboard, tails and alerts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...client.errors import ConfigError
from ...client.monitoring.progress import milliseconds
from ...client.queries.planning import interval_seconds
from .streams import int_option
from .registry import Arg, Complete, Options, Runs, UsageError, command, flag, valued
from ..rendering.results import Follow, Message, Result, Table

if TYPE_CHECKING:  # pragma: no cover
    from ..context import CommandContext


@command("watch", "A live full-screen dashboard of the queries (q leaves it)",
         args=(Arg("NAME", optional=True, repeat=True, complete=Complete.QUERY),), runs=Runs.FULLSCREEN)
def watch(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    from ..rendering.dashboard import Dashboard

    session = ctx.session
    names = [session.streams.get(name).name for name in args]
    live = ctx.live()

    def stop_query(name: str) -> str:
        session.streams.get(name).stop()
        return f"stopped {name}"

    def read_state(name: str, width: int) -> str:
        from ...client.state.store import fetch_state
        from .state import STATE_ROWS
        from ..rendering.render import render_table

        rows = fetch_state(session, name, session.state(name), STATE_ROWS + 1)
        more = "; :state NAME --limit N shows more" if len(rows.rows) > STATE_ROWS else ""
        table = Table(rows.columns, rows.rows[:STATE_ROWS], title=f"{name}: its state after the newest batch",
                      footer=f"({min(len(rows.rows), STATE_ROWS)} rows{more}; q back)")
        return render_table(table, width)

    dashboard = Dashboard(session.streams.monitor, names, stop_query, title=f"sparkscope :watch  {session.url}",
                          read_state=read_state)
    live.diverted = dashboard.show
    try:
        dashboard.run()
    finally:
        live.diverted = None
    return None


@command("tail", "Print each new micro-batch of a query above the prompt, like the console sink "
         "(--stop ends it)", args=(Arg("NAME", optional=True, complete=Complete.QUERY),),
         options=(flag("follow"), valued("limit", "N"), flag("stop")), runs=Runs.WAITS)
def tail(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    live = ctx.live()
    if opts.flag("stop"):
        stopped = live.untail(args[0] if args else None)
        if args and not stopped:
            raise UsageError(f"{args[0]} is not being tailed", "See what is: :tail --stop stops them all")
        return Message(f"Stopped tailing {', '.join(stopped)}" if stopped else "Nothing is being tailed")
    if not args:
        raise UsageError(":tail needs a query name", f"Usage: {tail.usage}")
    query = ctx.session.streams.get(args[0])
    if query.state != "active":
        raise UsageError(f"{query.name} is not running ({query.state})", f"Start it again: :start {query.name}")
    limit = int_option(opts.text("limit"), "rows", minimum=1) if "limit" in opts else 20
    feed = live.tail(query, limit)
    if not opts.flag("follow"):
        return Message(f"Tailing {query.name}: each new batch prints above the prompt "
                       f"(:tail --stop {query.name} ends it)")
    def ended() -> Message:
        live.untail(query.name)
        return Message(f"{query.name} ended ({query.state})")

    return Follow(lambda: feed.active, lambda: f"Stopped tailing {query.name}" if live.untail(query.name) else None,
                  ended)


@command("alerts", "Turn the one-line alerts above the prompt on or off; `latency 500ms` also alerts when a Kafka "
         "query's p99 latency is over 500 ms (`latency off`: no more)",
         args=(Arg("", optional=True, complete=Complete.CHOICES, choices=("on", "off", "latency")),
               Arg("LIMIT", optional=True)))
def alerts(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    live = ctx.live()
    if args:
        choice = args[0].lower()
        if choice == "latency":
            live.latency_over_ms = _latency_limit(args[1:])
        elif choice in ("on", "off") and len(args) == 1:
            live.alerts_on = choice == "on"
        else:
            raise UsageError(f"'{' '.join(args)}' is not on, off or latency LIMIT", f"Usage: {alerts.usage}")
    limit = live.latency_over_ms
    latency = "" if limit is None else f", p99 latency over {milliseconds(limit)}"
    return Message(f"Alerts are {'on' if live.alerts_on else 'off'} (failures, falling behind, slow batches, "
                   f"rows dropped by the watermark, state without bound{latency})",
                   {"alerts": live.alerts_on, "latency_over_ms": limit})


def _latency_limit(args: list[str]) -> float | None:
    """`:alerts latency 500ms` (a duration) or `latency off`, as milliseconds (None: off)."""
    if len(args) != 1:
        raise UsageError(":alerts latency needs a limit, like 500ms or 2s (or off)", "Usage: :alerts latency 500ms")
    if args[0].lower() == "off":
        return None
    try:
        return interval_seconds(args[0]) * 1000
    except ConfigError:
        raise UsageError(f"'{args[0]}' is not a duration", "Write it like 500ms, 2s or 1 minute") from None
