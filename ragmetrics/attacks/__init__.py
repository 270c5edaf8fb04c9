"""Attack sets built from a team's own corpus, and their exact scoring (docs/attacks.md).

`ragmetrics attack CORPUS|TESTSET -o DIR` writes an attack set; a night with `dataset: {attacks: DIR}` calls
the team's system on it and records the attack metrics (`attacks.metrics`) beside the clean twins' usual ones.

The names below load on first use: the command line's start reads `attacks.model` alone (kinds, styles and
positions for its help), which must not pull in the builder, the test-set builder and scipy.sparse.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragmetrics.attacks.build import AttackSet, Target, build_attacks
    from ragmetrics.attacks.canary import (
        compact,
        contains_canary,
        contains_secret,
        make_canary,
        mentions_value,
    )
    from ragmetrics.attacks.metrics import KIND_METRICS, Outcome, attack_result, decide, refuses
    from ragmetrics.attacks.model import ATTACK_KINDS, AttackCheck, AttackRow, PlantedDocument
    from ragmetrics.attacks.store import read_attack_set, write_attack_set

__all__ = [
    "ATTACK_KINDS",
    "KIND_METRICS",
    "AttackCheck",
    "AttackRow",
    "AttackSet",
    "Outcome",
    "PlantedDocument",
    "Target",
    "attack_result",
    "build_attacks",
    "compact",
    "contains_canary",
    "contains_secret",
    "decide",
    "make_canary",
    "mentions_value",
    "read_attack_set",
    "refuses",
    "write_attack_set",
]
_WHERE = {
    "AttackSet": "build", "Target": "build", "build_attacks": "build",
    "compact": "canary", "contains_canary": "canary", "contains_secret": "canary", "make_canary": "canary",
    "mentions_value": "canary",
    "KIND_METRICS": "metrics", "Outcome": "metrics", "attack_result": "metrics", "decide": "metrics",
    "refuses": "metrics",
    "ATTACK_KINDS": "model", "AttackCheck": "model", "AttackRow": "model", "PlantedDocument": "model",
    "read_attack_set": "store", "write_attack_set": "store",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'ragmetrics.attacks' has no attribute {name!r}")
    return getattr(importlib.import_module(f"ragmetrics.attacks.{_WHERE[name]}"), name)
