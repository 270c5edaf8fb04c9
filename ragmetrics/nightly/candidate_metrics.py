"""The metrics of a team's own that a candidates file of `ragmetrics judges` defines, read as a night reads them.

The candidates file's `judge:` section takes a night's `metric_files` (paths relative to the candidates file)
and `custom_metrics`; they are loaded by the night's own loader (`config.with_metric_files`) and checked by the
night's own judge section (`config.JudgeConfig`: a strict definition, a name given twice or taken from a
built-in metric refused), so a rubric that loads in one loads in the other, every problem named at its file
and key. What comes back is the file's data without those keys (the rest is shared judge settings) and each
metric's registry spec (`panels.own_metrics.OwnMetric`), registered while the candidates judge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmetrics.errors import ConfigError
from ragmetrics.nightly.config import JudgeConfig, format_validation_error, with_metric_files
from ragmetrics.panels.own_metrics import OwnMetric

__all__ = ["OWN_METRIC_KEYS", "load_own_metrics"]

OWN_METRIC_KEYS = ("metric_files", "custom_metrics")


def load_own_metrics(data: Any, path: Path) -> tuple[Any, list[OwnMetric]]:
    """The candidates file's data without its own-metric keys, and the metrics they define (module doc)."""
    judge = data.get("judge") if isinstance(data, Mapping) else None
    if not isinstance(judge, Mapping) or not any(k in judge for k in OWN_METRIC_KEYS):
        return data, []
    source = str(path)
    base = path.parent.resolve()
    files = judge.get("metric_files")
    for i, entry in enumerate(files if isinstance(files, list) else []):
        if isinstance(entry, str) and entry.strip() and not (base / Path(entry).expanduser()).exists():
            # named at the key that gives it too, not only as the path the loader could not open
            raise ConfigError(f"{source}: judge.metric_files[{i}]: {base / Path(entry).expanduser()}: metric file "
                              "not found (a relative path is read from the candidates file's folder)")  # fmt: skip
    merged, origins = with_metric_files(data, base, source)
    section = {k: merged["judge"][k] for k in OWN_METRIC_KEYS if k in merged["judge"]}
    definitions = section.get("custom_metrics") or []
    names = [d.get("name") for d in definitions if isinstance(d, Mapping)] if isinstance(definitions, list) else []
    checked = {**section, "metrics": [n for n in names if isinstance(n, str)]}
    try:
        config = JudgeConfig.model_validate_json(json.dumps(checked, default=str), strict=True)
    except ValidationError as exc:
        lines = format_validation_error(exc, checked)
        more = f" (and {len(lines) - 1} more problems)" if len(lines) > 1 else ""
        raise ConfigError(f"{source}: judge.{lines[0]}{more}") from None
    config._metric_origins = origins
    specs = config.metric_specs(f"{source}: judge.custom_metrics", [base, Path.cwd()])
    own: list[OwnMetric] = []
    for i, (item, spec) in enumerate(zip(config.custom_metrics, specs, strict=True)):
        file = origins.get(item.name)  # a metric file's (inline definitions have no origin)
        labelled = getattr(item, "labelled_file", None)
        if file is None and isinstance(labelled, Path) and not labelled.expanduser().is_absolute():
            # as a night's inline rubric: read from the file's folder (a metric file's loader did its own)
            item = item.model_copy(update={"labelled_file": base / labelled.expanduser()})
        own.append(OwnMetric(spec=spec, where=file or f"{source}: judge.custom_metrics[{i}]",
                             file=Path(file) if file else None,
                             definition=item.model_dump(mode="json", exclude_none=True)))  # fmt: skip
    rest = {k: v for k, v in judge.items() if k not in OWN_METRIC_KEYS}
    return {**data, "judge": rest}, own
