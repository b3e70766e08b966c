"""The SDK's public API has a contract: every name it exports imports, `from sparkscope import *` works, and the
API (names, classes, methods, signatures) is the checked-in snapshot, so that a change to it is made on purpose
(`make docs` writes a new snapshot and the API reference of docs/sdk.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import api_reference  # noqa: E402 - scripts/ is not a package


def test_every_name_of_the_api_imports():
    import sparkscope

    missing = [name for name in sparkscope.__all__ if getattr(sparkscope, name, None) is None]
    assert missing == []
    for name in ("Query", "Progress", "Rows", "QueryInfo", "Session", "LocalServer", "connect"):
        assert getattr(sparkscope, name).__name__ == name


def test_import_star_gives_the_api_in_a_fresh_interpreter():
    ran = subprocess.run([sys.executable, "-c", "from sparkscope import *; import sparkscope; "
                          "print(sorted(set(sparkscope.__all__) - set(globals())))"],
                         capture_output=True, text=True, timeout=120)
    assert (ran.returncode, ran.stdout.strip(), ran.stderr) == (0, "[]", "")


def test_the_api_is_the_snapshot():
    snapshot = api_reference.SNAPSHOT.read_text()
    now = api_reference.snapshot()
    added = sorted(set(now.splitlines()) - set(snapshot.splitlines()))
    removed = sorted(set(snapshot.splitlines()) - set(now.splitlines()))
    assert (added, removed) == ([], []), ("the public API changed; if on purpose, `make docs` writes the new "
                                          "snapshot (tests/unit/public_api.txt) and docs/sdk.md's reference")


def test_the_snapshot_sees_a_changed_signature(monkeypatch):
    import sparkscope
    from sparkscope.client.session import Session

    def peek(self, name_or_query, n=20):  # one parameter fewer
        """Up to `n` rows."""

    monkeypatch.setattr(Session, "peek", peek)
    assert "sparkscope.Session.peek(name_or_query, n=20)" in api_reference.snapshot()
    assert sparkscope.Session is Session


def test_the_api_reference_of_docs_sdk_is_current():
    page = api_reference.PAGE.read_text()
    assert page == api_reference.page_with_reference(page), "docs/sdk.md's API reference is stale: run make docs"
    assert "`sparkscope.Session.start(df: DataFrame, name: str" in page


def test_the_snapshot_sees_a_changed_method_of_a_session_part(monkeypatch):
    from sparkscope.client.queries.sources import Sources

    def rate(self, rows_per_second=1):  # its keyword-only options gone
        """A rate source."""

    monkeypatch.setattr(Sources, "rate", rate)
    assert "sparkscope.client.queries.sources.Sources.rate(rows_per_second=1)" in api_reference.snapshot()


def test_the_snapshot_holds_the_testing_helpers_the_plugin_and_what_errors_carry():
    lines = api_reference.SNAPSHOT.read_text().splitlines()
    assert "pytest --sparkscope-remote option URL" in lines
    assert "pytest fixture sparkscope_session fixture(scope=function)" in lines
    assert "sparkscope.testing.check_answer(query: Query, expected: Iterable[Any], *, ordered: bool = False) -> None" \
        in lines
    assert {"sparkscope.SparkscopeError.code attribute", "sparkscope.SparkscopeError.data attribute",
            "sparkscope.SparkscopeError.hint attribute", "sparkscope.QueryNotFound.code = 'query_not_found'"} <= set(lines)


def test_no_public_name_of_a_session_shadows_a_builtin_or_takes_a_type_it_does_not_export():
    import builtins
    import inspect

    from sparkscope.client.session import Session

    for name, value in vars(Session).items():
        if name.startswith("_") or isinstance(value, property) or not callable(value):
            continue
        for parameter in inspect.signature(value).parameters:
            assert parameter == "self" or not hasattr(builtins, parameter), f"Session.{name}({parameter}=…)"


def test_make_lint_fails_on_an_api_change_the_snapshot_does_not_hold(tmp_path):
    """`make lint` runs this file: a changed snapshot (here, one line fewer) fails it with the way out."""
    snapshot = tmp_path / "public_api.txt"
    snapshot.write_text("".join(api_reference.SNAPSHOT.read_text().splitlines(keepends=True)[1:]))
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                          "test_the_api_is_the_snapshot"], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "SPARKSCOPE_API_SNAPSHOT": str(snapshot)})
    assert ran.returncode == 1, ran.stdout[-2000:]
    assert "the public API changed; if on purpose, `make docs` writes the new snapshot" in ran.stdout
    makefile = (ROOT / "Makefile").read_text()
    lint = makefile[makefile.index("\nlint:"):].split("\n\n")[0]
    assert "tests/unit/test_public_api.py" in lint
