"""Six nights of the quickstart under one output folder, and the history page they leave.

    python examples/history_demo.py [OUT]        # default: ragmetrics-out/history-demo

Night 1 is the pinned baseline. From night 3 on a change is injected: the reranker run reranks 5 BM25
candidates instead of 50 (its retrieval metrics drop; the gate fails the night). On night 5 the judge's model
changes (the local judge's MiniLM is replaced by multilingual-e5-small): its judged metrics become not comparable
with the baseline, and their series start again. OUT/history.html shows both, with the drift table, the list of
changes and, per series, the queries that score worse than at the baseline and since which night.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from ragmetrics.cli import main

ROOT = Path(__file__).resolve().parents[1]


def night_config(folder: Path, out: Path, night: int, baseline: Path | None) -> Path:
    config: dict[str, Any] = yaml.safe_load(
        (ROOT / "configs" / "quickstart.yaml").read_text(encoding="utf-8")
    )
    config["name"] = "quickstart nightly (history demo)"
    config["output"] = {"dir": str(out), "formats": ["json", "html"], "plots": False}
    config["progress"] = False
    config["judge"]["cache_path"] = str(ROOT / ".ragmetrics-cache" / "verdicts.sqlite")
    if night >= 2:  # the injected change
        for run in config["runs"]:
            if run.get("name") == "bm25_embed_rerank":
                run["params"] = {"candidates": 5}
    if night >= 4:  # the judge model change
        config["judge"]["local_model"] = "e5"
    if baseline is not None:
        config["baseline"] = {"path": str(baseline), "max_drop": 0.01}
    path = folder / f"night{night + 1}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def build(out: Path, nights: int = 6) -> list[int]:
    """Run the nights into `out` (emptied first); returns each night's exit code."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    configs = out / "configs"
    configs.mkdir()
    codes = []
    baseline: Path | None = None
    for night in range(nights):
        codes.append(main(["run", str(night_config(configs, out, night, baseline)), "--no-progress"]))
        if baseline is None:
            baseline = (out / "latest").resolve() / "report.json"
    return codes


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "ragmetrics-out" / "history-demo"
    exit_codes = build(target)
    print(f"exit codes by night: {exit_codes}")
    print(f"open {target / 'history.html'}")
