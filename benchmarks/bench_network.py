"""A network that misbehaves, through a TCP proxy under our control (tests/netproxy.py), with the live
monitor listening and a rate query running at a 200 ms trigger:

* frozen: how long until the monitor says the numbers are not live (detect), and after the network
  comes back, until it says they are live again and has caught up with the query's batches (recover);
* dropped: every connection cut; how long until the monitor shows new batches again.

There is no plain-pyspark ratio: plain pyspark never notices a frozen event stream (its listener
thread waits forever), so the figures are seconds, medians over RUNS rounds.
"""

from __future__ import annotations

import statistics
import time

from common import ROOT, private_server

RUNS = 3


def until(predicate, timeout: float = 120.0) -> float:
    """Seconds until `predicate` holds (polled every 50 ms)."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise RuntimeError("timed out")
        time.sleep(0.05)
    return time.monotonic() - started


def one_round(port: int, token: str, name: str) -> tuple[float, float, float]:
    """(detect, recover, dropped) seconds for one query through a fresh proxy and session."""
    import sparkscope
    from sparkscope.client.monitoring.monitor import Monitor
    from tests.netproxy import Proxy

    with Proxy(port) as proxy:
        ss = sparkscope.connect(f"sc://localhost:{proxy.port}/;token={token}")
        live = Monitor(ss).start()
        query = ss.start(ss.source.rate(5), name, trigger="200 milliseconds")
        until(lambda: live.history(name))
        proxy.freeze()
        detect = until(lambda: live.stale_since is not None)
        proxy.thaw()
        began = time.monotonic()
        until(lambda: live.stale_since is None)
        target = query.progress.batch_id
        until(lambda: live.track(name).latest.batch_id >= target)
        recover = time.monotonic() - began
        before = live.track(name).latest.batch_id
        proxy.drop()
        dropped = until(lambda: live.track(name).latest.batch_id > before + 1)
        live.close()
        ss.streams.stop_all()
        ss.close()
    return detect, recover, dropped


def main() -> None:
    import os
    import sys

    sys.path.insert(0, str(ROOT))
    from sparkscope.client.monitoring.monitor import SILENT_AFTER

    with private_server() as url:
        port = int(url.rsplit(":", 1)[1])
        token = os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"]
        detect, recover, dropped = zip(*(one_round(port, token, f"net_{i}") for i in range(RUNS)), strict=True)
    print(f"frozen network, detected after {statistics.median(detect):.1f} s (median of {RUNS}; the monitor "
          f"checks after {SILENT_AFTER:g} s without events)")
    print(f"back from a freeze, live and caught up after {statistics.median(recover):.1f} s")
    print(f"dropped connections, new batches shown after {statistics.median(dropped):.1f} s")


if __name__ == "__main__":
    main()
