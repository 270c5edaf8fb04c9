"""Fit the local judge's verdict models and measure them out of domain (docs/local_judge.md).

    python tools/fit_local_judge.py            # fit, print the leave-one-domain-out tables
    python tools/fit_local_judge.py --write    # ... and write ragmetrics/judge/backends/assets/local_models.json

Data: labelled topics in tests/data/local_judge_topics.jsonl (Python docs, the original calibration set) and
tests/data/local_judge_ood/*.jsonl (software docs, encyclopedic text, support Q&A, news and science, in
English; and Japanese, Korean, Chinese and Russian). Each topic has a question, a passage that answers it
(short, or several paragraphs with the answer in one), a passage on a neighbouring subject that does not,
a reference answer, another correct answer and, in the newer files, an answer to a neighbouring question,
an evasive reply and an off-topic reply. Labelled items built from each topic:

- context relevance (one context per item): the answering passage 1; the neighbouring passage 0; the
  answering passage of a topic from another domain 0;
- answer relevance: the reference and the answer 1; the neighbouring, evasive and off-topic replies 0 (the
  Python-docs topics have no such replies: the answer of another topic stands in as the neighbouring one).

Sentence-level training rows for context relevancy: in an answering passage, the sentence closest to the
reference (cosine) is relevant and, in a passage of several paragraphs, sentences of the other paragraphs
are not (their status in a short passage is unknown, so they are left out); every sentence of a
non-answering passage is not relevant. The item-level score is what the judge reports (the share of
relevant sentences; the probability for answer relevancy), so the ROC AUC over items is the judge's own.

Fitting: logistic regression with L2 penalty (1.0 on standardised features), classes weighted equally, by
Newton's method. Leave-one-domain-out: each domain's figures come from a model fitted on the other domains
only; the shipped model is fitted on all of them. MiniLM is fitted and measured on English topics; E5 on
every language, with per-language figures from a model fitted without that language.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragmetrics.judge.backends.local import LocalThresholds  # noqa: E402
from ragmetrics.judge.backends.local_model import (  # noqa: E402
    ANSWER_FEATURES,
    ASSETS,
    SENTENCE_FEATURES,
    FittedModel,
    answer_features,
    background_texts,
    sentence_features,
)
from ragmetrics.judge.base import Embedder  # noqa: E402
from ragmetrics.judge.text.sentences import split_sentences, split_statements  # noqa: E402
from ragmetrics.trust.agreement import roc_auc  # noqa: E402

DATA = ROOT / "tests" / "data"
OLD_TOPICS = DATA / "local_judge_topics.jsonl"
OOD_DIR = DATA / "local_judge_ood"
PENALTY = 1.0


@dataclass
class Topic:
    domain: str
    lang: str
    slug: str
    question: str
    support: str
    distractor: str
    reference: str
    answer: str
    negatives: dict[str, str] = field(default_factory=dict)  # near / evasive / off_topic replies
    long: bool = False


def load_topics() -> list[Topic]:
    topics: list[Topic] = []
    for row in _read(OLD_TOPICS):
        topics.append(Topic("python_docs", "en", row["topic"], row["question"], row["support"],
                            row["distractor"], row["reference"], row["answer"]))  # fmt: skip
    for path in sorted(OOD_DIR.glob("*.jsonl")) if OOD_DIR.exists() else []:
        for row in _read(path):
            negatives = {k: row[k] for k in ("near_answer", "evasive", "off_topic") if row.get(k)}
            topics.append(Topic(row["domain"], row["lang"], row["topic"], row["question"], row["support"],
                                row["distractor"], row["reference"], row["answer"], negatives,
                                row.get("length") == "long"))  # fmt: skip
    # Replies a topic file does not spell out, derived from other texts (deterministically):
    # - near: the first sentence of the neighbouring passage (same vocabulary, does not answer);
    #   for the Python-docs topics, whose distractors are whole passages, another topic's answer;
    # - off-topic: the answer of a topic from another domain in the same language.
    by_domain: dict[tuple[str, str], list[Topic]] = defaultdict(list)
    for t in topics:
        by_domain[(t.lang, t.domain)].append(t)
    for i, t in enumerate(topics):
        same = by_domain[(t.lang, t.domain)]
        if "near_answer" not in t.negatives:
            if t.domain == "python_docs":
                t.negatives["near_answer"] = same[(same.index(t) + 1) % len(same)].answer
            else:
                t.negatives["near_answer"] = split_sentences(t.distractor, _language(t))[0]
        if "off_topic" not in t.negatives:
            other = _other_domain(topics, i)
            if other is not None:
                t.negatives["off_topic"] = other.answer
    return topics


def _other_domain(topics: list[Topic], i: int) -> Topic | None:
    t = topics[i]
    for step in range(7, 7 + len(topics)):
        u = topics[(i + step) % len(topics)]
        if u.domain != t.domain and u.lang == t.lang:
            return u
    return None


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class ContextItem:
    topic: Topic
    context: str
    label: int
    kind: str  # answering / neighbouring / other_domain


@dataclass
class AnswerItem:
    topic: Topic
    answer: str
    label: int
    kind: str


def build_items(topics: list[Topic]) -> tuple[list[ContextItem], list[AnswerItem]]:
    """The labelled items of the module doc, plus long contexts: the answering passage as one paragraph
    beside the neighbouring passage and a passage of another topic of its domain (1), and the neighbouring
    passage between two such passages (0)."""
    contexts: list[ContextItem] = []
    answers: list[AnswerItem] = []
    by_domain: dict[tuple[str, str], list[Topic]] = defaultdict(list)
    for t in topics:
        by_domain[(t.lang, t.domain)].append(t)
    for i, t in enumerate(topics):
        same = by_domain[(t.lang, t.domain)]
        k = same.index(t)
        picks = dict.fromkeys((k + step) % len(same) for step in (3, 7, 11))
        others = [same[j] for j in picks if j != k]
        contexts.append(ContextItem(t, t.support, 1, "answering"))
        contexts.append(ContextItem(t, t.distractor, 0, "neighbouring"))
        for o in others[:2]:
            contexts.append(ContextItem(t, o.support, 0, "same_domain"))
        other = _other_domain(topics, i)
        if other is not None:
            contexts.append(ContextItem(t, other.support, 0, "other_domain"))
        if len(others) == 3:
            # Long contexts as a retriever returns them: the answer in one paragraph beside the
            # neighbouring passage and another of the domain; or those without the answer.
            paragraphs = [others[0].support, t.distractor]
            paragraphs.insert(k % 3, t.support)
            contexts.append(ContextItem(t, "\n\n".join(paragraphs), 1, "long_answering"))
            negative = [others[0].support, others[1].support]
            negative.insert(k % 3, t.distractor)
            contexts.append(ContextItem(t, "\n\n".join(negative), 0, "long_negative"))
        answers.append(AnswerItem(t, t.reference, 1, "reference"))
        answers.append(AnswerItem(t, t.answer, 1, "answer"))
        for kind, text in t.negatives.items():
            answers.append(AnswerItem(t, text, 0, kind))
        if len(same) > 1:
            answers.append(AnswerItem(t, same[(k + 5) % len(same)].answer, 0, "same_domain"))
    return contexts, answers


class Vectors:
    """Every text embedded once per model."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.table: dict[str, NDArray[np.float32]] = {}

    async def add(self, texts: list[str]) -> None:
        todo = sorted({t for t in texts if t not in self.table})
        for start in range(0, len(todo), 256):
            batch = todo[start : start + 256]
            vectors = await self.embedder.embed(batch)
            self.table.update(zip(batch, vectors, strict=True))

    def __call__(self, texts: list[str]) -> NDArray[np.float32]:
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


def _language(topic: Topic) -> str | None:
    return None if topic.lang == "en" else topic.lang


def context_rows(
    item: ContextItem, vec: Vectors, background: NDArray[np.float32]
) -> tuple[NDArray[np.float64], list[float], list[int | None]]:
    """Feature rows of the item's sentences, their cosines, and training labels (None: left out)."""
    t = item.topic
    paragraphs = [p for p in item.context.split("\n\n") if p.strip()]
    sentences, paragraph_of = [], []
    for n, p in enumerate(paragraphs):
        for s in split_sentences(p, _language(t)):
            sentences.append(s)
            paragraph_of.append(n)
    q = vec([t.question])[0]
    s_vecs = vec(sentences)
    bg = float((background @ q).mean())
    features = sentence_features(t.question, q, bg, sentences, s_vecs, [0] * len(sentences), [item.context])
    cosines = (s_vecs @ q).astype(float).tolist()
    labels: list[int | None] = [0] * len(sentences)
    if item.label == 1:
        best = int(np.argmax(s_vecs @ vec([t.reference])[0]))
        labels = [None] * len(sentences)
        labels[best] = 1
        if len(paragraphs) > 1:
            labels = [1 if i == best else (0 if paragraph_of[i] != paragraph_of[best] else None)
                      for i in range(len(sentences))]  # fmt: skip
    return features, cosines, labels


def answer_row(item: AnswerItem, vec: Vectors, background: NDArray[np.float32]) -> NDArray[np.float64]:
    t = item.topic
    statements = split_statements(item.answer, _language(t)) or [item.answer]
    q, a = vec([t.question])[0], vec([item.answer])[0]
    bg, abg = float((background @ q).mean()), float((background @ a).mean())
    return answer_features(t.question, item.answer, statements, q, a, vec(statements), bg, abg)


def fit_logistic(x: NDArray[np.float64], y: NDArray[np.float64], features: tuple[str, ...]) -> FittedModel:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    weights = np.where(y == 1, 0.5 / max(1, int(y.sum())), 0.5 / max(1, int((1 - y).sum()))) * len(y)
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], PENALTY)
    penalty[-1] = 0.0  # no penalty on the intercept
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z @ beta)))
        gradient = z.T @ (weights * (p - y)) + penalty * beta
        hessian = (z.T * (weights * p * (1 - p))) @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return FittedModel(features, tuple(mean.tolist()), tuple(scale.tolist()), tuple(beta[:-1].tolist()),
                       float(beta[-1]))  # fmt: skip


def balanced_accuracy(scores: list[float], labels: list[int], cut: float) -> float:
    pos = [s >= cut for s, y in zip(scores, labels, strict=True) if y]
    neg = [s < cut for s, y in zip(scores, labels, strict=True) if not y]
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2 if pos and neg else math.nan


@dataclass
class Prepared:
    contexts: list[ContextItem]
    answers: list[AnswerItem]
    ctx_features: list[NDArray[np.float64]]
    ctx_cosines: list[list[float]]
    ctx_labels: list[list[int | None]]
    ans_features: NDArray[np.float64]
    ans_cosines: list[float]


async def prepare(topics: list[Topic], embedder: Embedder) -> Prepared:
    contexts, answers = build_items(topics)
    vec = Vectors(embedder)
    texts: list[str] = list(background_texts())
    for t in topics:
        texts += [t.question, t.reference, t.answer, *t.negatives.values()]
        for ctx in (t.support, t.distractor):
            for p in ctx.split("\n\n"):
                texts += split_sentences(p, _language(t))
    for a in answers:
        texts += split_statements(a.answer, _language(a.topic)) or [a.answer]
    await vec.add(texts)
    background = vec(list(background_texts()))
    rows = [context_rows(c, vec, background) for c in contexts]
    ans = np.vstack([answer_row(a, vec, background) for a in answers])
    ans_cos = [float(vec([a.answer])[0] @ vec([a.topic.question])[0]) for a in answers]
    return Prepared(contexts, answers, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                    ans, ans_cos)  # fmt: skip


def fit_models(p: Prepared, keep: Callable[[Topic], bool]) -> dict[str, FittedModel]:
    xs, ys = [], []
    for item, feats, labels in zip(p.contexts, p.ctx_features, p.ctx_labels, strict=True):
        if not keep(item.topic):
            continue
        for row, label in zip(feats, labels, strict=True):
            if label is not None:
                xs.append(row)
                ys.append(label)
    ctx = fit_logistic(np.asarray(xs), np.asarray(ys, dtype=float), SENTENCE_FEATURES)
    mask = [keep(a.topic) for a in p.answers]
    ans = fit_logistic(p.ans_features[mask], np.asarray([a.label for a in p.answers], float)[mask],
                       ANSWER_FEATURES)  # fmt: skip
    return {"context_relevancy": ctx, "answer_relevancy": ans}


def context_scores(p: Prepared, model: FittedModel) -> list[float]:
    return [float((model.probability(f) >= model.threshold).mean()) for f in p.ctx_features]


def evaluate(
    p: Prepared,
    models: dict[str, FittedModel],
    select: Callable[[Topic], bool],
    old: Prepared,
    old_threshold: float,
) -> dict[str, Any]:
    """AUCs of the fitted judge on the selected topics' items, next to the cosine-threshold judge of `old`
    (MiniLM with its shipped threshold: what every user had before); on all items, on long contexts only, and
    on correct answers against evasive ones only."""
    c_idx = [i for i, c in enumerate(p.contexts) if select(c.topic)]
    a_idx = [i for i, a in enumerate(p.answers) if select(a.topic)]
    new_ctx = context_scores(p, models["context_relevancy"])
    old_ctx = [float(np.mean(np.asarray(c) >= old_threshold)) for c in old.ctx_cosines]
    new_ans = models["answer_relevancy"].probability(p.ans_features).tolist()
    old_ans = [min(1.0, max(0.0, c)) for c in old.ans_cosines]
    long_idx = [i for i in c_idx if p.contexts[i].kind in ("long_answering", "long_negative")]
    evasive_idx = [i for i in a_idx if p.answers[i].kind in ("reference", "answer", "evasive")]

    def area(scores: list[float], idx: list[int], labels: list[int]) -> float:
        return roc_auc([scores[i] for i in idx], labels)

    c_labels = [p.contexts[i].label for i in c_idx]
    a_labels = [p.answers[i].label for i in a_idx]
    l_labels = [p.contexts[i].label for i in long_idx]
    e_labels = [p.answers[i].label for i in evasive_idx]
    return {
        "context_items": len(c_idx),
        "answer_items": len(a_idx),
        "context_auc_new": area(new_ctx, c_idx, c_labels),
        "context_auc_old": area(old_ctx, c_idx, c_labels),
        "long_auc_new": area(new_ctx, long_idx, l_labels),
        "long_auc_old": area(old_ctx, long_idx, l_labels),
        "answer_auc_new": area(new_ans, a_idx, a_labels),
        "answer_auc_old": area(old_ans, a_idx, a_labels),
        "evasive_auc_new": area(new_ans, evasive_idx, e_labels),
        "evasive_auc_old": area(old_ans, evasive_idx, e_labels),
        "answer_balanced_accuracy_new": balanced_accuracy([new_ans[i] for i in a_idx], a_labels, 0.5),
    }


def threshold_fit(topics: list[Topic], embedder: Embedder) -> tuple[dict[str, float], dict[str, float]]:
    """Cosine thresholds for the verdicts that keep them, for a model other than MiniLM, with their balanced
    accuracy: the optimum on a 0.01 grid over pairs built from the topics as benchmarks/calibrate_local_judge.py
    builds them for MiniLM (precision: passage vs reference; utilization: vs answer; recall: each reference
    statement vs passage; answering passage 1, neighbouring 0). Faithfulness borrows recall's, as for MiniLM."""
    from ragmetrics.judge.backends.local import pair_similarities

    pairs: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for t in topics:
        for passage, label in ((t.support, 1), (t.distractor, 0)):
            pairs["context_precision"].append((passage, t.reference, label))
            pairs["context_utilization"].append((passage, t.answer, label))
            for statement in split_statements(t.reference, _language(t)):
                pairs["context_recall"].append((statement, passage, label))
    thresholds: dict[str, float] = {}
    accuracy: dict[str, float] = {}
    for kind, rows in pairs.items():
        sims = asyncio.run(pair_similarities(embedder, kind, [(a, b) for a, b, _ in rows]))  # type: ignore[arg-type]
        scores = [float(x) for x in sims if x is not None]
        labels = [y for (_, _, y), x in zip(rows, sims, strict=True) if x is not None]
        grid = [i / 100 for i in range(101)]
        accs = [balanced_accuracy(scores, labels, g) for g in grid]
        best = max(accs)
        chosen = [g for g, a in zip(grid, accs, strict=True) if a == best]
        thresholds[kind] = chosen[len(chosen) // 2]
        accuracy[kind] = round(best, 3)
    thresholds["context_relevancy"] = thresholds["context_precision"]  # unused: the fitted model decides
    thresholds["faithfulness"] = thresholds["context_recall"]
    return thresholds, accuracy


def report(
    name: str, p: Prepared, groups: dict[str, Callable[[Topic], bool]], pool: Callable[[Topic], bool],
    old: Prepared, old_threshold: float,
) -> list[dict[str, Any]]:  # fmt: skip
    """One row per held-out group: fitted on the `pool` topics outside it, measured on it."""
    rows = []
    for label, select in groups.items():
        models = fit_models(p, lambda t, s=select: pool(t) and not s(t))  # type: ignore[misc]
        rows.append({"model": name, "held_out": label, **evaluate(p, models, select, old, old_threshold)})
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    print("| model | held out | context items | context relevancy AUC, before → after | long contexts only | "
          "answer items | answer relevancy AUC, before → after | correct vs evasive only | answer bal. acc. |")  # fmt: skip
    print("|---|---|---:|---|---|---:|---|---|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['held_out']} | {r['context_items']} | {r['context_auc_old']:.3f} → "
              f"{r['context_auc_new']:.3f} | {r['long_auc_old']:.3f} → {r['long_auc_new']:.3f} | "
              f"{r['answer_items']} | {r['answer_auc_old']:.3f} → {r['answer_auc_new']:.3f} | "
              f"{r['evasive_auc_old']:.3f} → {r['evasive_auc_new']:.3f} | "
              f"{r['answer_balanced_accuracy_new']:.3f} |")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="write the fitted models to the package assets")
    parser.add_argument("--models", default="minilm,e5", help="which models to fit (minilm, e5)")
    args = parser.parse_args()
    topics = load_topics()
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for t in topics:
        counts[(t.lang, t.domain)] += 1
    contexts, answers = build_items(topics)
    print(f"{len(topics)} topics, {len(contexts)} context items, {len(answers)} answer items: "
          + ", ".join(f"{lang}/{dom} {n}" for (lang, dom), n in sorted(counts.items())))  # fmt: skip
    asset: dict[str, Any] = {"version": 1, "models": {}}
    all_rows: list[dict[str, Any]] = []
    from ragmetrics.embeddings.minilm import MiniLMEmbedder

    minilm = MiniLMEmbedder()
    p_minilm = asyncio.run(prepare(topics, minilm))
    old = LocalThresholds().context_relevancy
    for name in args.models.split(","):
        if name == "minilm":
            embedder: Embedder = minilm
            p = p_minilm
            pool: Callable[[Topic], bool] = lambda t: t.lang == "en"  # noqa: E731
            groups = {
                d: (lambda t, d=d: t.lang == "en" and t.domain == d)
                for d in sorted({t.domain for t in topics if t.lang == "en"})
            }
        else:
            from ragmetrics.embeddings.e5 import E5Embedder

            embedder = E5Embedder()
            p = asyncio.run(prepare(topics, embedder))
            pool = lambda t: True  # noqa: E731
            groups = {
                f"{lang} (all domains)": (lambda t, lang=lang: t.lang == lang)
                for lang in sorted({t.lang for t in topics})
            }
        rows = report(embedder.name, p, groups, pool, p_minilm, old)
        all_rows += rows
        models = fit_models(p, pool)
        chosen = [t for t in topics if pool(t)]
        everything = evaluate(p, models, pool, p_minilm, old)
        print(f"{embedder.name}, fitted and measured on its topics (in-sample): "
              + ", ".join(f"{k} {v:.3f}" for k, v in everything.items() if isinstance(v, float)))  # fmt: skip
        extra: dict[str, Any] = {}
        if name == "e5":
            thresholds, accuracy = threshold_fit(chosen, embedder)
            extra = {"thresholds": thresholds}
            print(
                f"{embedder.name} cosine thresholds {thresholds} (balanced accuracy on the pairs {accuracy})"
            )
        asset["models"][embedder.name] = {
            **{k: m.to_json() for k, m in models.items()},
            **extra,
            "provenance": {
                "fitted_on": f"{len(chosen)} labelled topics ({sum(pool(c.topic) for c in p.contexts)} context "
                f"items, {sum(pool(a.topic) for a in p.answers)} answer items), tools/fit_local_judge.py",
                "held_out_auc": {
                    r["held_out"]: {
                        "context_relevancy": round(r["context_auc_new"], 3),
                        "answer_relevancy": round(r["answer_auc_new"], 3),
                    }
                    for r in rows
                },
                "note": "ROC AUC on labelled topics of domains (MiniLM) or languages (E5) left out of the fit; "
                "docs/local_judge.md",
            },
        }
    print_rows(all_rows)
    if args.write:
        path = ASSETS / "local_models.json"
        path.write_text(json.dumps(asset, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
