"""config.toml: `[profiles.NAME]` tables, `default_profile`, and `[repl]` settings.

Read once and kept until the file changes (its mtime and size are checked on each read, one stat).
"""

from __future__ import annotations

import stat
import sys
import threading
from pathlib import Path

from ..errors import ConfigError
from ..paths import config_file

_cache: dict[Path, tuple[tuple[int, int], dict]] = {}
_lock = threading.Lock()


def read_config(path: Path | None = None) -> dict:
    """The parsed file ({} when there is none); a broken file is one ConfigError."""
    path = path or config_file()
    try:
        info = path.stat()
    except OSError:
        return {}
    if not stat.S_ISREG(info.st_mode):
        return {}
    stamp = (info.st_mtime_ns, info.st_size)
    with _lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    if sys.version_info >= (3, 11):  # imported here: without a config file the prompt never waits for it
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc})", "Fix the file or move it away") from None
    with _lock:
        _cache[path] = (stamp, data)
    return data


def setting(section: str, key: str, default: object, path: Path | None = None) -> object:
    """One value from config.toml, e.g. setting("repl", "alerts", True) reads `[repl] alerts = …`."""
    table = read_config(path or config_file()).get(section, {})
    return table.get(key, default) if isinstance(table, dict) else default


def load_profiles(path: Path | None = None) -> dict[str, dict]:
    """Read `[profiles.NAME]` tables (and an optional top-level `default_profile`) from config.toml."""
    path = path or config_file()
    data = read_config(path)
    if not data:
        return {}
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"'profiles' in {path} must be a table", "Write [profiles.NAME] sections")
    if any(isinstance(p, dict) and "token" in p for p in profiles.values()):
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(
                f"{path} holds a token but other users can read it (mode {mode:o})",
                f"Run: chmod 600 {path}",
            )
    result = {str(k): dict(v) for k, v in profiles.items() if isinstance(v, dict)}
    if "default_profile" in data:
        result["__default__"] = {"name": str(data["default_profile"])}
    return result
