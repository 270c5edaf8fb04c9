"""report.html renders in headless Chromium (skipped where Chromium is absent)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ragmetrics.nightly.artifacts import write_artifacts
from ragmetrics.nightly.pipeline import run_pipeline

from .conftest import ConfigWriter

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp / 'profile'}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_report_html_renders_in_headless_chromium(
    qa_dir: Path, write_config: ConfigWriter, tmp_path: Path
) -> None:
    config = write_config(
        runs=[
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        output={"dir": "out", "plots": True},
    )
    outcome = run_pipeline(config, progress=False, write=False)
    _, written = write_artifacts(outcome.report, qa_dir / "out", formats=["json", "html"])
    page = written["report.html"]

    shot = tmp_path / "shot.png"
    done = _chromium(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000  # a drawn page, not a blank one

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "<h2>Summary</h2>" in html and "weaker" in html
    assert 'data-ready="1"' in html  # the page's script ran to its end without an error
    assert html.count('class="query"') == 16 and 'id="shown">16<' in html
