"""The executor behind the REPL and the non-interactive modes: Python lines and colon commands.

It owns the user's namespace and the (possibly still connecting) sparkscope session. Commands
run in a worker thread under an operation tag, so Ctrl-C cancels just that server operation.
"""

from __future__ import annotations

import ast
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, TextIO

from ..client.errors import Cancelled, SparkscopeError
from ..client.error_reading import translate, translated
from ..client.logs import swallowed
from ..client.secrets import redact
from .leaving import Leave
from .python_input import describe, from_pyspark, mentions_session, user_frames, user_traceback
from .session_holder import SessionHolder

# The commands' machinery (registry, render, worker) is imported where it is used: the prompt is drawn
# before any of it loads (`make bench`, bench_prompt.py).


def has_commands(text: str) -> bool:
    """Whether a line of a script (or a paste) may be a colon command or a magic (a line of a string that starts so
    counts too: such a text runs statement by statement, which reads strings right; one with none runs whole)."""
    return any(line.lstrip().startswith((":", "%")) for line in text.splitlines())


class Executor:
    """Runs what the user types: Python, colon commands, magics. It holds the REPL's session (`holder`, which may
    still be connecting) and is the context its commands see (context.py's CommandContext)."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, fmt: str = "table",
                 interactive: bool = False, confirm: Callable[[str], bool] | None = None, warm: bool = True,
                 namespace: dict[str, Any] | None = None, present: Callable[[str, Any], None] | None = None):
        self.holder = SessionHolder(out, err, interactive, namespace)
        # how a command's result is shown: printed as text (the REPL, scripts), or handed to a notebook's display
        self.present = present
        self.fmt = fmt
        self.ask: Callable[[str], bool] = confirm or (lambda question: False)  # the terminal's question
        self.asking = threading.Event()  # set while a question waits for its answer: no timer prints into it
        self.last_traceback: str | None = None
        self.debug = False  # --debug: every error's full traceback before its line (:trace shows the last one)
        self.exit_requested = False
        self.exit_code = 0  # sys.exit(N) or exit(N) in a script: the command's exit code
        self.stop_requested = False  # spark.stop() on this session: closed once the input ends
        self._notices: set[str] = set()
        self.echo_values = True  # show an expression's value; off in a .py script, as python runs it
        self.vi_mode = False  # the shell's editing mode; :set vi on|off changes it
        self.registry: Any = None  # the colon commands: see warm_up
        self._listener_warnings: Any = None  # pyspark's warnings of a listener that raised, shown here (warm_up)
        self.dbutils: Any = None  # dbutils, as warm_up made it (%fs runs through it)
        self.cancelled = threading.Event()  # set when the running command is cancelled or abandoned
        if namespace is None:  # exit() and quit() leave the way :quit and Ctrl-D do: asking about running queries
            self.namespace["exit"] = self.namespace["quit"] = Leave()  # (a host's namespace keeps its own)
        if warm:
            self.warm_up()

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question (False in scripts). While it waits, the command's "still running" timer is
        quiet, and it counts again from the answer."""
        self.asking.set()
        try:
            return self.ask(question)
        finally:
            self.asking.clear()

    def warm_up(self) -> None:
        """Load the colon commands and the namespace's Databricks names. The REPL does it on the main thread
        once its prompt is drawn (the prompt waits for nothing), and before the connecting thread starts
        importing pyspark: two threads importing the same modules can meet half-initialised ones."""
        if self.registry is not None:
            return
        from .compat import databricks
        from .compat.dbutils import DbUtils
        from .compat.listener_warnings import ListenerWarnings
        from .commands.listing import REGISTRY

        self._listener_warnings = ListenerWarnings(self._say)  # while this REPL runs: finish() takes it off
        self._listener_warnings.install()

        self.namespace["display"] = databricks.Display(self)
        self.dbutils = self.namespace["dbutils"] = DbUtils(self._connected_session)  # %fs uses it, whatever the
        # user's own `dbutils` name holds by then
        self.registry = REGISTRY

    # -- the session, as the commands see it (CommandContext) -------------------------------------
    @property
    def namespace(self) -> dict[str, Any]:
        return self.holder.namespace  # the dict itself: names are set in it, it is never replaced

    @property
    def out(self) -> TextIO:
        return self.holder.out

    @property
    def err(self) -> TextIO:
        return self.holder.err

    @property
    def interactive(self) -> bool:
        return self.holder.interactive

    @property
    def opener(self) -> Callable[[], Any] | None:
        return self.holder.opener

    @property
    def session(self) -> Any:
        return self.holder.session

    @property
    def connecting(self) -> bool:
        return self.holder.connecting

    def session_or_none(self) -> Any:
        return self.holder.session_or_none()

    def live(self) -> Any:
        return self.holder.live()

    def reattach_command(self) -> str:
        return self.holder.reattach_command()

    def switch_session(self, opener: Callable[[], Any]) -> tuple[Any, Any, list[str]]:
        return self.holder.switch_session(opener)

    # -- running ------------------------------------------------------------------------------
    def evaluate(self, source: str) -> Any:
        try:
            return eval(compile(source, "<input>", "eval"), self.namespace)
        except SyntaxError as exc:
            from .commands.registry import UsageError

            raise UsageError(f"'{source}' is not a Python expression ({exc.msg})", "Check the expression") from None
        except SparkscopeError:
            raise
        except NameError as exc:
            from .commands.registry import UsageError

            raise UsageError(str(exc).capitalize(), "Define it first") from None
        except Exception as exc:
            if from_pyspark(exc):
                raise translate(exc) from exc
            from .commands.registry import UsageError

            raise UsageError(f"{type(exc).__name__}: {exc}", "Check the expression") from None

    def request_session_stop(self) -> None:
        self.stop_requested = True

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

    def run(self, text: str, *, filename: str = "<input>", first_line: int = 1) -> bool:
        """Run one input (a colon command or Python source). True when it succeeded. A script's piece names its
        file and the line it starts on, so that a traceback names them as Python's would. Several lines holding a
        colon command (a paste of Python and commands) run statement by statement, as `-f` runs them."""
        if not text.strip():
            return True
        self.warm_up()
        if "\n" in text.strip() and has_commands(text):
            return self.run_script(text, filename=filename, stops=False)
        return self._run_one(text, filename, first_line)

    def _run_one(self, text: str, filename: str, first_line: int) -> bool:
        """Run one statement: a colon command, a magic, or Python source."""
        if not text.strip():
            return True
        try:
            if text.lstrip().startswith(":"):
                return self._run_command(text.strip())
            if text.lstrip().startswith("%"):
                return self._run_magic(text)
            return self._run_python(text, filename, first_line)
        except KeyboardInterrupt:
            if not self.interactive:  # Ctrl-C ends a script
                raise
            from .worker import CANCELLED

            self.err.write(CANCELLED + "\n")
            return False

    def run_script(self, text: str, *, filename: str, stops: bool) -> bool:
        """Run a script's text statement by statement: compiled first (a syntax error anywhere runs nothing and
        names its file and line), each colon command line on its own. `stops`: at the first failure (as `python
        FILE` does); else it goes on after a failed line, as a SQL client's -f does, and says it failed."""
        from .commands.registry import split_commands
        from .statements import first_syntax_error, numbered_statements
        from .python_input import syntax_error_text

        pieces = list(numbered_statements(text))
        broken = first_syntax_error(pieces, filename)
        if broken is not None:
            self.err.write(syntax_error_text(broken))
            return False
        ok = True
        for line, piece in pieces:
            if self.exit_requested:  # exit(), quit() or :quit end the script
                return ok
            for item in split_commands(piece) if piece.startswith(":") else [piece]:
                ok = self._run_one(item, filename, line) and ok
            if not ok and stops:
                return False
        return ok

    def input_ended(self) -> None:
        """An input (a cell) ended: when it ran spark.stop() on this session, a new one takes its place
        (compat/sessions.py)."""
        if not self.stop_requested:
            return
        from .compat.sessions import replace_stopped_session

        self.stop_requested = False
        replace_stopped_session(self)

    def _run_magic(self, text: str) -> bool:
        """A Databricks magic cell: %sql runs as :sql, %python as Python, %fs as dbutils.fs; others get one line."""
        try:
            from .compat.databricks import fs_magic, magic

            command = magic(text)
            if command is None and text.lstrip().startswith("%fs"):
                self.emit("fs", fs_magic(text, self.dbutils.fs))
                return True
        except SparkscopeError as exc:  # bad usage, a refused delete, a path that is not there: one line
            self.report(exc)
            return False
        if command is not None:
            return self._run_command(command)
        return self._run_python(text.lstrip()[len("%python"):].lstrip("\n"))

    def run_command(self, line: str) -> bool:
        """Run one colon command whose arguments may span lines (a notebook's %%sql cell): never split into
        statements as a pasted script is. True when it succeeded."""
        self.warm_up()
        return self._run_command(line)

    def _run_command(self, line: str) -> bool:
        from .commands.registry import Runs, UsageError
        from .worker import cancel_notice, command_timeout, run_in_worker

        name = line[1:].split(" ", 1)[0]
        try:
            invocation = self.registry.parse(line)
            if invocation.command.needs_session:
                self._wait_for_session()
            if invocation.command.runs is Runs.FULLSCREEN:
                if not self.interactive:
                    raise UsageError(f":{invocation.command.name} needs an interactive terminal",
                                     "In scripts use :progress, or :progress NAME --chart")
                result = invocation.command.func(self, invocation.args, invocation.opts)
            else:
                waits = invocation.command.runs is Runs.WAITS
                result = run_in_worker(self, lambda: invocation.command.func(self, invocation.args, invocation.opts),
                                         deadline=None if waits else command_timeout(), interrupt=not waits)
            result = self.apply(result)
        except Cancelled as cancel:
            if not cancel.by_keyboard:  # the server cancelled it: reported as any error
                self.report(cancel)
                return False
            self._error(cancel_notice(cancel, self.interactive))
            self._watch_stuck_tasks(cancel)
            if not self.interactive:  # Ctrl-C ends a script; its exit rules decide about its queries
                raise KeyboardInterrupt from None
            return False
        except BaseException as exc:
            if isinstance(exc, (SystemExit, KeyboardInterrupt)):
                raise
            self.report(exc)
            return False
        self.emit(name, result)
        return True

    def apply(self, result: Any) -> Any:
        """Carry out what a command's result changes of the REPL (results.py: Exit, SwitchSession, Follow); what is
        left to show."""
        from .rendering.results import Exit, Follow, Message, SwitchSession
        from .worker import SLOW_NOTICE, STILL_RUNNING, command_timeout, run_in_worker

        if isinstance(result, Exit):
            self.request_exit(result.code)
            return None
        if isinstance(result, SwitchSession):
            switch = result
            return run_in_worker(self, lambda: switch.said(*self.holder.switch_session(switch.opener)),
                                 deadline=command_timeout())
        if isinstance(result, Follow):
            started, told = time.monotonic(), not self.interactive
            try:
                while result.waiting():
                    time.sleep(0.1)  # polling a fact (the tail still runs), ended by it or by Ctrl-C
                    if not told and time.monotonic() - started > SLOW_NOTICE:
                        told = True  # as every command that runs long says: Ctrl-C is safe
                        self.err.write(STILL_RUNNING + "\n")
                        self.err.flush()
            except KeyboardInterrupt:
                note = result.cancelled()
                if not self.interactive:  # Ctrl-C ends a script
                    raise
                return Message(note) if note else None
            return result.ended()
        return result

    def _watch_stuck_tasks(self, cancel: Cancelled) -> None:
        """After Ctrl-C ended a command: tasks that Spark cannot interrupt are said, above the next prompt, within
        seconds, instead of keeping cores busy unannounced (the check samples the server's CPU meanwhile)."""
        from .worker import stuck_tasks_note

        session = self.session_or_none()
        if session is None or not self.interactive or cancel.waited_on:
            return

        def check() -> None:
            with swallowed("looking for tasks the cancel did not stop"):
                note = stuck_tasks_note(session)
                if note:
                    self.live().say(note)

        threading.Thread(target=check, name="sparkscope-stuck-tasks", daemon=True).start()

    def _say(self, text: str) -> None:
        """A line from a background thread: above the prompt once a session is there, else on stderr."""
        if self.session_or_none() is not None:
            self.live().say(text)
        else:
            self.err.write(text + "\n")
            self.err.flush()

    def _connected_session(self) -> Any:
        """The session, once connecting has ended (its error raised when it failed)."""
        self._wait_for_session()
        return self.session

    def _wait_for_session(self) -> None:
        self.holder.session_wanted = True
        if self.holder.connecting and self.interactive:
            self.err.write("(connecting…)\n")
            self.err.flush()
        with translated():
            self.holder.wait_connected()
        self._wait_for_warm_up()

    def _wait_for_warm_up(self) -> None:
        session = self.session_or_none()
        if session is not None:
            session.server.warmed()

    def emit(self, name: str, result: Any) -> None:
        if self.present is not None:
            self.present(name, result)
            return
        from .rendering.render import show
        from .rendering.results import Message
        from .terminal import page

        json = self.fmt == "json"

        if isinstance(result, Message) and result.vi_mode is not None:
            self.vi_mode = result.vi_mode  # the shell's next prompt edits in that mode
        text = show(name, result, self.fmt)
        if text and not (not json and self.interactive and page(text)):
            self.out.write(text + "\n")
        self.out.flush()

    def report(self, exc: BaseException) -> None:
        """A failure, said in one line on stderr (or as a JSON object with --format json)."""
        from .hints import repl_hint
        from .rendering.render import error_line

        self.last_traceback = redact("".join(traceback.format_exception(exc)))
        if self.debug:
            self.err.write(self.last_traceback)
        error = self._restarted_server(exc if isinstance(exc, SparkscopeError) else translate(exc))
        if isinstance(error, Cancelled):
            from .worker import CANCELLED

            self._error(CANCELLED)
        elif self.fmt == "json":
            self._error(error.message, repl_hint(error))
        else:
            self.err.write(error_line(error) + "\n")
        self.err.flush()

    def _restarted_server(self, error: SparkscopeError) -> SparkscopeError:
        """Our own embedded server restarted under this REPL (a new token): say so."""
        session = self.session_or_none()
        return error if session is None else session.client.explain_error(error)

    def _error(self, message: str, hint: str = "") -> None:
        """A line on stderr: plain text, or with --format json one {"error", "hint"} object."""
        from .rendering.render import error_json

        self.err.write((error_json(message, hint) if self.fmt == "json" else message) + "\n")
        self.err.flush()

    # -- Python ---------------------------------------------------------------------------------
    def _syntax_error(self, exc: SyntaxError) -> None:
        """Python's own lines for it; the source line it quotes goes through redact() (a pasted token)."""
        from .python_input import syntax_error_text

        self.last_traceback = redact(syntax_error_text(exc))
        if self.fmt == "json":
            self._error(f"SyntaxError: {exc.msg} (line {exc.lineno})", "Check the Python syntax")
        else:
            self.err.write(self.last_traceback)

    def _run_python(self, source: str, filename: str = "<input>", first_line: int = 1) -> bool:
        from .worker import cancel_notice, run_in_worker

        try:
            body, expr = self._compiled(source, filename, first_line)
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
            if not isinstance(exc, SyntaxError):
                exc = SyntaxError(f"source code cannot contain null bytes ({exc})", (filename, first_line, 0, ""))
            self._syntax_error(exc)
            return False

        def work() -> Any:
            exec(body, self.namespace)
            return eval(expr, self.namespace) if expr is not None else None

        try:
            if mentions_session(source) and "spark" not in self.namespace:
                self._wait_for_session()
            elif mentions_session(source):
                self._wait_for_warm_up()
            value = run_in_worker(self, work, user_code=True)
        except Cancelled as cancel:
            if not cancel.by_keyboard:
                self.report(cancel)
                return False
            self._error(cancel_notice(cancel, self.interactive))
            self._watch_stuck_tasks(cancel)
            if not self.interactive:  # Ctrl-C ends a script; its exit rules decide about its queries
                raise KeyboardInterrupt from None
            return False
        except SystemExit as exc:  # sys.exit() and raise SystemExit leave as exit() does
            self.request_exit(exc.code)
            return True
        except SparkscopeError as exc:
            self._where(exc, source, filename, first_line)
            self.report(exc)
            return False
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.last_traceback = redact("".join(traceback.format_exception(exc)))
            if from_pyspark(exc):
                self._where(exc, source, filename, first_line)
                self.report(exc)
            elif self.fmt == "json":
                self._error(redact(f"{type(exc).__name__}: {exc}"), "See :trace for the traceback")
            else:
                self.err.write(redact(user_traceback(exc, source, filename, first_line)))
            return False
        finally:
            self.input_ended()
        if value is not None and self.echo_values:
            try:
                self._echo(value)
            except KeyboardInterrupt:  # Ctrl-C while its value prints: the cell itself ran to its end
                from .worker import FINISHED_FIRST

                self.err.write(FINISHED_FIRST + "\n")
        return True

    def _compiled(self, source: str, filename: str, first_line: int) -> tuple[Any, Any]:
        """The code of `source` as Python compiles a file (none of this module's __future__ flags), and its last
        expression's apart when its value is shown. A whole script whose values are not shown compiles as `python
        FILE` compiles it: from its text, without building a tree of it first."""
        if not self.echo_values and first_line == 1:
            return compile(source, filename, "exec", dont_inherit=True), None
        tree = ast.parse(source, filename, "exec")
        if first_line != 1:
            ast.increment_lineno(tree, first_line - 1)
        last_expr = None
        if self.echo_values and tree.body and isinstance(tree.body[-1], ast.Expr):
            last_expr = ast.Expression(tree.body[-1].value)
            tree.body.pop()
        body = compile(tree, filename, "exec", dont_inherit=True)
        return body, compile(last_expr, filename, "eval", dont_inherit=True) if last_expr is not None else None

    def _where(self, exc: BaseException, source: str, filename: str, first_line: int) -> None:
        """In a script, where an error its one line tells happened: its frames, as Python prints them."""
        if filename != "<input>" and self.fmt != "json":
            self.err.write(redact(user_frames(exc, source, filename, first_line)))

    def _echo(self, value: Any) -> None:
        """An expression's value, as Python's REPL shows it (and `_` holds it)."""
        from .rendering.render import value_json

        self.namespace["_"] = value
        text = describe(value)
        self.out.write((value_json(value, text) if self.fmt == "json" else text) + "\n")
        self.out.flush()

    def finish(self, detach: bool | None) -> str | None:
        """Close the session. detach=None asks (interactive). Returns a message for the user."""
        from .leaving import leave

        try:
            return leave(self, self.holder.live_if_started(), detach)
        finally:
            if self._listener_warnings is not None:
                self._listener_warnings.uninstall()
