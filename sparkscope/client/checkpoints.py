"""Checkpoint housekeeping: which checkpoint directories exist, how big and old they are, which catalog
record each belongs to, and pruning the ones no restartable query needs."""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .catalog import Record
from .errors import ConfigError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    size: int  # bytes
    modified: float  # the newest file's mtime
    owner: Record | None  # the catalog record whose checkpoint this is

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
    """Delete the checkpoints older than `older_than` seconds that no restartable record needs; the
    deleted ones are returned (their sizes add up to the bytes freed)."""
    cutoff = (now or time.time()) - older_than
    removed = []
    for checkpoint in scan(root, records):
        if checkpoint.modified < cutoff and not checkpoint.needed:
            shutil.rmtree(checkpoint.path, ignore_errors=True)
            removed.append(checkpoint)
    return removed


def _local(path: str) -> str:
    return str(Path(path.removeprefix("file:")).resolve())
