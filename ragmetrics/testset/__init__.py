"""Test collections from a team's own corpus: questions, references and graded qrels (docs/testset.md).

The names below load on first use: importing one light module of this package (`testset.terms`,
`testset.corpus`) must not pull in the builder and its scipy.sparse pooling (hundreds of milliseconds at every
command's start)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
_WHERE = {
    "TestSet": "build", "build_testset": "build", "Chunk": "corpus", "Corpus": "corpus", "open_corpus": "corpus",
    "Grade": "settings", "TestItem": "settings", "TestsetSettings": "settings",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'ragmetrics.testset' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ragmetrics.testset.{_WHERE[name]}"), name)
