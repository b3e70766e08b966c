"""Run every benchmark in this folder, one after another (one Spark JVM at a time)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # benchmarks/common.py

for script in sorted(HERE.glob("bench_*.py")):
    print(f"== {script.name}")
    sys.stdout.flush()
    runpy.run_path(str(script), run_name="__main__")
    print()
