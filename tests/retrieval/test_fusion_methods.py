"""ranx's 25 fusion methods: hand-computed cases for each family, the trained ones' training by hand, and
equality with ranx (`ranx.fuse`, `ranx.fusion.*_train`) on random untied runs over the same queries."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ragmetrics import Qrels, Run
from ragmetrics.errors import InputError
from ragmetrics.options import FUSION_METHODS, TRAINED_FUSION_METHODS
from ragmetrics.retrieval.fusion import WEIGHTED, fuse
from ragmetrics.retrieval.fusion_trained import train_fusion


def _runs() -> list[Run]:
    a = Run.from_dict({"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}, name="a")
    b = Run.from_dict({"q": {"d3": 0.9, "d4": 0.5}}, name="b")
    return [a, b]


def test_every_method_of_ranx_is_here() -> None:
    ranx_names = {
        "rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "w_bordafuse", "condorcet", "w_condorcet",
        "anz", "gmnz", "max", "med", "min", "mnz", "sum", "wsum", "wmnz", "mixed", "probfuse", "segfuse",
        "slidefuse", "posfuse", "mapfuse", "bayesfuse",
    }  # fmt: skip
    assert len(FUSION_METHODS) == len(ranx_names) == 25
    assert {RANX_NAME.get(m, m) for m in FUSION_METHODS} == ranx_names


def test_score_and_rank_methods_by_hand() -> None:
    runs = _runs()

    def fused(method: str, **kw: Any) -> dict[str, float]:
        return fuse(runs, method, **kw).to_dict()["q"]

    # min-max: a -> d1 1, d2 0.5, d3 0; b -> d3 1, d4 0
    assert fused("combmin") == pytest.approx({"d1": 1.0, "d2": 0.5, "d3": 0.0, "d4": 0.0})
    assert fused("combmed") == pytest.approx({"d1": 1.0, "d2": 0.5, "d3": 0.5, "d4": 0.0})
    assert fused("combanz") == pytest.approx({"d1": 1.0, "d2": 0.5, "d3": 0.5, "d4": 0.0})
    assert fused("combgmnz", gamma=2.0)["d3"] == pytest.approx(1.0 * 2**2)
    assert fused("wmnz", weights=[0.25, 0.75])["d3"] == pytest.approx(1.0 * (0.25 + 0.75))
    assert fused("mixed", weights=[0.25, 0.75])["d3"] == pytest.approx(0.75 * math.sqrt(2))
    # Ranks from 0: d3 is rank 2 in a and rank 0 in b.
    assert fused("isr")["d3"] == pytest.approx((1 / 9 + 1) * 2)
    assert fused("log_isr")["d3"] == pytest.approx((1 / 9 + 1) * math.log(2))
    assert fused("log_isr")["d1"] == 0.0  # one run found it: log 1
    assert fused("logn_isr")["d1"] == pytest.approx(math.log(1.01))
    assert fused("rbc", phi=0.5)["d3"] == pytest.approx(0.5 * 0.25 + 0.5)
    # Borda over C = {d1, d2, d3, d4}: a gives 4, 3, 2 and d4 (4 - 3 + 1) / 2 = 1; b gives d3 4, d4 3, and
    # d1, d2 (4 - 2 + 1) / 2 = 1.5 each.
    assert fused("bordafuse") == pytest.approx({"d1": 5.5, "d2": 4.5, "d3": 6.0, "d4": 4.0})
    assert fused("weighted_bordafuse", weights=[1.0, 0.0]) == pytest.approx(
        {"d1": 4.0, "d2": 3.0, "d3": 2.0, "d4": 1.0}
    )
    # Condorcet: d1 beats d2 (a; b abstains), d3 beats d4 (b), d1 and d3 split 1-1 ...
    order = list(fuse(runs, "condorcet").to_dict()["q"])
    assert order.index("d1") < order.index("d2") and order.index("d3") < order.index("d4")


def test_trained_methods_by_hand() -> None:
    qrels = Qrels.from_dict({"t1": {"x": 1, "y": 0}, "t2": {"z": 2}})
    train = Run.from_dict({"t1": {"x": 3.0, "y": 2.0, "w": 1.0}, "t2": {"w": 2.0, "z": 1.0}}, name="a")
    other = Run.from_dict({"t1": {"y": 3.0, "x": 2.0}, "t2": {"z": 2.0}}, name="b")
    # Hit lists: a -> [1, 0, 0], [0, 1]; b -> [0, 1], [1].
    posfuse = train_fusion(qrels, [train, other], "posfuse")
    assert posfuse.per_run == ((0.5, 0.5, 0.0), (0.5, 1.0))
    probfuse = train_fusion(qrels, [train, other], "probfuse", segments=2)
    # a: segments of ceil(3/2) = 2 and ceil(2/2) = 1: t1 -> [1, 0] 0.5, [0] 0; t2 -> [0] 0, [1] 1.
    assert probfuse.per_run[0] == pytest.approx((0.25, 0.5))
    mapfuse = train_fusion(qrels, [train, other], "mapfuse")
    assert mapfuse.per_run == ((pytest.approx((1.0 + 0.5) / 2),), (pytest.approx((0.5 + 1.0) / 2),))
    new = [Run.from_dict({"n": {"p": 2.0, "r": 1.0}}, name="a"), Run.from_dict({"n": {"r": 1.0}}, name="b")]
    assert fuse(new, "posfuse", model=posfuse).to_dict()["n"] == pytest.approx({"p": 0.5, "r": 0.5 + 0.5})
    assert fuse(new, "mapfuse", model=mapfuse).to_dict()["n"] == pytest.approx(
        {"p": 0.75, "r": 0.75 / 2 + 0.75}
    )
    with pytest.raises(InputError, match="trained on qrels first"):
        fuse(new, "posfuse")
    with pytest.raises(InputError, match="trained for posfuse"):
        fuse(new, "probfuse", model=posfuse)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"method": "combgmnz"}, "needs gamma"), ({"method": "rbc", "phi": 1.5}, "strictly between 0 and 1"),
     ({"method": "mixed"}, "one weight per run"), ({"method": "logn_isr", "sigma": 0.0}, "above 0")],
)  # fmt: skip
def test_bad_parameters_are_input_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        fuse(_runs(), **kwargs)


# ------------------------------------------------------------------------------------------- ranx

RANX_NAME = {
    "combsum": "sum", "combmnz": "mnz", "combmax": "max", "combmin": "min", "combmed": "med", "combanz": "anz",
    "combgmnz": "gmnz", "weighted_bordafuse": "w_bordafuse", "weighted_condorcet": "w_condorcet",
}  # fmt: skip
PARAMS: dict[str, dict[str, Any]] = {
    "rrf": {"k": 60}, "combgmnz": {"gamma": 1.5}, "logn_isr": {"sigma": 0.01}, "rbc": {"phi": 0.8},
    **{m: {"weights": [0.5, 0.3, 0.2]} for m in WEIGHTED},
    # A weighted majority without exact ties (0.5 against 0.3 + 0.2 would be one).
    "weighted_condorcet": {"weights": [0.45, 0.35, 0.2]},
}  # fmt: skip


def _random(seed: int, queries: int = 8, runs: int = 3) -> tuple[dict[str, dict[str, int]], list[dict[str, dict[str, float]]]]:  # fmt: skip
    """Untied runs over the same queries; condorcet's runs rank the same documents (no abstentions)."""
    rng = np.random.default_rng(seed)
    qrels = {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in rng.choice(30, 10, replace=False)}
             for q in range(queries)}  # fmt: skip
    out = []
    for _ in range(runs):
        run = {}
        for q in range(queries):
            docs = rng.choice(30, size=int(rng.integers(4, 25)), replace=False)
            run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, rng.random(docs.size), strict=True)}
        out.append(run)
    return qrels, out


@pytest.fixture(scope="module")
def ranx() -> Any:
    import numba

    layer = numba.config.THREADING_LAYER
    module = pytest.importorskip("ranx", reason="ranx (dev extra) is the reference")
    numba.config.THREADING_LAYER = layer  # ranx sets "workqueue" on import
    return module


def _theirs(ranx: Any, method: str, norm: str, dicts: list[dict[str, dict[str, float]]],
            qrels: dict[str, dict[str, int]] | None) -> dict[str, dict[str, float]]:  # fmt: skip
    import numba

    threads = numba.get_num_threads()
    try:
        runs = [ranx.Run(d, name=f"r{i}") for i, d in enumerate(dicts)]
        params = dict(PARAMS.get(method, {}))
        if method in TRAINED_FUSION_METHODS:
            train = getattr(ranx.fusion, f"{method}_train")
            normed = [ranx.normalize(r, norm) for r in runs]
            args = (ranx.Qrels(qrels), normed, 3) if method == "probfuse" else (ranx.Qrels(qrels), normed)
            key = {"mapfuse": "map_scores", "bayesfuse": "log_odds"}.get(method, "probs")
            params[key] = train(*args)
            if method == "slidefuse":
                params["w"] = 2
        fused: dict[str, dict[str, float]] = ranx.fuse(runs, norm=norm, method=RANX_NAME.get(method, method),
                                                       params=params).to_dict()  # fmt: skip
        return fused
    finally:
        numba.set_num_threads(threads)


@pytest.mark.slow  # ranx compiles each method's numba kernels first
@pytest.mark.parametrize("method", FUSION_METHODS)
def test_equals_ranx_on_untied_runs(ranx: Any, method: str) -> None:
    compared = 0
    for seed in range(3):
        qrels, dicts = _random(seed)
        if method in ("condorcet", "weighted_condorcet"):
            dicts = [{q: {d: s for d, s in run[q].items() if d in dicts[0][q]} | {d: -1.0 - i / 100 for i, d in
                      enumerate(dicts[0][q]) if d not in run[q]} for q in run} for run in dicts]  # fmt: skip
        norm = "min-max"
        ours_runs = [Run.from_dict(d, name=f"r{i}") for i, d in enumerate(dicts)]
        kw: dict[str, Any] = {k: v for k, v in PARAMS.get(method, {}).items()}
        if method in TRAINED_FUSION_METHODS:
            kw["model"] = train_fusion(Qrels.from_dict(qrels), ours_runs, method, segments=3, window=2)
        ours = fuse(ours_runs, method, norm=norm, **kw).to_dict()
        theirs = _theirs(ranx, method, norm, dicts, qrels)
        assert set(ours) == set(theirs)
        for q in ours:
            if method in ("condorcet", "weighted_condorcet") and not _acyclic(dicts, q, kw.get("weights")):
                continue  # ranx's order then depends on the order its sort meets the documents in
            assert set(ours[q]) == set(theirs[q]), (method, q)
            for d, value in ours[q].items():
                assert value == pytest.approx(theirs[q][d], rel=1e-9, abs=1e-12), (method, q, d)
                compared += 1
    assert compared > 0


def _acyclic(dicts: list[dict[str, dict[str, float]]], q: str, weights: list[float] | None) -> bool:
    """Whether the (weighted) majority relation over the query's documents is a strict total order."""
    docs = sorted(dicts[0][q])
    rank = [{d: i for i, d in enumerate(sorted(run[q], key=lambda d: -run[q][d]))} for run in dicts]
    w = weights or [1.0] * len(dicts)
    beats = {(a, b): sum(wi for wi, r in zip(w, rank, strict=True) if r[a] < r[b]) >
             sum(wi for wi, r in zip(w, rank, strict=True) if r[b] < r[a]) for a in docs for b in docs if a != b}  # fmt: skip
    wins = {a: sum(beats[(a, b)] for b in docs if b != a) for a in docs}
    return sorted(wins.values()) == list(range(len(docs)))


def test_cli_fuses_with_parameters_and_trained_models(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmetrics.cli import main

    qrels, dicts = _random(1, queries=6, runs=2)
    paths = []
    for i, d in enumerate(dicts):
        paths.append(str(tmp_path / f"r{i}.run"))
        Run.from_dict(d, name=f"r{i}").to_trec(paths[-1])
    Qrels.from_dict(qrels).select(["q0", "q1", "q2"]).to_trec(tmp_path / "train.qrels")
    out = str(tmp_path / "fused.run")
    assert main(["fuse", *paths, "--method", "rbc", "--phi", "0.6", "-o", out]) == 0
    expected = fuse([Run.from_dict(d, name=f"r{i}") for i, d in enumerate(dicts)], "rbc", phi=0.6).to_dict()
    assert Run.from_trec(out).to_dict()["q4"] == pytest.approx(expected["q4"])
    assert main(["fuse", *paths, "--method", "probfuse", "--train-qrels", str(tmp_path / "train.qrels"),
                 "--segments", "4", "-o", out]) == 0  # fmt: skip
    assert set(Run.from_trec(out).to_dict()) == {f"q{i}" for i in range(6)}
    assert main(["fuse", *paths, "--method", "probfuse", "-o", out]) == 2
    assert "give --train-qrels" in capsys.readouterr().err
    assert main(["fuse", *paths, "--method", "combgmnz", "-o", out]) == 2
    assert "combgmnz needs gamma" in capsys.readouterr().err
