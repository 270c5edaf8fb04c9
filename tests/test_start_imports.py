"""A command loads what it needs when it runs: `import ragmetrics` and a small `ragmetrics retrieval` call keep
the attack builder, the test-set builder, scipy.sparse, the openai client and `datasets` out (each costs tens
to hundreds of milliseconds on every call)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("ragmetrics.attacks", "ragmetrics.testset.build", "scipy.sparse", "openai", "datasets", "ragmetrics.nightly")


def _loaded(code: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    probe = f"{code}; import sys; sys.stderr.write('\\n'.join(m for m in sys.modules if m.startswith({heavy!r})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return [line for line in done.stderr.splitlines() if line.strip()]


def test_import_ragmetrics_keeps_heavy_modules_out() -> None:
    assert _loaded("import ragmetrics") == []


def test_a_retrieval_call_loads_no_other_command(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n", encoding="utf-8")
    run.write_text("q1 Q0 d1 1 0.9 r\nq1 Q0 d3 2 0.5 r\n", encoding="utf-8")
    code = f"from ragmetrics.cli.main import main; assert main(['retrieval', {str(qrels)!r}, {str(run)!r}, '-m', 'ndcg@10']) == 0"
    assert _loaded(code) == []


def test_help_loads_no_command_s_heavy_modules() -> None:
    # --help registers every command; none may pull in its work (the attack and test-set builders, scipy)
    # (the light `attacks.model` and `attacks.templates` name the kinds and styles in the attack command's help)
    work = ("ragmetrics.attacks.build", "ragmetrics.testset.build", "scipy.sparse", "openai", "datasets",
            "ragmetrics.nightly.pipeline")  # fmt: skip
    assert _loaded("from ragmetrics.cli.main import build_parser; build_parser()", work) == []


def test_help_still_lists_every_command() -> None:
    done = subprocess.run([sys.executable, "-m", "ragmetrics", "--help"], capture_output=True, text=True, timeout=120)
    for command in ("retrieval", "attack", "watch", "align", "check-metric", "fill-qrels"):
        assert command in done.stdout
