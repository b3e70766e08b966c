"""Live monitoring in the real REPL: the :watch dashboard, :tail while typing, alerts above the prompt."""

from __future__ import annotations

import re
import time

from tests.e2e.conftest import Screen


def batch_of(screen: Screen, name: str) -> int:
    line = screen.line_with(f" {name} ")
    match = re.search(rf"\s{name}\s+\w+\s+(\d+)\s", line or "")
    return int(match.group(1)) if match else -1


def test_watch_shows_two_queries_updating_opens_details_and_stops_one(repl):
    repl.run("fast = ss.source.rate(20)")
    repl.run("slow = ss.source.rate(5)")
    assert "Started fast" in repl.run(":start fast --trigger 500ms")
    assert "Started slow" in repl.run(":start slow --trigger 500ms")
    repl.child.send(":watch\r")
    screen = Screen(repl.child)
    screen.wait_for(lambda t: "sparkscope :watch" in t and batch_of(screen, "fast") >= 0
                    and batch_of(screen, "slow") >= 0, what="both queries listed")
    first = {name: batch_of(screen, name) for name in ("fast", "slow")}
    screen.wait_for(lambda t: all(batch_of(screen, n) > first[n] for n in first), what="both rows to update")
    repl.child.send("\r")  # details of the selected (first) query
    screen.wait_for(lambda t: "Rows per second" in t and "Operation durations" in t and "addBatch" in t,
                    what="the detail view")
    repl.child.send("q")
    screen.wait_for(lambda t: "Rows per second" not in t and "state rows" in t, what="the list again")
    repl.child.send("j")  # select `slow`
    repl.child.send("s")
    screen.wait_for(lambda t: "Stop slow? [y/n]" in t, what="the stop question")
    repl.child.send("y")
    screen.wait_for(lambda t: re.search(r"slow\s+stopped", t), what="slow to be stopped")
    assert re.search(r"fast\s+active", screen.text)
    repl.child.send("q")
    out = repl.prompt()
    listed = repl.run(":queries")
    assert re.search(r"\|\s*slow\s*\|\s*\w+\s*\|\s*stopped", listed), listed + out
    assert re.search(r"\|\s*fast\s*\|\s*\w+\s*\|\s*active", listed), listed


def test_watch_details_chart_the_state_and_t_shows_what_it_holds(repl):
    repl.run("counts = ss.source.rate(10).groupBy((F.col('value') % 3).alias('k')).count()")
    repl.run("ticks = ss.source.rate(10)")
    assert "Started counts" in repl.run(":start counts --trigger 500ms")
    assert "Started ticks" in repl.run(":start ticks --trigger 500ms")
    repl.child.send(":watch counts ticks\r")
    screen = Screen(repl.child)
    screen.wait_for(lambda t: batch_of(screen, "counts") >= 1, what="counts listed with a batch")
    repl.child.send("\r")
    screen.wait_for(lambda t: re.search(r"State: last batch, then the trend\n +rows +3 .*\n +memory +[\d.]+[kMG]?B ", t),
                    what="the state rows and memory in the detail view")
    repl.child.send("t")
    screen.wait_for(lambda t: "counts: its state after the newest batch" in t and "(3 rows; q back)" in t,
                    what="the state table")
    keys = sorted(line.split("|")[1].strip() for line in screen.screen.display
                  if re.match(r"\| +\d+ +\| +\d+ +\|", line.strip()))
    assert keys == ["0", "1", "2"], screen.text
    repl.child.send("q")
    screen.wait_for(lambda t: "its state after" not in t and "state rows" in t, what="the list again")
    repl.child.send("j")  # ticks keeps no state: one line says so
    repl.child.send("t")
    screen.wait_for(lambda t: "error: ticks keeps no state: it has no stateful operator" in t, what="the one line")
    repl.child.send("q")
    repl.child.send("q")
    repl.prompt()
    assert re.search(r"\|\s*counts\s*\|\s*\w+\s*\|\s*active", repl.run(":queries"))


def test_tail_prints_batches_while_a_typed_command_still_works(repl):
    repl.run("ticks = ss.source.rate(4)")
    repl.run(":start ticks --trigger 1s")
    out = repl.run(":tail ticks")
    assert "Tailing ticks: each new batch prints above the prompt" in out
    text = repl.expect(r"Batch: \d+ \(ticks\)", timeout=30)
    repl.prompt()
    answer = repl.run("6 * 7")
    assert "42" in answer
    more = repl.expect(r"Batch: \d+ \(ticks\)[\s\S]*?new rows", timeout=30)
    assert "| timestamp" in more and "| value" in more, more
    assert "Stopped tailing ticks" in repl.run(":tail --stop ticks")
    assert "| timestamp" in text + more


def test_alert_appears_for_a_query_that_fails(repl):
    repl.run("doomed = ss.source.rate(20).select(F.expr('assert_true(value < 3)').alias('ok'))")
    repl.run(":start doomed")
    alert = repl.expect(r"alert: doomed failed: [^\r\n]*", timeout=60)
    assert "alert: doomed failed: '(value < 3)' is not true! (details: :exception doomed)" in alert
    assert "42" in repl.run("6 * 7")


def test_watch_refuses_outside_a_terminal_and_tail_needs_a_name(repl):
    assert "error: :tail needs a query name. Usage: :tail [NAME] [--follow] [--limit N] [--stop]" in repl.run(":tail")
    assert "error: No query named 'nope'" in repl.run(":watch nope")
    assert "error: 'maybe' is not on, off or latency LIMIT. Usage: :alerts [on|off|latency] [LIMIT]" in repl.run(":alerts maybe")


def test_state_without_bound_is_said_once_with_its_fix_and_not_with_a_watermark(repl):
    repl.run("ticks = ss.source.rate(20)")
    repl.run("bounded = ticks.withWatermark('timestamp', '1 second').groupBy(F.window('timestamp', '1 second'))"
             ".count()")
    repl.run(":start bounded --trigger 0.5s --mode update")
    repl.run("windows = ticks.groupBy(F.window('timestamp', '100 milliseconds')).count()")  # new keys each batch
    seen = repl.run(":start windows --trigger 0.5s")  # five batches may pass before its prompt comes back
    pattern = r"alert: windows keeps state without bound: [^\r\n]*"
    alert = re.search(pattern, seen).group(0) if re.search(pattern, seen) else repl.expect(pattern, timeout=90)
    seen += alert
    assert ('no watermark to let old keys go. Add withWatermark("eventTime", "10 minutes") before its aggregation, '
            'dropDuplicates or join (a window then closes and leaves the state)') in alert
    # the watermarked query runs as many batches as the alert needs (on a loaded machine it may be behind
    # the other one: polled, with a deadline), and no alert names it
    deadline = time.monotonic() + 90
    while True:
        answer = repl.run("ss.streams.get('bounded').progress.batch_id")
        seen += answer
        if int(re.findall(r"^-?\d+$", answer, re.M)[-1]) >= 5:
            break
        assert time.monotonic() < deadline, "the watermarked query did not reach batch 5 in 90 s"
    seen += repl.run("None")  # one more round trip: what its fifth batch's progress event printed, if anything
    assert "bounded keeps state" not in seen


def test_watch_in_a_short_terminal_scrolls_to_the_selected_query_and_says_how_many_are_hidden(repl):
    names = [f"tick{i}" for i in range(6)]
    for name in names:
        repl.run(f"{name} = ss.source.rate(1)")
        assert f"Started {name}" in repl.run(f":start {name} --trigger 5s")
    repl.child.setwinsize(8, 160)  # title, header, footer and 5 lines for the queries
    repl.child.send(":watch\r")
    screen = Screen(repl.child, rows=8)
    screen.wait_for(lambda t: "sparkscope :watch" in t and "tick3" in t and "↓ 2 more" in t,
                    what="the first four queries and a line for the two below")
    assert "tick4" not in screen.text and "tick5" not in screen.text, screen.text
    repl.child.send("j" * 5)  # down to the last query: the list follows the selection
    screen.wait_for(lambda t: re.search(r"^> tick5 ", t, re.M) and "↑ 2 more" in t,
                    what="the last query selected, in view, with a line for the two above")
    assert "tick2" in screen.text and "tick1" not in screen.text, screen.text
    assert not re.search(r"↓ \d+ more", screen.text), screen.text
    repl.child.send("s")
    screen.wait_for(lambda t: "Stop tick5? [y/n]" in t, what="the stop question for the query in view")
    repl.child.send("y")
    screen.wait_for(lambda t: re.search(r"tick5\s+stopped", t), what="tick5 to be stopped")
    repl.child.send("q")
    repl.child.setwinsize(40, 160)
    repl.prompt()
    listed = repl.run(":queries")
    assert re.search(r"\|\s*tick5\s*\|\s*\w+\s*\|\s*stopped", listed), listed
    assert re.search(r"\|\s*tick0\s*\|\s*\w+\s*\|\s*active", listed), listed
