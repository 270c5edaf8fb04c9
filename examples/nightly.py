"""The nightly evaluation from Python: what `ragmetrics run configs/nightly.yaml --baseline ...` does, scripted.

    python examples/nightly.py                   # gate on the pinned baseline if there is one
    python examples/nightly.py --bless           # ... and pin tonight's report as the new baseline

The gate compares against a *pinned* baseline (ragmetrics-out/nightly/baseline/report.json), not against last
night: comparing night to night lets quality slide by a little every night without ever failing. Re-pin it
on purpose (--bless) after a change you accept. Exit codes as the CLI: 0 ok, 1 regression, 2 bad input.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from ragmetrics import ConfigError, InputError, format_report, load_config, run_pipeline

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "nightly.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--bless", action="store_true", help="pin tonight's report as the baseline")
    args = parser.parse_args()

    try:
        config = load_config(args.config)
        # Settings can be changed in code before the run, e.g. a smaller judge concurrency on a shared box.
        if config.judge is not None:
            config.judge.max_concurrency = min(config.judge.max_concurrency, 4)
        pinned = config.output.dir / "baseline" / "report.json"
        outcome = run_pipeline(config, baseline=pinned if pinned.is_file() else None)
    except (ConfigError, InputError, OSError) as exc:  # never exit 1 on an error: 1 means a regression
        print(f"nightly: {exc}", file=sys.stderr)
        return 2

    print(format_report(outcome.report, "table"))
    print(f"artifacts: {outcome.folder}")
    if outcome.gate is None and not args.bless:
        print("no pinned baseline yet: run with --bless to pin this report")
    elif outcome.gate is not None:
        print(outcome.gate.describe())
    if args.bless and outcome.folder is not None:
        pinned.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(outcome.folder / "report.json", pinned)
        print(f"pinned {pinned}")
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
