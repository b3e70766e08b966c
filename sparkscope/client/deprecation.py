"""Names of the API that changed: the old ones keep working for one release, each with a DeprecationWarning that
says what to use instead."""

from __future__ import annotations

import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def callers_level() -> int:
    """The `stacklevel` of warnings.warn, called where this is, that names the first line outside sparkscope: the
    user's call, however many of sparkscope's own wrappers lie between."""
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None  # the function that warns: level 1
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("sparkscope."):
        frame = frame.f_back
        level += 1
    return level


PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # .../sparkscope/


def deprecated(message: str) -> None:
    """Warn that a name is deprecated, at the user's line: on Python 3.12+ Python itself skips sparkscope's frames
    (skip_file_prefixes); before, callers_level counts them."""
    if sys.version_info >= (3, 12):
        warnings.warn(message, DeprecationWarning, skip_file_prefixes=(PACKAGE_DIR,))  # type: ignore[call-overload]
    else:
        warnings.warn(message, DeprecationWarning, stacklevel=callers_level())


def renamed_arguments(**renamed: str) -> Callable[[F], F]:
    """`@renamed_arguments(all="catalogued")`: a call with the old keyword still works, and warns. The signature
    shown (inspect, help(), the API snapshot) is the new one."""
    def decorate(function: F) -> F:
        @functools.wraps(function)
        def with_old_names(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{function.__name__}() got both {old!r} and {new!r}; {old!r} is "
                                        f"the old name of {new!r}")
                    deprecated(f"{function.__name__}({old}=…) is deprecated: use {new}=…")
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return with_old_names  # type: ignore[return-value]

    return decorate
