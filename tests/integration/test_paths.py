"""Relative paths mean the client's directory when the server runs on this machine."""

from __future__ import annotations

import json


def test_relative_source_and_sink_paths_resolve_against_the_client_directory(ss, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.json").write_text(json.dumps({"id": 7}) + "\n")
    rows = ss.source.files("json", "data", schema="id INT")
    query = ss.start(rows, "relative_out", sink="json", path="out", checkpoint="cp", trigger="available-now")
    query.await_termination(60)
    assert (query.path, query.checkpoint) == (str(tmp_path / "out"), str(tmp_path / "cp"))
    assert ss.peek(query).rows == [(7,)]
    assert list((tmp_path / "out").glob("part-*.json")) and (tmp_path / "cp" / "offsets").is_dir()
