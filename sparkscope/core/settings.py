"""The [repl] settings of config.toml, each with its type and default. A value of the wrong type
(`command_timeout = "soon"`, `pager = 7`) is said once, in one line naming the file and what to write,
and the default is used; a broken file is reported where profiles are read."""

from __future__ import annotations

from collections.abc import Callable

from ..client.connection.config import setting
from ..client.errors import SparkscopeError
from ..client.logs import log
from ..client.paths import config_file
from ..client.queries.planning import interval, interval_seconds


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _flag(value: object) -> bool:
    return isinstance(value, bool)


def _duration(value: object) -> bool:
    if value is False:
        return True
    try:
        return isinstance(value, str) and bool(interval(value))
    except SparkscopeError:
        return False


def _pager(value: object) -> bool:
    return isinstance(value, str) or value is False


SETTINGS: dict[str, tuple[Callable[[object], bool], object, str]] = {
    "command_timeout": (_number, 300.0, "a number of seconds, e.g. command_timeout = 300 (0: no limit)"),
    "pager": (_pager, None, 'a command, e.g. pager = "less -SRXF", or pager = false for none'),
    "alerts": (_flag, True, "true or false"),
    "vi": (_flag, False, "true or false"),
    "complete_while_typing": (_flag, False, "true or false"),
    "latency_alert": (_duration, False, 'a duration, e.g. latency_alert = "500ms", or false for none'),
}
_said: set[str] = set()


def repl_setting(key: str) -> object:
    """The [repl] value of `key`, or its default when it is missing, of the wrong type, or the file is broken."""
    valid, default, expected = SETTINGS[key]
    try:
        value = setting("repl", key, default)
    except SparkscopeError:
        return default
    if value is default or valid(value):
        return value
    if key not in _said:
        _said.add(key)
        log.warning("[repl] %s = %r in %s is not valid, so the default applies: write %s", key, value,
                    config_file(), expected)
    return default


def latency_limit_setting() -> float | None:
    """[repl] latency_alert, as milliseconds: the p99 latency over which a Kafka query's batch raises an alert."""
    value = repl_setting("latency_alert")
    if not isinstance(value, str):
        return None
    return interval_seconds(value) * 1000


def check_repl_settings() -> None:
    """Say at start which [repl] values are of the wrong type (each once)."""
    for key in SETTINGS:
        repl_setting(key)
