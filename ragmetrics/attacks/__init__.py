"""Attack sets built from a team's own corpus, and their exact scoring (docs/attacks.md).

`ragmetrics attack CORPUS|TESTSET -o DIR` writes an attack set; a night with `dataset: {attacks: DIR}` calls
the team's system on it and records the attack metrics (`attacks.metrics`) beside the clean twins' usual ones.
"""

from __future__ import annotations

from ragmetrics.attacks.build import AttackSet, Target, build_attacks
from ragmetrics.attacks.canary import compact, contains_canary, contains_secret, make_canary, mentions_value
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
