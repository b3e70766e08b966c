"""A client that leaves what it made on a server without closing anything, as crashed REPLs and scripts do."""

from __future__ import annotations

import subprocess
import sys

# It starts what the test asks, says what it made, and leaves: killed (-9), by os._exit, or after releasing its
# Spark Connect session by hand (spark.stop(), not ss.close()).
CLIENT = r"""
import os, signal, sys
import sparkscope

url, how, what = sys.argv[1:4]
ss = sparkscope.connect(url)
if what == "stream":
    query = ss.start(ss.source.rate(50), "left_behind", grace="1s")
    while not ss.peek("left_behind").rows:
        query.await_termination(timeout=0.2)
    print(query.view, ss.session_id, flush=True)
elif what == "feed":
    src = ss.source.memory("id INT", grace="1s")
    src.add([(1,), (2,), (3,)])
    print(src.name, ss.session_id, flush=True)
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if how == "release":
    ss.spark.stop()  # the session ends on the server; sparkscope's Session is never closed
os._exit(0)
"""


def leave_behind(remote_url: str, how: str, what: str) -> tuple[str, str]:
    """Run CLIENT (how: kill, exit or release; what: stream or feed): the name of what it made on the server, and
    its session."""
    ran = subprocess.run([sys.executable, "-c", CLIENT, remote_url, how, what], capture_output=True, text=True,
                         timeout=180)
    lines = ran.stdout.split()
    assert len(lines) == 2, ran.stderr[-3000:]
    return lines[0], lines[1]
