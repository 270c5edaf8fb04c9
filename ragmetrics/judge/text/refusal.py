"""Whether an answer declines to answer ("I don't know", "the documents do not say").

Faithfulness asks whether what an answer claims is supported; an answer that claims nothing because it
declines has no faithfulness to measure. RAGAS returns NaN there and DeepEval counts it as fully faithful;
ragmetrics records it as not applicable, with the reason, apart from values and failures. The rule is ours and
deterministic: the answer is empty, or its first sentence is a refusal in one of the languages below
(English, German, French, Spanish, Italian, Portuguese, Dutch, Russian, Japanese, Chinese,
Korean). An answer that declines and then
explains what the documents do say is still a refusal: its first claim is that it cannot answer.
"""

from __future__ import annotations

import re

__all__ = ["is_refusal"]

_PATTERNS = [
    # English
    r"\b(i|we) (really )?(do not|don't|dont) know\b",
    r"\b(i am|i'm|im) (not sure|unsure|not certain|afraid i)",
    r"\b(i|we) (cannot|can't|can not|am unable to|are unable to|could not|couldn't) "
    r"(answer|say|tell|determine|find|help|provide)",
    r"\b(no|not enough|insufficient) (relevant )?(information|context|data)\b",
    r"\b(do not|don't|does not|doesn't) (have|contain|give|provide) (enough|sufficient|the) (information|details)",
    r"\b(the )?(provided |given |retrieved )?(context|contexts|documents?|passages?|sources?) "
    r"(do|does|did) not (say|mention|contain|cover|provide|include|specify|explain|answer)",
    r"\bnot (mentioned|covered|provided|specified|stated) in the (provided |given )?(context|documents?|passages?)",
    r"\bunable to (answer|determine|find)",
    # German, French, Spanish
    r"\bich weiß (es )?nicht\b", r"\bkeine (ausreichenden )?informationen\b",
    r"\bje ne sais pas\b", r"\bpas d'information", r"\bno (lo )?sé\b", r"\bno hay (suficiente )?información\b",
    r"\b(die )?dokumente beantworten (diese|die) frage nicht\b",
    r"\bles documents ne répondent pas\b", r"\blos documentos no responden\b",
    # Italian, Portuguese, Dutch
    r"\bnon lo so\b", r"\bnon (ci sono|ho) (abbastanza )?informazioni\b", r"\bi documenti non rispondono\b",
    r"\bnão sei\b", r"\bnão há (informação|informações) (suficientes? )?\b", r"\bos documentos não respondem\b",
    r"\bik weet het niet\b", r"\bgeen (voldoende )?informatie\b", r"\bde documenten beantwoorden\b.{0,30}\bniet\b",
    # Russian
    r"\bне знаю\b", r"\bне могу (сказать|ответить)", r"\bнет (достаточной )?информации\b",
    r"\bне (указано|упоминается|говорится)\b", r"\bдокументы не отвечают\b",
    # Japanese, Chinese, Korean (no word boundaries in these scripts)
    r"(わかりません|分かりません|わからない|不明です|情報がありません|見つかりません|答えられません|答えがありません)",
    r"(不知道|不确定|不清楚|无法回答|没有相关信息|未提及|沒有相關資訊|無法回答|没有回答这个问题)",
    r"(모르겠습니다|모릅니다|알 수 없습니다|찾을 수 없습니다|답변할 수 없습니다|정보가 없습니다|답이 없습니다)",
]  # fmt: skip
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def is_refusal(first_statement: str) -> bool:
    """Whether a statement (an answer's first) declines to answer."""
    return bool(_REFUSAL.search(first_statement.translate(_APOSTROPHES)))
