"""Spark's Structured Streaming Programming Guide, pasted into sparkscope block by block, in the guide's order, and
run the same way in plain pyspark: each block must end as it ends there (no error, or the same error). See
tests/corpus/guide.py for what is filled in. The guide is read from SPARKSCOPE_SPARK_DOCS at test time; without
it, this test is skipped (its text is not kept in this repository, and tests reach no network)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pexpect
import pytest

from tests.corpus.guide import blocks_until, guide_folder, prepared, snippets
from tests.e2e.conftest import PROMPT, Repl, clean, spawn
from tests.helpers import LineServer

_ERROR = re.compile(r"Traceback \(most recent call last\)|^(error: |\w*(Error|Exception|Interrupt)\b)", re.M)
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"  # bracketed paste, as a terminal pastes


def _paste(repl: Repl, source: str, awaits: str | None) -> str:
    repl.child.send(PASTE_START + source.rstrip("\n") + PASTE_END + "\r")
    if awaits:  # it waits for ever: Ctrl-C once its query has printed a batch with rows, as a person would
        repl.child.expect("\r\r\n", timeout=60)  # prompt-toolkit accepted the input: the prompts after are new
        batch = r"Batch: [\s\S]*?\((?!0 )\d+ (new rows|rows in the result)\)"
        if repl.child.expect([batch, re.escape(PROMPT)], timeout=120) == 1:  # it ended (failed) at once
            out = clean(repl.child.before)
            repl.child.send("\r")  # an empty line: the next prompt is the one prompt() waits for
            return out + repl.prompt()
        out = clean(repl.child.before + repl.child.after)
        repl.child.sendcontrol("c")
        return out + repl.prompt()
    return repl.prompt(timeout=120)


def _printed(out: str) -> str:
    """What sparkscope printed for a block, without the echo of the pasted block."""
    return "\n".join(line for line in out.splitlines()[1:] if not line.startswith("...")).strip()


def _same_end(plain: str | None, ours: str) -> bool:
    if plain is None:
        return not _ERROR.search(ours)
    kind, _, message = plain.partition(": ")
    words = re.sub(r"^\[[A-Z_.]+\]\s*", "", message)[:50]
    return bool(_ERROR.search(ours)) and (kind in ours or words in ours)


@pytest.mark.skipif(guide_folder() is None, reason="SPARKSCOPE_SPARK_DOCS names no checkout of Spark's docs/")
def test_the_programming_guide_s_python_blocks_end_as_in_plain_pyspark(remote_url, tmp_path):
    folder = guide_folder()
    assert folder is not None
    blocks = snippets(folder)
    with LineServer() as plain_lines:
        plain_lines.send_on_connect("apache spark")
        plain = json.loads(subprocess.run(
            [sys.executable, "-m", "tests.corpus.guide", remote_url, str(tmp_path / "plain"), str(plain_lines.port)],
            capture_output=True, text=True, timeout=900, check=True).stdout.splitlines()[-1])  # after what the blocks print
    child = spawn("--remote", remote_url)
    repl = Repl(child)
    repl.prompt()
    ours: dict[str, str] = {}
    with LineServer() as lines:
        lines.send_on_connect("apache spark")
        for snippet in blocks:
            source = prepared(snippet, tmp_path / "ours", lines.port)
            ours[snippet.label] = _paste(repl, source, blocks_until(source))
            repl.run(":stop --all")
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=60)
    report = "\n".join(f"== {label}: plain {plain[label] or 'ok'}; sparkscope "
                       f"{'the same' if _same_end(plain[label], out) else 'DIFFERENT'}, after printing:\n"
                       f"{_printed(out)}" for label, out in ours.items())
    print(report)
    assert all(_same_end(plain[label], out) for label, out in ours.items()), report
