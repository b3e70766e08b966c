"""Pure logic of core/hints: no server."""

from __future__ import annotations



from sparkscope.client.errors import ConfigError


def test_every_repl_hint_names_a_code_the_client_raises():
    """The REPL's hints are keyed by the client's error codes: a renamed code must not orphan its hint."""
    import re
    from pathlib import Path

    from sparkscope.core.hints import REPL_HINTS

    client = "\n".join(p.read_text() for p in (Path(__file__).resolve().parents[3] / "sparkscope" / "client").rglob("*.py"))
    raised = set(re.findall(r'code\s*=\s*"([a-z_]+)"', client)) | set(re.findall(r'\("([a-z_]+)", "', client))
    assert set(REPL_HINTS) - raised == set()


def test_the_sdk_speaks_python_and_the_repl_speaks_commands():
    from sparkscope.core.rendering.render import error_line

    err = ConfigError("A query named 'c' is already running", "Stop it first (ss.streams.stop('c'))",
                      code="query_exists", data={"name": "c"})
    assert str(err) == "A query named 'c' is already running. Stop it first (ss.streams.stop('c'))."
    assert error_line(err) == "error: A query named 'c' is already running. Stop it first (:stop c) or pick another name."
