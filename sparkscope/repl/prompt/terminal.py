"""What the REPL does with the user's terminal beyond printing: commands to type again, and a pager."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from typing import Any


def command_name() -> str:
    """How to run sparkscope again, as printed: `sparkscope` when that is on PATH, else the full path
    of the script that is running (after `make run`, .venv/bin is not on PATH)."""
    here = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(here) != "sparkscope":
        return "sparkscope"  # started some other way (python -m, an embedding program)
    found = shutil.which("sparkscope")
    return "sparkscope" if found and os.path.realpath(found) == here else shlex.quote(here)


def reattach_command(target: Any, session_id: str) -> str:
    """A command that reattaches to a session, runnable as printed: quoted, and never with the token
    in it (that comes from where it came from: the state dir, the environment, a profile)."""
    parts = [command_name()]
    if target.source == "profile" and target.profile:
        parts += ["--profile", shlex.quote(target.profile)]
    elif target.source != "local":
        parts += ["--remote", shlex.quote(target.bare_url)]
    parts += ["--session-id", session_id]
    command = " ".join(parts)
    if target.token_source in ("url", "argument"):
        command += "  (with your token in SPARK_CONNECT_AUTHENTICATE_TOKEN)"
    elif target.token_source == "env":
        command += "  (with SPARK_CONNECT_AUTHENTICATE_TOKEN set, as now)"
    return command


def pager_command() -> list[str] | None:
    """The pager for output taller than the screen: [repl] pager in config.toml (false: none), else
    $PAGER (empty: none), else `less -SRXF` like pgcli."""
    from ..settings import repl_setting

    configured = repl_setting("pager")
    if configured is False:
        return None
    command = str(configured) if configured else os.environ.get("PAGER", "less -SRXF")
    argv = shlex.split(command)
    return argv if argv and shutil.which(argv[0]) else None


def page(text: str) -> bool:
    """Show `text` through the pager when it is taller than the terminal; False when it was not paged."""
    import subprocess

    from prompt_toolkit.utils import is_dumb_terminal

    if not sys.stdout.isatty() or text.count("\n") + 2 < shutil.get_terminal_size((80, 24)).lines:
        return False
    if is_dumb_terminal():  # no screen to page on, and a pager there would read the lines typed next
        return False
    argv = pager_command()
    if argv is None:
        return False
    sys.stdout.flush()
    try:
        subprocess.run(argv, input=text + "\n", text=True, check=False)
    except OSError:
        return False
    return True


class AbovePlainPrompt:
    """sys.stdout or sys.stderr on a dumb terminal, for the whole REPL (prompt-toolkit prints the prompt there and
    echoes keys, without cursor moves, so what another thread writes lands on the prompt's line). While a prompt
    waits (`showing()`), output from other threads (a notice, an alert) starts on a new line, and the prompt with
    what was typed so far is printed again below it; otherwise output passes as it is. Installed once, not per
    prompt: a thread that looked up sys.stderr just before a swap would still write onto the prompt's line."""

    def __init__(self, stream: Any, prompt_line: Any):
        import threading

        self._stream = stream
        self._prompt_line = prompt_line  # () -> the prompt and the text typed so far
        self._lock = threading.Lock()
        self._prompt_shown = False
        self._on_prompt_line = False

    @contextlib.contextmanager
    def showing(self) -> Iterator[None]:
        """A prompt waits for input meanwhile (it is printed right after this begins)."""
        with self._lock:
            self._prompt_shown = self._on_prompt_line = True
        try:
            yield
        finally:
            with self._lock:
                self._prompt_shown = self._on_prompt_line = False

    def write(self, text: str) -> int:
        with self._lock:
            if not self._prompt_shown:
                self._stream.write(text)
                return len(text)
            if self._on_prompt_line:
                self._stream.write("\n")
                self._on_prompt_line = False
            self._stream.write(text)
            if text.endswith("\n"):
                self._stream.write(self._prompt_line())
                self._on_prompt_line = True
            self._stream.flush()
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding… of the real stream
        return getattr(self._stream, name)


def eof_typed_ahead(stream: Any) -> bool:
    """True, and consumed, when Ctrl-D was typed while no prompt was reading (a command ran, or the REPL
    started). The terminal is then in canonical mode, where Ctrl-D on an empty line is the line
    discipline's end of file and not a byte: prompt-toolkit's raw-mode read never sees it, so it was lost.
    Only a pending end of file is taken; a typed-ahead line stays for the prompt."""
    import fcntl
    import select
    import struct
    import termios

    try:
        fd = stream.fileno()
        if not os.isatty(fd) or termios.tcgetattr(fd)[3] & termios.ICANON == 0:
            return False
        if not select.select([fd], [], [], 0)[0]:
            return False
        waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        return waiting == 0 and os.read(fd, 1) == b""
    except (OSError, ValueError, termios.error):
        return False
