"""Issue 25: a verdict cache that is damaged, foreign, newer, read-only or misplaced is checked before use:
moved aside and rebuilt, used read-only, or refused with an error naming it; a damaged row is asked again."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.judge.evaluate import evaluate_rag

from .conftest import JudgeFactory, sample
from .loopback import LoopbackServer


def _score(make_judge: JudgeFactory, cache: Path) -> float | None:
    res = evaluate_rag([sample("a")], ["context_precision"], make_judge(cache_path=cache), progress=False)
    assert not res.failures, res.failures
    return res.per_query["a"]["context_precision"]


@pytest.mark.parametrize("content", [os.urandom(4096), b"SQLite format 3\x00" + b"\x00" * 50])
def test_random_or_truncated_bytes_are_moved_aside_and_the_cache_rebuilt(
    make_judge: JudgeFactory, tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "c" / "verdicts.sqlite"
    cache.parent.mkdir()
    cache.write_bytes(content)
    assert _score(make_judge, cache) is not None
    assert list(cache.parent.glob("verdicts.sqlite.unusable-*"))
    assert "not a usable SQLite database" in caplog.text


def test_a_foreign_or_newer_cache_is_an_error_naming_it(make_judge: JudgeFactory, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(
        ConfigError, match=r"foreign.sqlite: a SQLite file of another program \(tables: users\)"
    ):
        _score(make_judge, foreign)
    newer = tmp_path / "newer.sqlite"
    _score(make_judge, newer)
    with sqlite3.connect(newer) as con:
        con.execute("UPDATE meta SET value = '99' WHERE name = 'schema_version'")
    with pytest.raises(ConfigError, match="schema version '99', newer than this ragmetrics reads"):
        _score(make_judge, newer)


def test_a_cache_path_below_a_regular_file_says_so(make_judge: JudgeFactory, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError, match=r"its folder .*afile is a file, not a folder"):
        _score(make_judge, tmp_path / "afile" / "verdicts.sqlite")


def test_a_read_only_cache_is_used_read_only(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores file permissions, so a read-only file cannot be made here")
    cache = tmp_path / "ro" / "verdicts.sqlite"
    first = _score(make_judge, cache)
    cache.chmod(0o444)
    cache.parent.chmod(0o555)
    try:
        calls = len(server.records)
        assert _score(make_judge, cache) == first
        assert len(server.records) == calls
    finally:
        cache.parent.chmod(0o755)


def test_rows_that_are_not_json_are_asked_again(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path
) -> None:
    cache = tmp_path / "rows.sqlite"
    first = _score(make_judge, cache)
    with sqlite3.connect(cache) as con:
        con.execute("UPDATE verdicts SET value = ?, usage = ?", ("not json {", "[" * 100_000))
    calls = len(server.records)
    assert _score(make_judge, cache) == first
    assert len(server.records) > calls
