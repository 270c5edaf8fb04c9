"""Rebuild ragmetrics/embeddings/assets/seed_vectors.npz: the built-in collection's texts as the local judge
embeds them, embedded once with the bundled MiniLM model.

    python tools/build_seed_vectors.py

The texts are the background sentences of the fitted verdicts and every unit the local judge can ask for on
the built-in collection: each passage's sentences and two-sentence windows
(any retriever's contexts are whole passages), and each question, answer and reference whole, by sentence and
by statement. A text the seeds miss is simply embedded at run time, so the set only needs to be useful.
"""

from __future__ import annotations

import asyncio

from ragmetrics.collection import load_passages, load_samples
from ragmetrics.embeddings.minilm import MiniLMEmbedder
from ragmetrics.embeddings.seeds import SEED_PATH, write_seeds
from ragmetrics.judge.backends.local_model import background_texts
from ragmetrics.judge.text.sentences import split_sentences, split_statements


def collection_texts() -> list[str]:
    texts: dict[str, None] = {}

    def add(*items: str) -> None:
        for item in items:
            stripped = item.strip()
            if stripped:
                texts[stripped] = None

    add(*background_texts())  # the fitted verdicts' background, embedded once per judge
    for passage in load_passages():
        sentences = split_sentences(passage["text"])
        add(*sentences)
    for sample in load_samples():
        for text in (sample.question, sample.answer or "", sample.reference or ""):
            add(text, *split_sentences(text), *split_statements(text))
        for context in sample.contexts:
            sentences = split_sentences(context)
            add(*sentences)
    return sorted(texts)


def main() -> None:
    embedder = MiniLMEmbedder()
    texts = collection_texts()
    vectors = asyncio.run(embedder.embed(texts))
    write_seeds(SEED_PATH, embedder.name, texts, vectors)
    print(f"{len(texts)} texts -> {SEED_PATH} ({SEED_PATH.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
