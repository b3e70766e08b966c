"""Capture a quick-start transcript from a real session (not typed by hand).

Starts a private embedded server, drives `sparkscope` in a pseudo-terminal, rebuilds the screen
with a terminal emulator, and prints what a user saw. It needs the test extras (pexpect, pyte), which
`make test` installs. Run: .venv/bin/python scripts/capture_quickstart.py

Each line waits for the prompt that follows it (a marker, not quiet time). The rate source never
runs out of data, so the transcript waits with `:await --timeout`, never `--all-available`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect
import pyte

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from common import private_server  # noqa: E402

LINES = [
    "ticks = ss.source.rate(20)",
    "counts = ticks.groupBy((ticks.value % 2).alias('parity')).count()",
    ":start counts",
    ":await counts --timeout 3",
    ":queries",
    ":peek counts --order parity",
    ":progress counts",
    ":pek counts",
    ":stop counts",
]


def main() -> None:
    rows, cols = 200, 120
    screen = pyte.Screen(cols, rows)
    stream = pyte.Stream(screen)
    with private_server() as url:
        env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm", "NO_COLOR": "1"}
        child = pexpect.spawn(os.path.join(os.path.dirname(sys.executable), "sparkscope"), ["--remote", url],
                              env=env, encoding="utf-8", dimensions=(rows, cols), timeout=120)

        def settle(seconds: float = 1.0) -> None:
            deadline = time.time() + seconds
            while time.time() < deadline:
                try:
                    stream.feed(child.read_nonblocking(100_000, timeout=0.2))
                    deadline = max(deadline, time.time() + 0.6)
                except pexpect.TIMEOUT:
                    pass

        child.expect("sparkscope>")
        stream.feed(child.before + child.after)
        for line in LINES:
            child.send(line + "\r")
            child.expect("\r\r\n")  # the line was accepted
            stream.feed(child.before + child.after)
            child.expect("sparkscope>", timeout=180)  # and the command is done
            stream.feed(child.before + child.after)
            settle(0.5)  # let the redraw finish before typing on, so the screen reads in order
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=60)
        stream.feed(child.before or "")
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    print("\n".join(line for line in lines if "session " not in line or ":help" not in line))


if __name__ == "__main__":
    main()
