"""What the prompt does with the terminal beneath prompt-toolkit: output above a prompt on a dumb terminal, and a
Ctrl-D typed while no prompt was reading."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


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
