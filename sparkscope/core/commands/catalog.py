"""Colon commands over the query catalog: :queries --all, :restart, :forget, and the lost-queries note."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...client.queries.query import Query
from .registry import Arg, Complete, Options, UsageError, command, flag, valued
from ..rendering.render import age, short_id, sink_text, size
from ..rendering.results import Message, Result, Table

if TYPE_CHECKING:  # pragma: no cover
    from ...client.catalog.records import Record
    from ...client.catalog.checkpoints import Checkpoint
    from ...client.session import Session
    from ..context import CommandContext


def _clock(at: float | None) -> str:
    if at is None:
        return "-"
    local = time.localtime(at)
    return time.strftime("%H:%M:%S" if time.time() - at < 86400 else "%Y-%m-%d %H:%M", local)


def catalog_table(records: list[Record], set_aside: Sequence[tuple[str, float, str]] = ()) -> Table:
    rows = [[r.name, short_id(r.query_id or "-"), short_id(r.session_id or "-"), r.state, r.sink,
             "-" if r.last_batch is None else r.last_batch, _clock(r.started_at), _clock(r.seen_at),
             "yes" if r.restartable else "no", r.checkpoint or "-", (r.error or r.reason or "")] for r in records]
    footer = ("(the catalog is empty: queries are recorded when they start)" if not rows
              else ":restart NAME starts one again from its checkpoint; :forget NAME removes a record")
    for path, at, reason in set_aside:
        footer += (f"\nNot listed: the queries recorded in an unreadable catalog ({reason}), moved to {path} at "
                   f"{_clock(at)}. Start them again by hand; delete that file once you no longer need it.")
    return Table(["name", "id", "session", "state", "sink", "batch", "started", "last seen", "restartable",
                  "checkpoint", "why"], rows, footer=footer,
                 droppable=("id", "checkpoint", "started", "sink", "why", "session"))


def lost_note(session: Session) -> str | None:
    """One block about the catalogued queries that were running and now are not, or None."""
    lost = session.streams.lost_queries()
    if not lost:
        return None
    names = ", ".join(f"{r.name} (last seen {_clock(r.seen_at)}, batch {'-' if r.last_batch is None else r.last_batch})"
                      for r in lost)
    return (f"Lost since the server restarted or their session ended: {names}.\n"
            "Nothing was restarted. :restart --lost brings them back from their checkpoints; "
            ":queries --all lists the catalog.")


def rejoin_note(session: Session) -> str:
    """One line for --reattach: the session rejoined and what runs in it, and the sessions of other live
    sparkscopes of this machine it left to them."""
    names = ", ".join(q.name for q in session.streams.known_queries() if q.known_state() is None) or "none"
    held = [(known, pid) for known in session.catalog.last_sessions(session.url)
            if known != session.session_id and (pid := session.catalog.holder(session.url, known)) is not None]
    others = "; ".join(f"session {known[:8]} is another sparkscope's (pid {pid}), left to it" for known, pid in held)
    return f"Rejoined session {short_id(session.session_id)}, where these queries run: {names}" + (
        f". {others[:1].upper()}{others[1:]}" if others else "") + "."


@command("restart", "Start a catalogued query again from its plan, sink and checkpoint (--lost: every lost one; "
         "--fresh: with a new checkpoint, after asking)",
         args=(Arg("NAME", optional=True, complete=Complete.QUERY),), options=(flag("lost"), flag("fresh"),
                                                                               flag("yes")))
def restart(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    session = ctx.session
    if opts.flag("lost"):
        if args:
            raise UsageError("Give a query name or --lost, not both", f"Usage: {restart.usage}")
        results = session.restart_lost()
        if not results:
            return Message("No lost queries in the catalog.")
        return [restarted(outcome) if isinstance(outcome, Query) else
                Message(f"error: could not restart {record.name}: {outcome}") for record, outcome in results]
    if not args:
        raise UsageError(":restart needs a query name, or --lost", f"Usage: {restart.usage}")
    name = args[0]
    if opts.flag("fresh"):
        record = session.catalog.get(session.url, name)
        where = f" (the old one stays at {record.checkpoint})" if record is not None and record.checkpoint else ""
        if not (opts.flag("yes") or ctx.confirm(f"Restart {name} with a new checkpoint? Its state and offsets start "
                                               f"empty{where}. [y/N] ")):
            return Message("Nothing was changed.")
    return _restart_one(session, name, fresh=bool(opts.flag("fresh")))


def _restart_one(session: Session, name: str, fresh: bool) -> Result:
    query = session.restart(name, fresh=fresh)
    return [restarted(query), *(Message(f"note: {note}") for note in query.notes)]


def restarted(query: Query) -> Message:
    """What a restart says: whether it resumed from its checkpoint and after which batch (as the checkpoint's
    own files said just before, on this machine), and where it writes."""
    resumption = query.resumption
    resumed = resumption is not None and resumption.checkpoint is not None and resumption.after_batch is not None
    if resumption is None or resumption.checkpoint is None:
        where = "with a new checkpoint"
    elif resumption.after_batch is None and resumption.from_files:
        where = (f"from batch 0 with empty state: its checkpoint {resumption.checkpoint} held no committed batch "
                 "(deleted?)")
    elif resumption.after_batch is None:
        where = "from its checkpoint"
        resumed = True
    else:
        where = f"from its checkpoint (after batch {resumption.after_batch})"
    return Message(f"Restarted {query.name} (id {short_id(query.id)}) {where} → {sink_text(query.sink, query.keep)}, "
                   f"{query.mode} mode",
                   {"name": query.name, "id": query.id, "checkpoint": query.checkpoint, "resumed": resumed})


@command("forget", "Remove a query from the catalog (--delete-checkpoint: delete its checkpoint too, after asking)",
         args=(Arg("NAME", complete=Complete.QUERY),), options=(flag("delete-checkpoint"), flag("yes")))
def forget(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    session = ctx.session
    name = args[0]
    delete = bool(opts.flag("delete-checkpoint"))
    kept = None
    if delete:
        from ...client.catalog.checkpoints import kept_because

        record = session.catalog.get(session.url, name)  # none: forget says so, after the question
        if record is not None and record.checkpoint:
            kept = kept_because(record, session.catalog.records(session.url), session.server.checkpoint_root())
        where = record.checkpoint if record is not None and record.checkpoint else "its checkpoint"
        if kept is None and not (opts.flag("yes") or ctx.confirm(f"Delete {where}? {name} can then never resume. "
                                                                 "[y/N] ")):
            return Message("Nothing was changed.")
    record = session.streams.forget(name, delete_checkpoint=delete)
    if not record.checkpoint:
        return Message(f"Forgot {name}.")
    if not delete:
        return Message(f"Forgot {name}; its checkpoint stays at {record.checkpoint}.")
    if kept is not None:
        return Message(f"Forgot {name}; its checkpoint stays at {record.checkpoint}: {kept}.")
    return Message(f"Forgot {name} and deleted its checkpoint {record.checkpoint}.")


REPL_PRUNE = ":checkpoints --prune AGE"


def checkpoints_table(found: list[Checkpoint], removed: list[Checkpoint] | None = None, *,
                      prune_command: str = REPL_PRUNE) -> Table:
    """The checkpoints under the root; `prune_command` is how the footer names pruning where it is shown."""
    now = time.time()
    rows = [[c.path.name, size(c.size), age(now - c.modified),
             f"{c.owner.name} ({c.owner.state})" if c.owner else "-", "yes" if c.needed else "no",
             "sparkscope" if c.made_here else "given"] for c in found]
    if removed is not None:
        freed = sum(c.size for c in removed)
        footer = (f"Deleted {len(removed)} checkpoint{'s' if len(removed) != 1 else ''}, {size(freed)} freed; "
                  "kept every checkpoint a restartable query needs, and every one sparkscope did not make.")
    else:
        footer = ("(no checkpoints)" if not rows else
                  f"needed: a restartable query resumes from it. {prune_command} deletes the others older than AGE "
                  "that sparkscope made")
    return Table(["checkpoint", "size", "age", "query", "needed", "made by"], rows, footer=footer)


def checkpoint_report(root: Path, records: list[Record], prune_older_than: str | None, *,
                      prune_command: str = REPL_PRUNE) -> Table:
    from ...client.catalog.checkpoints import parse_age, prune, scan

    if prune_older_than is None:
        return checkpoints_table(scan(root, records), prune_command=prune_command)
    removed = prune(root, records, parse_age(prune_older_than))
    return checkpoints_table(scan(root, records), removed, prune_command=prune_command)


@command("checkpoints", "List the checkpoints of queries on this machine with size, age and owner "
         "(--prune AGE: delete those older than AGE that sparkscope made and no restartable query needs)",
         options=(valued("prune", "AGE"),))
def checkpoints(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    session = ctx.session
    found = session.server.checkpoint_root() if session.server.target.on_this_machine else None
    if not found:
        raise UsageError("The checkpoints of a remote server live on that server",
                         "List them there: sparkscope checkpoints")
    root = Path(found.removeprefix("file:"))
    return checkpoint_report(root, session.catalog.records(), opts.text("prune"))
