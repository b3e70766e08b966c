"""A second user of a shared server, through sparkscope's own front ends (issue 61): bob, with a token of his own, in the
REPL (a pseudo-terminal) and in a notebook kernel, tries to reach ana's query, her rows and her session. Each try gets
one line, nothing of hers shows, his token never shows, and her query runs on."""

from __future__ import annotations

import pytest

import sparkscope
from tests.e2e.conftest import Repl, spawn
from tests.helpers import wait_for
from tests.identities import users
from tests.notebooks import cell, run, text_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ana_and_bob(server):
    with users("ana_e2e", "bob_e2e") as tokens:
        ana = sparkscope.connect(f"sc://localhost:{server.port}", token=tokens["ana_e2e"])
        query = ana.start(ana.source.rate(10), "orders", keep=20)
        wait_for(lambda: ana.peek("orders").rows, timeout=120, what="ana's rows")
        try:
            yield ana, query, tokens["bob_e2e"]
        finally:
            ana.streams.stop_all()
            ana.close()


def test_bob_s_repl_reaches_nothing_of_ana_s(server, ana_and_bob, tmp_path):
    ana, query, bob_token = ana_and_bob
    child = spawn("--remote", f"sc://localhost:{server.port}",  # from his own laptop: his own state dir
                  env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": bob_token, "XDG_STATE_HOME": str(tmp_path / "bob")})
    repl = Repl(child)
    try:
        repl.prompt(timeout=120)
        session = repl.run(":session")
        assert [line.split("|")[2].strip() for line in session.splitlines() if line.startswith("| user ")] == [
            "bob_e2e"]
        assert "error: No query or table named 'orders'" in repl.run(":peek orders")
        assert "error: No query named 'orders'" in repl.run(":stop orders")
        kept = repl.run(":kept")
        assert "sparkscope keeps nothing of yours on this server" in kept and ana.session_id[:8] not in kept
        assert "Nothing to free" in repl.run(":kept --free")
        assert "orders" not in repl.run(":queries")
        shown = child.before + session + kept
        assert bob_token not in shown
    finally:
        child.sendcontrol("d")
        child.expect(r"\$|$", timeout=30)
        child.close(force=True)
    batch = query.progress.batch_id
    wait_for(lambda: query.progress.batch_id > batch, timeout=60, what="ana's query making batches")
    assert ana.peek("orders").rows


def test_bob_s_notebook_reaches_nothing_of_ana_s(server, ana_and_bob, tmp_path):
    ana, query, bob_token = ana_and_bob
    url = f"sc://localhost:{server.port}/;token={bob_token}"
    steps = {
        "laptop": cell(f"import os; os.environ['XDG_STATE_HOME'] = {str(tmp_path / 'bob')!r}"),  # his own state dir
        "load": cell("%load_ext sparkscope"),
        "connect": cell(f"%sparkscope --remote {url}"),
        "who": cell("print(ss.user)"),
        "kept": cell("%kept"),
        "peek": cell("%peek orders"),
        "hers": cell(f"%sparkscope --remote {url} --session-id {ana.session_id}"),
    }
    executed, _ = run(list(steps.values()))
    out = {name: text_of(executed.cells[index]) for index, name in enumerate(steps)}
    assert out["who"].strip() == "bob_e2e"
    assert "sparkscope keeps nothing of yours on this server" in out["kept"]
    assert out["peek"].strip().startswith("error: No query or table named 'orders'")
    assert out["hers"].strip().startswith(f"error: The server has no session {ana.session_id} of this user")
    assert bob_token not in "\n".join(out.values())
    assert ana.peek("orders").rows
