"""docs/label.png: the labelling page on the quickstart's report, after one answer (headless Chromium).

ragmetrics run configs/quickstart.yaml && python tools/make_label_png.py
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains

from ragmetrics.labeling.server import LabelServer
from ragmetrics.labeling.session import LabelSession

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    report = ROOT / "ragmetrics-out" / "quickstart" / "latest"
    os.environ.setdefault("SE_OFFLINE", "true")
    with tempfile.TemporaryDirectory() as folder:
        session = LabelSession(report, "faithfulness", Path(folder) / "labels.jsonl", target=30)
        server = LabelServer(session).start()
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--window-size=1100,1500", f"--user-data-dir={folder}/profile"):  # fmt: skip
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        try:
            driver.get(server.url)
            time.sleep(1.0)
            ActionChains(driver).send_keys("y").perform()
            time.sleep(0.5)
            driver.save_screenshot(str(ROOT / "docs" / "label.png"))
        finally:
            driver.quit()
            server.stop()
    print(f"wrote {ROOT / 'docs' / 'label.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
