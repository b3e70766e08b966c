"""Where sparkscope keeps its files: the user's config, state and cache directories as platformdirs knows them (XDG's
on Linux, honouring XDG_CONFIG_HOME, XDG_STATE_HOME and XDG_CACHE_HOME; the macOS and Windows places elsewhere)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

from .logs import log

APP = "sparkscope"



def config_dir() -> Path:
    """The config directory (config.toml, profiles, the embedded server's spark-defaults); not created here."""
    return platformdirs.user_config_path(APP, appauthor=False)


def state_dir() -> Path:
    """The state directory (server pid/port/log, history, checkpoints), created 0700."""
    return private_dir(platformdirs.user_state_path(APP, appauthor=False))


def cache_dir() -> Path:
    """The cache directory (what can be fetched again: Spark's Kafka connector as Maven Central serves it), 0700."""
    return private_dir(platformdirs.user_cache_path(APP, appauthor=False))


def private_dir(path: Path) -> Path:
    """Create `path` mode 0700, or tighten an existing one that others can read (with one notice):
    the state dir holds the server's token, and checkpoints hold the user's data and state."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077 and path.stat().st_uid == os.getuid():
        os.chmod(path, 0o700)
        log.warning("%s was readable by other users (mode %o); made it private (0700)", path, mode)
    return path


def write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with `text`, mode 0600 from the first byte (it may hold a secret)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    from . import delete_guard  # paths is imported by everything; the guard is needed when a file is written

    fd = delete_guard.open_fd(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    delete_guard.replace(tmp, path)


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
    """The package's server-config/ folder (spark-defaults.conf, log4j2.properties), as a real path:
    spark-submit reads it from disk."""
    from importlib.resources import files

    folder = Path(str(files("sparkscope") / "server-config"))
    if not (folder / "spark-defaults.conf").is_file():
        raise FileNotFoundError(f"{folder}/spark-defaults.conf is missing from the installation")
    return folder


def private_file(path: Path) -> Path:
    """Create `path` (if needed) with mode 0600 and return it; for files that may hold secrets."""
    from . import delete_guard

    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(delete_guard.open_fd(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY))
    os.chmod(path, 0o600)
    return path
