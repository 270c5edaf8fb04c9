"""A sweep end to end on a synthetic collection: shared stages run once, the held-out winner, the files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragmetrics.cli.main import main
from ragmetrics.nightly.config import load_config
from ragmetrics.sweep.report import write_outputs
from ragmetrics.sweep.run import run_sweep
from ragmetrics.sweep.stages import FirstStage, StageJob, first_stage

from . import scorers
from .data import sweep_section, write_config


def test_each_shared_stage_runs_once(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, sweep_section()))
    jobs: list[StageJob] = []

    def counting_mapper(fn: object, todo: list[StageJob]) -> list[FirstStage]:
        jobs.extend(todo)
        return [first_stage(job) for job in todo]

    scorers.CALLS.clear()
    result = run_sweep(config, mapper=counting_mapper)  # type: ignore[arg-type]
    assert len(result.grid) == 12  # (bm25, bm25b, hybrid) x (none, flip) x k in (2, 4)
    # one index per retriever, searched once to the deepest need, whatever the number of configurations over it
    assert Counter((j.chunking, j.retriever.name) for j in jobs) == {
        ("passages", "bm25"): 1,
        ("passages", "bm25b"): 1,
    }
    assert {j.depth for j in jobs} == {4}
    assert dict(result.stages.index_builds) == {("passages", "bm25"): 1, ("passages", "bm25b"): 1}
    # the reranker runs once per question and retrieval arm, not once per k
    questions = len(result.split.selection) + len(result.split.confirmation)
    assert len(scorers.CALLS) == questions * 3
    assert sum(result.stages.fusions.values()) == 1


def test_the_winner_is_held_out_and_the_files_are_written(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, sweep_section(baseline="bm25/flip/k4")))
    result = run_sweep(config)
    assert result.confirmation.winner.endswith("/none/k2") or result.confirmation.winner.endswith("/none/k4")
    assert not set(result.split.selection) & set(result.split.confirmation)
    # the flipping reranker's configurations lose clearly: dropped before the selection half ends
    dropped = {d.name for d in result.drops}
    assert dropped and all("/flip/" in name for name in dropped)
    assert all(d.after < len(result.split.selection) for d in result.drops)
    assert result.units_avoided > 0
    assert result.units_asked + result.units_avoided == 12 * len(result.split.selection) + 3 * len(
        result.split.confirmation
    )
    roles = [c.role for c in result.confirmation.checks]
    assert roles == ["baseline", "runner-up"]
    assert result.confirmation.checks[0].confirmed  # far better than the flipping baseline
    s = write_outputs(result, tmp_path / "out")
    for name in ("sweep.json", "sweep.md", "pareto.png", "sweep.html"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    stored = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert stored["winner"] == s["winner"] and "gap" in stored["winner"]
    assert "winner's curse gap" in (tmp_path / "out" / "sweep.md").read_text()
    assert set(stored["pareto"]) == {"latency_ms", "tokens", "cost_usd"}


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"k": []}, "sweep.k: "),
        ({"rerankers": []}, "sweep.rerankers: "),
        ({"retrievers": []}, "sweep.retrievers: "),
        ({"fusion": {"runs": ["bm25", "bm25b"], "weights": []}}, "sweep.fusion.weights: "),
        ({"chunking": []}, "sweep.chunking: "),
    ],
)
def test_an_empty_axis_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], override: dict[str, object], named: str
) -> None:
    path = write_config(tmp_path, sweep_section(**override))
    assert main(["sweep", str(path), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert named in err and "empty axis" in err
    assert not (tmp_path / "o").exists()


def test_a_config_without_a_sweep_section_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, sweep_section())
    text = path.read_text().split("sweep:\n")[0]
    path.write_text(text)
    assert main(["sweep", str(path)]) == 2
    assert "no 'sweep:' section" in capsys.readouterr().err


def test_the_shipped_config_is_a_grid_of_30_with_its_baseline() -> None:
    from ragmetrics.sweep.grid import expand, pick_baseline

    root = Path(__file__).resolve().parents[2]
    config = load_config(root / "configs" / "sweep.yaml")
    assert config.sweep is not None
    grid = expand(config.sweep)
    assert len(grid) == 30 and len({c.name for c in grid}) == 30
    assert pick_baseline(config.sweep, grid).name == "bm25/none/k5"
    ignored = (root / ".gitignore").read_text(encoding="utf-8").split()
    assert f"{config.output.dir.relative_to(root).parts[0]}/" in ignored


def test_a_night_says_it_does_not_run_the_sweep_section(tmp_path: Path) -> None:
    from ragmetrics.nightly.pipeline import run_pipeline

    path = write_config(tmp_path, sweep_section(), runs=[{"source": "retriever", "retriever": "bm25"}])
    said: list[str] = []
    run_pipeline(path, output_dir=tmp_path / "night", progress=False, write=False, log=said.append)
    assert any("sweep: section is run by `ragmetrics sweep`" in line for line in said)


def test_a_configuration_does_not_depend_on_the_rest_of_the_grid(tmp_path: Path) -> None:
    """A hybrid fuses each retriever's top fusion.depth, however deep a reranker elsewhere makes the search."""
    from ragmetrics.sweep.grid import expand
    from ragmetrics.sweep.stages import build_stages, search_depth

    config = load_config(write_config(tmp_path, sweep_section(fusion={"runs": ["bm25", "bm25b"], "weights": [0.5],
                                                                      "depth": 5})))  # fmt: skip
    assert config.sweep is not None
    deep = config.sweep.model_copy(
        update={
            "rerankers": [
                *config.sweep.rerankers[:1],
                config.sweep.rerankers[1].model_copy(update={"candidates": 40}),
            ]
        }
    )
    passages = [json.loads(line) for line in (tmp_path / "data" / "passages.jsonl").read_text().splitlines()]
    queries = {
        row["id"]: row["question"]
        for row in map(json.loads, (tmp_path / "data" / "qa.jsonl").read_text().splitlines())
    }
    shallow_stages = build_stages(config.sweep, expand(config.sweep), {"passages": passages}, queries)
    deep_stages = build_stages(deep, expand(deep), {"passages": passages}, queries)
    assert (search_depth(config.sweep), search_depth(deep)) == (5, 40)
    key = ("passages", "hybrid(bm25+bm25b@0.5)", "none")
    assert shallow_stages.rankings[key] == deep_stages.rankings[key]
    assert all(len(r) <= 5 for r in deep_stages.rankings[key].values())


@pytest.mark.parametrize(
    ("baseline", "roles"),
    [(None, ["runner-up"]), ("bm25/none/k4", ["baseline and runner-up"])],
)
def test_a_configuration_in_two_roles_is_tested_once(
    tmp_path: Path, baseline: str | None, roles: list[str]
) -> None:
    section = sweep_section(rerankers=[{"name": "none", "kind": "none"}], fusion=None, baseline=baseline)
    result = run_sweep(load_config(write_config(tmp_path, section)))
    assert (
        result.confirmation.winner == "bm25/none/k2"
    )  # ties go to the grid's first; it is also the default baseline
    assert [c.role for c in result.confirmation.checks] == roles
