"""The CI snippet in docs/nightly.md works as written: its install and evaluate steps, run in a fresh venv.

Slow (a fresh venv and a non-editable install); CI runs it in its slow step. The only substitutions: the
snippet's checkout of ragmetrics is the files git keeps of this working tree, and OPENAI_API_KEY is unset
(the local judge runs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


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


def test_the_ci_snippet_installs_and_gates(tmp_path: Path) -> None:
    steps = _workflow()["jobs"]["eval"]["steps"]  # type: ignore[index]
    commands = [step["run"] for step in steps if "run" in step]
    install, evaluate = commands
    assert install.startswith("pip install './.ragmetrics-src[")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_API_KEY")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    _checkout(tmp_path / "repo" / ".ragmetrics-src")
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "configs", work / "configs")
    subprocess.run(["bash", "-c", install], cwd=work, env=env, check=True, capture_output=True, timeout=900)
    # The gate needs a baseline: tonight's first run makes one, as a user's first night would.
    first = subprocess.run(["ragmetrics", "run", "configs/nightly.yaml", "--no-progress"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert first.returncode == 0, first.stderr
    latest = work / "ragmetrics-out" / "nightly" / "latest"
    (work / "eval" / "baseline").mkdir(parents=True)
    shutil.copy(latest.resolve() / "report.json", work / "eval" / "baseline" / "report.json")
    done = subprocess.run(
        ["bash", "-c", evaluate], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "regression gate: ok" in done.stdout
