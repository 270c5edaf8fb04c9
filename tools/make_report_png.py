"""Regenerate docs/report.png from the current quickstart, so the README's picture shows today's report.

    python tools/make_report_png.py [--out docs/report.png]

Runs configs/quickstart.yaml in a temporary folder (the verdict cache there starts empty, the shipped
vectors make that quick), then screenshots the top of report.html with headless Chromium
(`apt-get install chromium`). Exits 2 with a message when Chromium is missing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    parser.add_argument("--height", type=int, default=1400)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("make_report_png: Chromium not found (apt-get install chromium)", file=sys.stderr)
        return 2
    from ragmetrics.nightly.config import load_config
    from ragmetrics.nightly.pipeline import run_pipeline

    with tempfile.TemporaryDirectory(prefix="ragmetrics-png-") as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "configs", work / "configs")
        outcome = run_pipeline(load_config(work / "configs" / "quickstart.yaml"), progress=False)
        assert outcome.folder is not None
        page = outcome.folder / "report.html"
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--disable-background-networking",
                "--no-first-run",
                f"--user-data-dir={work / 'profile'}",
                f"--window-size=1280,{args.height}",
                f"--screenshot={args.out.resolve()}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
