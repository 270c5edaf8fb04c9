"""Importing a team's function named as 'package.module:function': pipeline targets and Python metrics.

One place, so both say the same thing when the name is wrong and both search the same folders (the config's
own folder, then the working directory) before the installed packages.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError

__all__ = ["import_callable"]


def import_callable(spec: str, search: Sequence[Path], label: str) -> Callable[..., Any]:
    """The callable `spec` names; ConfigError starting with `label` (which setting named it) when the module
    does not import, lacks the attribute, or the attribute is not callable."""
    module_name, _, attr = spec.partition(":")
    sys.path[:0] = [str(p) for p in search if str(p) not in sys.path]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"{label} {spec!r}: cannot import module {module_name!r}: {exc}") from None
    except Exception as exc:  # the team's module failed while importing: say so, with its error
        raise ConfigError(
            f"{label} {spec!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{label} {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"{label} {spec!r}: {attr!r} is a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]
