"""Prompt files: loading, versions, rendering, validation of the files themselves; verdict schemas."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragmetrics.errors import ConfigError
from ragmetrics.judge.base import JUDGE_METRICS
from ragmetrics.judge.prompts import PromptLibrary, block_marker, default_library
from ragmetrics.judge.registry import JUDGE_METRIC_SPECS
from ragmetrics.judge.verdicts import ChunkVerdicts, GeneratedQuestions, SentenceVerdicts, strict_json_schema

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"


def test_every_metric_has_its_prompts_with_hash_versions() -> None:
    lib = default_library()
    versions = lib.versions()
    # Every prompt a registry entry names (answer_similarity needs none: it only embeds; deterministic metrics
    # ask no judge), and the shared texts.
    expected = {p for s in JUDGE_METRIC_SPECS for p in s.prompts} | {"_shared"}
    expected |= {"testset_question"}  # not a metric's: the test-set generator's (ragmetrics.testset.llm)
    expected |= {"align_refine"}  # not a metric's: guidance proposals of `ragmetrics align`
    expected |= {"pairwise_preference"}  # not a metric's: the pairwise judge (ragmetrics.judge.pairwise)
    deterministic = {s.name for s in JUDGE_METRIC_SPECS if s.plan == "deterministic"}
    assert deterministic and all(not s.prompts for s in JUDGE_METRIC_SPECS if s.name in deterministic)
    # The claim diagnostics share one prompt (one verdict per sample feeds all of them).
    diagnostics = {s.name for s in JUDGE_METRIC_SPECS if s.plan == "claim_entailment"}
    assert diagnostics and all(
        s.prompts == ("claim_entailment",) for s in JUDGE_METRIC_SPECS if s.name in diagnostics
    )
    assert set(JUDGE_METRICS) - {"answer_similarity"} - deterministic - diagnostics <= expected
    assert set(versions) == expected
    assert all(re.fullmatch(r"[0-9a-f]{12}", v) for v in versions.values())
    assert len(set(versions.values())) == len(versions)


def test_packaged_prompts_are_the_top_level_folder() -> None:
    packaged = Path(__file__).resolve().parents[2] / "ragmetrics" / "prompts"
    assert packaged.is_symlink() and packaged.resolve() == PROMPTS_DIR


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, target)
    return target


def test_version_changes_with_the_content(tmp_path: Path) -> None:
    d = _copy(tmp_path)
    before = PromptLibrary.load(d).versions()
    path = d / "context_recall.yaml"
    path.write_text(path.read_text().replace("atomic statements", "atomic claims"))
    after = PromptLibrary.load(d).versions()
    assert after["context_recall"] != before["context_recall"]
    assert {k: v for k, v in after.items() if k != "context_recall"} == {
        k: v for k, v in before.items() if k != "context_recall"
    }


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("# context_recall", "# recall", 1), "marker line"),
        (lambda t: t.replace("attributed: false", "attributed: maybe"), "examples\\[1\\] is invalid"),
        (lambda t: t + "\nextra_key: 1\n", "unknown keys"),
        (lambda t: t.replace("schema: StatementVerdicts", "schema: Nope"), "unknown verdict schema"),
        (lambda t: "name: [unclosed", "not valid YAML"),
    ],
)
def test_broken_prompt_files_are_config_errors(tmp_path: Path, edit: object, message: str) -> None:
    d = _copy(tmp_path)
    path = d / "context_recall.yaml"
    path.write_text(edit(path.read_text()))  # type: ignore[operator]
    with pytest.raises(ConfigError, match=message) as err:
        PromptLibrary.load(d)
    assert "context_recall.yaml" in str(err.value)


def test_broken_shared_file_is_a_config_error(tmp_path: Path) -> None:
    d = _copy(tmp_path)
    (d / "_shared.yaml").write_text("language: [unclosed\n")
    with pytest.raises(ConfigError, match=r"_shared\.yaml: not valid YAML"):
        PromptLibrary.load(d)


def test_missing_shared_file(tmp_path: Path) -> None:
    d = _copy(tmp_path)
    (d / "_shared.yaml").unlink()
    with pytest.raises(ConfigError, match=r"_shared\.yaml is missing"):
        PromptLibrary.load(d)


def test_messages_system_examples_then_input() -> None:
    lib = default_library()
    p = lib.get("context_precision")
    values = {"question": "Q {not a field}?", "reference": "R", "chunks": ["first", "second", "third"]}
    msgs = p.messages(values, lib.shared)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[0]["content"].startswith("# context_precision\n")
    assert lib.shared.language.strip() not in msgs[0]["content"]
    assert '"type"' not in msgs[0]["content"]  # no schema spelled out in json_schema mode
    last = msgs[-1]["content"]
    marker = block_marker(values)
    assert (
        "Q {not a field}?" in last
        and f'<chunks-{marker} count="3">' in last
        and f'<chunk-{marker} id="3">\nthird\n</chunk-{marker}>' in last
    )
    with_options = p.messages(values, lib.shared, answer_in_input_language=True, with_schema=True)
    assert lib.shared.language.strip() in with_options[0]["content"]
    assert '"verdicts"' in with_options[0]["content"]


def test_missing_input_is_an_error() -> None:
    p = default_library().get("context_recall")
    with pytest.raises(ValueError, match="reference"):
        p.render_input({"question": "q", "chunks": ["c"]})


def test_strict_schema_shape() -> None:
    schema = strict_json_schema(ChunkVerdicts)
    assert schema["additionalProperties"] is False and schema["required"] == ["verdicts"]
    item = schema["$defs"]["ChunkJudgement"]
    assert item["additionalProperties"] is False and set(item["required"]) == {"chunk", "reason", "useful"}
    assert "title" not in str(schema) and "description" not in schema


def test_counts_are_validated_through_the_context() -> None:
    one = {"verdicts": [{"chunk": 1, "reason": "r", "useful": True}]}
    ChunkVerdicts.model_validate(one, context={"count": 1})
    with pytest.raises(ValidationError, match="exactly 2 chunk verdicts"):
        ChunkVerdicts.model_validate(one, context={"count": 2})
    twice = {"sentences": [{"sentence": 1, "reason": "r", "relevant": True}] * 2}
    with pytest.raises(ValidationError, match="each exactly once"):
        SentenceVerdicts.model_validate(twice, context={"count": 2})
    with pytest.raises(ValidationError, match="exactly 3 questions"):
        GeneratedQuestions.model_validate({"questions": []}, context={"count": 3})
