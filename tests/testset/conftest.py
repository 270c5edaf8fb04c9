"""Fixtures for the test-set tests: small corpora on disk and the loopback OpenAI-compatible server."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.testset import TestSet, build_testset

KEY_ENV = "RAGMETRICS_TEST_JUDGE_KEY"

# Twelve small topics, three chunks each, written for these tests.
TOPICS = {
    "volcano": [
        "Volcanoes form where magma reaches the surface through vents in the crust of the planet.",
        "A volcanic eruption ejects lava, ash and gases; explosive eruptions build steep stratovolcanoes.",
        "Volcanologists monitor seismic tremors and gas emissions to forecast eruptions of active volcanoes.",
    ],
    "glacier": [
        "Glaciers are slow rivers of ice that form where snowfall exceeds melting over many years.",
        "Glacial erosion carves U-shaped valleys, fjords and cirques into mountain landscapes.",
        "Retreating glaciers leave moraines of rock debris that mark their former extent.",
    ],
    "coral": [
        "Coral reefs are built by colonies of tiny polyps that secrete calcium carbonate skeletons.",
        "Reef-building corals host symbiotic algae that supply sugars through photosynthesis.",
        "Coral bleaching happens when warm water makes polyps expel their symbiotic algae.",
    ],
    "bread": [
        "Bread dough rises because yeast ferments sugars and releases carbon dioxide bubbles.",
        "Kneading develops gluten networks that trap gas and give bread its chewy crumb.",
        "Sourdough bread relies on wild yeast and lactic acid bacteria in a fermented starter.",
    ],
    "orbit": [
        "Satellites stay in orbit because their sideways velocity balances the pull of gravity.",
        "Geostationary satellites circle the equator once per day and appear fixed in the sky.",
        "Orbital decay from atmospheric drag slowly lowers satellites in low Earth orbit.",
    ],
    "piano": [
        "A piano produces sound when felt hammers strike steel strings stretched over a soundboard.",
        "Piano tuners adjust string tension with pins so that intervals follow equal temperament.",
        "The sustain pedal of a piano lifts the dampers so that struck strings keep ringing.",
    ],
    "honeybee": [
        "Honeybees communicate the direction of flowers to nestmates with a waggle dance.",
        "Worker honeybees produce wax flakes to build hexagonal comb cells in the hive.",
        "A honeybee colony raises a new queen by feeding selected larvae royal jelly.",
    ],
    "tides": [
        "Ocean tides rise and fall as the moon's gravity pulls on the rotating earth.",
        "Spring tides occur when the sun and moon align, producing larger tidal ranges.",
        "Tidal currents in narrow straits can drive turbines that generate electricity.",
    ],
    "vaccine": [
        "Vaccines train the immune system by presenting antigens without causing disease.",
        "Booster vaccine doses renew immune memory as antibody levels decline over time.",
        "Herd immunity arises when enough vaccinated people block the spread of infection.",
    ],
    "compiler": [
        "A compiler translates source code into machine instructions before the program runs.",
        "Compiler optimisations such as inlining and loop unrolling make generated code faster.",
        "A parser inside the compiler builds a syntax tree from the tokens of the source code.",
    ],
    "telescope": [
        "Refracting telescopes gather light with lenses while reflecting telescopes use mirrors.",
        "Radio telescopes detect long wavelengths with large dish antennas pointed at the sky.",
        "Adaptive optics in telescopes correct blurring caused by turbulence in the atmosphere.",
    ],
    "chess": [
        "In chess each player starts with sixteen pieces including a king, queen and two rooks.",
        "Castling in chess moves the king two squares toward a rook that jumps beside it.",
        "A chess opening such as the Sicilian Defence shapes the middle game strategy.",
    ],
}


def corpus_rows(marker: str = "") -> list[dict[str, Any]]:
    rows = []
    for topic, texts in TOPICS.items():
        for n, text in enumerate(texts, start=1):
            rows.append(
                {"id": f"{topic}-{n}", "title": topic.capitalize(), "text": f"{text} {marker}".strip()}
            )
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def builtin_testset() -> TestSet:
    """One offline build over the built-in collection, shared by the tests that only read it."""
    return build_testset("builtin", size=40, seed=3)


def _load_loopback() -> Any:
    path = Path(__file__).resolve().parent.parent / "judge" / "loopback.py"
    spec = importlib.util.spec_from_file_location("ragmetrics_testset_loopback", path)
    assert spec is not None and spec.loader is not None
    import sys

    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv(KEY_ENV, "sk-ragmetrics-FAKE-testset-key")
    server = _load_loopback().LoopbackServer(latency_s=0.0).start()
    yield server
    server.stop()


def judge_settings(server: Any, cache: Path, **overrides: Any) -> Any:
    from ragmetrics.judge.settings import JudgeSettings

    values: dict[str, Any] = {
        "backend": "openai",
        "model": "test-model",
        "embedding_model": "test-embedding",
        "base_url": server.url,
        "api_key_env": KEY_ENV,
        "cache_path": cache,
        "timeout_s": 10.0,
        "max_retries": 1,
        "max_repairs": 1,
        "max_concurrency": 4,
    }
    values.update(overrides)
    return JudgeSettings(**values)
