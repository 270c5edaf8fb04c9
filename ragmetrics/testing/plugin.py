"""The pytest plugin (entry point pytest11 'ragmetrics'): the `ragmetrics` marker, the run's family size for
the correction across gating tests, JUnit XML properties, and a verdict cache shared by xdist workers.

Loaded by every pytest session where ragmetrics is installed, so it imports nothing heavy at load time.
"""

from __future__ import annotations

import contextvars
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

MARKER = "ragmetrics"
_family: int = 0
_current: contextvars.ContextVar[Any] = contextvars.ContextVar("ragmetrics_current_item", default=None)


def current_family() -> int:
    """The gating tests collected (marked `ragmetrics`), plus one when the running test is not marked."""
    item = _current.get()
    marked = item is not None and item.get_closest_marker(MARKER) is not None
    return max(1, _family + (0 if marked else 1)) if item is not None else 1


def record_properties(values: Mapping[str, object]) -> None:
    """Add the figures to the running test's JUnit XML properties (nothing outside a test)."""
    item = _current.get()
    if item is not None:
        item.user_properties.extend(values.items())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: a test that gates on ragmetrics figures; counted in the run's correction family",
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "ragmetrics_cache",
        "the judge's verdict cache shared by the run's tests and xdist workers "
        "(default .ragmetrics-cache/verdicts.sqlite under the rootdir)",
        default="",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    global _family
    _family = sum(1 for item in items if item.get_closest_marker(MARKER) is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    token = _current.set(item)
    try:
        return (yield)
    finally:
        _current.reset(token)


@pytest.fixture(scope="session")
def ragmetrics_cache(pytestconfig: pytest.Config) -> Path:
    """The verdict cache every test and worker of the run shares (SQLite in WAL mode with a busy timeout, so
    xdist workers read and write it at once; a verdict is stored only when valid)."""
    configured = str(pytestconfig.getini("ragmetrics_cache") or "")
    path = Path(configured) if configured else Path(".ragmetrics-cache") / "verdicts.sqlite"
    if not path.is_absolute():
        path = pytestconfig.rootpath / path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
