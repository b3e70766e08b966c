"""Read a URL as another local user (nobody, uid 65534), the way a stranger on a shared machine would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from tests.helpers import needs

NOBODY = 65534
needs_root = needs("needs root and setpriv to act as another user" if os.getuid() != 0 or not shutil.which("setpriv")
                   else None)
_GET = """
import concurrent.futures, json, sys, urllib.error, urllib.request

def get(url):
    try:
        with urllib.request.urlopen(url, timeout=3) as response:  # Spark's RPC ports hold a GET unanswered
            return f"{response.status} {response.read(4000).decode(errors='replace')}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} refused"
    except Exception as exc:
        return f"unreachable {type(exc).__name__}"

with concurrent.futures.ThreadPoolExecutor(32) as pool:
    print(json.dumps(dict(zip(sys.argv[1:], pool.map(get, sys.argv[1:])))))
"""


def gets_as_nobody(urls: list[str]) -> dict[str, str]:
    """For each URL, what another user's GET gets: '200 <body…>', '403 refused', or 'unreachable <error>'.
    All at once, in one process of that user: a port that never answers costs 3 s, not 3 s each."""
    import json

    python = os.path.realpath(sys.executable)  # the system interpreter, which nobody may run
    out = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-I", "-c",
                          _GET, *urls], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def listening_ports(pid: int) -> set[int]:
    """The TCP ports a process listens on (Linux /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports
