"""A script's run time as it grows: `sparkscope FILE.py` next to `python3 FILE.py` for the same file, 5,000, 20,000
and 200,000 lines of plain Python, with a server running. sparkscope's time includes opening its session (a probe
and a new session: `sparkscope -c 1` alone is timed too), which python has no counterpart of. The goal (issue 45):
within 3x python's time plus 2 s at 200,000 lines. Medians of RUNS, runs interleaved.
Run: make bench  (or .venv/bin/python benchmarks/bench_scripts.py)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import private_server

RUNS = 3
SIZES = (5_000, 20_000, 200_000)
BIN = Path(sys.executable).parent


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} failed: {done.stderr[-400:]}")
    return elapsed


def script(folder: Path, lines: int) -> Path:
    path = folder / f"lines_{lines}.py"
    body = ["total = 0"] + [f"total += {i}  # line {i}" for i in range(lines - 2)] + ["print(total)"]
    path.write_text("\n".join(body) + "\n")
    return path


def main() -> None:
    with private_server() as url, tempfile.TemporaryDirectory() as folder:
        python = sys.executable  # the same interpreter sparkscope runs on
        session = statistics.median(timed([str(BIN / "sparkscope"), "--remote", url, "-c", "1"])
                                    for _ in range(RUNS))
        print(f"sparkscope -c 1 (opening a session, nothing run): {session:.2f} s")
        for lines in SIZES:
            path = script(Path(folder), lines)
            ours, theirs = [], []
            for _ in range(RUNS):
                theirs.append(timed([python, str(path)]))
                ours.append(timed([str(BIN / "sparkscope"), "--remote", url, str(path)]))
            mine, base = statistics.median(ours), statistics.median(theirs)
            limit = 3 * base + 2
            print(f"{lines:>8,} lines: sparkscope {mine:6.2f} s, python {base:6.2f} s = {mine / base:4.2f}x "
                  f"(goal: under 3x + 2 s = {limit:.2f} s: {'met' if mine <= limit else 'MISSED'})")


if __name__ == "__main__":
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    main()
