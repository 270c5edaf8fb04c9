"""Config validation: every problem is one ConfigError naming the key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.nightly.config import (
    DatasetRunSpec,
    FileRunSpec,
    JudgeConfig,
    RetrieverRunSpec,
    load_config,
    parse_config,
)


def _base() -> dict:
    return {
        "dataset": {"path": "data/qa.jsonl"},
        "retrieval": {"metrics": ["ndcg@10", "map"]},
        "judge": {"metrics": ["context_precision"], "backend": "local"},
    }


def _error(data: dict, tmp_path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data, base_dir=tmp_path, source="c.yaml")
    return str(info.value)


def test_minimal_config_has_defaults_and_resolves_paths(tmp_path: Path) -> None:
    config = parse_config(_base(), base_dir=tmp_path)
    assert config.dataset.path == tmp_path.resolve() / "data/qa.jsonl"
    assert config.output.dir == tmp_path.resolve() / "ragmetrics-out"
    assert config.compare.test == "fisher" and config.compare.correction == "holm"
    assert [type(r) for r in config.runs] == [DatasetRunSpec]
    assert config.all_metrics() == ["ndcg@10", "map", "context_precision"]
    assert config.judge is not None
    assert config.judge.cache_path == tmp_path.resolve() / ".ragmetrics-cache/verdicts.sqlite"


def test_judge_section_embeds_judge_settings(tmp_path: Path) -> None:
    data = _base()
    data["judge"].update(model="m", base_url="http://127.0.0.1:9/v1", max_concurrency=3, timeout_s=5)
    config = parse_config(data, base_dir=tmp_path)
    assert isinstance(config.judge, JudgeConfig)
    settings = config.judge.settings()
    assert type(settings) is JudgeSettings
    assert (settings.model, settings.max_concurrency, settings.timeout_s) == ("m", 3, 5.0)


def test_judge_embeddings_and_real_server_settings(tmp_path: Path) -> None:
    data = _base()
    data["judge"].update(
        backend="openai",
        base_url="http://127.0.0.1:9/v1",
        max_tokens=512,
        retry_failed="12h",
        adaptive_concurrency=False,
        embeddings={
            "backend": "openai",
            "base_url": "http://127.0.0.1:10/v1",
            "model": "e",
            "pooling": "mean",
        },
    )
    settings = parse_config(data, base_dir=tmp_path).judge.settings()  # type: ignore[union-attr]
    assert settings.embeddings is not None and settings.embeddings.pooling == "mean"
    assert (settings.max_tokens, settings.retry_failed, settings.adaptive_concurrency) == (512, "12h", False)
    data["judge"]["embeddings"] = {"backend": "local", "poolin": "mean"}
    assert "judge.embeddings.poolin: unknown key" in _error(data, tmp_path)
    data["judge"]["embeddings"] = {"backend": "local"}
    data["judge"]["retry_failed"] = "sometimes"
    assert "judge.retry_failed" in _error(data, tmp_path)


def test_unknown_key_names_its_path(tmp_path: Path) -> None:
    data = _base()
    data["judge"]["max_concurency"] = 4
    assert (
        _error(data, tmp_path) == "c.yaml: judge.max_concurency: unknown key; did you mean 'max_concurrency'?"
    )


def test_unknown_top_level_section(tmp_path: Path) -> None:
    data = _base()
    data["outptu"] = {}
    assert _error(data, tmp_path) == "c.yaml: outptu: unknown key; did you mean 'output'?"


def test_unknown_retrieval_metric_names_index(tmp_path: Path) -> None:
    pytest.importorskip(
        "ragmetrics.retrieval.metrics", reason="the retrieval metric registry is not installed"
    )
    data = _base()
    data["retrieval"]["metrics"] = ["ndcg@10", "map", "ndgc@10"]
    message = _error(data, tmp_path)
    assert message.startswith("c.yaml: retrieval.metrics[2]: unknown metric 'ndgc@10'"), message


def test_unknown_judge_metric(tmp_path: Path) -> None:
    data = _base()
    data["judge"]["metrics"] = ["context_precison"]
    message = _error(data, tmp_path)
    assert message.startswith("c.yaml: judge.metrics[0]: unknown metric 'context_precison'"), message
    assert "context_precision" in message


def test_wrong_type_names_key_and_value(tmp_path: Path) -> None:
    data = _base()
    data["compare"] = {"alpha": "often"}
    message = _error(data, tmp_path)
    assert message.startswith("c.yaml: compare.alpha: "), message
    assert "'often'" in message


def test_bad_literal(tmp_path: Path) -> None:
    data = _base()
    data["compare"] = {"test": "ttest"}
    message = _error(data, tmp_path)
    assert message.startswith("c.yaml: compare.test: "), message
    assert "wilcoxon" in message


def test_run_specs_by_source(tmp_path: Path) -> None:
    data = _base()
    data["runs"] = [
        {"source": "dataset"},
        {"source": "file", "path": "runs/a.trec"},
        {"source": "retriever", "retriever": "bm25", "params": {"top_k": 50}},
    ]
    config = parse_config(data, base_dir=tmp_path)
    kinds = [type(r) for r in config.runs]
    assert kinds == [DatasetRunSpec, FileRunSpec, RetrieverRunSpec]
    file_spec = config.runs[1]
    assert isinstance(file_spec, FileRunSpec)
    assert file_spec.path == tmp_path.resolve() / "runs/a.trec"


def test_missing_key_inside_a_run_skips_the_union_tag(tmp_path: Path) -> None:
    data = _base()
    data["runs"] = [{"source": "dataset"}, {"source": "file", "name": "x"}]
    assert _error(data, tmp_path) == "c.yaml: runs[1].path: required key is missing"


def test_duplicate_run_names(tmp_path: Path) -> None:
    data = _base()
    data["runs"] = [
        {"source": "retriever", "retriever": "bm25"},
        {"source": "retriever", "retriever": "bm25"},
    ]
    assert "runs[1]: run name 'bm25' is already used by runs[0]" in _error(data, tmp_path)


def test_mapping_to_unknown_field(tmp_path: Path) -> None:
    data = _base()
    data["dataset"]["mapping"] = {"query": "questoin"}
    message = _error(data, tmp_path)
    assert message.startswith("c.yaml: dataset.mapping: column 'query' maps to unknown field 'questoin'"), (
        message
    )


def test_dataset_needs_exactly_one_source(tmp_path: Path) -> None:
    data = _base()
    data["dataset"] = {"builtin": "pydocs", "path": "x.jsonl"}
    assert "dataset: give exactly one of 'builtin' or 'path'" in _error(data, tmp_path)
    data["dataset"] = {"builtin": "nope"}
    assert "dataset.builtin: unknown builtin dataset 'nope'" in _error(data, tmp_path)


def test_threshold_for_unknown_metric(tmp_path: Path) -> None:
    data = _base()
    data["baseline"] = {"max_drop_per_metric": {"ndgc@10": 0.1}}
    assert "baseline: 'ndgc@10' not among this config's metrics" in _error(data, tmp_path)


def test_several_problems_listed_once_each(tmp_path: Path) -> None:
    data = _base()
    data["judge"]["max_concurency"] = 4
    data["compare"] = {"seeed": 1}
    message = _error(data, tmp_path)
    assert message.startswith("c.yaml: 2 problems:")
    assert "judge.max_concurency: unknown key" in message and "compare.seeed: unknown key" in message


def test_load_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset:\n  path: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: line \d+, column \d+: invalid YAML"):
        load_config(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ConfigError, match="config file is empty"):
        load_config(empty)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just text\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(scalar)


def test_load_config_resolves_against_file_folder(tmp_path: Path) -> None:
    sub = tmp_path / "cfg"
    sub.mkdir()
    (sub / "c.yaml").write_text("dataset:\n  builtin: pydocs\njudge:\n  metrics: [context_recall]\n")
    config = load_config(sub / "c.yaml")
    assert config.output.dir == sub.resolve() / "ragmetrics-out"
    assert config.dataset.builtin == "pydocs"


def test_no_metrics_is_an_error(tmp_path: Path) -> None:
    assert "no metrics" in _error({"dataset": {"builtin": "pydocs"}}, tmp_path)


def test_docs_config_reference_matches_the_models() -> None:
    from ragmetrics.nightly.config_reference import render_reference

    docs = Path(__file__).parents[2] / "docs" / "nightly.md"
    text = docs.read_text(encoding="utf-8")
    start, end = "<!-- reference:start -->\n", "<!-- reference:end -->"
    section = text[text.index(start) + len(start) : text.index(end)]
    assert section.strip() == render_reference().strip(), (
        "docs/nightly.md is out of date: regenerate its reference with `python -m ragmetrics.nightly.config_reference`"
    )


def test_run_source_and_section_type_errors(tmp_path: Path) -> None:
    data = _base()
    data["runs"] = [{"source": "web"}]
    assert (
        _error(data, tmp_path)
        == "c.yaml: runs[0].source: unknown value 'web'; one of: dataset, file, retriever, fusion, pipeline"
    )
    data["runs"] = [{"name": "a"}]
    assert (
        _error(data, tmp_path)
        == "c.yaml: runs[0].source: required key is missing; one of: dataset, file, retriever, fusion, pipeline"
    )
    data = _base()
    data["dataset"] = "qa.jsonl"
    assert _error(data, tmp_path) == "c.yaml: dataset: expected a mapping of keys, got 'qa.jsonl'"
    data = _base()
    data["retrieval"] = {"metrics": "map"}
    assert _error(data, tmp_path) == "c.yaml: retrieval.metrics: Input should be a valid list (got 'map')"


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("baseline", "max_drop", True),  # YAML's `yes`: a drop of 1.0 would switch the gate off
        ("judge", "use_cache", "no"),
        ("judge", "max_concurrency", "4"),
        ("judge", "temperature", True),
        ("compare", "seed", 4.0),
    ],
)
def test_values_are_not_coerced(tmp_path: Path, section: str, key: str, value: object) -> None:
    data = _base()
    data[section] = {**data.get(section, {}), key: value}
    message = _error(data, tmp_path)
    assert message.startswith(f"c.yaml: {section}.{key}: Input should be a valid "), message
    assert f"(got {value!r})" in message


def test_paths_given_as_strings_are_still_paths(tmp_path: Path) -> None:
    data = _base()
    data["judge"]["cache_path"] = "cache/v.sqlite"
    data["runs"] = [{"source": "file", "path": "runs/a.trec"}]
    config = parse_config(data, base_dir=tmp_path)
    assert config.judge is not None and config.judge.cache_path == tmp_path / "cache" / "v.sqlite"
    assert isinstance(config.runs[0], FileRunSpec) and config.runs[0].path == tmp_path / "runs" / "a.trec"


def test_builtin_dataset_refuses_path_only_keys(tmp_path: Path) -> None:
    data = _base()
    data["dataset"] = {"builtin": "pydocs", "split": "test"}
    assert _error(data, tmp_path) == "c.yaml: dataset: 'split' applies to 'path' datasets, not to 'builtin'"
