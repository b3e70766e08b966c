"""Checkpoint housekeeping: which checkpoint directories exist, how big and old they are, which catalog
record each belongs to, and pruning the ones no restartable query needs."""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .records import Record
from .. import delete_guard
from ..errors import ConfigError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    size: int  # bytes
    modified: float  # the newest file's mtime
    owner: Record | None  # the catalog record whose checkpoint this is

    @property
    def made_here(self) -> bool:
        """sparkscope made this folder for a query (its marker is there), so it may delete it."""
        return made_by_sparkscope(str(self.path), str(self.path.parent))

    @property
    def needed(self) -> bool:
        """A restartable record may resume from it. A memory sink outside complete mode cannot resume
        (Spark's rule, and its rows are gone with the run), so once stopped it needs nothing."""
        record = self.owner
        if record is None or not record.restartable:
            return False
        if record.state == "active":
            return True
        return not (record.sink == "memory" and record.mode != "complete" and record.state == "stopped")


# The file sparkscope writes into each checkpoint folder it makes. Only a folder that holds it, under the server's
# checkpoint root, is ever deleted by :forget --delete-checkpoint or pruning: a checkpoint the user gave is theirs.
MARKER = ".sparkscope-checkpoint"


def make_fresh(path: str, query: str) -> None:
    """Make the checkpoint folder `path` (of this machine) for a new query, with sparkscope's marker in it."""
    folder = Path(path.removeprefix("file:"))
    folder.mkdir(parents=True, exist_ok=False, mode=0o700)
    delete_guard.write_text(folder / MARKER, json.dumps({"query": query, "made": time.time()}) + "\n")


def made_by_sparkscope(path: str, root: str | None) -> bool:
    """Whether sparkscope made the checkpoint `path` (of this machine): directly under the checkpoint root `root`,
    and holding its marker. Anything else was given by the user, and sparkscope never deletes it."""
    if not root:
        return False
    folder = Path(os.path.realpath(path.removeprefix("file:")))
    return folder.parent == Path(os.path.realpath(root.removeprefix("file:"))) and (folder / MARKER).is_file()


def maker(path: str) -> str | None:
    """The query sparkscope made the checkpoint `path` (of this machine) for, as its marker says; None without one."""
    try:
        return str(json.loads((Path(path.removeprefix("file:")) / MARKER).read_text())["query"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def kept_because(record: Record, records: list[Record], root: str | None) -> str | None:
    """Why forgetting `record` with its checkpoint must keep the checkpoint (None: it may go). A checkpoint is
    deleted only by the record that made it, and only while no other record uses it."""
    checkpoint = record.checkpoint or ""
    if not made_by_sparkscope(checkpoint, root):
        return "it was given, not made by sparkscope, and sparkscope deletes only the checkpoints it made"
    made_for = maker(checkpoint)
    if made_for != record.name:
        return f"sparkscope made it for {made_for}, not for {record.name}"
    others = [r.name for r in records if r.name != record.name and r.checkpoint
              and _local(r.checkpoint) == _local(checkpoint)]
    if others:
        return f"{', '.join(sorted(others))} {'uses' if len(others) == 1 else 'use'} it too"
    return None


LOW_SPACE = 16 * 1024 * 1024  # bytes: less than this left, and a commit or a written file fails
WRITE_FAILURES = ("No space left on device", "TASK_WRITE_FAILED", "Task failed while writing rows",
                  "Error writing state store", "Cannot perform commit", "IOException")


def no_space_at(paths: list[str | None], usage: Callable[[str], Any] = shutil.disk_usage) -> tuple[str, int] | None:
    """The first of `paths` (files of this machine: 'file:' or plain) whose disk has less than LOW_SPACE
    left, with the bytes left; None when each has room (or none exists yet)."""
    for given in filter(None, paths):
        path = Path(str(given).removeprefix("file:"))
        existing = next((p for p in (path, *path.parents) if p.exists()), None)
        if existing is None:
            continue
        try:
            free = int(usage(str(existing)).free)
        except OSError:
            continue
        if free < LOW_SPACE:
            return str(path), free
    return None


@dataclass(frozen=True)
class Resumption:
    """Where a restarted query goes on from, as its checkpoint said just before the restart."""

    checkpoint: str | None  # None: a new checkpoint
    after_batch: int | None  # the checkpoint's last committed batch; None: none, so it starts at batch 0, empty
    from_files: bool  # read from the checkpoint's own files (else from the catalog: a server elsewhere)


def committed_batch(checkpoint: str) -> int | None:
    """The last batch a checkpoint of this machine committed (its commits/ folder), or None when it holds
    none: never committed, deleted, or not a checkpoint."""
    commits = Path(checkpoint.removeprefix("file:")) / "commits"
    try:
        batches = [int(entry.name) for entry in commits.iterdir() if entry.name.isdigit()]
    except OSError:
        return None
    return max(batches, default=None)


# What Spark leaves of a metadata file it was writing when its server was killed: CheckpointFileManager writes
# `.N.<uuid>.tmp` (and Hadoop's `..N.<uuid>.tmp.crc` beside it), renamed to `N` only once whole.
_CUT_OFF_WRITE = re.compile(r"\.\.?\d+\.[0-9a-f-]{36}\.tmp(\.crc)?")


def clear_cut_off_first_batch(checkpoint: str) -> list[str]:
    """A checkpoint of this machine whose first batch was cut off (the server was killed while writing its offsets):
    Spark sees no batch, so it starts the query anew, and refuses because offsets/ is not empty
    (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY). The unfinished files, which Spark never reads, are removed, so
    that the query starts at batch 0 as it would have. A checkpoint holding any whole batch is left as it is.
    The files removed are returned."""
    root = Path(checkpoint.removeprefix("file:"))
    folders = [root / "offsets", root / "commits"]
    try:
        entries = [entry for folder in folders if folder.is_dir() for entry in folder.iterdir()]
    except OSError:
        return []
    if not entries or any(not _CUT_OFF_WRITE.fullmatch(entry.name) for entry in entries):
        return []  # a whole batch (or a file that is not Spark's): Spark recovers from it, or says what it finds
    for entry in entries:
        delete_guard.remove_file(entry)
    return [str(entry) for entry in entries]


def checkpoint_watermark(checkpoint: str) -> datetime.datetime | None:
    """The watermark a checkpoint of this machine's newest batch ran with (its offsets log's batchWatermarkMs): what
    a restarted query that has run no batch since judges by. None without one (no batch, or no watermark yet)."""
    offsets = Path(checkpoint.removeprefix("file:")) / "offsets"
    try:
        newest = max((entry for entry in offsets.iterdir() if entry.name.isdigit()), key=lambda e: int(e.name))
        metadata = json.loads(newest.read_text().splitlines()[1])
    except (OSError, ValueError, IndexError):
        return None
    millis = int(metadata.get("batchWatermarkMs") or 0)
    return datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc) if millis > 0 else None


def parse_age(text: str) -> float:
    """'7d', '12h', '30m', '2w' -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not match:
        raise ConfigError(f"'{text}' is not an age", "Write a number and a unit: 30m, 12h, 7d or 2w")
    return float(match.group(1)) * _UNITS[match.group(2)]


def scan(root: Path, records: list[Record]) -> list[Checkpoint]:
    """The checkpoint directories under `root`, oldest first."""
    if not root.is_dir():
        return []
    owners = {_local(r.checkpoint): r for r in records if r.checkpoint}
    found = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            continue
        size, newest = 0, entry.stat().st_mtime
        for folder, _, files in os.walk(entry):
            for name in files:
                try:
                    info = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                size += info.st_size
                newest = max(newest, info.st_mtime)
        found.append(Checkpoint(entry, size, newest, owners.get(str(entry.resolve()))))
    return sorted(found, key=lambda c: c.modified)


def prune(root: Path, records: list[Record], older_than: float, *, now: float | None = None) -> list[Checkpoint]:
    """Delete the checkpoints older than `older_than` seconds that sparkscope made and no restartable record
    needs; the deleted ones are returned (their sizes add up to the bytes freed). A folder under the root that
    sparkscope did not make is listed, never deleted."""
    cutoff = (now or time.time()) - older_than
    removed = []
    for checkpoint in scan(root, records):
        if checkpoint.modified < cutoff and not checkpoint.needed and checkpoint.made_here:
            delete_guard.remove_tree(checkpoint.path)
            removed.append(checkpoint)
    return removed


def _local(path: str) -> str:
    return str(Path(path.removeprefix("file:")).resolve())
