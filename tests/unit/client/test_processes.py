"""The one module that asks the system about processes (client/processes.py), and the one that ends them
(server/signals.py), against real processes this test starts and ends itself."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkscope.client import processes
from sparkscope.server import signals
from tests.helpers import wait_for

SLEEPER = "import sys, threading; print('ready', flush=True); threading.Event().wait(600)"  # waits to be ended


@pytest.fixture
def child():
    """A Python child of this test, waiting; ended (and reaped) at the end."""
    started = time.time()
    process = subprocess.Popen([sys.executable, "-c", SLEEPER, "sparkscope-test-needle"], stdout=subprocess.PIPE,
                               env={**os.environ, "SPARKSCOPE_TEST_MARK": f"mark-{os.getpid()}"})
    assert process.stdout.readline() == b"ready\n"
    yield process, started
    process.kill()
    process.wait(timeout=30)


def test_a_child_is_alive_ours_and_started_when_we_started_it(child):
    process, started = child
    assert processes.alive(process.pid)
    assert processes.is_ours(process.pid, started, ["sparkscope-test-needle"])
    assert abs(processes.started_at(process.pid) - started) < processes.START_TIME_SLACK
    assert processes.cpu_seconds(process.pid) >= 0.0
    assert processes.resident_memory(process.pid) > 1_000_000


def test_a_reused_pid_or_a_decoy_is_not_ours(child):
    process, started = child
    assert not processes.is_ours(process.pid, started - 3600, ["sparkscope-test-needle"])  # another start time
    assert not processes.is_ours(process.pid, started, ["another-needle"])  # another command line


def test_a_killed_child_not_yet_reaped_is_not_alive_and_reaped_is_gone(child):
    process, _ = child
    os.kill(process.pid, signal.SIGKILL)
    wait_for(lambda: not processes.alive(process.pid), timeout=30, every=0.05,
             what="the killed child seen as gone (a zombie until reaped)")
    assert signals.child_exited(process.pid)
    assert not processes.is_ours(process.pid, time.time(), [])


def test_the_processes_marked_in_their_environment_are_found_with_their_memory(child):
    process, _ = child
    found = list(processes.marked(f"SPARKSCOPE_TEST_MARK=mark-{os.getpid()}", besides={os.getpid()}))
    assert [(m.pid, "sparkscope-test-needle" in m.command) for m in found] == [(process.pid, True)]
    assert found[0].memory > 1_000_000
    assert list(processes.marked("SPARKSCOPE_TEST_MARK=someone-else", besides=set())) == []


def test_which_process_listens_on_a_port():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert processes.listens_on(os.getpid(), port) is True
        assert processes.listens_on(os.getpid(), port + 1 if port < 65535 else port - 1) is False


def test_ending_a_process_signals_it_and_says_whether_it_ended_in_its_grace_period(child):
    process, _ = child
    assert signals.kill(process.pid, grace=10) is True  # SIGTERM ends a sleeping Python at once
    assert not processes.alive(process.pid)
    assert signals.kill(process.pid, grace=1) is False  # nothing left to end


def test_this_process_has_its_ancestors_and_its_mapped_files():
    linux = sys.platform.startswith("linux")  # elsewhere (macOS) the system does not say: None
    assert os.getppid() in processes.ancestors()
    assert processes.maps_file(os.getpid(), Path(sys.executable).resolve()) is (True if linux else None)
    assert processes.maps_file(os.getpid(), Path("/nowhere/at/all")) is (False if linux else None)
