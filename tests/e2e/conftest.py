"""Drive the real `sparkscope` command in a pseudo-terminal, as a person would."""

from __future__ import annotations

import contextlib
import itertools
import os
import re

import pexpect
import pytest

from sparkscope.core.worker import STILL_RUNNING
from tests.helpers import sparkscope_bin

_MARKERS = itertools.count(1)
PROMPT = "sparkscope>"  # prompt-toolkit draws the trailing space as a cursor move
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[=>]|\r")


def clean(text: str) -> str:
    return ANSI.sub("", text)


class Repl:
    def __init__(self, child: pexpect.spawn):
        self.child = child

    def expect(self, pattern, timeout: float = 60):
        try:
            self.child.expect(pattern, timeout=timeout)
        except pexpect.TIMEOUT:
            # pexpect's own message shows the last 100 characters, mostly the prompt's redraw: what the REPL said
            # tells a slow machine from a line that never comes
            said = clean(self.child.before if isinstance(self.child.before, str) else "")
            raise pexpect.TIMEOUT(f"{getattr(pattern, 'pattern', pattern)!r} did not come within {timeout} s; the REPL "
                                  f"printed since the last match:\n{said[-4000:]}") from None
        return clean(self.child.before + (self.child.after if isinstance(self.child.after, str) else ""))

    def prompt(self, timeout: float = 60) -> str:
        """Wait until the REPL is idle at its prompt and everything before has been printed; return that
        output without prompts. Waiting for a prompt alone is not enough: typed-ahead keys and output
        above the prompt redraw it. So a marker expression is typed, and its value (which its echo
        never contains) is the fact that everything before it has arrived."""
        marker = next(_MARKERS)
        text = self.expect(re.escape(PROMPT), timeout)
        self.child.send(f"'@sync' + '{marker}@'\r")
        text += self.expect(re.escape(f"'@sync{marker}@'"), timeout)
        self.expect(re.escape(PROMPT), timeout)
        # "(still running; …)" is said when a command takes over two seconds: how busy the machine is decides it, so
        # it is left out here (tests of the notice wait for it with expect)
        kept = [line for line in text.replace(PROMPT, "\n").replace(STILL_RUNNING, "\n").split("\n")
                if "@sync" not in line]
        return re.sub(r"\n+", "\n", "\n".join(kept))

    def run(self, line: str, timeout: float = 60) -> str:
        """Type a line, wait for the next prompt, return what was printed in between."""
        self.child.send(line + "\r")
        self.child.expect("\r\r\n", timeout=timeout)  # prompt-toolkit accepted the line
        return self.prompt(timeout)


def spawn(*args: str, env=None, cols: int = 160, preexec_fn=None, cwd=None) -> pexpect.spawn:
    full_env = {**os.environ, "LINES": "40", "COLUMNS": str(cols), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm",
                "PAGER": "", **(env or {})}  # no pager unless a test asks for one
    child = pexpect.spawn(sparkscope_bin(), list(args), env=full_env, encoding="utf-8", dimensions=(40, cols),
                          timeout=60, preexec_fn=preexec_fn, cwd=cwd)
    return child


@pytest.fixture
def repl(remote_url):
    child = spawn("--remote", remote_url)
    shell = Repl(child)
    shell.prompt()
    yield shell
    leave(child, remote_url)


def leave(child: pexpect.spawn, remote_url: str) -> None:
    """Ctrl-D, stopping what the REPL runs. A REPL that does not leave in time (a busy machine) is ended, and the
    queries of the sessions it held are stopped from here: the server is shared with the tests after it."""
    if not child.isalive():
        return
    child.sendcontrol("d")
    try:
        index = child.expect([r"Stop (it|them)\? \[y/N\]", pexpect.EOF], timeout=120)
        if index == 0:
            child.send("y\r")
            child.expect(pexpect.EOF, timeout=120)
    except pexpect.TIMEOUT:
        held = _sessions_held_by(child.pid)
        child.terminate(force=True)
        import sparkscope

        for session_id in held:
            with contextlib.suppress(Exception), sparkscope.connect(remote_url, session_id=session_id) as left:
                left.streams.stop_all()


def _sessions_held_by(pid: int) -> list[str]:
    """The sessions the catalog says process `pid` holds."""
    import sqlite3

    from sparkscope.client.catalog.records import FILE_NAME
    from sparkscope.client.paths import state_dir

    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(state_dir() / FILE_NAME)) as db:
        return [row[0] for row in db.execute("SELECT session_id FROM sessions WHERE pid=?", (pid,))]
    return []


class Screen:
    """What the terminal shows, rebuilt by a VT100 emulator (pyte) from the child's output: needed for
    full-screen views, which redraw only the cells that change."""

    def __init__(self, child: pexpect.spawn, rows: int = 40, cols: int = 160, answer_cpr: bool = False):
        import pyte

        self.child = child
        self.screen = pyte.Screen(cols, rows)
        if answer_cpr:  # like a real terminal: prompt-toolkit then knows the height and draws its toolbar
            self.screen.write_process_input = child.send
        self.stream = pyte.Stream(self.screen)

    def pump(self, seconds: float = 0.2) -> None:
        with contextlib.suppress(pexpect.TIMEOUT):
            self.stream.feed(self.child.read_nonblocking(100_000, timeout=seconds))

    @property
    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def line_with(self, word: str) -> str | None:
        return next((line for line in self.screen.display if word in line), None)

    def wait_for(self, predicate, timeout: float = 30, what: str = "") -> str:
        import time

        deadline = time.time() + timeout
        while time.time() < deadline:
            self.pump()
            if predicate(self.text):
                return self.text
        raise AssertionError(f"timed out waiting for {what or predicate}; the screen shows:\n{self.text}")
