"""The thin client imports and works where Python has no fcntl (Windows, which docs/sdk.md says it is designed for):
a process whose `import fcntl` fails imports sparkscope, opens a session on this run's server, starts a query into
the default sink and reads its rows, and records it in the catalog (whose lock is filelock's, not fcntl's)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys
    sys.modules["fcntl"] = None  # as on Windows: `import fcntl` raises ImportError
    import sparkscope
    with sparkscope.connect(sys.argv[1]) as ss:
        query = ss.start(ss.source.memory("n INT").df, "no_fcntl")
        print("rows", ss.spark.range(3).count(), "query", query.name, query.state)
        print("catalog", [record.name for record in ss.catalog.records(ss.url)])
        query.stop()
    import fcntl  # noqa: F401  (the check that the process had no fcntl all along)
""")


def test_sparkscope_imports_and_opens_a_session_where_python_has_no_fcntl(remote_url, server, tmp_path):
    env = {**os.environ, "SPARK_CONNECT_AUTHENTICATE_TOKEN": server.token or "", "PYTHONPATH": str(ROOT),
           "XDG_STATE_HOME": str(tmp_path / "state")}
    ran = subprocess.run([sys.executable, "-c", SCRIPT, remote_url], capture_output=True, text=True, env=env,
                         timeout=300, cwd=tmp_path)
    assert "rows 3 query no_fcntl active\n" in ran.stdout, ran.stdout + ran.stderr
    assert "catalog ['no_fcntl']\n" in ran.stdout, ran.stdout + ran.stderr
    assert ran.stderr.strip().endswith("ModuleNotFoundError: import of fcntl halted; None in sys.modules"), \
        ran.stderr[-800:]
