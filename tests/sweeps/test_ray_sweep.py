"""A sweep's first stages dispatched to the Ray engine give the local engine's rankings and winner. Slow (a Ray
cluster starts in seconds); alone, as the other Ray tests (a local cluster on 2 CPUs times out when another test
takes them); skipped where ray is not installed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.alone, pytest.mark.timeout(600)]
pytest.importorskip("ray", reason="the Ray engine needs pip install 'ragmetrics[ray]'")

from ragmetrics.engines.ray.sweep import RayStages  # noqa: E402
from ragmetrics.nightly.config import load_config  # noqa: E402
from ragmetrics.sweep.run import run_sweep  # noqa: E402

from .data import sweep_section, write_config  # noqa: E402

os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def test_ray_stages_equal_local_ones(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, sweep_section(rerankers=[{"name": "none", "kind": "none"}])))
    local = run_sweep(config)
    assert all(use.built for use in local.stages.index_use.values())  # written to the config's index_dir
    with RayStages(num_cpus=2) as engine:
        distributed = run_sweep(config, mapper=engine.map)
        assert engine.tasks == 2  # one task per (chunking, retriever): the two BM25 indexes
    # each task opened the persisted store and read the index the local sweep wrote there
    assert {key: use.built for key, use in distributed.stages.index_use.items()} == {
        ("passages", "bm25"): False, ("passages", "bm25b"): False
    }  # fmt: skip
    assert distributed.stages.rankings == local.stages.rankings
    assert distributed.scores == local.scores
    assert distributed.confirmation == local.confirmation
