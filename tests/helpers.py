"""Helpers shared by tests (not fixtures)."""

from __future__ import annotations

import sys
from pathlib import Path


def sparkscope_bin() -> str:
    return str(Path(sys.executable).parent / "sparkscope")
