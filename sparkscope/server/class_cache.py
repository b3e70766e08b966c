"""A class-data-sharing archive (AppCDS) for the embedded server's JVM, made once and then reused.

A cold start of the server spends much of its time loading, verifying and linking the same classes
from pyspark's 200-odd jars. Later starts map an archive of them (-XX:SharedArchiveFile) instead of
loading them again. Recording it (-XX:ArchiveClassesAtExit) made a start 3 s slower (7.5 s instead of
4.2 s here), so the first start records nothing: once it answers, a server of its own
(class_recording.py, at the lowest CPU priority) starts with the recording option, runs a query, and
stops, and its recording becomes the archive. The user never waits for it.

The archive lives in the state dir under a key of the Java runtime and the pyspark install, so a new
Java or pyspark makes a new one; the old one is removed after a week without use. Each server records
into a file of its own, which becomes the archive only when `sparkscope server stop` stopped that
server cleanly. An archive the JVM cannot use (it says so in the server's log, or crashes mapping it)
is removed, and the server starts without it and records a new one. The JVM refuses to record with a
non-empty directory on its class path, so the server's configuration is read from files
(--properties-file, log4j2.configurationFile) and its SPARK_CONF_DIR is an empty directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
import uuid
from pathlib import Path

from ..client import delete_guard
from ..client.errors import SparkscopeError
from ..client.logs import log, swallowed
from ..client.paths import private_dir
from ..client.processes import maps_file

FOLDER = "class-cache"
CACHE_ENV = "SPARKSCOPE_CLASS_CACHE"
RECORD_ENV = "SPARKSCOPE_CLASS_CACHE_RECORD"  # set for the recording server's process (class_recording.py)
RECORDER_LOCK = "recorder.lock"  # while a recording server runs: its pid
# The JVM writes its recording as it exits, and `server stop` then makes it the archive: a recording
# older than this belongs to a server that ended some other way (killed, crashed) and is removed.
ABANDONED_AFTER = 600.0
# Another Java or pyspark's archive (an upgrade, or another checkout's virtualenv sharing the folder)
# is removed once no start has used it for this long.
UNUSED_AFTER = 7 * 24 * 3600.0
EMPTY_CONF = "spark-conf"
_JVM_CRASH = "A fatal error has been detected by the Java Runtime Environment"
# what the JVM logs when it cannot map an archive it was given (-Xshare:auto then runs without it)
_UNUSABLE = re.compile(r"\[cds\][^\n]*(error|mismatch|unable|fail|not (?:be )?(?:used|mapped)|disabled)", re.IGNORECASE)


def archive_key(java: str, pyspark_home: Path) -> str:
    """Changes when the Java runtime or the pyspark install changes (their files' names, sizes, times)."""
    digest = hashlib.sha256()
    runtime = Path(os.path.realpath(java)).parent.parent
    for path in [runtime / "lib" / "modules", Path(os.path.realpath(java)), *sorted((pyspark_home / "jars").glob("*.jar"))]:
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}:{stat.st_size}:{int(stat.st_mtime)}\n".encode())
    return digest.hexdigest()[:16]


class ClassCache:
    """The archive for one Java and pyspark in `folder`: the state dir's class-cache/, or the folder
    SPARKSCOPE_CLASS_CACHE names (shared by several state dirs); SPARKSCOPE_CLASS_CACHE=off (the tests)
    records and maps none."""

    def __init__(self, home: Path, java: str, pyspark_home: Path):
        setting = os.environ.get(CACHE_ENV) or ""
        self.enabled = setting != "off"  # SPARKSCOPE_CLASS_CACHE=off: no archive, recorded or used
        self.folder = Path(setting) if setting and self.enabled else home / FOLDER
        self.home = home  # the state dir of the server this cache serves
        self.key = archive_key(java, pyspark_home)
        self.archive = self.folder / f"server-{self.key}.jsa"
        self.records = os.environ.get(RECORD_ENV) == "1"

    def java_options(self) -> tuple[str, Path | None]:
        """The option for the next server, and the file it records into (None when the archive is used).
        A recording becomes the archive only when that server stopped cleanly (see keep): a JVM killed
        while writing leaves a partial file, which is removed."""
        private_dir(self.folder)
        if not self.enabled:
            return "", None
        now = time.time()
        for old in self.folder.iterdir():
            with contextlib.suppress(OSError):
                unused = now - old.stat().st_mtime  # an archive's time is that of its last use
                stale = old.suffix == ".jsa" and old != self.archive and unused > UNUSED_AFTER
                if stale or (old.suffix == ".recording" and unused > ABANDONED_AFTER):
                    delete_guard.remove_file(old)
        if self.archive.exists() and self.archive.stat().st_size > 0:
            with contextlib.suppress(OSError):
                os.utime(self.archive)
            return f"{quote_option(f'-XX:SharedArchiveFile={self.archive}')} -Xshare:auto", None
        if not self.records:
            return "", None  # recorded off the path of this start (record_later)
        recording = self.folder / f"server-{self.key}.{uuid.uuid4().hex[:12]}.recording"
        return quote_option(f"-XX:ArchiveClassesAtExit={recording}"), recording

    def record_later(self, after: int) -> int | None:
        """After a start without an archive: start the recording server in the background, unless one runs
        (its lock is younger than ABANDONED_AFTER). It waits until the server just started (pid `after`) is
        idle. Its pid, or None."""
        import subprocess
        import sys

        if not self.enabled or self.records or self.archive.exists():
            return None
        lock = self.folder / RECORDER_LOCK
        with contextlib.suppress(OSError):
            if time.time() - lock.stat().st_mtime > ABANDONED_AFTER:
                delete_guard.remove_file(lock)
        try:
            fd = delete_guard.open_fd(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except OSError:
            return None  # one is recording now
        from .process_tree import SERVER_MARK, mark

        # it carries the mark of the server whose start began it: that server's stop ends it (and it, its own)
        env = {**os.environ, CACHE_ENV: str(self.folder), RECORD_ENV: "1", SERVER_MARK: mark(self.home)}
        proc = subprocess.Popen([sys.executable, "-m", "sparkscope.server.class_recording", str(self.folder), str(after)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        os.write(fd, str(proc.pid).encode())
        os.close(fd)
        return proc.pid

    def keep(self, recording: Path, stopped_cleanly: bool) -> None:
        """After the server that recorded stopped: its recording becomes the archive, or is removed."""
        try:
            if stopped_cleanly and recording.exists() and recording.stat().st_size > 0:
                delete_guard.replace(recording, self.archive)  # atomic: a server starting now maps one whole file
            else:
                delete_guard.remove_file(recording)
        except (OSError, SparkscopeError):
            log.debug("could not keep the class archive %s", recording, exc_info=True)

    def conf_dir(self) -> Path:
        """An empty directory for SPARK_CONF_DIR, which spark-submit puts first on the class path. The
        archive holds the class path it was recorded with, and a start with another one cannot use it,
        so the directory is the archive's neighbour, the same for every state dir sharing the folder."""
        private_dir(self.folder)  # first: made as the parent of the next, it would be 0755
        return _empty_dir(self.folder / EMPTY_CONF)

    def discard_if_unusable(self, log_text: str, pid: int | None = None) -> bool:
        """After a start that was given the archive (`log_text`: what the server logged since; `pid`:
        the server, when it runs): an archive the JVM crashed on, said it could not use, or silently
        did not map (-Xshare:auto ignores a file that is not an archive) is removed, and the next start
        records a new one. True when removed."""
        if not self.archive.exists():
            return False
        if not (_UNUSABLE.search(log_text) or _JVM_CRASH in log_text or not _maps(pid, self.archive)):
            return False
        log.warning("The server's class archive %s was not usable; it is removed and will be recorded again",
                    self.archive)
        delete_guard.remove_file(self.archive)
        return True


def _maps(pid: int | None, archive: Path) -> bool:
    """Whether process `pid` has `archive` mapped; True when that cannot be told (macOS does not say)."""
    return pid is None or maps_file(pid, archive) is not False


def quote_option(option: str) -> str:
    """One extraJavaOptions entry, double-quoted when it holds a space (Spark splits them like a shell)."""
    return f'"{option}"' if " " in option else option


def _empty_dir(folder: Path) -> Path:
    """`folder`, emptied: the JVM will not start to record an archive with a non-empty one on its class path."""
    private_dir(folder)
    for stray in folder.iterdir():
        with swallowed(f"removing {stray} from the empty class path folder"):
            delete_guard.remove_tree(stray)
    return folder
