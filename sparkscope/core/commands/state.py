"""The colon commands that look into a query's state: what it holds, how it changed, and why a row was late."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...client.rows import write_rows
from ...client.state.store import fetch_state
from .streams import export_target, int_option
from .registry import Arg, Complete, Options, UsageError, command, flag, valued
from ..rendering.results import Block, Message, Result, Table

if TYPE_CHECKING:  # pragma: no cover
    from ..context import CommandContext

STATE_ROWS = 20
STATE_MAX = 10_000  # rows shown in the terminal; --export writes any number


def _number(opts: Options, name: str) -> int | None:
    return int_option(opts.text(name), name.replace("-", " ")) if name in opts else None


def _table(ctx: CommandContext, name: str, df: Any, opts: Options, what: str) -> Result:
    if opts.text("where"):
        df = df.where(str(opts.text("where")))
    limit = int_option(opts.text("limit"), "rows", minimum=1) if "limit" in opts else STATE_ROWS
    if opts.text("export"):
        target = export_target(ctx, opts)
        count = write_rows(fetch_state(ctx.session, name, df, limit if "limit" in opts else 10**9), target,
                           replace=True)
        return Message(f"Wrote {count:,} row{'s' if count != 1 else ''} of {what} to {target}",
                       {"rows": count, "path": str(target)})
    rows = fetch_state(ctx.session, name, df, min(limit, STATE_MAX) + 1)
    shown = rows.rows[:min(limit, STATE_MAX)]
    more = len(rows.rows) > len(shown)
    footer = f"({len(shown)} row{'s' if len(shown) != 1 else ''} of {what}" + (
        "; more with --limit N, or --export FILE.csv" if more else "") + ")"
    return Table(rows.columns, shown, footer=footer)


def _info(ctx: CommandContext, name: str) -> Result:
    state, details = ctx.session.state_info(name)
    results: list[Table | Message | Block] = []
    rows = [[o.id, o.name, o.store, o.partitions, f"{o.first_batch}-{o.last_batch}", o.described_variables(),
             o.timers or "-"] for o in state.operators]
    results.append(Table(["operator", "name", "store", "partitions", "batches", "state variables", "timers"], rows,
                         title=f"{state.name}: state in {state.checkpoint}"))
    for operator, schema, parts in details:
        fetched = fetch_state(ctx.session, name, parts, 10_000)
        total = sum(int(r[1]) for r in fetched.rows)
        results.append(Table(fetched.columns, fetched.rows, title=f"operator {operator.id} ({operator.name}): "
                                                                  f"{schema}",
                             footer=f"({total:,} rows in {len(fetched.rows)} partitions)"))
    return results


@command("state", "Show what a query's stateful operators hold, from its checkpoint (--info: operators, schema "
         "and rows per partition; --changes: how it changed batch by batch; --timers: transformWithState's timers)",
         args=(Arg("NAME", complete=Complete.QUERY),),
         options=(valued("batch", "N"), valued("operator", "ID"), valued("store", "NAME"), valued("var", "NAME"),
                  valued("where", "EXPR"), valued("limit", "N"), valued("export", "FILE.csv|FILE.jsonl"),
                  flag("force"), flag("info"), flag("changes"), valued("from", "N"), valued("to", "M"), flag("timers")))
def state(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    name = args[0]
    if opts.flag("info"):
        return _info(ctx, name)
    operator, store, variable = _number(opts, "operator"), opts.text("store"), opts.text("var")
    if opts.flag("changes"):
        df = ctx.session.state_changes(name, start=_number(opts, "from"), end=_number(opts, "to"), operator=operator,
                                       store=store, variable=variable)
        return _table(ctx, name, df, opts, f"{name}'s state changes")
    if "from" in opts or "to" in opts:
        raise UsageError("--from and --to go with --changes", f"e.g. :state {name} --changes --from 3 --to 5")
    batch = _number(opts, "batch")
    timers = opts.flag("timers")
    df = ctx.session.state(name, batch=batch, operator=operator, store=store, variable=variable, timers=timers)
    what = f"{name}'s {'timers' if timers else 'state'}"
    return _table(ctx, name, df, opts, what + (f" after batch {batch}" if batch is not None else ""))


def _when(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else "-"


@command("late", "Explain a query's watermark: its event-time column and delay, the watermark after each batch, "
         "the late rows dropped, and whether a row at --at TIME would be dropped",
         args=(Arg("NAME", complete=Complete.QUERY),), options=(valued("at", "TIME"), valued("last", "N")))
def late(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    from ...client.monitoring.lateness import parse_time
    from ..rendering.charts import watermark_chart_lines
    from ..rendering.render import terminal_width, watermark

    found = ctx.session.late(args[0])
    last = int_option(opts.text("last"), "batches", minimum=1) if "last" in opts else 20
    dropped = sorted(found.dropped.items())
    times = " and ".join(f"{spec.column} (delay {spec.delay})" for spec in found.watermarks)
    said = [f"{found.name}: event time {times}. Spark judges a batch's rows by the watermark of the batch before it: "
            "a row whose event time (its window's end, for a window) is at or before it is late, and dropped."]
    said.append("Late rows dropped: " + (", ".join(f"{rows} in batch {batch}" for batch, rows in dropped)
                                          if dropped else "none so far") + ".")
    if found.checkpoint_watermark is not None and not found.batches:
        said.append(f"Its checkpoint's watermark: {_when(found.checkpoint_watermark)} (no batch since it started).")
    results: list[Table | Message | Block] = [Message(" ".join(said), {
        "columns": [spec.column for spec in found.watermarks], "delays": [spec.delay for spec in found.watermarks],
        "dropped": dict(dropped)})]
    rows = [[b.batch_id, b.timestamp[11:19], _when(b.late_at_or_before), watermark(b.watermark), b.input_rows,
             b.dropped or ""] for b in found.batches[-last:]]
    if rows:
        results.append(Table(["batch", "time", "late at or before", "watermark after", "input rows", "dropped late"],
                             rows, footer="(each batch's rows are judged by the watermark of the batch before; "
                                          "its own watermark evicts old state)"))
    chart = watermark_chart_lines(found.history[-last:], min(terminal_width(), 120) - 1)
    if chart:
        results.append(Block("\n".join(chart)))
    if opts.text("at"):
        at = parse_time(str(opts.text("at")))
        judged = found.verdict(at)
        now = ("would be dropped now" if judged.dropped_now else "would be kept now") + (
            f" (watermark {_when(judged.watermark)})" if judged.watermark else " (no watermark yet)")
        since = (f"; dropped from batch {judged.first_dropping_batch} on" if judged.first_dropping_batch is not None
                 else "")
        kept = f", kept up to batch {judged.last_keeping_batch}" if judged.last_keeping_batch is not None else ""
        results.append(Message(f"A row at {_when(at)} {now}{since}{kept}.",
                               {"dropped_now": judged.dropped_now, "from_batch": judged.first_dropping_batch}))
    return results
