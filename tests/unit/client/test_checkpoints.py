"""Checkpoint housekeeping: sizes, owners, and a prune that never deletes what a restartable query needs."""

from __future__ import annotations

import os
import time

import pytest

from sparkscope.client.catalog.records import Record
from sparkscope.client.catalog.checkpoints import (LOW_SPACE, MARKER, clear_cut_off_first_batch, committed_batch,
                                                   made_by_sparkscope, make_fresh,
                                                   no_space_at, parse_age, prune, scan)
from sparkscope.client.errors import ConfigError


def record(name, checkpoint, *, state="stopped", sink="parquet", mode="append", restartable=True):
    return Record(server="sc://localhost:1", name=name, query_id=name, session_id="s", plan=b"p", sink=sink,
                  mode=mode, trigger="default", options={}, path=None, table_name=None, checkpoint=str(checkpoint),
                  started_by="me", started_at=0.0, state=state, last_batch=3, ended_at=None, error=None,
                  restartable=restartable, reason=None, seen_at=None)


def make(root, name, days_old, size=1000, *, given=False):
    """A checkpoint `days_old` days old: made by sparkscope (its marker in it) unless `given` by the user."""
    folder = root / name / "offsets"
    folder.mkdir(parents=True)
    (folder / "0").write_bytes(b"x" * size)
    touched = [folder / "0", folder, folder.parent]
    if not given:
        (folder.parent / MARKER).write_text("")
        touched.insert(0, folder.parent / MARKER)
    then = time.time() - days_old * 86400
    for path in touched:
        os.utime(path, (then, then))
    return folder.parent


def test_prune_keeps_every_checkpoint_a_restartable_query_needs(tmp_path):
    root = tmp_path / "checkpoints"
    records = [
        record("counts", make(root, "counts-1", 30)),  # stopped parquet: it can resume
        record("lost", make(root, "lost-1", 30), state="lost"),
        record("failed", make(root, "failed-1", 30), state="failed"),
        record("running", make(root, "running-1", 30), state="active"),
        record("ticks", make(root, "ticks-1", 30), sink="memory"),  # a stopped memory sink cannot resume
        record("local", make(root, "local-1", 30), restartable=False),
    ]
    make(root, "orphan-1", 30, size=5000)  # no record at all
    make(root, "fresh-1", 1)  # too young
    make(root, "given-1", 30, given=True)  # a folder the user put there: never sparkscope's to delete
    records.append(record("mine", make(root, "mine-1", 30, given=True), sink="memory"))  # --checkpoint mine-1
    removed = prune(root, records, parse_age("7d"))
    assert sorted(c.path.name for c in removed) == ["local-1", "orphan-1", "ticks-1"]
    assert sum(c.size for c in removed) == 7000
    left = {c.path.name: c for c in scan(root, records)}
    assert sorted(left) == ["counts-1", "failed-1", "fresh-1", "given-1", "lost-1", "mine-1", "running-1"]
    assert not left["given-1"].made_here and left["counts-1"].made_here
    assert left["counts-1"].owner.name == "counts" and left["counts-1"].size == 1000


def test_sparkscope_knows_the_checkpoints_it_made_by_their_marker_directly_under_its_root(tmp_path):
    root = tmp_path / "checkpoints"
    make_fresh(f"{root}/counts-1a2b", "counts")
    assert made_by_sparkscope(f"file:{root}/counts-1a2b", str(root))
    assert not made_by_sparkscope(f"{root}/counts-1a2b", None)  # a server without a root made nothing here
    assert not made_by_sparkscope(f"{root}/counts-1a2b", str(tmp_path))  # not directly under that root
    (root / "given").mkdir()
    assert not made_by_sparkscope(f"{root}/given", str(root))  # no marker: the user's
    with pytest.raises(FileExistsError):  # never taken over: a new query's folder is new
        make_fresh(f"{root}/given", "given")


def test_ages_are_read_with_their_unit():
    assert parse_age("7d") == 7 * 86400 and parse_age("12h") == 43200 and parse_age("30m") == 1800
    with pytest.raises(ConfigError) as err:
        parse_age("a week")
    assert str(err.value) == "'a week' is not an age. Write a number and a unit: 30m, 12h, 7d or 2w."


def test_the_batch_a_restart_resumes_after_is_read_from_the_checkpoint_itself(tmp_path):
    checkpoint = tmp_path / "cp"
    assert committed_batch(str(checkpoint)) is None  # deleted (or never made)
    (checkpoint / "commits").mkdir(parents=True)
    assert committed_batch(f"file:{checkpoint}") is None  # made, nothing committed
    for name in ("0", "1", "7", ".7.crc", "tmp"):
        (checkpoint / "commits" / name).write_text("v1")
    assert committed_batch(f"file:{checkpoint}") == 7


def test_a_full_disk_is_named_at_the_first_path_whose_disk_has_no_room(tmp_path):
    class Usage:
        def __init__(self, free):
            self.free = free

    roomy, full = tmp_path / "roomy", tmp_path / "full"
    roomy.mkdir()
    full.mkdir()
    left = {str(roomy): LOW_SPACE * 10, str(full): 4096}
    usage = lambda path: Usage(left[path])  # noqa: E731 - which disk has how much room, as statvfs would say
    assert no_space_at([None, f"file:{roomy}/cp"], usage) is None
    assert no_space_at([f"file:{roomy}/cp", str(full / "out" / "part")], usage) == (str(full / "out" / "part"), 4096)


def _cut_off(folder, batch: int = 0) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    name = f".{batch}.0b9c1a3e-5f6d-4e2a-9b7c-3d2e1f0a9b8c.tmp"
    (folder / name).write_text("v1\n")
    (folder / f".{name}.crc").write_bytes(b"crc")
    return sorted([str(folder / name), str(folder / f".{name}.crc")])


def test_a_first_batch_cut_off_as_it_was_written_is_cleared(tmp_path):
    written = _cut_off(tmp_path / "cp" / "offsets")
    assert sorted(clear_cut_off_first_batch(f"file:{tmp_path / 'cp'}")) == written
    assert list((tmp_path / "cp" / "offsets").iterdir()) == []


def test_a_checkpoint_with_a_whole_batch_keeps_its_cut_off_next_one(tmp_path):
    offsets = tmp_path / "cp" / "offsets"
    written = _cut_off(offsets, batch=1)
    (offsets / "0").write_text("v1\n")  # Spark resumes from batch 0 and writes batch 1 again itself
    assert clear_cut_off_first_batch(str(tmp_path / "cp")) == []
    assert sorted(str(p) for p in offsets.iterdir()) == sorted([*written, str(offsets / "0")])


def test_a_file_that_is_not_spark_s_leaves_the_checkpoint_as_it_is(tmp_path):
    offsets = tmp_path / "cp" / "offsets"
    written = _cut_off(offsets)
    (offsets / "notes.txt").write_text("mine")
    assert clear_cut_off_first_batch(str(tmp_path / "cp")) == []
    assert len(list(offsets.iterdir())) == len(written) + 1


def test_a_checkpoint_that_is_not_there_is_left_alone(tmp_path):
    assert clear_cut_off_first_batch(str(tmp_path / "missing")) == []
