"""The thin client touches no Linux-only call: the README's session (the REPL in a pty) and its SDK block run against
this run's server from a process whose /proc is an empty folder, in a mount namespace of its own. Making one needs
root, as CI runs; elsewhere the test skips and says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
EMPTY_PROC = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              'mount -t tmpfs sparkscope-empty-proc /proc && test -z "$(ls -A /proc)" && exec "$@"', "sh"]


def _why_no_namespace() -> str | None:
    if not sys.platform.startswith("linux"):
        return "a mount namespace is Linux's"
    if os.geteuid() != 0:
        return "making a mount namespace needs root (CI runs as root)"
    if shutil.which("unshare") is None:
        return "no unshare command here (util-linux)"
    probe = subprocess.run([*EMPTY_PROC, "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"this machine refuses a mount namespace: {probe.stderr.strip() or probe.returncode}"
    return None


def test_the_readme_session_and_sdk_block_run_in_a_process_whose_proc_is_empty(server, tmp_path):
    why = _why_no_namespace()
    if why:
        skip_or_fail(f"not run without /proc: {why}")
    env = {**os.environ, "SPARKSCOPE_TEST_REMOTE_URL": f"sc://localhost:{server.port}",
           "SPARK_CONNECT_AUTHENTICATE_TOKEN": server.token or "", "SPARKSCOPE_TEST_SANDBOX": str(tmp_path)}
    ran = subprocess.run([*EMPTY_PROC, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                          "no:xdist", "tests/e2e/test_readme.py", "-k",
                          "test_the_first_session_runs_as_written or test_the_sdk_example_runs_as_written"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "2 passed" in ran.stdout, ran.stdout[-2000:]
