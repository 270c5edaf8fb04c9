"""Issue 66, item 1: the pipeline cache keys on what decides an output, and a gate never passes on it unseen.

A small team project in tmp_path: `team_rag.answer` ranks the passages with `team_helpers.rank` (imported
from another module of the project) and reverses its ranking when RAG_VARIANT=broken. Nights run through the
CLI in this process; between nights the team's modules are dropped from sys.modules, as a new process would
import them afresh.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics.nightly.config import PipelineRunSpec

from .conftest import ConfigWriter
from .helpers import latest, report_of, run_cli

TEAM = """
import json, os, pathlib
from team_helpers import rank

HERE = pathlib.Path(__file__).parent
PASSAGES = [json.loads(line) for line in open(HERE / "passages.jsonl", encoding="utf-8")]


def answer(sample):
    with open(HERE / "calls.log", "a", encoding="utf-8") as fh:
        fh.write(sample["id"] + "\\n")
    ranked = rank(sample["question"], PASSAGES)
    if os.environ.get("RAG_VARIANT") == "broken":
        ranked = ranked[::-1]
    top = ranked[:5]
    return {"contexts": [p["text"] for p in top], "context_ids": [p["id"] for p in top]}


def generate(inputs):
    return {"answer": inputs["contexts"][0] if inputs["contexts"] else "I do not know."}
"""

HELPERS = """
def _words(text):
    return {w.strip("?.,()").lower() for w in text.split() if len(w) > 3}


def rank(question, passages):
    q = _words(question)
    return sorted(passages, key=lambda p: (-len(q & _words(p["text"])), p["id"]), reverse=REVERSED)


REVERSED = False
"""

MODULES = ("team_rag", "team_helpers")


@pytest.fixture
def team(qa_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (qa_dir / "team_rag.py").write_text(textwrap.dedent(TEAM), encoding="utf-8")
    (qa_dir / "team_helpers.py").write_text(textwrap.dedent(HELPERS), encoding="utf-8")
    monkeypatch.delenv("RAG_VARIANT", raising=False)
    monkeypatch.delenv("RAG_INDEX", raising=False)
    _forget_team()
    yield qa_dir
    _forget_team()


def _forget_team() -> None:
    """What a new process would be: the team's modules imported afresh from their files."""
    for name in MODULES:
        sys.modules.pop(name, None)


def _calls(folder: Path) -> int:
    log = folder / "calls.log"
    return len(log.read_text(encoding="utf-8").split()) if log.exists() else 0


def _night(config: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    _forget_team()
    return run_cli([str(config), *extra], capsys)


def _config(
    write_config: ConfigWriter, name: str = "config.yaml", out: str = "out", **pipeline: object
) -> Path:
    return write_config(
        name,
        runs=[{"source": "pipeline", "name": "team", "target": "team_rag:answer", **pipeline}],
        retrieval={"metrics": ["ndcg@10", "mrr"]},
        output={"dir": out, "plots": False, "formats": ["json", "md"]},
    )


def _baseline(team: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]) -> Path:
    """A good build's report, made with a cache of its own (as on another machine)."""
    code, _, err = _night(_config(write_config, "good.yaml", out="good"), capsys)
    assert code == 0, err
    return latest(team / "good") / "report.json"


def _broken_helper(team: Path) -> None:
    path = team / "team_helpers.py"
    path.write_text(
        path.read_text(encoding="utf-8").replace("REVERSED = False", "REVERSED = True"), encoding="utf-8"
    )


def test_a_broken_build_by_environment_after_a_good_one_fails_the_gate(
    team: Path,
    write_config: ConfigWriter,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    baseline = _baseline(team, write_config, capsys)
    config = _config(write_config)
    code, _, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 0, err
    called = _calls(team)
    monkeypatch.setenv("RAG_VARIANT", "broken")  # read by team_rag by name: keyed without being declared
    code, out, _ = _night(config, capsys, "--baseline", str(baseline))
    assert _calls(team) == called + 16  # the broken build was called, not served the good one's outputs
    assert code == 1 and "regression gate: FAILED" in out
    monkeypatch.delenv("RAG_VARIANT")
    code, out, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 0, err  # the good build again: its own cached outputs, not the broken ones
    assert "regression gate: ok" in out


def test_a_good_build_after_a_broken_one_is_not_served_the_broken_outputs(
    team: Path,
    write_config: ConfigWriter,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    baseline = _baseline(team, write_config, capsys)
    config = _config(write_config)
    _broken_helper(team)  # a change in a module the target imports, not in the target's own module
    code, out, _ = _night(config, capsys, "--baseline", str(baseline))
    assert code == 1 and "regression gate: FAILED" in out
    called = _calls(team)
    (team / "team_helpers.py").write_text(textwrap.dedent(HELPERS), encoding="utf-8")  # the fix
    code, out, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 0, err
    assert _calls(team) == called + 16  # evaluated afresh
    assert "regression gate: ok" in out and "FROM CACHE" not in out


def test_a_broken_helper_after_a_good_build_fails_the_gate(
    team: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = _baseline(team, write_config, capsys)
    config = _config(write_config)
    code, out, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 0, err
    _broken_helper(team)
    code, out, _ = _night(config, capsys, "--baseline", str(baseline))
    assert code == 1 and "regression gate: FAILED" in out, out  # today: the target's module alone is keyed


def test_a_night_from_the_cache_alone_says_so_and_fails_with_require_fresh(
    team: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = _baseline(team, write_config, capsys)
    config = _config(write_config)
    code, out, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 0, err
    assert "FROM CACHE" not in out  # called tonight
    called = _calls(team)
    code, out, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 0, err
    assert _calls(team) == called
    gate_text = out[out.index("regression gate: FROM CACHE") :]
    assert "run 'team': all 16 outputs of the pipeline/generator came from pipeline_cache" in gate_text
    report = report_of(team / "out")
    assert report.metadata.nightly is not None and report.metadata.nightly.regression is not None
    assert report.metadata.nightly.regression.from_cache
    assert "FROM CACHE" in (latest(team / "out") / "report.md").read_text(encoding="utf-8")

    strict = write_config(
        "strict.yaml",
        runs=[{"source": "pipeline", "name": "team", "target": "team_rag:answer"}],
        retrieval={"metrics": ["ndcg@10", "mrr"]},
        output={"dir": "out", "plots": False, "formats": ["json"]},
        baseline={"require_fresh": True},
    )
    code, out, err = _night(strict, capsys, "--baseline", str(baseline))
    assert code == 3, err
    assert "baseline.require_fresh" in err and "regression gate: INCOMPLETE" in out
    code, out, err = _night(strict, capsys, "--baseline", str(baseline), "--refresh-pipeline")
    assert code == 0, err  # called afresh: the gate passes on tonight's build


def _key(team: Path, **settings: object) -> str:
    from ragmetrics.nightly.call_identity import call_identity

    _forget_team()
    sys.path.insert(0, str(team))
    try:
        import team_rag  # type: ignore[import-not-found]

        spec = PipelineRunSpec(source="pipeline", name="team", target="team_rag:answer", **settings)  # type: ignore[arg-type]
        return call_identity(spec.cache_settings(), fn=team_rag.answer, search=[team]).key
    finally:
        sys.path.remove(str(team))


def test_what_changes_the_cache_key(team: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _key(team)
    assert _key(team) == plain  # stable
    monkeypatch.setenv("RAG_VARIANT", "broken")  # read by the code: keyed undeclared
    assert _key(team) != plain
    monkeypatch.delenv("RAG_VARIANT")
    monkeypatch.setenv("RAG_INDEX", "v1")  # read by no code of the project: keyed only when declared
    assert _key(team) == plain
    declared = _key(team, cache_key_env=["RAG_INDEX"])
    monkeypatch.setenv("RAG_INDEX", "v2")
    assert _key(team, cache_key_env=["RAG_INDEX"]) != declared
    assert _key(team, cache_key="index-2026-12-01") != plain  # config the team adds
    assert _key(team, cache_key="index-2026-12-01") != _key(team, cache_key="index-2026-12-02")
    assert _key(team, version="2") != plain
    assert _key(team, concurrency=2, timeout_s=5) == plain  # how calls are made decides no output
    _broken_helper(team)  # an imported module of the project
    assert _key(team) != plain


def test_the_footprint_is_the_project_code_and_what_it_reads(team: Path) -> None:
    from ragmetrics.nightly.call_identity import code_footprint

    (team / "pkg").mkdir()
    (team / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (team / "pkg" / "lazy.py").write_text("import os\nVALUE = os.getenv('LAZY_FLAG')\n", encoding="utf-8")
    (team / "pkg" / "entry.py").write_text(
        "import numpy\nimport json\n\n\ndef run(x):\n    from . import lazy  # imported only when called\n"
        "    return x if 'RAG_MODE' in __import__('os').environ else lazy.VALUE\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(team))
    try:
        from pkg.entry import run  # type: ignore[import-not-found]

        footprint = code_footprint(run, [team])
    finally:
        sys.path.remove(str(team))
        for name in ("pkg", "pkg.entry", "pkg.lazy"):
            sys.modules.pop(name, None)
    assert set(footprint.modules) == {"pkg", "pkg.entry", "pkg.lazy"}  # never numpy or json
    assert "LAZY_FLAG" in footprint.env_read
    assert json.dumps(footprint.env_read)  # names only


def test_cache_key_settings_are_validated(
    write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(
        runs=[{"source": "pipeline", "name": "t", "target": "m:f", "cache_key_envs": ["X"]}]
    )
    code, _, err = run_cli([str(config)], capsys)
    assert code == 2 and "runs[0].cache_key_envs: unknown key; did you mean 'cache_key_env'?" in err
    config = write_config(
        runs=[{"source": "pipeline", "name": "t", "target": "m:f", "cache_key_env": ["A-B"]}]
    )
    code, _, err = run_cli([str(config)], capsys)
    assert code == 2 and "runs[0].cache_key_env[0]: 'A-B' is not an environment variable name" in err
    config = write_config(baseline={"require_frsh": True})
    code, _, err = run_cli([str(config)], capsys)
    assert code == 2 and "baseline.require_frsh: unknown key; did you mean 'require_fresh'?" in err


def test_two_runs_asking_the_same_tonight_are_fresh_for_require_fresh(
    team: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs whose generator inputs are the same: the second is served the output the first stored tonight,
    which is tonight's build's, so require_fresh passes; the next night, served from the cache alone, does not."""
    config = write_config(
        runs=[
            {"source": "file", "path": "weaker.trec", "name": "w1"},
            {"source": "file", "path": "weaker.trec", "name": "w2"},
        ],
        generator={"target": "team_rag:generate", "top_k": 2},
        retrieval={"metrics": ["ndcg@10"]},
        output={"dir": "out", "plots": False, "formats": ["json"]},
        baseline={"require_fresh": True},
    )
    code, _, err = _night(config, capsys)
    assert code == 0, err
    baseline = latest(team / "out") / "report.json"
    (team / "out" / "pipeline_cache.sqlite").unlink()  # a new CI runner: no cache
    code, out, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 0, err
    assert "FROM CACHE" not in out
    code, out, err = _night(config, capsys, "--baseline", str(baseline))
    assert code == 3 and "2 runs were scored on outputs from pipeline_cache alone" in err
