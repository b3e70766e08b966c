"""The embedded server's log: where a start is, why it failed, how the server exited, and its lines, tokens
hidden."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

from ..client.errors import ServerError, ServerOutOfMemory
from ..client.secrets import redact, remember_secret
from ..client import delete_guard

START_MARKER = "== sparkscope started the server at"  # written to the log before each start
_OOM_EXIT = re.compile(r"Terminating due to java\.lang\.OutOfMemoryError: ([^\n]+)")
# Lines after which the server will never answer: say why at once instead of waiting out the timeout.
_FATAL = re.compile(r"Exception in thread \"main\"|Error initializing SparkContext|ERROR SparkSubmit|"
                    r"Failed to bind|Could not parse Master URL|NumberFormatException|INVALID_CONF_VALUE|"
                    r"Error while instantiating 'org\.apache\.spark\.sql\.internal\.SessionStateBuilder'")


def startup_stage(log_lines: list[str]) -> str:
    """Where a starting server is, from what it logged since it started (server-config's log4j2 keeps
    SparkConnectServer's two lines)."""
    text = "\n".join(log_lines[-200:])
    if "Spark Connect server started" in text:
        return "opening a session"
    if "Starting Spark session" in text:
        return "starting the Spark session"
    return "starting Java"


class ServerLog:
    """The log file of one state dir; `offset`s count from the file's start (a start's own lines follow
    the size it had before that start)."""

    def __init__(self, path: Path):
        self.path = path

    def start_marker(self) -> int:
        """Mark a new start in the log; the offset its lines begin at."""
        with delete_guard.open_file(self.path, "ab") as log:
            self.path.chmod(0o600)
            log.write(f"{START_MARKER} {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
            return log.tell()

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def new_lines(self, offset: int) -> list[str]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                return fh.read().decode(errors="replace").splitlines()
        except OSError:
            return []

    def fatal_error(self, offset: int) -> str | None:
        """The cause, in one line, once the new part of the log shows a fatal start-up error."""
        lines = self.new_lines(offset)
        for index, line in enumerate(lines):
            if _FATAL.search(line):
                return _cause(lines[index:index + 40])
        return None

    def last_error(self, offset: int = 0) -> str:
        fatal = self.fatal_error(offset)
        if fatal:
            return fatal
        lines = self.new_lines(offset)[-60:]
        if not lines:
            return "no output"
        for line in reversed(lines):
            if "Exception" in line or "Error" in line or "error" in line:
                return line.strip()[:200]
        return lines[-1].strip()[:200]

    def out_of_memory_exit(self, ran: str = "") -> ServerOutOfMemory | None:
        """When the log (since its last start) ends in the JVM's exit on an OutOfMemoryError
        (-XX:+ExitOnOutOfMemoryError): what ran out and when (the log's last write), as the error to show; `ran`:
        what ran on it then ("big (bounded sink, last 10,000 rows), …"), from the catalog."""
        if not self.path.exists():
            return None
        with open(self.path, "rb") as fh:
            fh.seek(max(0, self.path.stat().st_size - 256 * 1024))
            text = fh.read().decode(errors="replace")
        match = _OOM_EXIT.search(text.rsplit(START_MARKER, 1)[-1])
        if match is None:
            return None
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.path.stat().st_mtime))
        running = f"; these queries ran on it: {ran}" if ran else ""
        return ServerOutOfMemory(f"The Spark server ran out of memory ({match.group(1).strip()}) and exited at "
                                 f"{at}{running}", "Start it again: sparkscope server start --restore (a query that ran "
                                 "when it died is restored only when named: --restore NAME; --driver-memory 8g gives "
                                 "it more memory)", "OutOfMemoryError", code="server_exited_out_of_memory",
                                 data={"at": at, "ran": ran})

    def lines(self, token: str | None, follow: bool = False, last: int = 200) -> Iterator[str]:
        """The log's last lines, tokens hidden: pyspark's foreachBatch worker (the default sink's too) logs
        its connection URL, token included, when it starts."""
        if not self.path.exists():
            raise ServerError(f"No server log at {self.path}", "Start the server first: sparkscope server start")
        if token:
            remember_secret(token)
        with open(self.path, errors="replace") as fh:
            for line in fh.readlines()[-last:]:
                yield redact(line.rstrip("\n"))
            while follow:
                line = fh.readline()
                if line:
                    yield redact(line.rstrip("\n"))
                else:
                    time.sleep(0.2)


def _cause(lines: list[str]) -> str:
    """The most telling line of a JVM failure: the deepest 'Caused by', else the exception line itself,
    without the logger's prefix and never a stack frame."""
    causes = [line for line in lines if line.strip().startswith("Caused by:")]
    candidates = causes[-1:] or [line for line in lines if ("Exception" in line or "Error" in line)
                                 and not line.strip().startswith("at ")]
    text = (candidates[0] if candidates else lines[0]).strip()
    text = re.sub(r"^Caused by:\s*", "", text)
    text = re.sub(r"^\S+ \S+ (ERROR|WARN) \S+: ", "", text)  # log4j's date, time, level, logger
    text = re.sub(r"^Exception in thread \"main\"\s*", "", text)
    text = re.sub(r"^[\w.$]+(Exception|Error):\s*", "", text)  # the Java class name
    text = re.sub(r"^\[[A-Z_.]+\]\s*|\s*SQLSTATE: \w+", "", text)  # Spark's error class and SQLSTATE
    return text[:240]
