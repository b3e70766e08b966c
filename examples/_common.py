"""What every example shares: a session, a scratch directory with generated data, and printing.

Each example connects the way `sparkscope` does: `--remote sc://…`, then SPARK_REMOTE, then a
profile, then the embedded local server (started on first use). The data is generated into a
temporary directory on this machine, so against a remote cluster run the examples only when the
cluster can read that path (a shared filesystem), or use the embedded server.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import sparkscope


def arguments(description: str, extra=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--remote", help="sc://host:port of a Spark Connect server (default: embedded local one)")
    if extra:
        extra(parser)
    return parser.parse_args()


@contextlib.contextmanager
def example(description: str, extra=None) -> Iterator[tuple[sparkscope.Session, Path, argparse.Namespace]]:
    """A connected session and a scratch directory; queries stop and the directory goes at the end.

    sparkscope errors end the script with their one-line message and exit code 2.
    """
    args = arguments(description, extra)
    scratch = Path(tempfile.mkdtemp(prefix="sparkscope-example-"))
    try:
        with sparkscope.connect(args.remote) as ss:
            yield ss, scratch, args
    except sparkscope.SparkscopeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_written = itertools.count()
_BASE_MTIME = int(time.time()) - 3600  # in the past, one second apart, in the order written


def wait_until(condition, what: str, timeout: float = 120.0) -> None:
    """Poll `condition` until it holds (a stream has made progress), or give up after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"error: no {what} within {timeout:g} s")
        time.sleep(0.1)


def write_json(directory: Path, name: str, rows: list[dict]) -> Path:
    """One JSON-lines file, written under a temporary name and renamed (file sources need atomic files).

    Each file gets a modification time one second after the previous one: a file source takes files
    in mtime order, and files written within the same clock tick came in any order (so a watermark
    printed after them differed from run to run)."""
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f".{name}.tmp"
    partial.write_text("".join(json.dumps(row) + "\n" for row in rows))
    stamp = _BASE_MTIME + next(_written)
    os.utime(partial, (stamp, stamp))
    return partial.rename(directory / name)


def _window_text(value):
    if isinstance(value, dict) and set(value) == {"start", "end"}:
        return f"{value['start']:%Y-%m-%d %H:%M}-{value['end']:%H:%M}"
    return value


def show(title: str, rows: sparkscope.Rows, columns: list[str] | None = None) -> None:
    print(f"\n{title}")
    frame = rows.to_pandas()
    if columns:
        frame = frame[columns]
    for column in frame.columns:  # a time window arrives as {'start': …, 'end': …}
        frame[column] = frame[column].map(_window_text)
    print(frame.to_string(index=False) if len(frame) else "(no rows)")
