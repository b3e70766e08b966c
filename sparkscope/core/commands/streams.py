"""The colon commands. Each returns a result for render.py; none of them prints."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ...client.errors import QueryNotFound, SparkscopeError, UnsupportedOperation
from ...client.error_reading import call
from ...client.queries.dataframes import is_dataframe
from ...client.monitoring.progress import Progress, batches_run, write_history
from ...client.queries.planning import MODES, SINKS
from .registry import Arg, Complete, Options, Runs, Tail, UsageError, command, flag, key_values, multi, valued
from ..rendering.render import (LATENCY_LEGEND, behind, duration_ms, latency_ms, progress_charts, rate, short_id,
                             sink_text, watermark)
from ..rendering.results import Block, Message, Result, Table

START_SINKS = tuple(sink for sink in SINKS if sink != "foreach_batch")  # that one needs a Python function
TRIGGER_EXAMPLES = ("5s", "once", "available-now", "continuous:1s")
PEEK_MAX = 1000  # rows :peek shows in the terminal; --export for more

if TYPE_CHECKING:  # pragma: no cover
    from ...client.queries.query import Query
    from ..context import CommandContext


def int_option(value: object, what: str, minimum: int = 0) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise UsageError(f"'{value}' is not a number of {what}", f"Give a whole number of {what}") from None
    if number < minimum:
        raise UsageError(f"'{value}' is not a number of {what}", f"Give a whole number of {what}, {minimum} or more")
    return number


def export_target(ctx: CommandContext, opts: Options) -> Path:
    """The file --export names, checked: its format and folder, and a file already there written over only with
    --force or after a yes in the terminal (the delete guard then judges where the write lands)."""
    from ...client.rows import export_path

    target = export_path(str(opts.text("export")), replace=True)
    if os.path.lexists(target) and not opts.flag("force") and not ctx.confirm(
            f"{target} exists. Write over it? [y/N] "):
        raise UsageError(f"{target} exists", "Add --force to write over it, or pick another name")
    return target


def float_option(value: object, what: str) -> float:
    """A number of seconds (a trailing s is allowed), 0 or more."""
    try:
        number = float(str(value).rstrip("s"))
    except ValueError:
        raise UsageError(f"'{value}' is not a number of {what}", f"Give a number of {what}, e.g. 10") from None
    if not 0 <= number < float("inf"):
        raise UsageError(f"'{value}' is not a number of {what}", f"Give a number of {what}, 0 or more, e.g. 10")
    return number


# -- queries ----------------------------------------------------------------------------------------
@command("start", "Start the streaming DataFrame NAME (or EXPR) as a query named NAME",
         args=(Arg("NAME", complete=Complete.DATAFRAME), Arg("EXPR", optional=True)),
         options=(valued("sink", choices=START_SINKS), valued("keep", "N|TIME"), valued("grace", "TIME"),
                  valued("path", "P"),
                  valued("table", "T"),
                  valued("mode", choices=MODES), valued("trigger", choices=TRIGGER_EXAMPLES),
                  valued("checkpoint", "P"), multi("option", "k=v")), tail=Tail.EXPRESSION)
def start(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    name = args[0]
    if len(args) > 1:
        df = ctx.evaluate(args[1])
    elif name in ctx.namespace:
        df = ctx.namespace[name]
    else:
        raise UsageError(f"No DataFrame named '{name}'",
                         f"Define it first ({name} = spark.readStream…) or give an expression: :start {name} EXPR")
    if not is_dataframe(df):
        raise UnsupportedOperation(f"'{args[-1]}' is a {type(df).__name__}, not a streaming DataFrame",
                                   "Build one from spark.readStream or ss.source.*")
    sink = opts.text("sink")
    tail_here = sink == "console" and ctx.interactive
    if tail_here:  # Spark's console sink prints on the server, where a Connect client never sees it
        sink = None
    query = ctx.session.start(df, name, sink, mode=opts.text("mode"),
                              trigger=opts.text("trigger"), checkpoint=opts.text("checkpoint"),
                              path=opts.text("path"), table=opts.text("table"), keep=opts.text("keep"),
                              grace=opts.text("grace"), options=key_values(opts.each("option"), "--option key=value"))
    text = (f"Started {query.name} (id {short_id(query.id)}) → {sink_text(query.sink, query.keep)}, "
            f"{query.mode} mode, trigger {query.trigger}")
    results: list[Table | Message | Block] = [Message(text, {"name": query.name, "id": query.id, "sink": query.sink,
                                         "mode": query.mode, "trigger": str(query.trigger)})]
    if query.warning:
        results.append(Message(f"warning: {query.warning}"))
    results += [Message(f"note: {note}") for note in query.notes]
    if query.restart_note:
        results.append(Message(f"note: :restart cannot bring {query.name} back later: {query.restart_note}"))
    if tail_here:
        ctx.live().tail(query)
        results.append(Message("The console sink would print on the server, out of sight: writing to the "
                               f"default sink instead and printing each batch here (:tail --stop {name} ends that)"))
    return results


@command("queries", "List every query of this session with its state and rates (--all: the whole catalog of "
         "this server, stopped, failed and lost queries included)", aliases=("ls",), options=(flag("all"),))
def queries(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    if opts.flag("all"):
        from .catalog import catalog_table

        return catalog_table(ctx.session.streams.catalog_records(), ctx.session.catalog.set_aside())
    infos = ctx.session.streams.queries()
    rows = [[q.name, short_id(q.id), q.state, q.keep or q.sink, q.mode, q.trigger,
             "-" if q.last_batch is None else q.last_batch, rate(q.input_rows_per_second),
             rate(q.processed_rows_per_second), behind(q.behind)] for q in infos]
    footer = None if infos else "(no queries: start one with :start NAME)"
    columns = ["name", "id", "state", "sink", "mode", "trigger", "batch", "input/s", "processed/s", "behind"]
    if all(q.behind is None for q in infos):  # no query reads Kafka
        columns, rows = columns[:-1], [row[:-1] for row in rows]
    return Table(columns, rows, footer=footer, droppable=("id", "trigger", "mode", "sink", "behind"))


# Spark's two rates measure different spans, so a short batch after a long one shows a high input/s
RATES_LEGEND = ("input/s and processed/s are Spark's own figures (inputRowsPerSecond: rows ÷ the time since the "
                "previous batch began; processedRowsPerSecond: rows ÷ the batch's duration)")
RECENT = 100  # progress reports looked through for the batches that ran
PROGRESS_COLUMNS = ["query", "batch", "time", "input rows", "input/s", "processed/s", "duration", "watermark",
                    "state rows", "dropped", "behind", "latency p50", "latency p99"]


def _progress_row(name: str, p: Progress) -> list[object]:
    return [name, p.batch_id, p.timestamp[11:23], p.input_rows, rate(p.input_rows_per_second),
            rate(p.processed_rows_per_second), duration_ms(p.batch_duration_ms),
            watermark(p.watermark), p.state_rows, p.dropped_by_watermark, behind(p.offsets_behind),
            latency_ms(p.latency.p50_ms if p.latency else None), latency_ms(p.latency.p99_ms if p.latency else None)]


def _continuous_note(query: Query) -> str:
    """Continuous processing reports no progress: what the query does instead, and where its rows are."""
    try:
        doing = f"; its status: {query.status['message']}"
    except SparkscopeError:
        doing = ""
    return (f"({query.name} runs in continuous mode, which reports no progress{doing}. :peek {query.name} shows "
            "its rows)")


@command("progress", "Show the latest progress of one or all queries (or charts of it, or write it to a file)",
         args=(Arg("NAME", optional=True, complete=Complete.QUERY),),
         options=(flag("json"), valued("last", "N"), flag("chart"), valued("export", "FILE.jsonl|FILE.csv"),
                  flag("force")))
def progress(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    session = ctx.session
    last = int_option(opts.text("last"), "batches") if "last" in opts else None
    if opts.flag("chart") or "export" in opts:
        if not args:
            what = "--chart" if opts.flag("chart") else "--export"
            raise UsageError(f":progress {what} needs a query name", f"Usage: :progress NAME {what}")
        query = session.streams.get(args[0])
        history = session.streams.monitor.history(query.id) or query.history
        history = history[-last:] if last else history
        if "export" in opts:
            target = export_target(ctx, opts)
            count = write_history(history, target, replace=True)
            return Message(f"Wrote {count} batch{'es' if count != 1 else ''} of {query.name} to {target}",
                           {"batches": count, "path": str(target)})
        return Block(progress_charts(query.name, history), data=[p.raw for p in history])
    if args:
        targets = [session.streams.get(args[0])]
    else:  # one RPC lists the running queries; progress comes from the monitor's cache when it listens
        session.streams.running()
        targets = session.streams.known_queries()
    # the batches that ran (Spark's idle reports name the next batch, which has not run): the last `last`, or one
    histories = [(query, batches_run(session.streams.recent_progress(query, RECENT))[-(last or 1):]) for query in targets]
    if opts.flag("json"):
        items = [p.raw for _, history in histories for p in history]
        return Block("\n".join(json.dumps(i, indent=2) for i in items) or "[]", data=items)
    rows = [_progress_row(query.name, p) for query, history in histories for p in history]
    counted = f"({len(rows)} row{'s' if len(rows) != 1 else ''})"
    footer = f"{counted}\n{RATES_LEGEND}" if rows else "(no progress yet: a query reports after its first batch)"
    for query, history in histories:
        if not history and query.trigger.kind == "continuous":
            footer += f"\n{_continuous_note(query)}"
    shown = [True] * (len(PROGRESS_COLUMNS) - 3)
    if all(p.offsets_behind is None for _, history in histories for p in history):  # no Kafka source
        shown.append(False)
    else:
        shown.append(True)
        footer += "\nbehind: records between where the batch ended and the newest Kafka offsets"
    measured = any(p.latency is not None for _, history in histories for p in history)
    shown += [measured, measured]
    if measured:
        footer += f"\n{LATENCY_LEGEND}"
    columns = [column for column, show in zip(PROGRESS_COLUMNS, shown, strict=True) if show]
    rows = [[cell for cell, show in zip(row, shown, strict=True) if show] for row in rows]
    return Table(columns, rows, footer=footer, droppable=("time", "dropped", "input rows", "state rows", "watermark",
                                                          "behind", "latency p50"))


@command("peek", "Show (or export) rows of a query's sink; filter, order and limit run on the server",
         args=(Arg("NAME", complete=Complete.QUERY), Arg("N", optional=True)),
         options=(valued("where", "EXPR"), valued("order", "\"COL [desc],…\""), flag("vertical"),
                  valued("export", "FILE.csv|FILE.jsonl"), flag("force")))
def peek(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    from ...client.rows import write_rows

    n = int_option(args[1], "rows") if len(args) > 1 else 20
    order_text = opts.text("order")
    order = [c.strip() for c in order_text.split(",")] if order_text else None
    if opts.text("export"):
        target = export_target(ctx, opts)
        rows = ctx.session.peek(args[0], n, where=opts.text("where"), order_by=order)
        count = write_rows(rows, target, replace=True)
        return Message(f"Wrote {count:,} row{'s' if count != 1 else ''} to {target}", {"rows": count,
                                                                                       "path": str(target)})
    shown = min(n, PEEK_MAX)  # the terminal, and the REPL's memory, stay small whatever N is
    rows = ctx.session.peek(args[0], shown, where=opts.text("where"), order_by=order)
    footer = None
    if n > PEEK_MAX and len(rows) == PEEK_MAX:
        footer = (f"(first {PEEK_MAX:,} rows; :peek {args[0]} {n} --export FILE.csv writes all {n:,} to a file)")
    elif not rows.rows and n:
        footer = _why_no_rows(ctx, args[0])
    return Table(rows.columns, rows.rows, footer=footer, layout="vertical" if opts.flag("vertical") else None)


def _why_no_rows(ctx: CommandContext, name: str) -> str | None:
    """A bounded query that keeps only its last seconds, and kept none: said, instead of an empty table alone."""
    try:
        query = ctx.session.streams.get(name)
    except SparkscopeError:
        return None
    keep = query.keep
    if keep is None or keep.seconds is None:
        return None
    return f"(no rows: {name} keeps the rows of the {keep}, and the rows it kept are older)"


@command("status", "Show a query's state, status message and where it writes",
         args=(Arg("NAME", complete=Complete.QUERY),))
def status(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    query = ctx.session.streams.get(args[0])
    state = query.state
    rows: list[list[object]] = [["name", query.name], ["id", query.id], ["run id", query.run_id], ["state", state],
            ["sink", sink_text(query.sink, query.keep)], ["mode", query.mode], ["trigger", str(query.trigger)],
            ["checkpoint", query.checkpoint or "-"]]
    if query.path:
        rows.append(["path", query.path])
    if query.table and query.sink == "table":
        rows.append(["table", query.table])
    if state == "active":
        st = query.status
        rows += [["message", st.get("message")], ["data available", st.get("isDataAvailable")],
                 ["trigger active", st.get("isTriggerActive")]]
    elif query.exception:
        rows.append(["error", query.exception.short])
    return Table(["field", "value"], rows, footer="")


@command("explain", "Show the plan of a query or a DataFrame",
         args=(Arg("NAME|EXPR", complete=Complete.QUERY_OR_DATAFRAME),), options=(flag("extended"),),
         tail=Tail.EXPRESSION)
def explain(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    extended = bool(opts.flag("extended"))
    target = args[0]
    if target.isidentifier() and target not in ctx.namespace:
        return Block(ctx.session.streams.get(target).explain(extended))
    if target.isidentifier():
        with contextlib.suppress(QueryNotFound):  # a name in the namespace; a dead server is reported
            return Block(ctx.session.streams.get(target).explain(extended))
    df = ctx.evaluate(target)
    if not is_dataframe(df):
        raise UsageError(f"'{target}' is not a query or a DataFrame", "Give a query name or a DataFrame")
    return Block(ctx.session.explain(df, extended))


@command("exception", "Show why a query failed (--full: with the JVM stack)",
         args=(Arg("NAME", complete=Complete.QUERY),), options=(flag("full"),))
def exception(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    query = ctx.session.streams.get(args[0])
    error = query.exception
    if error is None:
        return Message(f"{query.name} has no exception (state: {query.state})")
    data = {"short": error.short, "full": error.full}
    if opts.flag("full"):
        return Block(f"{query.name} failed: {error.short}\n\n{error.full}", data=data)
    return Block(f"{query.name} failed: {error.short}\n(:exception {query.name} --full shows the JVM stack)",
                 data=data)


@command("await", "Wait until a query ends (or has processed everything available)",
         args=(Arg("NAME", complete=Complete.QUERY),), options=(valued("timeout", "S"), flag("all-available")),
         runs=Runs.WAITS)
def await_(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    query = ctx.session.streams.get(args[0])
    if opts.flag("all-available"):
        query.process_all_available()
        return Message(f"{query.name} has processed all available data")
    timeout = float_option(opts.text("timeout"), "seconds") if "timeout" in opts else None
    ended = query.await_termination(timeout, cancelled=ctx.cancelled)
    return Message(f"{query.name} ended ({query.state})" if ended else
                   f"{query.name} is still running after {timeout:g}s")


@command("stop", "Stop a query, or all of them", args=(Arg("NAME", optional=True, complete=Complete.QUERY),),
         options=(flag("all"),))
def stop(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    if opts.flag("all"):
        if args:
            raise UsageError("Give a query name or --all, not both", f"Usage: {stop.usage}")
        names = ctx.session.streams.stop_all()
        if ctx.interactive:  # a tailed query's last batches print before the line that says it stopped
            ctx.live().finish_tails(names)
        return Message(f"Stopped {len(names)} quer{'y' if len(names) == 1 else 'ies'}" +
                       (f": {', '.join(names)}" if names else ""), {"stopped": names})
    if not args:
        raise UsageError(":stop needs a query name", f"Usage: {stop.usage}")
    session = ctx.session
    query: Query | None = None
    not_found: QueryNotFound | None = None
    try:
        query = session.streams.get(args[0])
    except QueryNotFound as exc:
        not_found = exc
    if query is None or query.state != "active":  # perhaps it runs in another session of this server
        elsewhere = session.streams.stop_elsewhere(args[0])
        if elsewhere is not None:
            holder = session.catalog.holder(session.url, str(elsewhere.session_id))
            where = (f"where another sparkscope (pid {holder}) works" if holder is not None
                     else "where it was left running")
            return Message(f"Stopped {elsewhere.name} in session {short_id(str(elsewhere.session_id))}, {where}",
                           {"stopped": [elsewhere.name], "session_id": elsewhere.session_id})
        if query is None:
            raise not_found or QueryNotFound(f"No query named '{args[0]}'")
        return Message(f"{query.name} is not running ({query.state})")
    query.stop()
    if ctx.interactive:
        ctx.live().finish_tails([query.name])
    return Message(f"Stopped {query.name}", {"stopped": [query.name]})


@command("schema", "Show the columns of a DataFrame, query sink or table",
         args=(Arg("NAME|EXPR", complete=Complete.QUERY_OR_DATAFRAME),), tail=Tail.EXPRESSION)
def schema(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    target = args[0]
    if target in ctx.namespace or not target.isidentifier():
        df = ctx.evaluate(target)
    else:
        df = ctx.session.client.sink_dataframe(target)
    if not is_dataframe(df):
        raise UsageError(f"'{target}' is not a DataFrame", "Give a DataFrame, a query name or a table")
    fields = call(lambda: df.schema.fields)
    streaming = call(lambda: df.isStreaming)
    rows = [[f.name, f.dataType.simpleString(), "yes" if f.nullable else "no"] for f in fields]
    return Table(["column", "type", "nullable"], rows,
                 footer=f"({len(rows)} columns, {'streaming' if streaming else 'batch'})")


# -- live ---------------------------------------------------------------------------------------------
