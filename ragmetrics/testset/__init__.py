"""Test collections from a team's own corpus: questions, references and graded qrels (docs/testset.md)."""

from ragmetrics.testset.build import TestSet, build_testset
from ragmetrics.testset.corpus import Chunk, Corpus, open_corpus
from ragmetrics.testset.settings import Grade, TestItem, TestsetSettings

__all__ = [
    "Chunk",
    "Corpus",
    "Grade",
    "TestItem",
    "TestSet",
    "TestsetSettings",
    "build_testset",
    "open_corpus",
]
