"""An answer copied from its chunks is faithful wherever its sentences break (issue 66, item 2).

Answers copy 1, 2 or 3 chunks word for word, joined with a space and no full stop, with a full stop, or with a
line break, in seven languages (Chinese and Japanese also with nothing at all between the copies). The contexts
hold the copied chunks, in another order for some, and one unrelated chunk. Both judges must score every such
answer 1: the local judge, and the LLM judge through the real openai client against the scripted server, whose
literal reader supports a statement only when one chunk holds all its words (or, told to read the chunks
together, when each part is held by one). An answer with an invented clause appended must stay below 1.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.text.copies import copy_pieces, statements_against

from .conftest import JudgeFactory
from .loopback import LoopbackServer

# Per language: three chunks as docstring paragraphs often are (no final full stop), an unrelated chunk, the
# stop written between copies, and a clause no chunk states.
CORPORA: dict[str, dict[str, Any]] = {
    "en": {
        "chunks": [
            "Returns True if the given entities are coplanar otherwise False e: entities to be checked for "
            "being coplanar",
            "Omitted points are listed in the `coplanar` attribute",
            "The convex hull is computed with the Qhull library in any number of dimensions",
        ],
        "other": "The logging module sends every record to the handlers configured at start-up",
        "stop": ". ",
        "invented": "and it was removed in Python 2.1 because the garbage collector could not free it",
    },
    "de": {
        "chunks": [
            "Gibt True zurück, wenn die angegebenen Punkte in einer Ebene liegen, sonst False",
            "Ausgelassene Punkte werden im Attribut `coplanar` aufgeführt",
            "Die konvexe Hülle wird mit der Bibliothek Qhull in beliebig vielen Dimensionen berechnet",
        ],
        "other": "Das Modul logging schickt jeden Eintrag an die beim Start eingerichteten Handler",
        "stop": ". ",
        "invented": "und sie wurde 2011 wegen eines Lizenzstreits mit Oracle aus der Bibliothek entfernt",
    },
    "fr": {
        "chunks": [
            "Renvoie True si les points donnés sont coplanaires, sinon False",
            "Les points omis sont listés dans l'attribut `coplanar`",
            "L'enveloppe convexe est calculée avec la bibliothèque Qhull en toute dimension",
        ],
        "other": "Le module logging envoie chaque enregistrement aux gestionnaires configurés au démarrage",
        "stop": ". ",
        "invented": "et elle a été retirée en 2011 après un procès avec Oracle sur la licence",
    },
    "es": {
        "chunks": [
            "Devuelve True si los puntos dados son coplanares, en caso contrario False",
            "Los puntos omitidos se enumeran en el atributo `coplanar`",
            "La envolvente convexa se calcula con la biblioteca Qhull en cualquier número de dimensiones",
        ],
        "other": "El módulo logging envía cada registro a los manejadores configurados al arrancar",
        "stop": ". ",
        "invented": "y fue eliminada en 2011 tras un pleito con Oracle por la licencia",
    },
    "ru": {
        "chunks": [
            "Возвращает True, если заданные точки лежат в одной плоскости, иначе False",
            "Пропущенные точки перечислены в атрибуте `coplanar`",
            "Выпуклая оболочка вычисляется библиотекой Qhull в пространстве любой размерности",
        ],
        "other": "Модуль logging отправляет каждую запись обработчикам, настроенным при запуске",
        "stop": ". ",
        "invented": "и она была удалена в 2011 году после судебного спора с Oracle о лицензии",
    },
    "zh": {
        "chunks": [
            "如果给定的点位于同一平面上则返回真否则返回假",
            "被省略的点列在共面属性中",
            "凸包由库在任意维度的空间中计算",
        ],
        "other": "日志模块把每条记录发送给启动时配置的处理器",
        "stop": "。",
        "invented": "并且它在二零一一年因为与甲骨文公司的许可证诉讼而被删除",
    },
    "ja": {
        "chunks": [
            "与えられた点が同一平面上にあれば真を返しそうでなければ偽を返す",
            "省略された点は共面属性に列挙される",
            "凸包は任意の次元の空間でライブラリによって計算される",
        ],
        "other": "ロギングモジュールは各レコードを起動時に設定されたハンドラに送る",
        "stop": "。",
        "invented": "そしてそれは二〇一一年にオラクル社とのライセンス訴訟のために削除された",
    },
}
CJK = ("zh", "ja")


def joints(language: str) -> dict[str, str]:
    """How an extractive generator joins two copies: nothing but a space, a full stop, a line break (and for
    scripts without spaces, nothing at all)."""
    out = {"space": " ", "stop": CORPORA[language]["stop"], "newline": "\n"}
    if language in CJK:
        out["none"] = ""
    return out


def copied_samples(language: str, marker: str = "") -> list[dict[str, Any]]:
    corpus = CORPORA[language]
    chunks: list[str] = corpus["chunks"]
    out = []
    for k in (1, 2, 3):
        for name, joint in joints(language).items():
            copied = chunks[:k]
            answer = joint.join(copied)
            if name == "stop":
                answer += corpus["stop"].strip()
            # The retriever's order is not the answer's: the last copy first, the unrelated chunk between.
            contexts = [copied[-1], corpus["other"], *copied[:-1]]
            out.append({"id": f"{language}-{k}-{name}", "question": f"coplanar? {marker}".strip(),
                        "contexts": contexts, "answer": answer, "reference": chunks[0], "language": language})  # fmt: skip
    return out


def invented_samples(language: str, marker: str = "") -> list[dict[str, Any]]:
    corpus = CORPORA[language]
    out = []
    for s in copied_samples(language, marker):
        if s["id"].endswith("-space") or s["id"].endswith("-none"):
            glue = "" if language in CJK else " "
            out.append({**s, "id": s["id"] + "-invented", "answer": s["answer"] + glue + corpus["invented"]})
    return out


def test_the_issue_repro_scores_one_with_the_local_judge() -> None:
    c1 = (
        "Returns True if the given entities are coplanar otherwise False e: entities to be checked for being "
        "coplanar"
    )
    c2 = "Omitted points are listed in the `coplanar` attribute."
    samples = [
        {"id": "two", "question": "What does it return?", "contexts": [c1, c2], "answer": f"{c1} {c2}",
         "reference": c1},
        {"id": "one", "question": "What does it return?", "contexts": [f"{c1} {c2}"], "answer": f"{c1} {c2}",
         "reference": c1},
    ]  # fmt: skip
    res = evaluate_rag(samples, ["faithfulness", "claim_faithfulness"], LocalJudge(), progress=False)
    assert res.failures == []
    assert res.per_query["two"]["faithfulness"] == res.per_query["one"]["faithfulness"] == 1.0
    verdicts = res.details["two"]["faithfulness"].verdicts
    assert [v["chunk"] for v in verdicts] == [0, 1]  # each statement from its own chunk
    assert res.per_query["two"]["claim_faithfulness"] == 1.0


@pytest.mark.parametrize("language", sorted(CORPORA))
def test_copied_answers_score_one_with_the_local_judge(language: str) -> None:
    samples = copied_samples(language)
    invented = invented_samples(language)
    res = evaluate_rag(samples + invented, ["faithfulness"], LocalJudge(), progress=False)
    assert res.failures == []
    below = {s["id"]: res.per_query[s["id"]]["faithfulness"] for s in samples}
    assert {k: v for k, v in below.items() if v != 1.0} == {}
    full = [s["id"] for s in invented if res.per_query[s["id"]]["faithfulness"] == 1.0]
    assert full == [], "an answer with an invented clause must not be wholly faithful"


@pytest.mark.parametrize("language", sorted(CORPORA))
def test_copied_answers_score_one_with_the_llm_judge(
    make_judge: JudgeFactory, server: LoopbackServer, language: str
) -> None:
    samples = copied_samples(language, marker="[by-words]")
    invented = invented_samples(language, marker="[by-words]")
    res = evaluate_rag(
        samples + invented, ["faithfulness", "claim_faithfulness"], make_judge(), progress=False
    )
    assert res.failures == []
    for metric in ("faithfulness", "claim_faithfulness"):
        scores = {s["id"]: res.per_query[s["id"]][metric] for s in samples}
        assert {k: v for k, v in scores.items() if v != 1.0} == {}, metric
        full = [s["id"] for s in invented if res.per_query[s["id"]][metric] == 1.0]
        assert full == [], metric


PARAPHRASED = ["The capital of France is Paris.", "Through Paris flows the Seine."]
"""Two chunks an answer combines in its own words: no run of three words is a copy, so nothing is cut."""


def test_llm_judge_reads_the_chunks_together(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    """One statement combining what two chunks say. The prompt tells the judge to read the chunks together,
    so a reader that does what it is told supports it; with an invented half it still does not."""
    samples = [
        {"id": "both", "question": "Paris? [by-words]", "contexts": PARAPHRASED,
         "answer": "Paris is the capital of France, and the Seine flows through Paris."},
        {"id": "invented", "question": "Paris? [by-words]", "contexts": PARAPHRASED,
         "answer": "Paris is the capital of France, and the Thames flows through Paris."},
    ]  # fmt: skip
    res = evaluate_rag(samples, ["faithfulness"], make_judge(), progress=False)
    assert res.per_query["both"]["faithfulness"] == 1.0
    assert res.per_query["invented"]["faithfulness"] == 0.0
    assert [r.prompt for r in server.records] == ["faithfulness", "faithfulness"]


def test_local_judge_supports_a_statement_the_chunks_hold_together() -> None:
    samples = [
        {"id": "both", "question": "Tell me about Paris.", "contexts": PARAPHRASED,
         "answer": "Paris is the capital of France, and the Seine flows through Paris.",
         "reference": "Paris is the capital of France."},
        {"id": "invented", "question": "Tell me about Paris.", "contexts": PARAPHRASED,
         "answer": "Paris is the capital of France, and the Thames flows through Paris.",
         "reference": "Paris is the capital of France."},
        {"id": "negated", "question": "Tell me about Paris.", "contexts": PARAPHRASED,
         "answer": "Paris is the capital of France, and the Seine does not flow through Paris.",
         "reference": "Paris is the capital of France."},
    ]  # fmt: skip
    res = evaluate_rag(samples, ["faithfulness", "claim_faithfulness"], LocalJudge(), progress=False)
    assert res.failures == []
    assert res.per_query["both"]["faithfulness"] == 1.0
    (verdict,) = res.details["both"]["faithfulness"].verdicts
    assert verdict["chunks"] == [0, 1]
    assert res.per_query["both"]["claim_faithfulness"] == 1.0
    assert res.per_query["invented"]["faithfulness"] == 0.0
    assert res.per_query["negated"]["faithfulness"] == 0.0


@pytest.mark.parametrize(
    ("text", "contexts", "pieces"),
    [
        ("alpha beta gamma delta epsilon zeta", ["alpha beta gamma", "delta epsilon zeta"],
         ["alpha beta gamma", " delta epsilon zeta"]),
        # glue between copies goes with the second; punctuation and case do not matter
        ("Alpha beta gamma, and `delta` epsilon zeta.", ["alpha beta gamma", "delta epsilon zeta"],
         ["Alpha beta gamma,", " and `delta` epsilon zeta."]),
        # a word no chunk holds between copies keeps the text whole
        ("alpha beta gamma never delta epsilon zeta", ["alpha beta gamma", "delta epsilon zeta"],
         ["alpha beta gamma never delta epsilon zeta"]),
        # two places of one chunk are not cut apart
        ("alpha beta gamma eta theta iota", ["alpha beta gamma delta eta theta iota"],
         ["alpha beta gamma eta theta iota"]),
        # runs shared by chance start and end mid-sentence: written text, not copies, and not cut
        ("the default values are evaluated once at definition",
         ["Note that the default values are computed lazily.", "Arguments are evaluated once at definition time."],
         ["the default values are evaluated once at definition"]),
        # a run shorter than three words is no copy
        ("alpha beta delta epsilon", ["alpha beta", "delta epsilon"], ["alpha beta delta epsilon"]),
        ("缓存可以减少延迟索引需要定期重建", ["缓存可以减少延迟", "索引需要定期重建"],
         ["缓存可以减少延迟", "索引需要定期重建"]),
    ],
)  # fmt: skip
def test_copy_pieces(text: str, contexts: list[str], pieces: list[str]) -> None:
    assert copy_pieces(text, contexts) == pieces


def test_statements_against_cuts_a_copied_list_item_from_the_sentence_before() -> None:
    contexts = ["Help message formatter which uses the argument type as the default metavar value",
                "3. If duplicate keys are detected in the mapping pattern, the pattern is considered invalid."]  # fmt: skip
    answer = " ".join(contexts)
    assert statements_against(answer, contexts, "en") == [
        "Help message formatter which uses the argument type as the default metavar value",
        "If duplicate keys are detected in the mapping pattern, the pattern is considered invalid.",
    ]  # its own list item, whose marker the splitter drops as for any list
