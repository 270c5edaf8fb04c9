"""A cascade cuts verdicts and people's labels at one threshold (0.5) on [0, 1]: a rubric whose levels score
outside [0, 1] (levels 1 to 5 scored 1 to 5, say) would make every verdict a "yes" and the agreement certified
that of two different questions. Refused before anything is sent, naming the metric's file and its scale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main

from .conftest import ConfigWriter
from .helpers import qa_rows, write_jsonl
from .test_cascade_ordinal import KEY_ENV, LEVELS, QUALITY, N, _markers


@pytest.mark.parametrize("scores", [[1, 2, 3, 4, 5], [-1.0, -0.5, 0.0, 0.5, 1.0]])
def test_a_cascade_on_a_rubric_scored_outside_0_1_is_refused_naming_its_scale(
    qa_dir: Path, write_config: ConfigWriter, servers: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any,
    scores: list[float],
) -> None:  # fmt: skip
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    template = qa_rows()
    rows = [{**template[i % len(template)], "id": f"c{i:02d}", "style": _markers(i)} for i in range(N)]
    write_jsonl(qa_dir / "qa.jsonl", rows)
    rubric = {**QUALITY, "scale": {"type": "ordinal", "levels": [{"label": lab, "score": s}
                                                                 for lab, s in zip(LEVELS, scores, strict=True)]}}  # fmt: skip
    (qa_dir / "quality.yaml").write_text(yaml.safe_dump(rubric), encoding="utf-8")
    labels = ["sample_id,metric,label"] + [f"c{i:02d},quality,{1 - i % 2}" for i in range(N)]
    (qa_dir / "labels.csv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    small, big = servers
    config = write_config(
        judge={"backend": "openai", "api_key_env": KEY_ENV, "cache_path": "cache/verdicts.sqlite", "timeout_s": 10,
               "max_retries": 1, "metric_files": ["quality.yaml"], "metrics": ["quality"],
               "cascade": [{"name": "small", "model": "judge-model", "base_url": small.url},
                           {"name": "big", "model": "judge-model", "base_url": big.url}],
               "agreement": 0.8, "delta": 0.2, "held_out": 0.25, "labels": "labels.csv"},
        retrieval={"metrics": ["ndcg@10"]},
    )  # fmt: skip
    assert main(["run", str(config), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "quality.yaml" in err and "scale" in err and "[0, 1]" in err
    assert small.records == [] and big.records == []


def test_a_built_in_metric_scored_outside_0_1_is_refused_at_judge_metrics() -> None:
    from ragmetrics.errors import ConfigError
    from ragmetrics.nightly.cascade_labels import check_unit_scores
    from ragmetrics.nightly.config import JudgeConfig

    judge = JudgeConfig.model_validate({"metrics": ["faithfulness", "answer_length"]})
    check_unit_scores(judge, ["faithfulness"])  # on [0, 1]
    with pytest.raises(ConfigError, match=r"judge\.metrics: metric 'answer_length' scores 0 to inf"):
        check_unit_scores(judge, ["answer_length"])
