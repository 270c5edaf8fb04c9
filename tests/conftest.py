"""What every test folder shares: the browser tests' skip rule and their headless Chromium driven through
Selenium. A module opts in with `pytestmark = pytest.mark.browser`."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every `browser` test, with the reason, where Chromium, ChromeDriver or selenium is missing."""
    missing = None
    if (shutil.which("chromium") is None and shutil.which("chromium-browser") is None) or not shutil.which(
        "chromedriver"
    ):
        missing = "Chromium and ChromeDriver are not installed (apt-get install chromium chromium-driver)"
    elif importlib.util.find_spec("selenium") is None:
        missing = "selenium is not installed (the dev extra has it)"
    if missing is None:
        return
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.skip(reason=missing))


@pytest.fixture
def chromium_driver(tmp_path: Path) -> Iterator[Callable[[int, int], Any]]:
    """A factory of headless Chromium sessions at a window size, all quit after the test. The calling test
    module skips itself where Chromium, ChromeDriver or selenium are absent."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    assert chromium is not None and chromedriver is not None
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager look for a driver online
    drivers: list[Any] = []

    def start(width: int, height: int) -> Any:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--window-size={width},{height}",
            f"--user-data-dir={tmp_path / f'profile-{len(drivers)}'}",
        ):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(chromedriver), options=options)
        driver.set_page_load_timeout(30)
        drivers.append(driver)
        return driver

    yield start
    for driver in drivers:
        driver.quit()
