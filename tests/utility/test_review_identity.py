"""Review fix: the answer cache key holds the endpoint the openai client really talks to."""

from __future__ import annotations

import pytest

from ragmetrics.utility.build import answer_key
from ragmetrics.utility.openai_generator import OpenAIGenerator


def test_the_endpoint_from_openai_base_url_decides_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-never-in-a-key")
    keys = {}
    for url in ("http://127.0.0.1:9001/v1", "http://127.0.0.1:9002/v1"):
        monkeypatch.setenv("OPENAI_BASE_URL", url)  # the openai client's own setting: base_url is not given
        generator = OpenAIGenerator(model="m")
        assert generator.identity["endpoint"] == url.removeprefix("http://")
        keys[url] = answer_key(generator.identity, "q", "p")
        assert "sk-secret" not in repr(generator.identity)
    assert len(set(keys.values())) == 2  # before: both None, one server's answers served for the other


def test_the_extractive_generators_key_holds_its_sentence_segmenters_release() -> None:
    from importlib.metadata import version

    from ragmetrics.utility.generators import ExtractiveGenerator

    identity = ExtractiveGenerator().identity
    assert identity["sentencex"] == version("sentencex")  # before: absent, a new segmenter kept old answers
