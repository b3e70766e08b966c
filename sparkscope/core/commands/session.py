"""The colon commands of the session and the REPL itself: SQL, settings, connecting, help and leaving."""

from __future__ import annotations

from typing import TYPE_CHECKING

import contextlib
import re
from collections.abc import Callable

from ...client.errors import SparkscopeError
from ...client.error_reading import call
from .streams import int_option
from .registry import Arg, Complete, Options, Tail, UsageError, command, flag, key_value, valued
from ..rendering.render import age, busy_tasks, short_id, size
from ..rendering.results import Block, Exit, Message, Result, SwitchSession, Table

SQL_ROWS = 1000  # rows :sql shows unless --limit says otherwise
SESSION_SAMPLE = 0.5  # seconds of the embedded server's CPU :session samples for its computing tasks

if TYPE_CHECKING:  # pragma: no cover
    from ...client.connection.capabilities import Capabilities
    from ...client.queries.server_jar import Kept, KeptTotal
    from ...client.session import Session
    from ..context import CommandContext


# -- SQL and session --------------------------------------------------------------------------------
@command("sql", "Run batch SQL (memory sink tables included) and show the result (QUERY --limit N: more rows)",
         args=(Arg("QUERY"),), tail=Tail.RAW)
def sql(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    statement, limit = _sql_limit(args[0])
    rows = ctx.session.sql(statement, limit=limit)
    footer = f"(first {limit:,} rows; --limit N for more)" if rows.truncated else None
    return Table(rows.columns, rows.rows, footer=footer)


def _sql_limit(text: str) -> tuple[str, int]:
    """`:sql … --limit N`: the statement and how many rows to show (1000 by default)."""
    match = re.search(r"\s--limit\s+(\S+)\s*$", text)
    if not match:
        return text, SQL_ROWS
    return text[:match.start()].rstrip(), int_option(match.group(1), "rows")


@command("conf", "Show or set a Spark SQL configuration value", args=(Arg("KEY[=VALUE]", optional=True),))
def conf(ctx: CommandContext, args: list[str], opts: Options) -> Result:
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
def connect(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    from ...client.connection.probe import try_probe
    from ...client.connection.remote import validate_session_id
    from ...server.connecting import open_session as open_here, reattach as rejoin, resolve_target

    url, session_id = (args[0] if args else None), opts.text("session-id")
    if session_id is not None:
        validate_session_id(session_id)
    current = ctx.session_or_none()
    opener: Callable[[], Session] | None
    if opts.flag("last"):
        if session_id is not None:
            raise UsageError("Give --session-id or --last, not both", f"Usage: {connect.usage}")

        def reattach() -> Session:
            if url is None and current is not None:
                return rejoin(current.server.target)
            return rejoin(resolve_target(url))

        opener = reattach
    elif url is None and session_id is None:
        if ctx.connecting:
            raise UsageError("Still connecting", "Wait for the status bar to show the server, then try again")
        if current is not None and try_probe(current.server.target, timeout=2) is not None:
            with contextlib.suppress(SparkscopeError):  # the server answers: does it still know us?
                current.check()
                return Message(f"Already connected to {current.url} (session {short_id(current.session_id)}). "
                               ":connect URL switches to another server.")
        opener = ctx.opener
    else:
        def open_session() -> Session:
            if url is None and current is not None:  # another session on the same server
                return open_here(current.server.target.with_session(session_id))
            return open_here(resolve_target(url, session_id=session_id))

        opener = open_session
    if opener is None:
        raise UsageError("There is nothing to connect to", "Give a URL: :connect sc://host:15002")
    return SwitchSession(opener, connected)


def connected(session: Session, old: Session | None, left: list[str]) -> Message:
    """What :connect says once the new session is the REPL's: where, and what was left in the previous one."""
    from .catalog import lost_note

    note = ""
    if left and old is not None:
        note = (f" Left {', '.join(left)} running in the previous session; "
                f"reattach with :connect {old.server.target.bare_url} --session-id {old.session_id}")
    lost = lost_note(session)
    return Message(f"Connected to {session.url} (session {short_id(session.session_id)}, "
                   f"Spark {session.server.version}).{note}" + (f"\n{lost}" if lost else ""))


@command("session", "Show the server URL, session id, Spark version and user")
def session_(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    session = ctx.session
    user = session.user or "-"
    rows = [["url", session.url], ["session id", session.session_id], ["spark version", session.server.version],
            ["user", user], ["reattach", ctx.reattach_command()]]
    ui = session.server.ui()
    if ui is not None:
        rows.append(["spark UI", ui])
    rows.append(["server", server_row(session.server.facts.known())])
    tasks = busy_tasks(session.server.busy_tasks(window=SESSION_SAMPLE))
    if tasks is not None:
        rows.append(["tasks", tasks])
    return Table(["field", "value"], rows, footer="")


@command("server", "What this server can run for this client: Spark, its Python and packages, Kafka, checkpoints, "
         "auth (--refresh asks it again)", options=(flag("refresh"),))
def server(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    caps = ctx.session.server.facts.get(refresh=opts.flag("refresh"))
    return capability_table(caps, kept=ctx.session.kept() if caps.sink_problem is None else None)


@command("kept", "What sparkscope keeps on this server for you: the rows of your bounded queries and your memory "
         "sources, each with its state, rows and size (--free: free now yours that nothing uses)",
         options=(flag("free"),))
def kept(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    if opts.flag("free"):
        return kept_table(ctx.session.free_kept(), freed=True)
    return kept_table(ctx.session.kept(), others=ctx.session.kept_by_others())


def _kept_state(item: Kept) -> str:
    if item.state == "ended":
        return "ended" if item.ended is None else f"ended {age(item.ended)} ago"
    return {"running": "its query runs", "waiting": "no batch yet", "open": "its session is open"}.get(item.state,
                                                                                                   item.state)


def _kept_end(item: Kept) -> str:
    if item.ends_in is not None:
        return f"freed in {age(item.ends_in)}"
    after = "its query ends" if item.state == "running" else "its session ends"
    return f"{age(item.grace)} after {after}"


def _kept_owner(item: Kept) -> str:
    if item.user is None:
        return "anyone (the server did not say who made it)"
    return "you" if item.yours else (item.user or "(the user with no name)")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def kept_totals(kept: list[Kept]) -> str:
    """One line of what sparkscope keeps on a server for you ('sparkscope server check', :kept's footer)."""
    if not kept:
        return "nothing"
    rings = sum(1 for item in kept if item.kind == "ring")
    parts = [_plural(rings, "ring")] if rings else []
    parts += [_plural(len(kept) - rings, "feed")] if len(kept) > rings else []
    ended = sum(1 for item in kept if item.state == "ended")
    trimmed = sorted({item.trimmed_by for item in kept if item.trimmed_by})
    return (f"{' and '.join(parts)}: {sum(item.rows for item in kept):,} rows, {size(sum(item.bytes for item in kept))}"
            + (f"; {ended} ended, freed after their grace period" if ended else "")
            + (f"; kept fewer rows than asked, at the server's {', '.join(trimmed)}" if trimmed else ""))


def kept_table(kept: list[Kept], *, freed: bool = False, others: list[KeptTotal] | None = None) -> Table:
    """`:kept` and `sparkscope server kept`: each ring and feed you keep on the server, or those just freed; for
    the server's owner, each other user's totals after them (no names, no sessions)."""
    rows = [[item.kind, item.query or "-", _kept_owner(item), short_id(item.session),
             _kept_state(item), f"{item.rows:,}", size(item.bytes), age(item.age), _kept_end(item)] for item in kept]
    rows += [["totals", "-", other.user or "(the user with no name)", "-",
              f"{_plural(other.rings, 'ring')}, {_plural(other.feeds, 'feed')}", "-", size(other.bytes), "-", "-"]
             for other in others or []]
    if freed:
        footer = (f"Freed {len(kept)}: {kept_totals(kept)}" if kept else
                  "Nothing to free: what you keep on this server is still in use (stop its query first)")
    else:
        footer = (f"Yours: {kept_totals(kept)}. Each is freed by itself a grace period after nothing uses it; "
                  ":kept --free frees yours now" if kept else "sparkscope keeps nothing of yours on this server")
        if others:
            footer += (f". Other users: {_plural(len(others), 'user')} keep "
                       f"{size(sum(other.bytes for other in others))} (you see their totals as the server's owner)")
    return Table(["kind", "query", "owner", "session", "state", "rows", "size", "age", "ends"], rows, footer=footer,
                 droppable=("session", "age"))


def capability_table(caps: Capabilities, kept: list[Kept] | None = None) -> Table:
    """`:server` and `sparkscope server check`: each capability, what it enables, what is missing, how to add it;
    and, when known, what sparkscope keeps on the server in all."""
    checks = caps.checks()
    rows = [[c.capability, "-" if c.ok is None else ("ok" if c.ok else "MISSING"), c.found, c.enables, c.fix]
            for c in checks]
    if kept is not None:
        rows.append(["kept", "-", kept_totals(kept), "the rows of bounded queries and memory sources, freed a grace "
                     "period after nothing uses them", ":kept lists them (sparkscope server kept)"])
    missing = [c.capability for c in checks if c.ok is False]
    footer = ("Everything sparkscope uses works on this server." if not missing else
              f"Missing: {', '.join(missing)}. What needs it says in one line what the server lacks.")
    return Table(["capability", "status", "found", "enables", "to add it"], rows, footer=footer,
                 droppable=("enables",))


def server_row(caps: Capabilities | None) -> str:
    """The `server` row of :session: what is known of the server (nothing is asked for it)."""
    if caps is None:
        return "not asked yet (:server asks)"
    missing = [c.capability for c in caps.checks() if c.ok is False]
    python = caps.python.version or "no Python"
    return (f"Spark {caps.spark_version}, Python {python}; "
            + ("everything sparkscope uses works" if not missing else f"missing: {', '.join(missing)} (:server)"))


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
def set_(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    if not args:
        return Message(f"vi = {'on' if ctx.vi_mode else 'off'}", {"vi": ctx.vi_mode})
    if args[0] != "vi" or len(args) != 2 or args[1] not in ("on", "off"):
        raise UsageError(f"Cannot set '{' '.join(args)}'", "Usage: :set vi on|off")
    return Message(f"vi key bindings are {args[1]}", {"vi": args[1] == "on"}, vi_mode=args[1] == "on")


@command("help", "List the commands, or show how to use one; :help keys lists the keys",
         args=(Arg("COMMAND|keys", optional=True, complete=Complete.COMMAND),), needs_session=False)
def help_(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    if args and args[0] == "keys":
        return Block(KEYS)
    if args:
        cmd = ctx.registry.lookup(args[0].lstrip(":"))
        aliases = f"\nAliases: {', '.join(':' + a for a in cmd.aliases)}" if cmd.aliases else ""
        return Block(f"{cmd.usage}\n\n{cmd.summary}.{aliases}")
    rows = [[f":{c.name}", c.summary] for c in sorted(ctx.registry.commands.values(), key=lambda c: c.name)]
    return Table(["command", "what it does"], rows,
                 footer="Write PySpark in between: spark, ss, F, T, col, expr, lit and window are ready. "
                        ":help COMMAND shows its usage.")


@command("trace", "Show the full traceback of the last error", needs_session=False)
def trace(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    return Block(ctx.last_traceback or "No error yet.")


@command("quit", "Leave sparkscope (asks about running queries)", aliases=("exit", "q"), needs_session=False)
def quit_(ctx: CommandContext, args: list[str], opts: Options) -> Result:
    return Exit()
