"""`sparkscope server users` on a users file of one's own (--file, as for docker-compose.yml): the real command. The
file keeps each token's hash only, mode 0600; a token is shown once; the server's own token is never shown when it
comes from SPARK_CONNECT_AUTHENTICATE_TOKEN."""

from __future__ import annotations

import hashlib
import json
import stat

from tests.helpers import run_sparkscope


def users(path, *args, env=None):
    return run_sparkscope("server", "users", "--file", str(path), *args, env=env, timeout=60)


def test_a_users_file_keeps_hashes_only_and_each_token_is_shown_once(tmp_path):
    path = tmp_path / "sparkscope-users" / "users"
    path.parent.mkdir()
    owner = users(path, "owner", env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": "the-owners-token-from-the-env"})
    assert owner.returncode == 0, owner.stderr
    assert owner.stdout.strip() == f"The server's own token is SPARK_CONNECT_AUTHENTICATE_TOKEN's, in {path}."
    added = users(path, "add", "ana", "--format", "json")
    assert added.returncode == 0, added.stderr
    token = json.loads(added.stdout)["token"]
    assert len(token) >= 40
    text = path.read_text()
    assert token not in text and "the-owners-token-from-the-env" not in text
    assert [line.split("\t")[:2] for line in text.splitlines()] == [
        ["*", hashlib.sha256(b"the-owners-token-from-the-env").hexdigest()],
        ["ana", hashlib.sha256(token.encode()).hexdigest()]]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = users(path, "list")
    assert listed.returncode == 0 and "| ana " in listed.stdout and token not in listed.stdout
    again = users(path, "add", "ana")
    assert again.returncode == 1 and again.stderr.strip() == (
        "error: 'ana' is already a user of this server. To give them a new token: sparkscope server users remove ana, "
        "then add them again.")
    bad = users(path, "add", "sparkscope-probe")
    assert bad.returncode == 1 and bad.stderr.startswith("error: 'sparkscope-probe' cannot be a user's name.")
    removed = users(path, "remove", "ana")
    assert removed.returncode == 0 and removed.stdout.strip() == "Removed user ana: their token no longer works."
    assert [line.split("\t")[0] for line in path.read_text().splitlines()] == ["*"]
    missing = users(path, "remove", "ana")
    assert missing.returncode == 1 and missing.stderr.strip() == (
        "error: 'ana' is not a user of this server. sparkscope server users list shows them.")


def test_a_new_owner_token_is_shown_once_and_a_file_without_one_says_so(tmp_path):
    path = tmp_path / "users"
    users(path, "add", "bob")
    listed = users(path, "list")
    assert "This file names no server's own token: sparkscope server users --file PATH owner" in listed.stdout
    owner = users(path, "owner", "--format", "json")
    token = json.loads(owner.stdout)["token"]
    assert hashlib.sha256(token.encode()).hexdigest() in path.read_text() and token not in path.read_text()
    assert "names no server's own token" not in users(path, "list").stdout
