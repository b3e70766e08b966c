"""The README's first session and its SDK example, run as written: the session typed into the real REPL in a
pseudo-terminal (with :watch left by q, and Ctrl-C ending the wait), the SDK block as a Python script, and the
install block with make."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import Screen
from tests.e2e.test_live import batch_of
from tests.helpers import sparkscope_bin

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PROMPT = "sparkscope> "


def _block(language: str) -> str:
    return re.search(rf"```{language}\n(.*?)```", README, re.S).group(1)


def _session() -> list[tuple[str, list[str]]]:
    """Each typed line of the first session, with the lines the README shows after it."""
    steps: list[tuple[str, list[str]]] = []
    for line in _block("text").splitlines():
        if line.startswith(PROMPT):
            steps.append((line[len(PROMPT):], []))
        elif line and line != "^C":
            steps[-1][1].append(line)
    return steps


def test_the_first_session_runs_as_written(repl):
    steps = _session()
    assert [typed.split()[0] for typed, _ in steps if typed.startswith(":")] == [
        ":start", ":watch", ":peek", ":stop"]
    for typed, shown in steps:
        if typed == ":watch":
            repl.child.send(typed + "\r")
            screen = Screen(repl.child)
            # what a user watches for: a few batches in, so that every bucket has been counted
            screen.wait_for(lambda t, shown=screen: "sparkscope :watch" in t and batch_of(shown, "counts") >= 3,
                            what="counts at its third batch")
            repl.child.send("q")
            out = repl.prompt()
        elif "awaitAnyTermination" in typed:
            repl.child.send(typed + "\r")
            repl.expect(re.escape("(still running; Ctrl-C cancels it"), timeout=30)  # it is waiting
            repl.child.sendcontrol("c")
            out = repl.prompt()
        else:
            out = repl.run(typed)
        for expected in shown:
            pattern = re.escape(expected).replace(r"id\ 1f0c9a2e", r"id\ [0-9a-f]{8}")
            assert re.search(pattern, out), f"{typed!r} showed:\n{out}\nnot {expected!r}"
        if typed.startswith(":peek"):
            assert re.search(r"\|\s*bucket\s*\|\s*count\s*\|", out), out
            assert [int(b) for b in re.findall(r"^\|\s*(\d)\s*\|\s*\d+\s*\|", out, re.M)] == [0, 1, 2], out


def test_the_sdk_example_runs_as_written(remote_url, tmp_path):
    script = tmp_path / "readme_sdk.py"
    script.write_text(_block("python"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180,
                          env={**__import__("os").environ, "SPARK_REMOTE": remote_url})
    assert done.returncode == 0, done.stderr
    rows, rate = done.stdout.splitlines()
    assert re.fullmatch(r"\[[\(\[]0, [1-9]\d*[\)\]], [\(\[]1, [1-9]\d*[\)\]], [\(\[]2, [1-9]\d*[\)\]]\]", rows), rows
    assert float(rate) >= 0


def test_the_install_block_runs_as_written():
    make, sparkscope = _block("sh").splitlines()
    assert make == "make install" and sparkscope == ".venv/bin/sparkscope"
    done = subprocess.run(make.split(), cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert Path(sparkscope_bin()).samefile(ROOT / sparkscope), "the tests run the sparkscope that make installs"
