"""The CI snippet in docs/nightly.md and the workflows in examples/ci/ work as written: their install and
run steps, run in a fresh venv.

Slow (a fresh venv and a non-editable install, shared by the tests of this module: the second install of
the same checkout finds every requirement installed); CI runs it in its slow step. pip installs from this
machine's own index and wheels (its configuration), so nothing is downloaded. The only substitutions: the
checkout of ragmetrics (a second `actions/checkout`, or GitLab's `git clone`) is the files git keeps of this
working tree, `${{ ... }}` expressions are placeholders, and OPENAI_API_KEY is unset (the local judge runs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# A fresh venv's install and a first night with the local judge take minutes on a busy 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _workflow() -> dict[str, object]:
    text = (ROOT / "docs" / "nightly.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(name: .*?)```", text, re.S)
    assert block, "docs/nightly.md lost its GitHub Actions snippet"
    loaded = yaml.safe_load(block.group(1))
    assert isinstance(loaded, dict)
    return loaded


def _checkout(target: Path) -> None:
    """What the snippet's checkout step gives: the files git keeps (tracked, or new and not ignored).

    Copying the working tree would carry CI's own server venvs (1.1 GB beside a fresh clone) into the install.
    """
    if not (ROOT / ".git").exists():  # a source tree that is no clone: all but caches, venvs and outputs
        shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(
            ".git", ".venv", ".ci-*", "__pycache__", "*_cache", ".hypothesis", "ragmetrics-out",
            ".ragmetrics-cache", ".pytest-tmp", "*.egg-info"))  # fmt: skip
        return
    listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(listing, cwd=ROOT, capture_output=True, check=True)
    for name in listed.stdout.decode("utf-8").split("\0"):
        source = ROOT / name
        if name and source.is_file():  # a file deleted but not yet committed is skipped
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@dataclass(frozen=True)
class _Installed:
    """A fresh venv with ragmetrics installed as the docs' snippet installs it, and a team's first night in it."""

    env: dict[str, str]
    first_night: Path
    """The work folder of that night: its report (the later nights' baseline) and its verdict cache."""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> _Installed:
    """Made once for this module's tests: each test still runs its own install step (finding every requirement
    installed, it rebuilds ragmetrics only), and starts from this night's report and verdict cache, as CI
    restores the verdict cache and keeps the baseline in the repository."""
    root = tmp_path_factory.mktemp("ci")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_API_KEY", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    work = _team_repo(root)
    install = next(step["run"] for step in _workflow()["jobs"]["eval"]["steps"] if "run" in step)  # type: ignore[index]
    done = _step(install, work, env)
    assert done.returncode == 0, done.stderr[-3000:]
    # The gate needs a baseline: a first night without one makes it, as a team's first night would.
    first = _step("ragmetrics run configs/nightly.yaml --no-progress", work, env, timeout=1200)
    assert first.returncode == 0, first.stderr
    return _Installed(env, work)


def _team_repo(tmp_path: Path) -> Path:
    """A team's repository as CI checks it out: its configs, and ragmetrics's checkout in .ragmetrics-src."""
    work = tmp_path / "repo"
    _checkout(work / ".ragmetrics-src")
    shutil.copytree(ROOT / "configs", work / "configs")
    return work


def _step(script: str, work: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """One CI step as the runner runs it: bash, stopping at the first failing command."""
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=work, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def _after_first_night(tmp_path: Path, installed: _Installed, baseline: str) -> Path:
    """A new CI job's folder: the repository with the first night's report as its baseline, and the verdict
    cache restored (never the pipeline cache)."""
    work = _team_repo(tmp_path)
    first = installed.first_night
    report = (first / "ragmetrics-out" / "nightly" / "latest").resolve() / "report.json"
    (work / baseline).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(report, work / baseline)
    shutil.copytree(first / ".ragmetrics-cache", work / ".ragmetrics-cache")
    return work


def test_the_ci_snippet_installs_and_gates(tmp_path: Path, installed: _Installed) -> None:
    steps = _workflow()["jobs"]["eval"]["steps"]  # type: ignore[index]
    commands = [step["run"] for step in steps if "run" in step]
    install, evaluate = commands
    assert install.startswith("pip install './.ragmetrics-src[")
    cached = [step["with"]["path"] for step in steps if str(step.get("uses", "")).startswith("actions/cache")]
    assert cached == [".ragmetrics-cache/verdicts.sqlite"]  # never pipeline_cache: CI calls the build afresh
    work = _after_first_night(tmp_path, installed, "eval/baseline/report.json")
    done = _step(install, work, installed.env)
    assert done.returncode == 0, done.stderr[-3000:]
    done = _step(evaluate, work, installed.env, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "regression gate: ok" in done.stdout


_EXPRESSION = re.compile(r"\$\{\{.*?\}\}")


def test_the_github_example_workflow_installs_runs_and_summarises(tmp_path: Path, installed: _Installed) -> None:
    """examples/ci/github-night.yml: its install, night and summary steps, in order, as written."""
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "github-night.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["night"]["steps"]
    checkouts = [s.get("with", {}) for s in steps if str(s.get("uses", "")).startswith("actions/checkout")]
    assert {"path": ".ragmetrics-src"}.items() <= checkouts[1].items()  # ragmetrics from its repository
    by_name = {s.get("name", s.get("id")): s for s in steps if "run" in s}
    install, night, summary = by_name["Install ragmetrics"], by_name["Run the night"], by_name["Summary"]
    work = _after_first_night(tmp_path, installed, "baseline/report.json")
    done = _step(install["run"], work, installed.env)
    assert done.returncode == 0, done.stderr[-3000:]
    outputs, step_summary = tmp_path / "github_output", tmp_path / "step_summary"
    env = {**installed.env, "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(step_summary)}
    done = _step(_EXPRESSION.sub("x", night["run"]), work, env, timeout=900)
    assert done.returncode == 0, done.stderr
    assert outputs.read_text(encoding="utf-8").strip() == "code=0", done.stdout + done.stderr
    done = _step(_EXPRESSION.sub("x", summary["run"]), work, env)
    assert done.returncode == 0, done.stderr
    assert "gate passed" in step_summary.read_text(encoding="utf-8")


def test_the_gitlab_example_job_installs_runs_and_summarises(tmp_path: Path, installed: _Installed) -> None:
    """examples/ci/gitlab-night.yml: its script, one shell as GitLab runs it, the clone being this checkout."""
    job = yaml.safe_load((ROOT / "examples" / "ci" / "gitlab-night.yml").read_text(encoding="utf-8"))
    script: list[str] = job["ragmetrics-night"]["script"]
    clone = [line for line in script if line.startswith("git clone")]
    assert len(clone) == 1 and clone[0].endswith(" .ragmetrics-src")
    work = _after_first_night(tmp_path, installed, "baseline/report.json")
    env = {**installed.env, "CI_JOB_URL": "https://gitlab.example/job/1"}
    env.pop("CI_MERGE_REQUEST_IID", None)
    done = _step("\n".join(line for line in script if line not in clone), work, env, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "gate passed" in (work / "summary.md").read_text(encoding="utf-8")
