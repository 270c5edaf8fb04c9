"""Sentence segmentation accuracy per language: ours (sentencex + repairs), sentencex alone, pysbd (when
installed) and the regex splitter ragmetrics used up to 0.2 (English-only: a break needed whitespace and a
Latin capital). A case counts as right when the sentences equal the labelled ones exactly.

    python benchmarks/bench_segmentation.py

Cases: tests/data/segmentation_cases.jsonl (the design set the repairs were written on) and
tests/data/segmentation_heldout.jsonl (written apart, not used to write them). German is Latin script, so
its language is passed explicitly (detection would say "en").
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ragmetrics.judge.text.sentences import split_sentences

DATA = Path(__file__).parents[1] / "tests" / "data"
LANGUAGES = ("en", "de", "ru", "ja", "zh", "ko")

# The splitter of ragmetrics 0.2, kept here as the baseline.
_OLD_BOUNDARY = re.compile(r"""([.!?…]+)(["')\]»”’]*)(\s+)(?=["'(\[«“‘`A-Z0-9À-ÖØ-Þ])""")
_OLD_ABBREVIATIONS = frozenset(
    {
        "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "ca", "fig", "figs", "eq", "eqs",
        "vol", "p", "pp", "ch", "sec", "ref", "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "inc",
        "ltd", "co", "corp", "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
        "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m", "p.m", "ph.d", "viz", "resp",
    }
)  # fmt: skip


def old_regex(text: str, language: str) -> list[str]:
    del language
    out: list[str] = []
    block = " ".join(text.split())
    start = 0
    for match in _OLD_BOUNDARY.finditer(block):
        words = block[start : match.start()].split()
        word = words[-1].lstrip("\"'([«“‘") if words else ""
        if match.group(1) == "." and (
            (len(word) == 1 and word.isupper()) or word.lower() in _OLD_ABBREVIATIONS
        ):
            continue
        out.append(block[start : match.end(2)].strip())
        start = match.end()
    if block[start:].strip():
        out.append(block[start:].strip())
    return [s for s in out if s]


def plain_sentencex(text: str, language: str) -> list[str]:
    from sentencex import segment

    return [s.strip() for s in segment(language, " ".join(text.split())) if s.strip()]


def ours(text: str, language: str) -> list[str]:
    return split_sentences(text, language="de" if language == "de" else None)


def splitters() -> dict[str, Callable[[str, str], list[str]]]:
    found: dict[str, Callable[[str, str], list[str]]] = {
        "ragmetrics": ours,
        "sentencex": plain_sentencex,
        "old regex": old_regex,
    }
    try:
        import pysbd  # type: ignore[import-not-found]
    except ImportError:
        print("pysbd not installed: `pip install pysbd` adds its column")
    else:
        cache: dict[str, object] = {}

        def with_pysbd(text: str, language: str) -> list[str]:
            if language == "ko":  # pysbd has no Korean
                return []
            if language not in cache:
                cache[language] = pysbd.Segmenter(language=language, clean=False)
            segmenter = cache[language]
            return [s.strip() for s in segmenter.segment(" ".join(text.split())) if s.strip()]  # type: ignore[attr-defined]

        found["pysbd"] = with_pysbd
    return found


def main() -> None:
    for name in ("segmentation_cases.jsonl", "segmentation_heldout.jsonl"):
        cases = [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]
        totals = Counter(c["lang"] for c in cases)
        print(f"\n{name} ({len(cases)} cases)")
        header = "| splitter | " + " | ".join(LANGUAGES) + " | all | ms/case |"
        print(header)
        print("|" + "---|" * (len(LANGUAGES) + 3))
        for label, split in splitters().items():
            right: Counter[str] = Counter()
            start = time.perf_counter()
            for case in cases:
                right[case["lang"]] += split(case["text"], case["lang"]) == case["sentences"]
            elapsed = (time.perf_counter() - start) * 1000 / len(cases)
            cells = [f"{right[lang]}/{totals[lang]}" for lang in LANGUAGES]
            print(
                f"| {label} | "
                + " | ".join(cells)
                + f" | {sum(right.values())}/{len(cases)} | {elapsed:.2f} |"
            )


if __name__ == "__main__":
    main()
