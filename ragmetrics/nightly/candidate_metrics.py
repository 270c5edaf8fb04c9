"""The metrics of a team's own that a candidates file of `ragmetrics judges` defines, read as a night reads them.

The candidates file's `judge:` section takes a night's `metric_files` (paths relative to the candidates file)
and `custom_metrics`; they are loaded by the night's own loader (`config.with_metric_files`) and checked by the
night's own judge section (`config.JudgeConfig`: a strict definition, a name given twice or taken from a
built-in metric refused), so a rubric that loads in one loads in the other, every problem named at its file
and key. What comes back is the file's data without those keys (the rest is shared judge settings) and each
metric's registry spec (`panels.own_metrics.OwnMetric`), registered while the candidates judge.

A night also resolves metrics by name alone: a shipped conversation rubric (`judge.conversation`) or a metric an
installed package offers (entry points), listed in `judge.metrics`. The candidates file's `judge.metrics` is
read the same way, and so are the metrics the labels (or `--metric`) name: those a night would resolve by name
are passed to the night's loader as listed, so a label of `knowledge_retention` scores the shipped rubric
without a definition in the file. Names no night knows are left to the labels' check (`panels.own_metrics`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmetrics.errors import ConfigError
from ragmetrics.judge.conversation import SHIPPED_RUBRICS, shipped_rubric_path
from ragmetrics.judge.own_metrics import entry_point_names
from ragmetrics.judge.registry import resolve_judge_metric
from ragmetrics.nightly.config import JudgeConfig, format_validation_error, with_metric_files
from ragmetrics.panels.own_metrics import OwnMetric

__all__ = ["OWN_METRIC_KEYS", "load_own_metrics"]

OWN_METRIC_KEYS = ("metric_files", "custom_metrics", "metrics")


def load_own_metrics(data: Any, path: Path, named: Sequence[str] = ()) -> tuple[Any, list[OwnMetric]]:
    """The candidates file's data without its own-metric keys, and the metrics they define or name, with the
    metrics `named` (the labels', or `--metric`) that a night resolves by name (module doc)."""
    judge = data.get("judge", {}) if isinstance(data, Mapping) else None
    offered = set(entry_point_names())
    by_name = [n for n in dict.fromkeys(named)
               if resolve_judge_metric(n) is None and (n in SHIPPED_RUBRICS or n in offered)]  # fmt: skip
    if not isinstance(judge, Mapping) or not (by_name or any(k in judge for k in OWN_METRIC_KEYS)):
        return data, []  # (a judge section that is no mapping: the file's validation names it)
    source = str(path)
    base = path.parent.resolve()
    files = judge.get("metric_files")
    for i, entry in enumerate(files if isinstance(files, list) else []):
        if isinstance(entry, str) and entry.strip() and not (base / Path(entry).expanduser()).exists():
            # named at the key that gives it too, not only as the path the loader could not open
            raise ConfigError(f"{source}: judge.metric_files[{i}]: {base / Path(entry).expanduser()}: metric file "
                              "not found (a relative path is read from the candidates file's folder)")  # fmt: skip
    listed = judge.get("metrics", [])
    # the names as a night's judge.metrics lists them: the night's loader adds the shipped rubrics among them
    own = {k: judge[k] for k in OWN_METRIC_KEYS if k in judge}
    if isinstance(listed, list) and all(isinstance(n, str) for n in listed):
        own["metrics"] = list(dict.fromkeys([*listed, *by_name]))
    else:
        own["metrics"] = listed  # the judge section's validation names what is wrong with it
    merged, origins = with_metric_files({"judge": own}, base, source)
    section = dict(merged["judge"])
    definitions = section.get("custom_metrics") or []
    names = [d.get("name") for d in definitions if isinstance(d, Mapping)] if isinstance(definitions, list) else []
    metrics = section["metrics"]  # a night lists the metrics it defines; the candidates file need not
    if isinstance(metrics, list) and all(isinstance(n, str) for n in metrics):
        section["metrics"] = list(dict.fromkeys([*(n for n in names if isinstance(n, str)), *metrics]))
    checked = section
    try:
        config = JudgeConfig.model_validate_json(json.dumps(checked, default=str), strict=True)
    except ValidationError as exc:
        lines = format_validation_error(exc, checked)
        more = f" (and {len(lines) - 1} more problems)" if len(lines) > 1 else ""
        raise ConfigError(f"{source}: judge.{lines[0]}{more}") from None
    config._metric_origins = origins
    specs = config.metric_specs(f"{source}: judge.custom_metrics", [base, Path.cwd()])
    loaded: list[OwnMetric] = []
    for i, (item, spec) in enumerate(zip(config.custom_metrics, specs, strict=False)):
        file = origins.get(item.name)  # a metric file's (inline definitions have no origin)
        if item.name in SHIPPED_RUBRICS and file == f"shipped rubric {shipped_rubric_path(item.name).name}":
            # a night loads it by its name alone: the snippet lists it, as a night's config does
            loaded.append(OwnMetric(spec=spec, where=file, file=None, definition={}, by_name=True))
            continue
        labelled = getattr(item, "labelled_file", None)
        if file is None and isinstance(labelled, Path) and not labelled.expanduser().is_absolute():
            # as a night's inline rubric: read from the file's folder (a metric file's loader did its own)
            item = item.model_copy(update={"labelled_file": base / labelled.expanduser()})
        loaded.append(OwnMetric(spec=spec, where=file or f"{source}: judge.custom_metrics[{i}]",
                                file=Path(file) if file else None,
                                definition=item.model_dump(mode="json", exclude_none=True)))  # fmt: skip
    for spec in specs[len(config.custom_metrics) :]:  # offered by installed packages (entry points)
        loaded.append(OwnMetric(spec=spec, where=f"entry point {spec.name!r}", file=None, definition={}, by_name=True))
    rest = {k: v for k, v in judge.items() if k not in OWN_METRIC_KEYS}
    return {**data, "judge": rest}, loaded
