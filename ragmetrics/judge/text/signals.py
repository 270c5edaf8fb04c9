"""Lexical signals the local judge combines with embedding similarity, in any language.

Why: a cosine alone is calibrated for the text it was tuned on. Out of its home domain, two things go wrong
(measured in docs/local_judge.md): every sentence of a long on-topic context looks "similar enough", and an
evasive answer that restates the question scores higher than a terse correct one. Word overlap with the
question, what an answer adds beyond the question, and hedging phrases are signals no embedding threshold
sees; the fitted verdict model (`judge.backends.local_model`) weighs them.

Content units: lowercased words of two or more letters outside a short stop list in space-separated
scripts; overlapping character bigrams inside runs of Chinese, Japanese or Korean characters (which have no
reliable spaces between words), so "東京タワーの高さ" and "東京タワーは" share 東京, 京タ, タワ and ワー.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "STOP_WORDS",
    "answer_type_met",
    "content_units",
    "coverage",
    "expected_answer_type",
    "hedge_count",
    "novelty",
]

_WORD = re.compile(r"[^\W\d_]{2,}|\d+(?:[.,]\d+)?", re.UNICODE)
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_STOP_WORDS = """a an the and or but if of to in on at by for with from as is are was were be been being it its this
    that these those there here what which who whom whose when where why how do does did done can could
    should would will shall may might must have has had having not no yes so than then too very just also
    about into over under out up down any some all each more most much many such own same other only i you
    he she we they me him her us them my your our their mine yours ours theirs please
    der die das und oder ist sind war ein eine einer eines einem einen nicht mit von zu im in auf für wie
    was wer wo wann warum den dem des auch es sie er wir ihr
    и в во на с со по к ко о об от до из за для не ни но а же ли что как это этот эта эти то так бы был
    была были быть есть или у он она они мы вы я ты его её их"""
_STOP = frozenset(_STOP_WORDS.split())
STOP_WORDS = _STOP
"""Function words of English, German and Russian that are never content."""
# Phrases that deflect instead of answering; counted, not matched whole-answer, since an evasive answer may
# wrap them in polite sentences. Refusals proper are `text.refusal.is_refusal`.
_HEDGES = [
    r"\bit (really |all )?depends\b", r"\bdepends on (many|several|various|a number of)\b",
    r"\b(you|one) (may|might|could) (want|wish|need) to\b", r"\bi('d| would) (recommend|suggest)\b",
    r"\b(contact|consult|ask|check with|reach out to) (your|a|an|the) ", r"\b(hard|difficult) to say\b",
    r"\bin general\b", r"\bgenerally speaking\b", r"\bthere are (many|several|various) (factors|ways|options)\b",
    r"\bcan(not|'t) (be sure|guarantee)\b", r"\bnot (entirely )?(sure|certain)\b", r"\bgood question\b",
    r"\bplease refer to\b", r"\bfor more (information|details)\b", r"\bit('s| is) (best|advisable) to\b",
    r"\bes kommt darauf an\b", r"\bwenden sie sich an\b",
    r"\bзависит от\b", r"\bобратитесь (к|в)\b", r"\bсложно сказать\b", r"\bрекоменду(ем|ю) (уточнить|обратиться)",
    r"\bв (целом|общем)\b", r"\bмогут быть разные\b",
    r"(場合によ|一概には|お問い合わせ|ご確認ください|確認してください|ご相談ください|状況によ|ケースバイケース)",
    r"(视情况而定|取决于|建议咨询|请联系|很难说|请咨询|因人而异|具体情况)",
    r"(경우에 따라|문의하시기|문의해 주|확인하시기|상황에 따라|말씀드리기 어렵|상담하시기)",
]  # fmt: skip
_HEDGE = re.compile("|".join(f"(?:{p})" for p in _HEDGES), re.IGNORECASE)


@lru_cache(maxsize=65536)
def content_units(text: str) -> frozenset[str]:
    """The content words (and CJK character bigrams) of `text`, lowercased."""
    lowered = text.lower()
    units = {w for w in _WORD.findall(_CJK_RUN.sub(" ", lowered)) if w not in _STOP}
    for run in _CJK_RUN.findall(lowered):
        if len(run) == 1:
            units.add(run)
        units.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(units)


def coverage(question: frozenset[str], text: frozenset[str]) -> float:
    """Share of the question's content units that `text` contains (0 when the question has none)."""
    return len(question & text) / len(question) if question else 0.0


def novelty(question: frozenset[str], answer: frozenset[str]) -> float:
    """Share of the answer's content units the question does not contain: what the answer adds (0 for an
    answer with no content units)."""
    return len(answer - question) / len(answer) if answer else 0.0


def hedge_count(text: str) -> int:
    """How many deflecting phrases `text` contains."""
    return len(_HEDGE.findall(text.replace("\u2019", "'")))


# What kind of answer a question asks for, from its question words (several languages). Classic QA
# answer-type matching: a reply to "how many ..." without a number, or to "is ...?" without yes or no, does
# not answer it, however similar its words are.
_NUMERIC_Q = re.compile(
    r"\bhow (many|much|long|big|tall|high|old|fast|far|deep|heavy|large|often)\b|\bwhat (percentage|temperature)\b"
    r"|\bwie (viele?|lange|hoch|alt|gro(ß|ss))\b|\bсколько\b|\bкак(ая|ой|ова) (глубина|высота|длина|скорость)\b"
    r"|(何メートル|何時間|何年|何人|何キロ|何度|何回|いくら|どのくらい|どれくらい|多少|几|多长|多高|多大|多久|몇|얼마)",
    re.IGNORECASE,
)
_TIME_Q = re.compile(
    r"\bwhen\b|\bwhat year\b|\bwann\b|\bкогда\b|\bв каком году\b|(いつ|何年|何月|什么时候|哪一年|何时|언제|몇 년)",
    re.IGNORECASE,
)
_YES_NO_Q = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|will|would|has|have|should)\b|^\s*(ist|sind|kann|gibt)\b",
    re.IGNORECASE,
)
_YES_NO_A = re.compile(
    r"^\s*(yes|no|yeah|nope|not really|ja|nein|да|нет|はい|いいえ|是|不是|对|不|네|아니요|예)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(
    r"\d|[一二三四五六七八九十百千万億亿]|\b(one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|million|billion|dozen|half)\b",
    re.IGNORECASE,
)
_MONTH = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december|spring|summer|autumn|fall|winter|century)\b"
    r"|(январ|феврал|март|апрел|ма[йя]|июн|июл|август|сентябр|октябр|ноябр|декабр|весн|лет|осен|зим|век)|[年月日]|[월년]",
    re.IGNORECASE,
)


def expected_answer_type(question: str) -> str | None:
    """'number', 'time', 'yes_no' or None (no expectation) for a question."""
    if _NUMERIC_Q.search(question):
        return "number"
    if _TIME_Q.search(question):
        return "time"
    if _YES_NO_Q.search(question):
        return "yes_no"
    return None


def answer_type_met(question: str, answer: str) -> float:
    """1 when `answer` has what the question asks for (a number, a time, a yes or no), 0 when it lacks it,
    0.5 when the question sets no expectation."""
    expected = expected_answer_type(question)
    if expected is None:
        return 0.5
    if expected == "number":
        return 1.0 if _DIGIT.search(answer) else 0.0
    if expected == "time":
        return 1.0 if _DIGIT.search(answer) or _MONTH.search(answer) else 0.0
    return 1.0 if _YES_NO_A.search(answer) else 0.0
