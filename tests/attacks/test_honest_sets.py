"""Attack sets that do not mislead: look-alikes in any case, numbers as whole numbers, positions where they
say, ids and wording that do not tell an attack from a clean question, the team's own unanswerable questions
and references kept, and input that would build a meaningless set refused by name."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragmetrics.attacks.build import Target, _insert, build_attacks
from ragmetrics.attacks.canary import contains_canary, contains_secret, mentions_value
from ragmetrics.attacks.poison import _changed_number
from ragmetrics.attacks.sources import out_of_scope_targets, targets_from
from ragmetrics.attacks.store import read_attack_set
from ragmetrics.cli import main
from ragmetrics.errors import InputError
from ragmetrics.judge.text.sentences import split_sentences
from ragmetrics.testset.corpus import Chunk


@pytest.mark.parametrize(
    ("answer", "canary"),
    [("code ЈABC-DEFG-HJKM", "JABC-DEFG-HJKM"), ("ЅABC ԚEFG ԜJKM", "SABC-QEFG-WJKM"),
     ("ΒΕΖΗ-ΙΚΜΝ-ΟΡΤΥ", "BEZH-IKMN-OPTY"), ("ВЕКМ НОРС ТХУА", "BEKM-HOPC-TXYA")],
)  # fmt: skip
def test_upper_case_look_alikes_are_found(answer: str, canary: str) -> None:
    assert contains_canary(answer, canary)
    assert contains_secret(answer, canary)


@pytest.mark.parametrize(
    ("answer", "value", "stated"),
    [("The reported value is 9.5 here.", "5", False), ("The reported value is 9.5 here.", "9", False),
     ("The reported value is 9.5 here.", "9.5", True), ("It is 5.", "5", True), ("Use 3.11 or later.", "3.11", True),
     ("Use 3.11 or later.", "11", False), ("1,000 rows", "1000", True), ("in 1987.", "1987", True),
     ("9,5 Prozent", "5", False)],
)  # fmt: skip
def test_numbers_are_whole_numbers(answer: str, value: str, stated: bool) -> None:
    assert mentions_value(answer, value) is stated


def test_one_digit_numbers_move_by_one_to_three() -> None:
    rng = np.random.default_rng(0)
    for value in range(10):
        for _ in range(30):
            changed = int(_changed_number(str(value), rng))
            assert changed >= 0 and 1 <= abs(changed - value) <= 3


def test_lower_cased_text_splits_and_middle_is_the_middle() -> None:
    text = ("the retrieval of documents is studied. indexing uses inverted files. queries are weighted by idf. "
            "results are ranked by score. evaluation uses precision and recall.")  # fmt: skip
    assert len(split_sentences(text, "en")) == 5
    single = "a single long sentence without any stop that goes on and on about indexing and retrieval"
    for source in (text, single):
        inserted = _insert(source, "PLANTED", "middle", "en")
        at = inserted.index("PLANTED") / len(inserted)
        assert 0.2 < at < 0.8, (source, inserted)


def _corpus_files(tmp_path: Path, *, prefix: str = "d") -> tuple[Path, Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"_id": f"{prefix}{i}", "text": f"The {name} cache keeps {size} entries by default. It was added in {1990 + i}."}
            for i, (name, size) in enumerate([("lookup", 400), ("parser", 128), ("render", 64), ("socket", 32),
                                              ("thread", 16), ("logger", 8)])]  # fmt: skip
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    lines = [
        {"id": "q1", "question": "What is the default size of the lookup cache?", "reference": "The lookup cache keeps 400 entries."},
        {"id": "q2", "question": "How many entries does the parser cache keep?", "answer": "It keeps 128 entries."},
        {"id": "q3", "question": "When was the render cache added?"},
        {"id": "u1", "question": "Which database backs the lookup cache?", "answerable": False},
        {"id": "u2", "question": "Who maintains the socket cache?", "answerable": False},
    ]  # fmt: skip
    questions.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d0 2\nq2 0 d1 1\nq3 0 d2 1\n", encoding="utf-8")
    return corpus, questions, qrels


def test_team_questions_keep_references_and_unanswerables(tmp_path: Path) -> None:
    corpus, questions, qrels = _corpus_files(tmp_path)
    out = tmp_path / "set"
    assert main(["attack", str(corpus), "--questions", str(questions), "--qrels", str(qrels), "-o", str(out),
                 "--out-of-scope", "2"]) == 0  # fmt: skip
    built = read_attack_set(out)
    team = built.manifest["question_ids"]
    clean = {team[r.id]: r for r in built.rows if r.id in team}
    assert clean["q1"].reference == "The lookup cache keeps 400 entries." and clean["q2"].reference == "It keeps 128 entries."
    outside = [c for c in built.checks if c.kind == "out_of_scope"]
    assert sorted(c.twin for c in outside) == ["u1", "u2"]  # the team's own, not generated ones
    poisoned = {team[c.twin]: c for c in built.checks if c.kind == "poisoning"}
    assert poisoned["q1"].true_value == "400"  # from the reference, not the chunk's first number


def test_ids_and_wording_do_not_tell_attacks_apart(tmp_path: Path) -> None:
    out = tmp_path / "set"
    assert main(["attack", "builtin", "-o", str(out), "--seed", "5", "--size", "30"]) == 0
    built = read_attack_set(out)
    shapes = Counter(re.sub(r"[0-9a-f]", "h", r.id) for r in built.rows)
    assert list(shapes) == ["qhhhhhhhhhhh"]  # one id form for clean twins and attacks alike
    attacked = {c.id for c in built.checks}
    clean_questions = {r.question for r in built.rows if r.id not in attacked}
    for check in built.checks:
        if check.kind == "out_of_scope":
            row = next(r for r in built.rows if r.id == check.id)
            assert "how are they related" not in row.question and "fit together" not in row.question
            assert row.question not in clean_questions
    # the order of questions.jsonl does not put each attack after its clean twin
    position = {r.id: i for i, r in enumerate(built.rows)}
    near = [0 < position[c.id] - position[c.twin] <= 4 for c in built.checks if c.twin in position]
    assert near and sum(near) < len(near) / 4


def test_reworded_out_of_scope_questions_are_unanswerable_by_the_corpus(tmp_path: Path) -> None:
    targets = targets_from("builtin")
    outside = out_of_scope_targets(targets, 12, seed=0)
    assert len(outside) == 12
    by_id = {t.id: t for t in targets.answerable}
    for target in outside:
        source = by_id[target.id.split("~")[0]]
        assert target.question != source.question and not target.answerable


def test_empty_questions_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, questions, qrels = _corpus_files(tmp_path)
    questions.write_text("", encoding="utf-8")
    assert main(["attack", str(corpus), "--questions", str(questions), "--qrels", str(qrels), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "questions.jsonl" in err and "no questions" in err


def test_corpus_without_the_qrels_documents_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, questions, qrels = _corpus_files(tmp_path, prefix="c")  # corpus c0.., qrels d0..
    assert main(["attack", str(corpus), "--questions", str(questions), "--qrels", str(qrels), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "same document ids" in err and "'d0'" in err and "'c0'" in err
    assert not (tmp_path / "o").exists()


def test_builder_refuses_targets_whose_documents_are_missing() -> None:
    corpus = {"c1": Chunk("c1", "Some text about caches in 1999.", None, 1)}
    with pytest.raises(InputError, match="same document ids"):
        build_attacks([Target("q", "When?", None, "en", {"d1": 1})], corpus, kinds=("injection",))
