"""The parser of metric strings: ``name[@k][-lN]`` (and trec_eval's and ir_measures' spellings) into a
`MetricRequest`, the spec plus its parameters; anything unknown or malformed is an `InputError` naming the string.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ragmetrics.errors import InputError
from ragmetrics.retrieval.registry import REGISTRY
from ragmetrics.retrieval.registry.spec import NO_LEVEL, Kind, MetricSpec
from ragmetrics.retrieval.registry.user_models import (
    UDCG_IRRELEVANT_WEIGHT,
    UDCG_MAX_WEIGHT,
    UDCG_RELEVANT_WEIGHT,
)

_BY_NAME: dict[str, MetricSpec] = {}
for _spec in REGISTRY:
    for _alias in (_spec.name, *_spec.aliases):
        if _alias in _BY_NAME:
            raise RuntimeError(f"metric alias {_alias!r} registered twice")
        _BY_NAME[_alias] = _spec

# trec_eval names that carry the cutoff after an underscore: P_10, recall_100, ndcg_cut_10, map_cut_5, success_1.
_TREC_CUTOFF: dict[str, str] = {
    "p": "precision",
    "recall": "recall",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "success": "hit_rate",
}
_TREC_CUTOFF_RE = re.compile(r"^(p|recall|ndcg_cut|map_cut|success)_(\d+)$")
_BUDGET_RE = re.compile(r"(?P<n>\d+)(?P<k>k?)tok")
_LEVEL_RE = re.compile(r"^(?P<base>.+)-l(?P<level>[^-]*)$")
_RBP_RE = re.compile(r"^(?P<name>rbp_resid|rbp)(?:\.(?P<digits>[^@]*))?$")
_TREC_POINT_RE = re.compile(r"^(?P<name>iprec_at_recall|rprec_mult)_(?P<value>[0-9.]+)$")
_DEFAULT_RBP_DIGITS = "9"


@dataclass(frozen=True)
class MetricRequest:
    """One parsed metric string: the spec plus its cutoff (0 = none), relevance level and persistence."""

    spelling: str
    spec: MetricSpec
    cutoff: int = 0
    level: int = 1
    persistence: float = 0.0
    persistence_digits: str = ""
    budget: int = 0
    """A token budget instead of a count cutoff (``recall@512tok``): the ranking is cut where the retrieved
    passages' cumulative token count exceeds it (`ragmetrics.retrieval.budget`); 0 = none."""
    point: float = 0.0
    """iprec's recall level or rprec_mult's multiple of R (`MetricSpec.point`)."""
    relevant_weight: float = UDCG_RELEVANT_WEIGHT
    irrelevant_weight: float = UDCG_IRRELEVANT_WEIGHT
    weights_text: str = ""
    """udcg's weights (`MetricSpec.weights`) and their canonical suffix (``.irr=-0.5``; empty for the defaults)."""

    @property
    def param(self) -> float:
        """The kernel's real parameter: rbp's persistence, or the point."""
        return self.persistence if self.spec.persistence else self.point

    @property
    def canonical(self) -> str:
        """The ranx-style spelling, e.g. ``ndcg@10``, ``precision@5-l2``, ``rbp.80``."""
        text = self.spec.name
        if self.spec.persistence:
            text += f".{self.persistence_digits}"
        text += self.weights_text
        if self.spec.point is not None:
            text += f"@{self.point:g}"
        if self.cutoff:
            text += f"@{self.cutoff}"
        if self.budget:
            text += f"@{self.budget}tok"
        if self.level != 1:
            text += f"-l{self.level}"
        return text

    def settings(self) -> dict[str, object]:
        """What the result metadata records for this metric."""
        out: dict[str, object] = {
            "canonical": self.canonical,
            "metric": self.spec.name,
            "cutoff": self.cutoff or None,
            "relevance_level": self.level,
        }
        if self.budget:
            out["token_budget"] = self.budget
        if self.spec.persistence:
            out["persistence"] = self.persistence
        if self.spec.point == "recall":
            out["recall_level"] = self.point
        elif self.spec.point == "multiple":
            out["multiple_of_r"] = self.point
        if self.spec.weights:
            out["relevant_weight"] = self.relevant_weight
            out["irrelevant_weight"] = self.irrelevant_weight
        if self.spec.aggregate != "mean":
            out["aggregate"] = self.spec.aggregate
        return out


def _bad(spelling: str, what: str) -> InputError:
    return InputError(f"metric {spelling!r}: {what}", field="metrics")


_MAX_INT = 2**31 - 1


def _parse_int(spelling: str, text: str, what: str, minimum: int) -> int:
    if not re.fullmatch(r"\d+", text):
        raise _bad(spelling, f"{what} must be an integer >= {minimum}, got {text!r}")
    value = int(text)
    if not minimum <= value <= _MAX_INT:
        raise _bad(spelling, f"{what} must be an integer from {minimum} to {_MAX_INT}, got {value}")
    return value


def _known() -> str:
    return ", ".join(spec.name for spec in REGISTRY)


def _parse_point(spelling: str, spec: MetricSpec, text: str) -> float:
    """iprec's recall level (0..1) or rprec_mult's multiple of R (> 0), written after @."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if spec.point == "recall":
        if not 0.0 <= value <= 1.0:
            raise _bad(
                spelling,
                f"{spec.name} needs a recall level from 0 to 1 after @ (e.g. {spec.name}@0.3), got {text!r}",
            )
    elif not 0.0 < value <= 1000.0:
        raise _bad(
            spelling,
            f"{spec.name} needs a multiple of R above 0 after @ (e.g. {spec.name}@0.5), got {text!r}",
        )
    return value


_WEIGHT_RE = re.compile(
    r"\.(?P<which>rel|irr)=(?P<value>[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:/(?:\d+(?:\.\d+)?|\.\d+))?)"
)


def _parse_weights(spelling: str, text: str) -> tuple[float, float, str]:
    """udcg's ``.rel=W`` and ``.irr=W`` (each at most once, decimals or fractions such as -1/3) after the
    name: the relevant and irrelevant weights and the canonical suffix."""
    found: dict[str, float] = {}
    pos = 0
    while pos < len(text):
        match = _WEIGHT_RE.match(text, pos)
        if match is None:
            raise _bad(
                spelling,
                "udcg takes its weights as .rel=W and .irr=W after the name (e.g. udcg.irr=-0.5@5, "
                f"udcg.rel=1.irr=-1/3@10), got {text[pos:]!r}",
            )
        which, value_text = match["which"], match["value"]
        if which in found:
            raise _bad(spelling, f"the {which} weight is given twice")
        top, _, bottom = value_text.partition("/")
        if bottom and float(bottom) == 0.0:
            raise _bad(spelling, f"the {which} weight divides by zero: {value_text!r}")
        value = float(top) / float(bottom) if bottom else float(top)
        if not math.isfinite(value) or abs(value) > UDCG_MAX_WEIGHT:
            raise _bad(spelling, f"the {which} weight must be a number from -500 to 500, got {value_text!r}")
        found[which] = value
        pos = match.end()
    relevant = found.get("rel", UDCG_RELEVANT_WEIGHT)
    irrelevant = found.get("irr", UDCG_IRRELEVANT_WEIGHT)
    suffix = "" if relevant == UDCG_RELEVANT_WEIGHT else f".rel={relevant!r}"
    suffix += "" if irrelevant == UDCG_IRRELEVANT_WEIGHT else f".irr={irrelevant!r}"
    return relevant, irrelevant, suffix


def parse_metric(spelling: str) -> MetricRequest:
    """Parse ``name[@k][-lN]`` (or an alias); raise `InputError` naming the string for anything unknown or bad."""
    if not isinstance(spelling, str):
        raise InputError(f"metric names must be strings, got {spelling!r}", field="metrics")
    text = spelling.strip()
    if not text:
        raise _bad(spelling, "empty metric name")
    level = 1
    match = _LEVEL_RE.match(text)
    if match:
        text = match["base"]
        level = _parse_int(spelling, match["level"], "relevance level (-lN)", 1)
    at_text: str | None = None
    if "@" in text:
        text, _, at_text = text.partition("@")
    base = text.lower()

    trec_point = _TREC_POINT_RE.match(base)
    if trec_point:
        if at_text is not None:
            raise _bad(spelling, "the point is given twice (trec_eval suffix and @)")
        base, at_text = trec_point["name"], trec_point["value"]
        base = "iprec" if base == "iprec_at_recall" else base

    point_spec = _BY_NAME.get(base)
    if point_spec is not None and point_spec.point is not None:
        if at_text is None:
            example = "0.3" if point_spec.point == "recall" else "0.5"
            raise _bad(
                spelling, f"{point_spec.name} needs its point after @ (e.g. {point_spec.name}@{example})"
            )
        return MetricRequest(
            spelling, point_spec, 0, level, point=_parse_point(spelling, point_spec, at_text)
        )

    cutoff = 0
    budget = 0
    if at_text is not None:
        tokens = _BUDGET_RE.fullmatch(at_text.lower())
        if tokens:
            budget = _parse_int(spelling, tokens["n"], "token budget (@Ntok)", 1) * (
                1000 if tokens["k"] else 1
            )
        else:
            cutoff = _parse_int(spelling, at_text, "cutoff (@k, or @Ntok for a token budget)", 1)

    if base.startswith("udcg."):
        relevant, irrelevant, suffix = _parse_weights(spelling, base[len("udcg") :])
        return MetricRequest(
            spelling,
            _BY_NAME["udcg"],
            cutoff,
            level,
            budget=budget,
            relevant_weight=relevant,
            irrelevant_weight=irrelevant,
            weights_text=suffix,
        )

    rbp = _RBP_RE.match(base)
    if rbp:
        digits = rbp["digits"]
        if digits is None:
            digits = _DEFAULT_RBP_DIGITS
        name = rbp["name"]
        if not re.fullmatch(r"\d+", digits) or int(digits) == 0:
            raise _bad(
                spelling,
                f"{name} needs a persistence 0 < p < 1 written as {name}.P (e.g. {name}.80), got {digits!r}",
            )
        spec = _BY_NAME[name]
        if budget:
            raise _bad(spelling, f"{name} takes no token budget (it is not a metric of the top k)")
        return MetricRequest(spelling, spec, cutoff, level, float(f"0.{digits}"), digits)

    trec = _TREC_CUTOFF_RE.match(base)
    if trec:
        if cutoff:
            raise _bad(spelling, "the cutoff is given twice (trec_eval suffix and @k)")
        spec = _BY_NAME[_TREC_CUTOFF[trec[1]]]
        cutoff = _parse_int(spelling, trec[2], "cutoff", 1)
        return MetricRequest(spelling, spec, cutoff, level)

    found = _BY_NAME.get(base)
    if found is None:
        close = difflib.get_close_matches(base, [*_BY_NAME, "rbp.80"], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise _bad(
            spelling, f"unknown metric {text!r}; {hint}known metrics: {_known()} (and trec_eval spellings)"
        )
    if (cutoff or budget) and not found.cutoff:
        raise _bad(spelling, f"{found.name} takes no cutoff")
    if match and found.kind == Kind.JUDGED:
        raise _bad(spelling, "judged takes no relevance level (-lN): any judgment counts, whatever its grade")
    if match and found.kind in NO_LEVEL:
        raise _bad(spelling, f"{found.name} takes no relevance level (-lN): it does not depend on grades")
    if budget:
        if not found.budget:
            raise _bad(spelling, f"{found.name} takes no token budget (it is not a metric of the top k)")
        return MetricRequest(spelling, found, 0, level, budget=budget)
    return MetricRequest(spelling, found, cutoff, level)


def parse_metrics(spellings: Iterable[str] | str) -> tuple[MetricRequest, ...]:
    """Parse a list of metric strings, keeping the first of identical spellings; at least one is required."""
    if isinstance(spellings, str):
        spellings = [spellings]
    requests: dict[str, MetricRequest] = {}
    for spelling in spellings:
        if spelling not in requests:
            requests[spelling] = parse_metric(spelling)
    if not requests:
        raise InputError("no metric requested", field="metrics")
    return tuple(requests.values())
