"""The tracks a monitor keeps from a session's events: a restart from the checkpoint keeps a query's id and starts a
new run, so the end of the earlier run, heard late (a listener's events lag on a busy server), must not end the run
that goes on. It did: the catalog then said "stopped" of a running query, and :stop from another REPL answered
"meet_same is not running (stopped)" (found by two fresh-clone runs)."""

from __future__ import annotations

from sparkscope.client.monitoring.events import TrackBook


def test_a_late_end_of_an_earlier_run_leaves_the_restarted_run_active_and_tells_no_one():
    book = TrackBook()
    heard: list[tuple[str, str | None]] = []
    book.subscribe(lambda event: heard.append((event.kind, event.run_id)))
    book.on_started("q1", "counts", "run-1")
    book.on_started("q1", "counts", "run-2")  # restarted from its checkpoint before run-1's end was heard
    book.on_terminated("q1", None, "run-1")
    assert book.track_for("q1", None).state == "active"
    assert heard == [("started", "run-1"), ("started", "run-2")]
    book.on_terminated("q1", None, "run-2")
    assert book.track_for("q1", None).state == "stopped"
    assert heard[-1] == ("terminated", "run-2")


def test_an_end_with_no_run_known_still_ends_the_track():
    """Polling knows no run of a track it saw end: the end is taken as it comes."""
    book = TrackBook()
    book.on_started("q2", "ticks")
    book.on_terminated("q2", "boom")
    track = book.track_for("q2", None)
    assert (track.state, track.error) == ("failed", "boom")


def test_the_end_of_a_run_heard_before_its_start_is_told_after_the_start():
    """Spark sends a start as the query's thread posts it and an end through its listener bus: a run that fails as it
    starts (the guide's two toTable queries on one checkpoint) was heard to end first, the end was taken for a late
    one of the earlier run, and the failure was never said (found by a fresh-clone run on a slow machine)."""
    book = TrackBook()
    heard: list[tuple[str, str | None, str | None]] = []
    book.subscribe(lambda event: heard.append((event.kind, event.run_id, event.error)))
    book.on_started("q3", None, "run-1")
    book.on_terminated("q3", None, "run-1")  # Spark stopped it as the second run started on its checkpoint
    book.on_terminated("q3", "cannot read the checkpoint's metadata", "run-2")
    assert book.track_for("q3", None).state == "stopped"
    book.on_started("q3", None, "run-2")
    track = book.track_for("q3", None)
    assert (track.state, track.error) == ("failed", "cannot read the checkpoint's metadata")
    assert heard == [("started", "run-1", None), ("terminated", "run-1", None), ("started", "run-2", None),
                     ("terminated", "run-2", "cannot read the checkpoint's metadata")]


def test_a_late_end_of_a_run_heard_to_start_before_is_still_ignored():
    book = TrackBook()
    book.on_started("q4", "counts", "run-1")
    book.on_started("q4", "counts", "run-2")
    book.on_terminated("q4", None, "run-1")
    book.on_started("q4", "counts", "run-3")  # nothing held for run-1 comes back with a later start
    assert book.track_for("q4", None).state == "active"
