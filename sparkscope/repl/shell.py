"""The interactive prompt: prompt-toolkit with highlighting, completion, history and a toolbar."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.filters import is_searching
from prompt_toolkit.formatted_text import HTML
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys
from prompt_toolkit.lexers import DynamicLexer, Lexer
from prompt_toolkit.patch_stdout import patch_stdout
from prompt_toolkit.utils import is_dumb_terminal

from ..client.logs import swallowed
from ..client.paths import private_file, state_dir
from ..client.connection.remote import redact
from ..core.settings import repl_setting
from ..core.executor import Executor
from .terminal_io import AbovePlainPrompt, eof_typed_ahead


class RedactingHistory(FileHistory):
    """History file, mode 0600, that never stores a token."""

    def store_string(self, string: str) -> None:
        super().store_string(redact(string))


class EndOfFileKeepingInput(Vt100Input):
    """The terminal, as prompt-toolkit reads it, with one addition: a Ctrl-D typed while no prompt was
    reading (a command ran, or the REPL started) ends the prompt as a Ctrl-D typed at it would. It is
    looked for the moment before the prompt makes the terminal raw, where it would be lost
    (terminal_io.eof_typed_ahead)."""

    def raw_mode(self):
        app = get_app_or_none()
        if app is not None and app.future is not None and not app.future.done() and eof_typed_ahead(self.stdin):
            app.exit(exception=EOFError())
        return super().raw_mode()


class ShellCompleter(Completer):
    def __init__(self, executor: Executor):
        self.executor = executor

    def _query_names(self) -> list[str]:
        session = self.executor.session_or_none()
        if session is None:
            return []
        return sorted({q.name for q in session.streams.known_queries()})

    def _dataframe_names(self) -> list[str]:
        from ..client.queries.dataframes import is_dataframe

        return sorted(k for k, v in list(self.executor.namespace.items())
                      if is_dataframe(v) and not k.startswith("_"))

    def get_completions(self, document, complete_event) -> Iterable[Completion]:
        """Candidates for the text before the cursor; a failure offers none, and never ends the prompt."""
        found: list[Completion] = []
        with swallowed("completing"):
            found.extend(self._completions(document))
        return found

    def _completions(self, document) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.lstrip().startswith(":"):
            yield from self._command_completions(text.lstrip())
            return
        word = document.get_word_before_cursor(pattern=__import__("re").compile(r"[\w.]+"))
        if not word:
            return
        yield from self._python_completions(word)

    def _command_completions(self, text: str) -> Iterable[Completion]:
        from ..core.commands.listing import REGISTRY
        from ..core.commands.completion import command_candidates
        from ..core.commands.registry import UsageError, split_args

        if " " not in text:
            prefix = text[1:]
            for name in REGISTRY.names():
                if name.startswith(prefix):
                    yield Completion(":" + name, start_position=-len(text))
            return
        name, _, rest = text[1:].partition(" ")
        try:
            words = split_args(rest) if rest.strip() else []
            cmd = REGISTRY.lookup(name)
        except UsageError:  # an unknown command or an open quote: nothing to offer
            return
        current = "" if rest.endswith(" ") or not words else words[-1]
        done = words if current == "" else words[:-1]
        for candidate in command_candidates(cmd, done, current, self._query_names, self._dataframe_names,
                                            REGISTRY.names):
            yield Completion(candidate, start_position=-len(current))

    def _python_completions(self, word: str) -> Iterable[Completion]:
        for match in python_matches(word, self.executor.namespace):
            yield Completion(match, start_position=-len(word))


def python_matches(word: str, namespace: dict) -> list[str]:
    """Completions of a Python name or dotted path that never run user or library code: attributes are
    looked up statically, a property (df.schema, ss.streams.monitor: each an RPC) is never read, and dir() of
    an instance is never called (a Connect DataFrame's __dir__ fetches its schema from the server)."""
    import builtins
    import inspect
    import keyword
    import types

    *path, prefix = word.split(".")
    if not path:
        names = set(namespace) | set(dir(builtins)) | set(keyword.kwlist)
        return sorted(n for n in names if n.startswith(prefix) and not n.startswith("__"))
    if path[0] in namespace:
        obj = namespace[path[0]]
    elif hasattr(builtins, path[0]):
        obj = getattr(builtins, path[0])
    else:
        return []
    for part in path[1:]:
        try:
            attr = inspect.getattr_static(obj, part)
        except AttributeError:
            return []
        plain = isinstance(attr, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType))
        if not plain and hasattr(type(attr), "__get__"):
            return []  # a property or another descriptor: reading it may run code
        obj = attr
    names = set(dir(type(obj)))
    with contextlib.suppress(AttributeError, TypeError):
        names |= set(object.__getattribute__(obj, "__dict__"))
    shown = [n for n in names if n.startswith(prefix) and (prefix.startswith("_") or not n.startswith("_"))]
    base = ".".join(path)
    return sorted(f"{base}.{n}" for n in shown)


def _bindings(executor: Executor) -> KeyBindings:
    kb = KeyBindings()

    @kb.add("enter", filter=~is_searching)  # in Ctrl-R search, Enter accepts the match (prompt-toolkit's own)
    def _(event) -> None:
        from ..core.statements import enter_submits, indent_for

        buffer = event.current_buffer
        text = buffer.text
        if buffer.complete_state:
            buffer.complete_state = None
        if enter_submits(text):
            if "\n" in text and not text.split("\n")[-1].strip():
                buffer.text = text.rstrip() + "\n"
            buffer.validate_and_handle()
        else:
            # a dumb terminal gets no indent: a paste arrives there as typed keys, its own indentation included
            buffer.insert_text("\n" + ("" if is_dumb_terminal() else indent_for(text)))

    @kb.add("c-c")
    def _(event) -> None:
        event.current_buffer.reset()

    mouse = _default_mouse_handler()

    @kb.add(Keys.Vt100MouseEvent)
    def _(event):
        # A pasted escape sequence can look like a mouse event that prompt-toolkit cannot parse; it
        # raised "Unhandled exception in event loop". Such input is dropped instead.
        try:
            return mouse(event)
        except (ValueError, IndexError, KeyError):
            return None

    return kb


def _default_mouse_handler():
    from prompt_toolkit.key_binding.bindings.mouse import load_mouse_bindings

    return next(b.handler for b in load_mouse_bindings().bindings if b.keys == (Keys.Vt100MouseEvent,))


class Shell:
    def __init__(self, executor: Executor, target_display: str, color: bool = True,
                 on_first_draw: Callable[[], None] | None = None):
        self.executor = executor
        self.target_display = target_display
        self._lexer: Lexer | None = None  # the highlighting, loaded once the first prompt is drawn
        history_path = private_file(state_dir() / "history")
        self.prompt: PromptSession[str] = PromptSession(
            input=EndOfFileKeepingInput(sys.stdin),
            history=RedactingHistory(str(history_path)),
            lexer=DynamicLexer(lambda: self._lexer),
            completer=ShellCompleter(executor),
            complete_while_typing=bool(repl_setting("complete_while_typing")),
            enable_open_in_editor=True,  # Ctrl-X Ctrl-E (v in vi mode) edits the line in $EDITOR
            auto_suggest=AutoSuggestFromHistory(),
            key_bindings=_bindings(executor),
            multiline=True,
            prompt_continuation=lambda width, line, wrap: "." * (width - 1) + " ",
            bottom_toolbar=self._toolbar,
            enable_history_search=False,
            mouse_support=False,
        )
        self.executor.vi_mode = bool(repl_setting("vi"))
        self.executor.ask = self._confirm
        # the toolbar follows the state at once (connected, query started, stopped, failed), not on a key
        self.executor.holder.on_state_change(self.prompt.app.invalidate)
        self._plain: tuple[AbovePlainPrompt, AbovePlainPrompt] | None = None
        if is_dumb_terminal():  # the prompt is plain input(): no render, so no after_render, and no colour
            # sys.stdout and sys.stderr for the REPL's life, before any thread (the server's start) writes
            line = lambda: "sparkscope> " + self.prompt.default_buffer.text  # noqa: E731
            self._plain = (AbovePlainPrompt(sys.stdout, line), AbovePlainPrompt(sys.stderr, line))
            sys.stdout, sys.stderr = self._plain
            if on_first_draw is not None:
                on_first_draw()
            return

        def first_draw(_app) -> None:
            self.prompt.app.after_render -= first_draw
            if color:
                from .highlighting import input_lexer

                self._lexer = input_lexer()
                self.prompt.app.invalidate()  # what was typed meanwhile gets its colours
            if on_first_draw is not None:
                on_first_draw()

        self.prompt.app.after_render += first_draw

    def _toolbar(self):
        executor = self.executor
        if executor.holder.connected:
            session = executor.session
            active = session.streams.active_count()
            return HTML(f" <b>{_escape(session.url)}</b>  session {session.session_id[:8]}  "
                        f"queries: {active}  <i>:help</i>")
        if not executor.holder.connecting:
            return HTML(f" <b>{_escape(self.target_display)}</b>  not connected  <i>:help</i>")
        starting = f" (Spark server: {_escape(executor.holder.startup)})" if executor.holder.startup else ""
        return HTML(f" <b>{_escape(self.target_display)}</b>  connecting…{starting}")

    def _confirm(self, question: str) -> bool:
        try:
            answer = PromptSession[str]().prompt(question)
        except (EOFError, KeyboardInterrupt):
            return False
        return answer.strip().lower() in ("y", "yes")

    @contextlib.contextmanager
    def _output_above_prompt(self):
        """While the prompt waits, what other threads print goes above it, never onto its line."""
        if not is_dumb_terminal():
            with patch_stdout(raw=True):
                yield
            return
        assert self._plain is not None  # installed by __init__ on a dumb terminal
        with self._plain[0].showing(), self._plain[1].showing():
            yield

    def loop(self) -> int:
        while not self.executor.exit_requested:
            try:
                # Output from other threads goes above the prompt only while the prompt is shown. A
                # command's own output is written directly and in order: through the proxy it could
                # land after the next prompt was drawn, with no prompt below it.
                with self._output_above_prompt():
                    text = self.prompt.prompt("sparkscope> ", vi_mode=self.executor.vi_mode)
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            self.executor.run(text)
        message = self.executor.finish(detach=None)
        if message:
            print(message)
        return 0


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def run_shell(executor: Executor, target_display: str, color: bool = True,
              on_first_draw: Callable[[], None] | None = None) -> int:
    return Shell(executor, target_display, color, on_first_draw).loop()


__all__ = ["run_shell", "sys"]
