"""Where sparkscope keeps its files: XDG config and state directories."""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "sparkscope"


def state_dir() -> Path:
    """The state directory (server pid/port/log, history, checkpoints), created 0700."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    path = Path(base) / "sparkscope"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def for_server(path: str, same_machine: bool) -> str:
    """A path as the server should read it: a relative local path is made absolute against this
    process's directory when the server shares this machine (it resolves paths against its own
    working directory otherwise). URIs (s3a://, file:/…) and remote servers' paths pass unchanged."""
    text = str(path)
    if not same_machine or "://" in text or text.startswith("file:") or os.path.isabs(text):
        return text
    return os.path.abspath(os.path.expanduser(text))


def config_file() -> Path:
    return config_dir() / "config.toml"


def server_config_dir() -> Path:
    """The server-config/ folder: next to the package in a checkout, inside it when installed."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "server-config", here.parent / "server-config"):
        if (candidate / "spark-defaults.conf").is_file():
            return candidate
    raise FileNotFoundError("server-config/spark-defaults.conf is missing from the installation")


def private_file(path: Path) -> Path:
    """Create `path` (if needed) with mode 0600 and return it; for files that may hold secrets."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
    return path
