"""Public human-labelled sets the local judge is measured on, read from local copies of their repositories.

Nothing here downloads: whoever runs `bench_judge_agreement.py` clones (or unpacks) each public repository
into one folder and passes it as `--root`. Every loader reads the file layout of the repository as published
and turns each labelled item into what the judge scores (a `RagSample` dict) and the people's label (1 or 0).
A set whose files are absent is skipped and said so; nothing of these sets ships with ragmetrics.

| set | repository (folder under --root) | files | label |
|---|---|---|---|
| trec_dl2019 | naghmefarzi/llmjudge (llmjudge) | data/dl2019/{2019qrels-pass.txt, msmarco-test2019-queries.tsv, dl2019_document.jsonl} | NIST grade >= 2 |
| msmarco_hard_neg | truera/trulens (trulens) | examples/experimental/test_data/ms_marco_hard_neg_balanced.csv | relevant passage vs hard negative |
| qags_cnndm, qags_xsum | W4ngatang/qags (qags) | data/mturk_{cnndm,xsum}.jsonl | majority of three MTurk votes "yes" |
| begin | google/BEGIN-dataset (BEGIN-dataset) | */begin_*.tsv | "Fully attributable" vs "Not fully attributable" (generic dropped) |
| ragchecker | amazon-science/RAGChecker (RAGChecker) | data/meta_evaluation/human_labeled_data.json | which of two answers is more correct (two annotators summed, ties dropped) |
| xquad_<lang> | google-deepmind/xquad (xquad) | xquad.<lang>.json | SQuAD items: own paragraph / answer vs another one of the same article |
| jsquad | yahoojapan/JGLUE (JGLUE) | datasets/jsquad-v1.3/valid-v1.3.json | as XQuAD, Japanese |
| planted_<lang> | built here from XQuAD | xquad.<lang>.json | a context sentence (supported) vs the same sentence with one number, name or negation changed |
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SQUAD_LANGUAGES = ("en", "de", "es", "ru", "zh", "ar", "hi", "tr")
PLANTED_LANGUAGES = ("en", "de", "es", "ru", "zh", "vi")


@dataclass
class Item:
    """One labelled judgement: the sample the judge scores and the people's verdict (1 yes, 0 no)."""

    sample: dict[str, Any]
    label: int


@dataclass
class Pair:
    """Two answers to one question and which one people found better (1: the second, 0: the first)."""

    first: dict[str, Any]
    second: dict[str, Any]
    label: int


@dataclass
class LabelledSet:
    name: str
    source: str
    items: dict[str, list[Item]] = field(default_factory=dict)  # metric -> items
    pairs: dict[str, list[Pair]] = field(default_factory=dict)  # metric -> pairs
    note: str = ""


def _capped(items: list[Any], cap: int, rng: random.Random, label: Any = lambda x: x.label) -> list[Any]:
    """At most `cap` items, half of each label where both have enough (AUC does not depend on the balance)."""
    if len(items) <= cap:
        return items
    pos = [x for x in items if label(x) == 1]
    neg = [x for x in items if label(x) != 1]
    rng.shuffle(pos)
    rng.shuffle(neg)
    half = cap // 2
    take_pos = min(len(pos), max(half, cap - len(neg)))
    return pos[:take_pos] + neg[: cap - take_pos]


def trec_dl2019(root: Path, cap: int, rng: random.Random) -> LabelledSet | None:
    base = root / "llmjudge" / "data" / "dl2019"
    qrels, queries, docs = (
        base / "2019qrels-pass.txt",
        base / "msmarco-test2019-queries.tsv",
        base / "dl2019_document.jsonl",
    )
    if not all(p.exists() for p in (qrels, queries, docs)):
        return None
    question = dict(line.split("\t", 1) for line in queries.read_text(encoding="utf-8").splitlines() if line)
    text = {}
    for line in docs.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        text[row["docid"]] = row["doc"]
    items = []
    for line in qrels.read_text(encoding="utf-8").splitlines():
        qid, _, docid, grade = line.split()
        if qid in question and docid in text:
            sample = {"id": f"{qid}/{docid}", "question": question[qid].strip(), "contexts": [text[docid]]}
            items.append(Item(sample, int(int(grade) >= 2)))
    chosen = _capped(items, cap, rng)
    return LabelledSet(
        "trec_dl2019",
        "naghmefarzi/llmjudge data/dl2019 (TREC DL 2019 passages, NIST grades; relevant = grade >= 2)",
        items={"passage_relevance": chosen, "context_relevancy": chosen},
    )


def msmarco_hard_neg(root: Path, cap: int, rng: random.Random) -> LabelledSet | None:
    path = root / "trulens" / "examples" / "experimental" / "test_data" / "ms_marco_hard_neg_balanced.csv"
    if not path.exists():
        return None
    items = []
    with path.open(encoding="utf-8", newline="") as handle:
        for n, row in enumerate(csv.DictReader(handle)):
            query = row["query"].lstrip(")").strip()
            passage = row["expected_response"].strip()
            if query and passage:
                sample = {"id": f"m{n}", "question": query, "contexts": [passage]}
                items.append(Item(sample, int(float(row["expected_score"]) >= 0.5)))
    chosen = _capped(items, cap, rng)
    return LabelledSet(
        "msmarco_hard_neg",
        "truera/trulens ms_marco_hard_neg_balanced.csv (relevant passage vs hard negative)",
        items={"passage_relevance": chosen, "context_relevancy": chosen},
    )


def _qags(root: Path, part: str, cap: int, rng: random.Random) -> LabelledSet | None:
    path = root / "qags" / "data" / f"mturk_{part}.jsonl"
    if not path.exists():
        return None
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        for k, sentence in enumerate(row["summary_sentences"]):
            votes = [r["response"] == "yes" for r in sentence["responses"]]
            sample = {
                "id": f"{part}{n}.{k}",
                "question": "What does the article report?",
                "contexts": [row["article"]],
                "answer": sentence["sentence"],
                "language": "en",
            }
            items.append(Item(sample, int(sum(votes) * 2 > len(votes))))
    return LabelledSet(
        f"qags_{part}",
        f"W4ngatang/qags data/mturk_{part}.jsonl (summary sentences, majority of 3 MTurk votes)",
        items={"faithfulness": _capped(items, cap, rng)},
    )


def qags_cnndm(root: Path, cap: int, rng: random.Random) -> LabelledSet | None:
    return _qags(root, "cnndm", cap, rng)


def qags_xsum(root: Path, cap: int, rng: random.Random) -> LabelledSet | None:
    return _qags(root, "xsum", cap, rng)


def begin(root: Path, cap: int, rng: random.Random) -> LabelledSet | None:
    base = root / "BEGIN-dataset"
    files = sorted(base.glob("*/begin_*.tsv")) if base.exists() else []
    if not files:
        return None
    items = []
    for path in files:
        with path.open(encoding="utf-8", newline="") as handle:
            for n, row in enumerate(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)):
                label = (row.get("begin_label") or "").strip()
                if label not in ("Fully attributable", "Not fully attributable"):
                    continue  # "Generic" responses claim nothing to attribute
                sample = {
                    "id": f"{path.stem}.{n}",
                    "question": (row["message"] or "").strip() or "(no message)",
                    "contexts": [row["knowledge"]],
                    "answer": row["response"],
                    "language": "en",
                }
                items.append(Item(sample, int(label == "Fully attributable")))
    return LabelledSet(
        "begin",
        "google/BEGIN-dataset (WoW, CMU-DoG, TopicalChat responses; fully vs not fully attributable)",
        items={"faithfulness": _capped(items, cap, rng)},
    )


def ragchecker(root: Path, cap: int, rng: random.Random) -> LabelledSet | None:
    path = root / "RAGChecker" / "data" / "meta_evaluation" / "human_labeled_data.json"
    if not path.exists():
        return None
    rows = json.loads(path.read_text(encoding="utf-8"))
    votes: dict[int, list[int]] = defaultdict(list)
    by_id = {}
    for row in rows:
        votes[row["instance_id"]].append(int(row["correctness_label"]))
        by_id[row["instance_id"]] = row
    pairs = []
    for instance, labels in sorted(votes.items()):
        total = sum(labels)
        if total == 0:
            continue  # the annotators saw no difference, or disagreed evenly
        row = by_id[instance]

        def sample(which: str, row: dict[str, Any] = row, instance: int = instance) -> dict[str, Any]:
            return {
                "id": f"r{instance}.{which}",
                "question": row["query"],
                "answer": row[which]["response"],
                "reference": row["gt_answer"],
                "language": "en",
            }

        pairs.append(Pair(sample("model1"), sample("model2"), int(total > 0)))
    chosen = _capped(pairs, cap, rng)
    return LabelledSet(
        "ragchecker",
        "amazon-science/RAGChecker meta-evaluation (which of two answers is more correct; 2 annotators)",
        pairs={"answer_correctness": chosen, "answer_similarity": chosen},
    )


def _squad_articles(path: Path) -> list[list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return [article["paragraphs"] for article in data if len(article["paragraphs"]) >= 2]


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def _sentence_with(context: str, start: int) -> str:
    """The sentence of `context` that holds character `start` (a crude split: SQuAD contexts are plain prose)."""
    for piece in re.finditer(r"[^.!?。！？]+[.!?。！？]?", context):
        if piece.start() <= start < piece.end():
            return piece.group().strip()
    return context.strip()


def _squad(name: str, source: str, path: Path, language: str, cap: int, rng: random.Random) -> LabelledSet:
    articles = _squad_articles(path)
    relevance: list[Item] = []
    precision: list[Item] = []
    recall: list[Item] = []
    answers: list[Item] = []
    for a, paragraphs in enumerate(articles):
        for p, paragraph in enumerate(paragraphs):
            context = paragraph["context"]
            if "[SEP]" in context:  # JSQuAD prefixes the article title
                context = context.split("[SEP]", 1)[1].strip()
            others = [q for q in range(len(paragraphs)) if q != p]
            for k, qa in enumerate(paragraph["qas"]):
                if qa.get("is_impossible") or not qa["answers"]:
                    continue
                question, answer = qa["question"].strip(), qa["answers"][0]["text"].strip()
                other = paragraphs[rng.choice(others)]["context"]
                if "[SEP]" in other:
                    other = other.split("[SEP]", 1)[1].strip()
                key = f"{name}.{a}.{p}.{k}"
                base = {"question": question, "language": language}
                for ctx, label, tag in ((context, 1, "own"), (other, 0, "other")):
                    relevance.append(Item({**base, "id": f"{key}.{tag}", "contexts": [ctx]}, label))
                    precision.append(
                        Item({**base, "id": f"{key}.{tag}", "contexts": [ctx], "reference": answer}, label)
                    )
                    recall.append(
                        Item(
                            {
                                **base,
                                "id": f"{key}.{tag}",
                                "contexts": [ctx],
                                "reference": _sentence_with(context, qa["answers"][0]["answer_start"]),
                            },
                            label,
                        )
                    )
                # The answer to another question about the same paragraph: on topic, but not this answer.
                siblings = [
                    q["answers"][0]["text"].strip()
                    for j, q in enumerate(paragraph["qas"])
                    if j != k and q["answers"] and q["answers"][0]["text"].strip() != answer
                ]
                if siblings:
                    answers.append(Item({**base, "id": f"{key}.a", "answer": answer}, 1))
                    answers.append(Item({**base, "id": f"{key}.b", "answer": rng.choice(siblings)}, 0))
    return LabelledSet(
        name,
        source,
        items={
            "context_relevancy": _capped(relevance, cap, rng),
            "passage_relevance": _capped(relevance, cap, rng),
            "context_precision": _capped(precision, cap, rng),
            "context_recall": _capped(recall, cap, rng),
            "answer_relevancy": _capped(answers, cap, rng),
        },
    )


def xquad(root: Path, language: str, cap: int, rng: random.Random) -> LabelledSet | None:
    path = root / "xquad" / f"xquad.{language}.json"
    if not path.exists():
        return None
    source = f"google-deepmind/xquad xquad.{language}.json (own paragraph / answer vs another of the article)"
    return _squad(f"xquad_{language}", source, path, language, cap, rng)


def jsquad(root: Path, cap: int, rng: random.Random) -> LabelledSet | None:
    path = root / "JGLUE" / "datasets" / "jsquad-v1.3" / "valid-v1.3.json"
    if not path.exists():
        return None
    source = "yahoojapan/JGLUE JSQuAD v1.3 valid (own paragraph / answer vs another of the article)"
    return _squad("jsquad", source, path, "ja", cap, rng)


# -- planted contradictions -------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_NEGATIONS = {
    "en": [(" is ", " is not "), (" was ", " was not "), (" are ", " are not "), (" were ", " were not ")],
    "de": [(" ist ", " ist nicht "), (" war ", " war nicht "), (" sind ", " sind nicht ")],
    "es": [(" es ", " no es "), (" fue ", " no fue "), (" son ", " no son "), (" está ", " no está ")],
    "ru": [(" был ", " не был "), (" была ", " не была "), (" является ", " не является ")],
    "zh": [("是", "不是"), ("有", "没有")],
    "vi": [(" là ", " không phải là "), (" có ", " không có ")],
}
_CAPITALISED = re.compile(r"\b[A-ZÀ-ÖØ-ÞА-Я][\w'-]{2,}")


def _change_number(sentence: str, rng: random.Random) -> str | None:
    found = list(_NUMBER.finditer(sentence))
    if not found:
        return None
    m = rng.choice(found)
    digits = m.group()
    if re.fullmatch(r"\d{4}", digits) and 1000 < int(digits) < 2100:
        new = str(int(digits) + rng.choice([-7, -3, 2, 5, 11]))
    else:
        head = re.match(r"\d+", digits)
        assert head is not None
        value = int(head.group())
        new = str(value + rng.choice([1, 2, 3, 7]) if value < 10 else value * 2 + 1) + digits[head.end() :]
    return sentence[: m.start()] + new + sentence[m.end() :]


def _change_name(sentence: str, pool: list[str], rng: random.Random) -> str | None:
    words = [m for m in _CAPITALISED.finditer(sentence) if m.start() > 0]  # not the sentence's first word
    if not words:
        return None
    m = rng.choice(words)
    choices = [w for w in pool if w != m.group() and w.lower() not in sentence.lower()]
    if not choices:
        return None
    return sentence[: m.start()] + rng.choice(choices) + sentence[m.end() :]


def _negate(sentence: str, language: str, rng: random.Random) -> str | None:
    options = [(a, b) for a, b in _NEGATIONS.get(language, []) if a in sentence]
    if not options:
        return None
    a, b = rng.choice(options)
    return sentence.replace(a, b, 1)


def planted(root: Path, language: str, cap: int, rng: random.Random) -> LabelledSet | None:
    """Sentences copied from a paragraph (supported) and the same sentences with one number, one name or one
    negation changed (contradicted), judged for faithfulness against the paragraph."""
    path = root / "xquad" / f"xquad.{language}.json"
    if not path.exists():
        return None
    articles = _squad_articles(path)
    pool = sorted({m.group() for arts in articles for p in arts for m in _CAPITALISED.finditer(p["context"])})
    items: list[Item] = []
    n = 0
    for paragraphs in articles:
        for paragraph in paragraphs:
            context = paragraph["context"]
            if language == "zh":
                sentences = [s.strip() for s in re.split(r"(?<=。)", context) if len(s.strip()) > 12]
            else:
                sentences = [s.strip() for s in _SENTENCE_END.split(context) if len(s.strip()) > 30]
            for sentence in sentences:
                changers = [
                    lambda s: _change_number(s, rng),
                    lambda s: _change_name(s, pool, rng),
                    lambda s: _negate(s, language, rng),
                ]
                rng.shuffle(changers)
                changed = next((c for c in (f(sentence) for f in changers) if c and c != sentence), None)
                if changed is None:
                    continue
                base = {"question": "What does the text say?", "contexts": [context], "language": language}
                items.append(Item({**base, "id": f"p{language}{n}.ok", "answer": sentence}, 1))
                items.append(Item({**base, "id": f"p{language}{n}.bad", "answer": changed}, 0))
                n += 1
    return LabelledSet(
        f"planted_{language}",
        f"built from google-deepmind/xquad xquad.{language}.json: a sentence vs one number, name or negation changed",
        items={"faithfulness": _capped(items, cap, rng)},
    )


def load_all(root: Path, cap: int, seed: int, only: set[str] | None = None) -> Iterator[LabelledSet]:
    """Every set found under `root` (in the table's order), each item list capped at `cap`, sampled by `seed`."""
    loaders: list[tuple[str, Any]] = [
        ("trec_dl2019", trec_dl2019),
        ("msmarco_hard_neg", msmarco_hard_neg),
        ("qags_cnndm", qags_cnndm),
        ("qags_xsum", qags_xsum),
        ("begin", begin),
        ("ragchecker", ragchecker),
        *((f"xquad_{lang}", lambda r, c, g, lang=lang: xquad(r, lang, c, g)) for lang in SQUAD_LANGUAGES),
        ("jsquad", jsquad),
        *(
            (f"planted_{lang}", lambda r, c, g, lang=lang: planted(r, lang, c, g))
            for lang in PLANTED_LANGUAGES
        ),
    ]
    for name, loader in loaders:
        if only is not None and name not in only:
            continue
        found = loader(root, cap, random.Random(f"{seed}:{name}"))
        if found is None:
            print(f"  {name}: not found under {root}, skipped")
            continue
        yield found
