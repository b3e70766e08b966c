"""Time to the first prompt, server already running, measured in a pty until the prompt is drawn:
`sparkscope --remote URL` next to pyspark's own shell `pyspark --remote URL` and to the floor of any
prompt-toolkit REPL, `python -c "import prompt_toolkit"` (printing a marker once imported), timed the
same way; same run, runs interleaved, median of RUNS. Each round times all four one after the other, so
the ratio to the floor is also given per round (its median): a machine that slows for a while slows a
round's four alike, where the medians of four separate series can catch the slow spell in one only. A bare prompt-toolkit prompt (PromptSession with a
toolbar, nothing else) is timed too: what any prompt costs beyond the import.

Every module is byte-compiled first, as `pip install` leaves a wheel (an editable install under
PYTHONDONTWRITEBYTECODE=1 would compile sparkscope's modules from source on every start).
Run: make bench  (or .venv/bin/python benchmarks/bench_prompt.py)
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from common import private_server_info

RUNS = 21
FLOOR = "import prompt_toolkit; print('flo' + 'or>')"  # the marker is not in the echo of the command
BARE = "import prompt_toolkit; prompt_toolkit.PromptSession(bottom_toolbar='x', multiline=True).prompt('ba' + 're> ')"
BIN = os.path.dirname(sys.executable)


def time_to_prompt(argv: list[str], prompt: str, server_pid: int) -> float:
    import pexpect

    import pyspark

    env = {**_environ(), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm", "LINES": "40", "COLUMNS": "160",
           # the pip-installed `pyspark` launcher finds Spark and Python through these
           "SPARK_HOME": os.path.dirname(pyspark.__file__), "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    _settle(server_pid)
    started = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", dimensions=(40, 160), timeout=120)
    child.expect(prompt)
    elapsed = time.perf_counter() - started
    child.sendcontrol("d")
    try:
        child.expect(pexpect.EOF, timeout=30)
    except pexpect.TIMEOUT:
        child.terminate(force=True)
    return elapsed


def _settle(pid: int, window: float = 0.25, deadline: float = 20.0) -> None:
    """Until the server has used under a tenth of a core for `window`: the session the last shell opened
    is released, and its work does not land on the next one timed."""
    from sparkscope.client.processes import cpu_seconds

    before, give_up = cpu_seconds(pid), time.monotonic() + deadline
    while before is not None and time.monotonic() < give_up:
        time.sleep(window)
        now = cpu_seconds(pid)
        if now is None or now - before < 0.1 * window:
            return
        before = now


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _byte_compile() -> None:
    """sparkscope's modules, as pip compiles a wheel's (and every other installed package's) at install."""
    import compileall

    import sparkscope

    compileall.compile_dir(os.path.dirname(sparkscope.__file__), quiet=2)


def main() -> None:
    _byte_compile()
    with private_server_info() as info:
        url, pid = f"sc://localhost:{info.port}", info.pid
        ours, theirs, floor, bare = [], [], [], []
        for _ in range(RUNS):
            ours.append(time_to_prompt([os.path.join(BIN, "sparkscope"), "--remote", url], "sparkscope>", pid))
            theirs.append(time_to_prompt([os.path.join(BIN, "pyspark"), "--remote", url], ">>> ", pid))
            floor.append(time_to_prompt([sys.executable, "-c", FLOOR], "floor>", pid))
            bare.append(time_to_prompt([sys.executable, "-c", BARE], "bare>", pid))
        a, b, f, p = (statistics.median(x) for x in (ours, theirs, floor, bare))
        paired, paired_bare = (statistics.median(x / y for x, y in zip(series, floor, strict=True)) for series in (ours, bare))
        print(f"sparkscope to first prompt : {a:6.3f} s  ({a / f:.2f}x the floor, per round {paired:.2f}x; "
              f"{a / b:.2f}x the pyspark shell)")
        print(f"floor: import prompt_toolkit: {f:6.3f} s  (python -c, timed the same way)")
        print(f"a bare PromptSession prompt: {p:6.3f} s  ({p / f:.2f}x the floor, per round {paired_bare:.2f}x)")
        print(f"pyspark --remote shell     : {b:6.3f} s  (baseline, median of {RUNS})")


if __name__ == "__main__":
    main()
