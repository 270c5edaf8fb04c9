"""What to ask about: skipped chunks, stratified order, coverage."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ragmetrics.testset import open_corpus
from ragmetrics.testset.select import allocate, profile_corpus, select_chunks
from ragmetrics.testset.terms import chunk_language, content_terms, words

from .conftest import corpus_rows


def test_near_empty_duplicate_and_boilerplate_chunks_are_skipped_with_their_line() -> None:
    rows = corpus_rows()
    footer = "Copyright Example Corp. All rights reserved. Terms of use and privacy policy."
    rows += [{"id": f"footer-{n}", "text": footer} for n in range(3)]
    rows += [{"id": "copy", "text": rows[0]["text"].upper()}, {"id": "tiny", "text": "See above."}]
    profile = profile_corpus(open_corpus(rows))
    reasons = {s.id: (s.reason, s.line) for s in profile.skipped}
    assert reasons["footer-0"][0] == reasons["footer-2"][0] == "boilerplate"
    assert reasons["copy"] == ("duplicate", len(rows) - 1)
    assert reasons["tiny"][0] == "near_empty"
    assert rows[0]["id"] not in reasons  # the first of two copies is kept
    assert profile.eligible_total == len(corpus_rows())


def test_every_prefix_of_the_order_holds_groups_in_proportion() -> None:
    rows = [{"id": f"c{n}", "text": t} for n, t in enumerate(r["text"] for r in corpus_rows() * 1)]
    profile = profile_corpus(open_corpus(rows))
    selection = select_chunks(profile, 12, seed=1, groups=4)
    assert sorted(selection.order) == list(range(len(profile.ids)))
    sizes = np.array(selection.group_sizes)
    for prefix in (6, 12, 24):
        got = Counter(int(selection.groups[i]) for i in selection.order[:prefix])
        expected = sizes * prefix / sizes.sum()
        assert all(abs(got.get(g, 0) - expected[g]) <= 2.0 + 1e-9 for g in range(len(sizes)))
    assert selection.picks == selection.order[:12]


def test_sketch_cosines_estimate_tfidf_cosines() -> None:
    """The rows are the chunks' tf-idf vectors: their cosines are the exact ones, passages of one page are
    closer than passages of different pages, and the groups keep pages together far more often than chance."""
    import math

    from ragmetrics import collection

    rows = collection.load_passages()[:120]
    profile = profile_corpus(open_corpus(rows))
    n = profile.n_chunks
    vectors = []
    for row in rows:
        counts = Counter(content_terms(f"{row['title']}\n{row['text']}"))
        counts = Counter({t: c for t, c in counts.items() if not (n >= 20 and profile.df[t] > 0.3 * n)})
        vectors.append(
            {t: (1 + math.log(c)) * math.log((n + 1) / (profile.df[t] + 0.5)) for t, c in counts.items()}
        )

    def cosine(a: dict[str, float], b: dict[str, float]) -> float:
        dot = sum(v * b.get(t, 0.0) for t, v in a.items())
        return dot / math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))

    exact, sketched, same, other = [], [], [], []
    for i in range(n):
        for j in range(i + 1, n):
            exact.append(cosine(vectors[i], vectors[j]))
            sketched.append(float((profile.sketches[i] @ profile.sketches[j].T).toarray()[0, 0]))
            (same if rows[i]["id"].split("#")[0] == rows[j]["id"].split("#")[0] else other).append(
                sketched[-1]
            )
    assert np.allclose(exact, sketched, atol=1e-5)
    assert np.mean(same) > np.mean(other) + 0.1
    selection = select_chunks(profile, 20, seed=0)
    pages = [r["id"].split("#")[0] for r in rows]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if pages[i] == pages[j]]
    together = np.mean([selection.groups[i] == selection.groups[j] for i, j in pairs])
    chance = sum((s / n) ** 2 for s in selection.group_sizes)
    assert together > 3 * chance, (together, chance)


def test_allocate_is_proportional_and_exact() -> None:
    assert allocate([50, 30, 20], 10) == [5, 3, 2]
    assert sum(allocate([7, 5, 1], 6)) == 6
    assert allocate([1, 1], 5) == [1, 1]  # never more than a group has


def test_terms_and_languages() -> None:
    assert words("Shift_expr and bytes-like, l'été!") == ["shift_expr", "and", "bytes-like", "l'été"]
    assert content_terms("How does the with statement work") == ["statement", "work"]
    assert words("日本語") == ["日本", "本語"]
    assert chunk_language("Der Hund läuft schnell über die Straße und ist nicht müde.") == "de"
    assert chunk_language("Le chien court vite dans la rue et il est pour les enfants.") == "fr"
    assert chunk_language("The dog runs quickly down the road.") == "en"
    assert chunk_language("猫はとてもかわいいです。") == "ja"
