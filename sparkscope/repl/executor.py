"""The executor behind the REPL and the non-interactive modes: Python lines and colon commands.

It owns the user's namespace and the (possibly still connecting) sparkscope session. Commands
run in a worker thread under an operation tag, so Ctrl-C cancels just that server operation.
"""

from __future__ import annotations

import ast
import contextlib
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TextIO

from ..client.deadline import within
from ..client.logs import swallowed
from ..client.errors import Cancelled, DeadlineExceeded, SparkscopeError, translate, translated
from ..client.secrets import redact
from . import catalog_commands as _catalog_commands  # noqa: F401 - registers the catalog's commands
from . import commands as _commands  # noqa: F401 - registers the colon commands
from . import databricks, pyspark_habits
from .registry import REGISTRY, Runs, UsageError
from .hints import repl_hint
from .render import age, error_json, error_line, render, to_json, value_json
from .terminal import command_name, page, reattach_command

CANCEL_WAIT = 0.5  # after Ctrl-C, how long a command may take to wind down before it is abandoned
LEAVE_DEADLINE = 5.0
SLOW_NOTICE = 2.0
STILL_RUNNING = "(still running; Ctrl-C cancels it, and streaming queries keep running)"
CANCELLED = "Cancelled: the operation was interrupted; streaming queries keep running."
ABANDONED = ("Cancelled: the server did not answer, so the call was abandoned; "
             "streaming queries keep running on the server.")


class Cancel(Exception):
    def __init__(self, abandoned: bool = False, waited_on: str | None = None):
        super().__init__()
        self.abandoned = abandoned
        self.waited_on = waited_on  # Ctrl-C ended a wait on this query, which keeps running

    @property
    def notice(self) -> str:
        if self.waited_on == "any query":
            return "Stopped waiting; the queries keep running (:stop NAME ends one)."
        if self.waited_on:
            return f"Stopped waiting for {self.waited_on}; it keeps running (:stop {self.waited_on} ends it)."
        return ABANDONED if self.abandoned else CANCELLED


def command_timeout() -> float | None:
    from .settings import repl_setting

    value = float(repl_setting("command_timeout"))  # type: ignore[arg-type]
    return value if value > 0 else None


class Executor:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, fmt: str = "table",
                 interactive: bool = False, confirm: Callable[[str], bool] | None = None):
        self._out = out
        self._err = err
        self.fmt = fmt
        self.interactive = interactive
        self.confirm = confirm or (lambda question: False)
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
        self.last_traceback: str | None = None
        self.debug = False  # --debug: every error's full traceback before its line (:trace shows the last one)
        self.exit_requested = False
        self.exit_code = 0  # sys.exit(N) or exit(N) in a script: the command's exit code
        self.stop_requested = False  # spark.stop() on this session: closed once the input ends
        self._notices: set[str] = set()
        self.echo_values = True  # show an expression's value; off in a .py script, as python runs it
        self.vi_mode = False  # the shell's editing mode; :set vi on|off changes it
        self.format_override: str | None = None
        self._session_future: Future = Future()
        self.opener: Callable[[], Any] | None = None  # how the current session was opened
        self._live: Any = None
        self._cancel_hooks: list[Callable[[], str | None]] = []
        self.cancelled = threading.Event()  # set when the running command is cancelled or abandoned
        self._state_hooks: list[Callable[[], None]] = []
        self.startup: str | None = None  # how the embedded server's start goes, while it starts
        # exit() and quit() leave the way :quit and Ctrl-D do: asking about running queries first
        self.namespace["exit"] = self.namespace["quit"] = _Leave(self)
        self.namespace["display"] = databricks.Display(self)
        self.namespace["dbutils"] = databricks.DatabricksOnly("dbutils", databricks.DBUTILS)

    @property
    def out(self) -> TextIO:
        return self._out or sys.stdout

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    # -- the session, which may still be connecting ---------------------------------------------
    def connect_in_background(self, opener: Callable[[], Any]) -> None:
        self.opener = opener

        def run() -> None:
            try:
                session = opener()
                self._populate(session)
                self._session_future.set_result(session)
            except BaseException as exc:  # delivered to whoever needs the session
                self._session_future.set_exception(exc)
            self._state_changed()

        threading.Thread(target=run, name="sparkscope-connect", daemon=True).start()

    def switch_session(self, opener: Callable[[], Any]) -> tuple[Any, Any, list[str]]:
        """Open a session with `opener` and make it the current one; the previous session is let go
        with its queries still running on their server. Returns the new session, the previous one
        and the names of the queries left running. When opening fails, nothing changes."""
        session = opener()
        old = self.session_or_none()
        left: list[str] = []
        if old is not None:
            with contextlib.suppress(SparkscopeError):  # the old server may be gone
                left = [q.name for q in old.queries() if q.state == "active"]
        alerts_on = self._live.alerts_on if self._live is not None else True
        if self._live is not None:
            self._live.close()
            self._live = None
        self.opener = opener
        self._session_future = Future()
        self._populate(session)
        if self._live is not None:
            self._live.alerts_on = alerts_on
        self._session_future.set_result(session)
        if old is not None:
            with swallowed("letting the previous session go"):
                old.close(stop_queries=False)
        return session, old, left

    def set_session(self, session: Any) -> None:
        self._populate(session)
        self._session_future.set_result(session)

    def _populate(self, session: Any) -> None:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        pyspark_habits.install()
        self.namespace.update({"spark": session.spark, "ss": session, "SparkSession": SparkSession, "F": F, "T": T,
                               "window": F.window, "col": F.col, "expr": F.expr, "lit": F.lit})
        if self.interactive:  # alerts above the prompt from the start
            # the session works without live events; :watch and :tail report the reason
            with contextlib.suppress(SparkscopeError):
                self._start_live(session)
                session.monitor.subscribe(
                    lambda event: self._state_changed() if event.kind in ("started", "terminated") else None)

    def _start_live(self, session: Any) -> Any:
        from .live import Live

        if self._live is None:
            self._live = Live(self, session)
        return self._live

    def live(self) -> Any:
        """Alerts and tails for this session (started on first use)."""
        return self._start_live(self.session)

    def server_starting(self, elapsed: float, stage: str) -> None:
        """The embedded server is starting (called about 4 times a second): shown in the toolbar."""
        shown = f"{stage}, {elapsed:.0f} s"
        if shown != self.startup:
            self.startup = shown
            self._state_changed()

    def on_state_change(self, hook: Callable[[], None]) -> None:
        """Call `hook` (from any thread) when the connection or a query's state changes."""
        self._state_hooks.append(hook)

    def _state_changed(self) -> None:
        for hook in list(self._state_hooks):
            with swallowed("redrawing after a state change"):
                hook()

    def on_cancel(self, hook: Callable[[], str | None]) -> None:
        """Run `hook` if the current command is cancelled with Ctrl-C; a returned text replaces the notice."""
        self._cancel_hooks.append(hook)

    def wait_connected(self) -> Any:
        """Block until the connection attempt ends; its session, or its error raised."""
        return self._session_future.result()

    @property
    def session(self):
        return self._session_future.result()

    @property
    def connecting(self) -> bool:
        return not self._session_future.done()

    @property
    def connected(self) -> bool:
        return self._session_future.done() and self._session_future.exception() is None

    def session_or_none(self):
        return self.session if self.connected else None

    def reattach_command(self) -> str:
        session = self.session
        return reattach_command(session.target, session.session_id)

    # -- running ------------------------------------------------------------------------------
    def evaluate(self, source: str) -> Any:
        try:
            return eval(compile(source, "<input>", "eval"), self.namespace)
        except SyntaxError as exc:
            raise UsageError(f"'{source}' is not a Python expression ({exc.msg})", "Check the expression") from None
        except SparkscopeError:
            raise
        except NameError as exc:
            raise UsageError(str(exc).capitalize(), "Define it first") from None
        except Exception as exc:
            if _from_pyspark(exc):
                raise translate(exc) from exc
            raise UsageError(f"{type(exc).__name__}: {exc}", "Check the expression") from None

    def request_exit(self, code: object = None) -> None:
        self.exit_requested = True
        if code is None or isinstance(code, int):
            self.exit_code = code or 0
        else:  # sys.exit("message"), as Python does: the message on stderr, exit code 1
            self.err.write(f"{code}\n")
            self.exit_code = 1

    def notice_once(self, key: str, text: str) -> None:
        """A line on stderr, printed the first time only of those with this key."""
        if key not in self._notices:
            self._notices.add(key)
            self.err.write(text + "\n")
            self.err.flush()

    def owns_spark(self, spark: Any) -> bool:
        """Whether `spark` is the session sparkscope opened for this REPL (spark in the namespace)."""
        session = self.session_or_none()
        return session is not None and spark is session.spark

    def run(self, text: str) -> bool:
        """Run one input (a colon command or Python source). True when it succeeded."""
        if not text.strip():
            return True
        try:
            if text.lstrip().startswith(":"):
                return self._run_command(text.strip())
            if text.lstrip().startswith("%"):
                return self._run_magic(text)
            return self._run_python(text)
        except KeyboardInterrupt:
            if not self.interactive:  # Ctrl-C ends a script
                raise
            self.err.write(CANCELLED + "\n")
            return False

    def _run_magic(self, text: str) -> bool:
        """A Databricks magic cell: %sql runs as :sql, %python as Python; others get one line."""
        try:
            command = databricks.magic(text)
        except UsageError as exc:
            self._report(exc)
            return False
        if command is not None:
            return self._run_command(command)
        return self._run_python(text.lstrip()[len("%python"):].lstrip("\n"))

    def _in_worker(self, work: Callable[[], Any], *, deadline: float | None = None,
                   interrupt: bool = True, user_code: bool = False) -> Any:
        """Run `work` in a thread under an operation tag. Ctrl-C (or the deadline) returns at once:
        the tag is interrupted in the background (never interruptAll, which stops streams; never a
        call that waits on a query, which stops that query: interrupt=False) and a call that still
        does not end is abandoned."""
        box: dict[str, Any] = {}
        tag = f"sparkscope-{uuid.uuid4().hex[:12]}"
        session_holder: list[Any] = []
        self.cancelled = threading.Event()
        call = pyspark_habits.UserCall(self, self.cancelled) if user_code else None

        def target() -> None:
            try:
                session = self.session_or_none()
                with pyspark_habits.running_user_code(call) if call else contextlib.nullcontext():
                    if session is not None:
                        session_holder.append(session)
                        if call:
                            session.activate()  # getActiveSession() in the user's code finds it
                        with session.operation(tag):
                            box["value"] = work()
                    else:
                        box["value"] = work()
            except BaseException as exc:
                box["error"] = exc

        def give_up() -> bool:
            self.cancelled.set()
            if call is not None and call.waiting_on:
                return False  # interrupting a wait on a query would stop the query: the wait ends by itself
            if interrupt and session_holder:  # over a frozen network this itself may hang: not here
                threading.Thread(target=session_holder[0].cancel, args=(tag,), daemon=True).start()
            worker.join(CANCEL_WAIT)
            return worker.is_alive()

        worker = threading.Thread(target=target, name="sparkscope-command", daemon=True)
        worker.start()
        started = time.monotonic()
        ends = started + deadline if deadline else None
        told = not self.interactive
        try:
            while worker.is_alive():
                worker.join(0.05)
                if not told and time.monotonic() - started > SLOW_NOTICE and worker.is_alive():
                    told = True  # say once that Ctrl-C is safe, like psql's cancel hint
                    self.err.write(STILL_RUNNING + "\n")
                    self.err.flush()
                if ends is not None and time.monotonic() > ends and worker.is_alive():
                    give_up()
                    raise DeadlineExceeded(f"The command got no answer within {deadline:g} s, so it was abandoned",
                                           "The server or network may be stuck; streaming queries keep running. "
                                           "[repl] command_timeout in config.toml sets the limit")
        except KeyboardInterrupt:
            waited_on = call.waiting_on if call is not None else None
            still_running = give_up()  # a wait (interrupt=False) just stops waiting: nothing is abandoned
            raise Cancel(abandoned=still_running and interrupt, waited_on=waited_on) from None
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _run_command(self, line: str) -> bool:
        name = line[1:].split(" ", 1)[0]
        self.format_override = None
        self._cancel_hooks = []
        try:
            invocation = REGISTRY.parse(line)
            if invocation.command.needs_session:
                self._wait_for_session()
            if invocation.command.runs is Runs.FULLSCREEN:
                if not self.interactive:
                    raise UsageError(f":{invocation.command.name} needs an interactive terminal",
                                     "In scripts use :progress, or :progress NAME --chart")
                result = invocation.command.func(self, invocation.args, invocation.opts)
            else:
                waits = invocation.command.runs is Runs.WAITS
                result = self._in_worker(lambda: invocation.command.func(self, invocation.args, invocation.opts),
                                         deadline=None if waits else command_timeout(), interrupt=not waits)
        except Cancel as cancel:
            notes = [note for note in (hook() for hook in self._cancel_hooks) if note]
            if notes:
                self.out.write("\n".join(notes) + "\n")
                self.out.flush()
                return True
            self._error(cancel.notice)
            return False
        except BaseException as exc:
            if isinstance(exc, (SystemExit, KeyboardInterrupt)):
                raise
            self._report(exc)
            return False
        self.emit(name, result)
        return True

    def _wait_for_session(self) -> None:
        if not self._session_future.done() and self.interactive:
            self.err.write("(connecting…)\n")
            self.err.flush()
        with translated():
            self._session_future.result()

    def emit(self, name: str, result: Any) -> None:
        if self.fmt == "json":
            self.out.write(to_json(name, result) + "\n")
        else:
            text = render(result, self.format_override or self.fmt)
            if text and not (self.interactive and page(text)):
                self.out.write(text + "\n")
        self.out.flush()

    def _report(self, exc: BaseException) -> None:
        self.last_traceback = redact("".join(traceback.format_exception(exc)))
        if self.debug:
            self.err.write(self.last_traceback)
        error = self._restarted_server(exc if isinstance(exc, SparkscopeError) else translate(exc))
        if isinstance(error, Cancelled):
            self._error(CANCELLED)
        elif self.fmt == "json":
            self._error(error.message, repl_hint(error))
        else:
            self.err.write(error_line(error) + "\n")
        self.err.flush()

    def _restarted_server(self, error: SparkscopeError) -> SparkscopeError:
        """Our own embedded server restarted under this REPL (a new token): say so."""
        session = self.session_or_none()
        return error if session is None else session.explain_restart(error)

    def _error(self, message: str, hint: str = "") -> None:
        """A line on stderr: plain text, or with --format json one {"error", "hint"} object."""
        self.err.write((error_json(message, hint) if self.fmt == "json" else message) + "\n")
        self.err.flush()

    # -- Python ---------------------------------------------------------------------------------
    def _run_python(self, source: str) -> bool:
        try:
            tree = ast.parse(source, "<input>", "exec")
        except SyntaxError as exc:
            self.last_traceback = "".join(traceback.format_exception_only(type(exc), exc))
            if self.fmt == "json":
                self._error(f"SyntaxError: {exc.msg} (line {exc.lineno})", "Check the Python syntax")
            else:
                self.err.write(self.last_traceback)
            return False
        last_expr = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last_expr = ast.Expression(tree.body[-1].value)
            tree.body.pop()
        body = compile(tree, "<input>", "exec")
        expr = compile(last_expr, "<input>", "eval") if last_expr is not None else None

        def work() -> Any:
            exec(body, self.namespace)
            return eval(expr, self.namespace) if expr is not None else None

        try:
            if "spark" not in self.namespace and _mentions_session(source):
                self._wait_for_session()
            value = self._in_worker(work, user_code=True)
        except Cancel as cancel:
            self._error(cancel.notice)
            if not self.interactive:  # Ctrl-C ends a script; its exit rules decide about its queries
                raise KeyboardInterrupt from None
            return False
        except SystemExit as exc:  # sys.exit() and raise SystemExit leave as exit() does
            self.request_exit(exc.code)
            return True
        except SparkscopeError as exc:
            self._report(exc)
            return False
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.last_traceback = redact("".join(traceback.format_exception(exc)))
            if _from_pyspark(exc):
                self._report(exc)
            elif self.fmt == "json":
                self._error(redact(f"{type(exc).__name__}: {exc}"), "See :trace for the traceback")
            else:
                self.err.write(redact(_user_traceback(exc, source)))
            return False
        finally:
            if self.stop_requested:
                self.stop_requested = False
                pyspark_habits.replace_stopped_session(self)
        if value is not None and self.echo_values:
            self.namespace["_"] = value
            text = describe(value)
            self.out.write((value_json(value, text) if self.fmt == "json" else text) + "\n")
            self.out.flush()
        return True

    # -- leaving --------------------------------------------------------------------------------
    def finish(self, detach: bool | None) -> str | None:
        """Close the session. detach=None asks (interactive). Returns a message for the user."""
        if not self.connected:
            return None
        session = self.session
        if self._live is not None:
            self._live.close()
        try:  # a frozen network must not hold Ctrl-D
            queries = within(LEAVE_DEADLINE, session.running, "listing running queries")
        except SparkscopeError:
            queries = []
        running = [q.name for q in queries]
        found = [] if self.interactive else [q for q in queries if not session.started_here(q)]
        if found and not detach:
            # a script stops only what it started: queries it found (reattached, another client's) run on
            with swallowed("stopping the script's queries"):
                for query in queries:
                    if session.started_here(query):
                        query.stop()
            session.close(stop_queries=False)
            stopped = [q.name for q in queries if session.started_here(q)]
            return "\n".join(filter(None, [f"Stopped {', '.join(stopped)}." if stopped else None,
                                            f"Left running: {', '.join(q.name for q in found)} (this script did "
                                            "not start them)."]))
        if running and detach is None:
            names = ", ".join(running)
            detach = not self.confirm(f"{len(running)} quer{'y is' if len(running) == 1 else 'ies are'} still "
                                      f"running ({names}). Stop {'it' if len(running) == 1 else 'them'}? [y/N] ")
        message: str | None
        if running and detach:
            message = (f"Left {len(running)} quer{'y' if len(running) == 1 else 'ies'} running on the server. "
                       f"Reattach with: {self.reattach_command()}\n{idle_timeout_warning(session)}")
            session.close(stop_queries=False)
        else:  # nothing to leave running, or the user chose to stop it
            session.close(stop_queries=True)
            message = f"Stopped {', '.join(running)}." if running else None
        staying = self._embedded_server_note(session) if self.interactive else None
        return "\n".join(m for m in (message, staying) if m) or None

    @staticmethod
    def _embedded_server_note(session: Any) -> str | None:
        """Say what stays behind: the embedded server keeps running (so queries can), and its memory."""
        if session.target.source != "local" and session.target.token_source != "state":
            return None  # not this state dir's embedded server
        from ..client.server import LocalServer

        info = LocalServer().running()
        if info is None:
            return None
        memory = info.memory_bytes
        held = f", {memory / 2**30:.1f} GiB" if memory and memory >= 2**30 else \
            (f", {memory / 2**20:.0f} MiB" if memory else "")
        return (f"The embedded Spark Connect server keeps running (pid {info.pid}{held}); "
                f"stop it with: {command_name()} server stop")


def idle_timeout_warning(session: Any) -> str:
    """One line: when the server will stop the queries of the session just left, and what to do."""
    seconds, known = session.idle_timeout()
    after = age(seconds) if known else f"{age(seconds)} (Spark's default; this server did not say)"
    return (f"warning: the server stops them once the session has had no client for {after}. Reattach before "
            f"then, keep a sparkscope attached, or raise spark.connect.session.manager.defaultSessionTimeout "
            f"on the server.")


class _Leave:
    """`exit` / `quit` in the REPL's namespace: calling either asks to leave like :quit."""

    def __init__(self, executor: Executor):
        self._executor = executor

    def __call__(self, code: object = None) -> None:
        self._executor.request_exit(code)

    def __repr__(self) -> str:
        return "Use exit(), quit(), :quit or Ctrl-D to leave"


def describe(value: Any) -> str:
    """repr for the REPL; a DataFrame shows its schema and whether it streams, without running a job."""
    if type(value).__name__ == "DataFrame" and hasattr(value, "isStreaming"):
        try:
            fields = ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in value.schema.fields)
            kind = "streaming DataFrame" if value.isStreaming else "DataFrame"
            return f"{kind}[{fields}]"
        except Exception as exc:
            return f"DataFrame (invalid: {translate(exc)})"
    if type(value).__name__ == "Rows" and hasattr(value, "columns"):
        from .render import render_table
        from .results import Table

        return render_table(Table(value.columns, value.rows))
    return repr(value)


def _from_pyspark(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("pyspark", "grpc", "py4j"))


def _mentions_session(source: str) -> bool:
    return any(name in source for name in ("spark", "ss.", "ss ", "F.", "T.", "col(", "expr(", "lit(", "window("))


def _user_traceback(exc: BaseException, source: str) -> str:
    """A traceback of the user's own code only: frames from <input> and the final line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<input>"]
    lines = source.splitlines()
    out = []
    if frames:
        out.append("Traceback (most recent call last):\n")
        for frame in frames:
            out.append(f'  File "<input>", line {frame.lineno}, in {frame.name}\n')
            if frame.lineno and 0 < frame.lineno <= len(lines):
                out.append(f"    {lines[frame.lineno - 1].strip()}\n")
    out.extend(traceback.format_exception_only(type(exc), exc))
    if isinstance(exc, TypeError) and "'bool' object is not callable" in str(exc) and "isStreaming(" in source:
        out.append("hint: isStreaming is a property, not a method: write df.isStreaming without ()\n")
    return "".join(out)


