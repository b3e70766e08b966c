"""The colon commands. Each returns a result for render.py; none of them prints."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from ..client.errors import QueryNotFound, call, SparkscopeError, UnsupportedOperation
from ..client.progress import write_history
from ..client.planning import MODES, SINKS
from .registry import REGISTRY, Arg, Complete, Runs, Tail, UsageError, command, flag, key_value, key_values, multi, valued
from .render import duration_ms, progress_charts, rate, short_id, sink_text, watermark
from .results import Block, Message, Table

START_SINKS = tuple(sink for sink in SINKS if sink != "foreach_batch")  # that one needs a Python function
TRIGGER_EXAMPLES = ("5s", "once", "available-now", "continuous:1s")
PEEK_MAX = 1000  # rows :peek shows in the terminal; --export for more
SQL_ROWS = 1000  # rows :sql shows unless --limit says otherwise


def _int(value: Any, what: str, minimum: int = 0) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise UsageError(f"'{value}' is not a number of {what}", f"Give a whole number of {what}") from None
    if number < minimum:
        raise UsageError(f"'{value}' is not a number of {what}", f"Give a whole number of {what}, {minimum} or more")
    return number


def _float(value: Any, what: str) -> float:
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
         options=(valued("sink", choices=START_SINKS), valued("keep", "N|TIME"), valued("path", "P"),
                  valued("table", "T"),
                  valued("mode", choices=MODES), valued("trigger", choices=TRIGGER_EXAMPLES),
                  valued("checkpoint", "P"), multi("option", "k=v")), tail=Tail.EXPRESSION)
def start(ctx, args, opts):
    name = args[0]
    if len(args) > 1:
        df = ctx.evaluate(args[1])
    elif name in ctx.namespace:
        df = ctx.namespace[name]
    else:
        raise UsageError(f"No DataFrame named '{name}'",
                         f"Define it first ({name} = spark.readStream…) or give an expression: :start {name} EXPR")
    if not hasattr(df, "writeStream"):
        raise UnsupportedOperation(f"'{args[-1]}' is a {type(df).__name__}, not a streaming DataFrame",
                                   "Build one from spark.readStream or ss.source.*")
    sink = opts.get("sink")
    tail_here = sink == "console" and ctx.interactive
    if tail_here:  # Spark's console sink prints on the server, where a Connect client never sees it
        sink = None
    query = ctx.session.start(df, name, sink, mode=opts.get("mode"),
                              trigger=opts.get("trigger"), checkpoint=opts.get("checkpoint"),
                              path=opts.get("path"), table=opts.get("table"), keep=opts.get("keep"),
                              options=key_values(opts.get("option", []), "--option key=value"))
    text = (f"Started {query.name} (id {short_id(query.id)}) → {sink_text(query.sink, query.keep)}, "
            f"{query.mode} mode, trigger {query.trigger}")
    results: list[Any] = [Message(text, {"name": query.name, "id": query.id, "sink": query.sink,
                                         "mode": query.mode, "trigger": str(query.trigger)})]
    if query.warning:
        results.append(Message(f"warning: {query.warning}"))
    if query.restart_note:
        results.append(Message(f"note: :restart cannot bring {query.name} back later: {query.restart_note}"))
    if tail_here:
        ctx.live().tail(query)
        results.append(Message("The console sink would print on the server, out of sight: writing to the "
                               f"default sink instead and printing each batch here (:tail --stop {name} ends that)"))
    return results


@command("queries", "List every query of this session with its state and rates (--all: the whole catalog of "
         "this server, stopped, failed and lost queries included)", aliases=("ls",), options=(flag("all"),))
def queries(ctx, args, opts):
    if opts.get("all"):
        from .catalog_commands import catalog_table

        return catalog_table(ctx.session.catalog_records(), ctx.session.catalog.set_aside())
    infos = ctx.session.queries()
    rows = [[q.name, short_id(q.id), q.state, q.keep or q.sink, q.mode, q.trigger,
             "-" if q.last_batch is None else q.last_batch, rate(q.input_rows_per_second),
             rate(q.processed_rows_per_second)] for q in infos]
    footer = None if infos else "(no queries: start one with :start NAME)"
    return Table(["name", "id", "state", "sink", "mode", "trigger", "batch", "input/s", "processed/s"], rows,
                 footer=footer, droppable=("id", "trigger", "mode", "sink"))


# Spark's two rates measure different spans, so a short batch after a long one shows a high input/s
RATES_LEGEND = "input/s: rows ÷ time since the previous batch; processed/s: rows ÷ batch duration"
PROGRESS_COLUMNS = ["query", "batch", "time", "input rows", "input/s", "processed/s", "duration", "watermark",
                    "state rows", "dropped"]


def _progress_row(name: str, p) -> list:
    return [name, p.batch_id, p.timestamp[11:23], p.input_rows, rate(p.input_rows_per_second),
            rate(p.processed_rows_per_second), duration_ms(p.batch_duration_ms),
            watermark(p.watermark), p.state_rows, p.dropped_by_watermark]


@command("progress", "Show the latest progress of one or all queries (or charts of it, or write it to a file)",
         args=(Arg("NAME", optional=True, complete=Complete.QUERY),),
         options=(flag("json"), valued("last", "N"), flag("chart"), valued("export", "FILE.jsonl|FILE.csv")))
def progress(ctx, args, opts):
    session = ctx.session
    last = _int(opts["last"], "batches") if "last" in opts else None
    if opts.get("chart") or "export" in opts:
        if not args:
            what = "--chart" if opts.get("chart") else "--export"
            raise UsageError(f":progress {what} needs a query name", f"Usage: :progress NAME {what}")
        query = session.query(args[0])
        history = session.monitor.history(query.id) or query.history
        history = history[-last:] if last else history
        if "export" in opts:
            count = write_history(history, opts["export"])
            return Message(f"Wrote {count} batch{'es' if count != 1 else ''} of {query.name} to {opts['export']}",
                           {"batches": count, "path": str(opts["export"])})
        return Block(progress_charts(query.name, history), data=[p.raw for p in history])
    if args:
        targets = [session.query(args[0])]
    else:  # one RPC lists the running queries; progress comes from the monitor's cache when it listens
        session.running()
        targets = session.known_queries()
    histories = [(query, session.recent_progress(query, last)) for query in targets]
    if opts.get("json"):
        items = [p.raw for _, history in histories for p in history]
        return Block("\n".join(json.dumps(i, indent=2) for i in items) or "[]", data=items)
    rows = [_progress_row(query.name, p) for query, history in histories for p in history]
    count = f"({len(rows)} row{'s' if len(rows) != 1 else ''})"
    footer = f"{count}\n{RATES_LEGEND}" if rows else "(no progress yet: a query reports after its first batch)"
    return Table(PROGRESS_COLUMNS, rows, footer=footer,
                 droppable=("time", "dropped", "input rows", "state rows", "watermark"))


@command("peek", "Show (or export) rows of a query's sink; filter, order and limit run on the server",
         args=(Arg("NAME", complete=Complete.QUERY), Arg("N", optional=True)),
         options=(valued("where", "EXPR"), valued("order", "\"COL [desc],…\""), flag("vertical"),
                  valued("export", "FILE.csv|FILE.jsonl")))
def peek(ctx, args, opts):
    from ..client.rows import export_path, write_rows

    n = _int(args[1], "rows") if len(args) > 1 else 20
    order = [c.strip() for c in opts["order"].split(",")] if opts.get("order") else None
    if opts.get("export"):
        target = export_path(str(opts["export"]))
        rows = ctx.session.peek(args[0], n, where=opts.get("where"), order_by=order)
        count = write_rows(rows, target)
        return Message(f"Wrote {count:,} row{'s' if count != 1 else ''} to {target}", {"rows": count,
                                                                                       "path": str(target)})
    shown = min(n, PEEK_MAX)  # the terminal, and the REPL's memory, stay small whatever N is
    rows = ctx.session.peek(args[0], shown, where=opts.get("where"), order_by=order)
    footer = None
    if n > PEEK_MAX and len(rows) == PEEK_MAX:
        footer = (f"(first {PEEK_MAX:,} rows; :peek {args[0]} {n} --export FILE.csv writes all {n:,} to a file)")
    table = Table(rows.columns, rows.rows, footer=footer)
    if opts.get("vertical"):
        ctx.format_override = "vertical"
    return table


@command("status", "Show a query's state, status message and where it writes",
         args=(Arg("NAME", complete=Complete.QUERY),))
def status(ctx, args, opts):
    query = ctx.session.query(args[0])
    state = query.state
    rows = [["name", query.name], ["id", query.id], ["run id", query.run_id], ["state", state],
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
def explain(ctx, args, opts):
    extended = bool(opts.get("extended"))
    target = args[0]
    if target.isidentifier() and target not in ctx.namespace:
        return Block(ctx.session.query(target).explain(extended))
    if target.isidentifier():
        with contextlib.suppress(QueryNotFound):  # a name in the namespace; a dead server is reported
            return Block(ctx.session.query(target).explain(extended))
    df = ctx.evaluate(target)
    if not ctx.session.is_dataframe(df):
        raise UsageError(f"'{target}' is not a query or a DataFrame", "Give a query name or a DataFrame")
    return Block(ctx.session.explain(df, extended))


@command("exception", "Show why a query failed (--full: with the JVM stack)",
         args=(Arg("NAME", complete=Complete.QUERY),), options=(flag("full"),))
def exception(ctx, args, opts):
    query = ctx.session.query(args[0])
    error = query.exception
    if error is None:
        return Message(f"{query.name} has no exception (state: {query.state})")
    data = {"short": error.short, "full": error.full}
    if opts.get("full"):
        return Block(f"{query.name} failed: {error.short}\n\n{error.full}", data=data)
    return Block(f"{query.name} failed: {error.short}\n(:exception {query.name} --full shows the JVM stack)",
                 data=data)


@command("await", "Wait until a query ends (or has processed everything available)",
         args=(Arg("NAME", complete=Complete.QUERY),), options=(valued("timeout", "S"), flag("all-available")),
         runs=Runs.WAITS)
def await_(ctx, args, opts):
    query = ctx.session.query(args[0])
    if opts.get("all-available"):
        query.process_all_available()
        return Message(f"{query.name} has processed all available data")
    timeout = _float(opts["timeout"], "seconds") if "timeout" in opts else None
    ended = query.await_termination(timeout, cancelled=ctx.cancelled)
    return Message(f"{query.name} ended ({query.state})" if ended else
                   f"{query.name} is still running after {timeout:g}s")


@command("stop", "Stop a query, or all of them", args=(Arg("NAME", optional=True, complete=Complete.QUERY),),
         options=(flag("all"),))
def stop(ctx, args, opts):
    if opts.get("all"):
        if args:
            raise UsageError("Give a query name or --all, not both", f"Usage: {REGISTRY.usage('stop')}")
        names = ctx.session.stop_all()
        return Message(f"Stopped {len(names)} quer{'y' if len(names) == 1 else 'ies'}" +
                       (f": {', '.join(names)}" if names else ""), {"stopped": names})
    if not args:
        raise UsageError(":stop needs a query name", f"Usage: {REGISTRY.usage('stop')}")
    query = ctx.session.query(args[0])
    if query.state != "active":
        return Message(f"{query.name} is not running ({query.state})")
    query.stop()
    return Message(f"Stopped {query.name}", {"stopped": [query.name]})


@command("schema", "Show the columns of a DataFrame, query sink or table",
         args=(Arg("NAME|EXPR", complete=Complete.QUERY_OR_DATAFRAME),), tail=Tail.EXPRESSION)
def schema(ctx, args, opts):
    target = args[0]
    if target in ctx.namespace or not target.isidentifier():
        df = ctx.evaluate(target)
    else:
        df = ctx.session.sink_dataframe(target)
    if not hasattr(df, "schema"):
        raise UsageError(f"'{target}' is not a DataFrame", "Give a DataFrame, a query name or a table")
    fields = call(lambda: df.schema.fields)
    streaming = call(lambda: df.isStreaming)
    rows = [[f.name, f.dataType.simpleString(), "yes" if f.nullable else "no"] for f in fields]
    return Table(["column", "type", "nullable"], rows,
                 footer=f"({len(rows)} columns, {'streaming' if streaming else 'batch'})")


# -- live ---------------------------------------------------------------------------------------------
@command("watch", "A live full-screen dashboard of the queries (q leaves it)",
         args=(Arg("NAME", optional=True, repeat=True, complete=Complete.QUERY),), runs=Runs.FULLSCREEN)
def watch(ctx, args, opts):
    from .dashboard import Dashboard

    session = ctx.session
    names = [session.query(name).name for name in args]
    live = ctx.live()

    def stop_query(name: str) -> str:
        session.query(name).stop()
        return f"stopped {name}"

    dashboard = Dashboard(session.monitor, names, stop_query, title=f"sparkscope :watch  {session.url}")
    live.dashboard = dashboard
    try:
        dashboard.run()
    finally:
        live.dashboard = None
    return None


@command("tail", "Print each new micro-batch of a query above the prompt, like the console sink "
         "(--stop ends it)", args=(Arg("NAME", optional=True, complete=Complete.QUERY),),
         options=(flag("follow"), valued("limit", "N"), flag("stop")), runs=Runs.WAITS)
def tail(ctx, args, opts):
    live = ctx.live()
    if opts.get("stop"):
        stopped = live.untail(args[0] if args else None)
        if args and not stopped:
            raise UsageError(f"{args[0]} is not being tailed", "See what is: :tail --stop stops them all")
        return Message(f"Stopped tailing {', '.join(stopped)}" if stopped else "Nothing is being tailed")
    if not args:
        raise UsageError(":tail needs a query name", f"Usage: {REGISTRY.usage('tail')}")
    query = ctx.session.query(args[0])
    if query.state != "active":
        raise UsageError(f"{query.name} is not running ({query.state})", f"Start it again: :start {query.name}")
    limit = _int(opts["limit"], "rows", minimum=1) if "limit" in opts else 20
    feed = live.tail(query, limit)
    if not opts.get("follow"):
        return Message(f"Tailing {query.name}: each new batch prints above the prompt "
                       f"(:tail --stop {query.name} ends it)")
    ctx.on_cancel(lambda: f"Stopped tailing {query.name}" if live.untail(query.name) else None)
    while feed.active:
        time.sleep(0.1)
    live.untail(query.name)
    return Message(f"{query.name} ended ({query.state})")


@command("alerts", "Turn the one-line alerts above the prompt on or off",
         args=(Arg("", optional=True, complete=Complete.CHOICES, choices=("on", "off")),))
def alerts(ctx, args, opts):
    live = ctx.live()
    if args:
        choice = args[0].lower()
        if choice not in ("on", "off"):
            raise UsageError(f"'{args[0]}' is not on or off", f"Usage: {REGISTRY.usage('alerts')}")
        live.alerts_on = choice == "on"
    return Message(f"Alerts are {'on' if live.alerts_on else 'off'} (failures, falling behind, slow batches, "
                   "rows dropped by the watermark)", {"alerts": live.alerts_on})


# -- SQL and session --------------------------------------------------------------------------------
@command("sql", "Run batch SQL (memory sink tables included) and show the result (QUERY --limit N: more rows)",
         args=(Arg("QUERY"),), tail=Tail.RAW)
def sql(ctx, args, opts):
    statement, limit = _sql_limit(args[0])
    rows = ctx.session.sql(statement, n=limit + 1)  # one more than shown tells whether there are more
    footer = None
    if len(rows) > limit:
        footer = f"(first {limit:,} rows; --limit N for more)"
    return Table(rows.columns, rows.rows[:limit], footer=footer)


def _sql_limit(text: str) -> tuple[str, int]:
    """`:sql … --limit N`: the statement and how many rows to show (1000 by default)."""
    import re

    match = re.search(r"\s--limit\s+(\S+)\s*$", text)
    if not match:
        return text, SQL_ROWS
    return text[:match.start()].rstrip(), _int(match.group(1), "rows")


@command("conf", "Show or set a Spark SQL configuration value", args=(Arg("KEY[=VALUE]", optional=True),))
def conf(ctx, args, opts):
    spark = ctx.session.spark
    if not args:
        rows = ctx.session.sql("SET").rows
        return Table(["key", "value"], [r[:2] for r in rows])
    key, given = key_value(args[0], ":conf KEY=VALUE, e.g. :conf spark.sql.shuffle.partitions=4",
                           value_required=False)
    if given is not None:
        call(spark.conf.set, key, given)
        return Message(f"{key} = {given}")
    return Message(f"{key} = {call(spark.conf.get, key, None)}")


@command("connect", "Connect again (after the server went away), or switch to another server or session",
         args=(Arg("URL", optional=True),), options=(valued("session-id", "ID"), flag("last")), needs_session=False)
def connect(ctx, args, opts):
    from ..client.probe import try_probe
    from ..client.remote import validate_session_id
    from ..client.session import Session, resolve_target

    url, session_id = (args[0] if args else None), opts.get("session-id")
    if session_id is not None:
        validate_session_id(session_id)
    if opts.get("last"):
        if session_id is not None:
            raise UsageError("Give --session-id or --last, not both", f"Usage: {REGISTRY.usage('connect')}")
        current = ctx.session_or_none()

        def opener():
            if url is None and current is not None:
                return Session.reattach(current.target)
            return Session.reattach(resolve_target(url))
    elif url is None and session_id is None:
        if ctx.connecting:
            raise UsageError("Still connecting", "Wait for the status bar to show the server, then try again")
        current = ctx.session_or_none()
        if current is not None and try_probe(current.target, timeout=2) is not None:
            with contextlib.suppress(SparkscopeError):  # the server answers: does it still know us?
                current.check()
                return Message(f"Already connected to {current.url} (session {short_id(current.session_id)}). "
                               ":connect URL switches to another server.")
        opener = ctx.opener
    else:
        current = ctx.session_or_none()

        def opener():
            if url is None and current is not None:  # another session on the same server
                return Session.open(current.target.with_session(session_id))
            return Session.open(resolve_target(url, session_id=session_id))
    if opener is None:
        raise UsageError("There is nothing to connect to", "Give a URL: :connect sc://host:15002")
    session, old, left = ctx.switch_session(opener)
    note = ""
    if left:
        where = old.target.bare_url
        note = (f" Left {', '.join(left)} running in the previous session; "
                f"reattach with :connect {where} --session-id {old.session_id}")
    from .catalog_commands import lost_note

    lost = lost_note(session)
    return Message(f"Connected to {session.url} (session {short_id(session.session_id)}, "
                   f"Spark {session.server_version}).{note}" + (f"\n{lost}" if lost else ""))


@command("session", "Show the server URL, session id, Spark version and user")
def session_(ctx, args, opts):
    session = ctx.session
    user = session.user or "-"
    rows = [["url", session.url], ["session id", session.session_id], ["spark version", session.server_version],
            ["user", user], ["reattach", ctx.reattach_command()]]
    ui = session.spark_ui()
    if ui is not None:
        rows.append(["spark UI", ui])
    return Table(["field", "value"], rows, footer="")


KEYS = """\
Key bindings (Emacs by default; [repl] vi = true in config.toml or :set vi on for vi keys)

  Enter            run the line (a block ends with a blank line, as in python)
  Tab              complete commands, options, query and DataFrame names, Python names
  Up / Down        previous / next line from the history
  Ctrl-R           search the history backwards; Enter takes the match, Esc leaves it
  Ctrl-X Ctrl-E    edit the line in $EDITOR (v in vi mode)
  Ctrl-C           cancel the line, or the running command (streaming queries keep running)
  Ctrl-D           leave (asks what to do with running queries)
  Ctrl-A / Ctrl-E  start / end of the line; Alt-B / Alt-F word back / forward
  Right at the end accept the grey suggestion from the history

In :watch: Up/Down select, Enter details, s stop, p pause, ? help, q or Esc back."""


@command("set", "Show or change REPL settings (vi: vi key bindings)",
         args=(Arg("", optional=True, complete=Complete.CHOICES, choices=("vi",)),
               Arg("", optional=True, complete=Complete.CHOICES, choices=("on", "off"))), needs_session=False)
def set_(ctx, args, opts):
    if not args:
        return Message(f"vi = {'on' if ctx.vi_mode else 'off'}", {"vi": ctx.vi_mode})
    if args[0] != "vi" or len(args) != 2 or args[1] not in ("on", "off"):
        raise UsageError(f"Cannot set '{' '.join(args)}'", "Usage: :set vi on|off")
    ctx.vi_mode = args[1] == "on"
    return Message(f"vi key bindings are {args[1]}", {"vi": ctx.vi_mode})


@command("help", "List the commands, or show how to use one; :help keys lists the keys",
         args=(Arg("COMMAND|keys", optional=True, complete=Complete.COMMAND),), needs_session=False)
def help_(ctx, args, opts):
    if args and args[0] == "keys":
        return Block(KEYS)
    if args:
        cmd = REGISTRY.lookup(args[0].lstrip(":"))
        aliases = f"\nAliases: {', '.join(':' + a for a in cmd.aliases)}" if cmd.aliases else ""
        return Block(f"{cmd.usage}\n\n{cmd.summary}.{aliases}")
    rows = [[f":{c.name}", c.summary] for c in sorted(REGISTRY.commands.values(), key=lambda c: c.name)]
    return Table(["command", "what it does"], rows,
                 footer="Write PySpark in between: spark, ss, F, T, col, expr, lit and window are ready. "
                        ":help COMMAND shows its usage.")


@command("trace", "Show the full traceback of the last error", needs_session=False)
def trace(ctx, args, opts):
    return Block(ctx.last_traceback or "No error yet.")


@command("quit", "Leave sparkscope (asks about running queries)", aliases=("exit", "q"), needs_session=False)
def quit_(ctx, args, opts):
    ctx.request_exit()

