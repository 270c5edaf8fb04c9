"""What a retrieval metric is: its code shared with the kernels (`Kind`) and its declarative spec (`MetricSpec`).

The specs themselves live one family per module beside this one; `REGISTRY` (the package) lists them in the
order the CLI help and docs/metrics.md show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal


class Kind(IntEnum):
    """Metric codes shared with the numba kernels (plain integers there)."""

    HITS = 0
    HIT_RATE = 1
    PRECISION = 2
    RECALL = 3
    F1 = 4
    R_PRECISION = 5
    BPREF = 6
    RBP = 7
    MRR = 8
    MAP = 9
    DCG = 10
    NDCG = 11
    DCG_BURGES = 12
    NDCG_BURGES = 13
    JUDGED = 14
    INFAP = 15
    RBP_RESID = 16
    IPREC = 17
    ELEVEN_POINT = 18
    GM_MAP = 19
    GM_BPREF = 20
    SET_MAP = 21
    RPREC_MULT = 22
    NUM_RET = 23
    NUM_REL = 24
    NUM_Q = 25
    ERR = 26
    NERR = 27
    ALPHA_NDCG = 28
    ERR_IA = 29
    NERR_IA = 30
    NRBP = 31
    NNRBP = 32
    P_IA = 33
    STREC = 34
    MAP_IA = 35
    UDCG = 36


Aggregate = Literal["mean", "sum", "geometric"]
"""How per-query values become the run's figure: their mean, their sum (the counts num_ret, num_rel, num_q,
as trec_eval prints them), or their geometric mean with values floored at 1e-5 (gm_map, gm_bpref)."""


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is, how it may be parameterised and what others call it."""

    name: str
    kind: Kind
    description: str
    formula: str
    citation: str
    cutoff: bool = True
    persistence: bool = False
    aliases: tuple[str, ...] = ()
    trec_eval: str | None = None
    ranx: str | None = None
    notes: str = ""
    aggregate: Aggregate = "mean"
    point: Literal["recall", "multiple"] | None = None
    """A real number after @ instead of a cutoff: a recall level in [0, 1] (iprec@0.3) or a multiple of R
    (rprec_mult@0.5)."""
    budget: bool = True
    """Whether a token budget (@Ntok) may replace the cutoff."""
    subtopics: bool = False
    """Intent-aware: needs subtopic qrels (`SubtopicQrels`, the TREC diversity format)."""
    weights: bool = False
    """Takes a relevant and an irrelevant weight, written ``.rel=W`` and ``.irr=W`` after the name (udcg)."""


NO_LEVEL = frozenset({Kind.JUDGED, Kind.NUM_RET, Kind.NUM_Q})
"""Metrics a relevance level (-lN) does not apply to: the parser refuses it and the reference says so."""
