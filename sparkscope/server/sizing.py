"""How big the embedded server is: its task slots and its driver heap."""

from __future__ import annotations

import os
import re

from ..client.errors import ServerError

SLOTS_PER_CORE = 4


def local_master(master: str, cores: int | None = None) -> tuple[str, dict[str, str]]:
    """The master the embedded server runs on, and the settings that go with it. `local[*]` (one task slot
    per core) becomes four slots per core, with the default parallelism kept at one task per core: a long
    interactive job (`range(10**11)`) then takes one slot per core and the streams' batches have the rest.
    Spark never preempts a task, and a cancelled one that does not check for its kill (a top-K sort)
    runs to the end of its partition: with local[*] every stream waited for it (measured: no batch for
    60 s after a cancel). The cores stay shared by the OS, as they always were."""
    if master != "local[*]":
        return master, {}
    cores = cores or os.cpu_count() or 2
    return f"local[{cores * SLOTS_PER_CORE}]", {"spark.default.parallelism": str(cores)}


DRIVER_MEMORY_SHARE = 0.25  # of this machine's RAM, for the embedded server's driver heap
DRIVER_MEMORY_RANGE = (1024, 8192)  # MiB: never below Spark's own default, never a heap that pauses for long


def default_driver_memory(total_bytes: int | None = None) -> str:
    """The embedded server's driver heap: a quarter of the RAM, from 1 GiB (Spark's default) to 8 GiB.

    In local mode the driver JVM is the whole of Spark: executors, state stores and every memory sink
    live in its heap. Spark's 1 GiB runs out at a million-row memory sink. A quarter leaves the rest
    to the user's editor, browser and Python; above 8 GiB, collections pause long enough to delay
    batches, and whoever needs more says so with --driver-memory."""
    if total_bytes is None:
        try:
            total_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError):
            total_bytes = 4 * 2**30
    low, high = DRIVER_MEMORY_RANGE
    mib = int(min(high, max(low, total_bytes / 2**20 * DRIVER_MEMORY_SHARE)))
    return f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"


def check_memory(text: str) -> str:
    """A JVM memory size as spark-submit takes it (512m, 4g), or a ServerError."""
    if not re.fullmatch(r"[1-9]\d*[kKmMgGtT]", text.strip()):
        raise ServerError(f"'{text}' is not a memory size", "Write a number and a unit, e.g. 4g or 512m")
    return text.strip().lower()


MAX_WORKERS = 16


def check_port(port: object) -> int:
    """A TCP port number, or a ServerError saying which numbers are."""
    try:
        number = int(str(port))
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise ServerError(f"'{port}' is not a port", "Use a number from 1 to 65535")
    return number


def check_workers(workers: object) -> int:
    """A number of workers (or of cores per worker) this machine can run, or a ServerError."""
    try:
        number = int(str(workers))
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_WORKERS:
        raise ServerError(f"'{workers}' is not a number from 1 to {MAX_WORKERS}",
                          f"Use --workers 1 to {MAX_WORKERS}")
    return number
