"""udcg@k against GiovanniTRA/UDCG's own `compute_udcg_score`, read from a copy of its repository.

    python benchmarks/check_udcg_reference.py [--repo PATH] [--cases N] [--seed S] [--compiled]
    python benchmarks/check_udcg_reference.py --write-fixture tests/data/udcg_reference_cases.json

The reference (Trappolini et al. 2025, arXiv 2510.21440; MIT licence) is read from `src/compute_udcg_scores.py`
of the copy (a work tree, or a git directory read with `git show HEAD:...`); only its three functions
`sigmoid`, `get_no_res_prob` and `compute_udcg_score` are taken from the file's syntax tree and run, so its
`utils` module (which imports torch) is never imported, and its warnings are silenced. Nothing of it is
copied into ragmetrics: the tests hold only the values it returns (`--write-fixture`).

Checked:
- its sample data: every item of data/dataset_with_scores.json scored by the reference and by udcg@k
  (k = the item's passages), with the default weights and with irrelevant weight -0.333, and the values
  data/dataset_with_udcg.json stores (the reference's outputs, which were written with -0.333: see
  `STORED_IRRELEVANT_WEIGHT`);
- N random passage lists: 0 to 20 passages with grades 0-3, judged-but-unassessed (-1) or unjudged, abstention
  probabilities in [0, 1] (exact 0 and 1 included), now and then a passage missing its probability or its
  relevance label (the reference skips it but counts it; ragmetrics' missing="skip"), cutoffs 1 to 25 (often
  beyond the list), relevance levels 1 to 3, and the default or random weights.
The reference is given the top k passages with is_relevant = grade >= level; ragmetrics the whole ranking as a
run, the grades as qrels and the probabilities as `AbstentionProbabilities`. Prints the largest absolute
difference and the number of lists; exits 1 above 1e-12.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragmetrics.retrieval.evaluate import evaluate  # noqa: E402
from ragmetrics.retrieval.utilities import AbstentionProbabilities  # noqa: E402

DEFAULT_REPO = Path("/work/.mirror/GiovanniTRA+UDCG/repo")
MODEL = "reference-model"
TOLERANCE = 1e-12
_TAKEN = ("sigmoid", "get_no_res_prob", "compute_udcg_score")

Reference = Callable[..., float]


def read_repo_file(repo: Path, path: str) -> str:
    """A file of the copy: from its work tree if it has one, else from HEAD of its git directory."""
    if (repo / path).is_file():
        return (repo / path).read_text(encoding="utf-8")
    shown = subprocess.run(
        ["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True, check=False
    )
    if shown.returncode != 0:
        raise FileNotFoundError(f"{path} not found in {repo}: {shown.stderr.strip()}")
    return shown.stdout


def load_reference(repo: Path) -> Reference:
    """`compute_udcg_score` as the reference defines it, with the helpers it calls and `print` silenced."""
    tree = ast.parse(read_repo_file(repo, "src/compute_udcg_scores.py"))
    kept = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in _TAKEN]
    if {node.name for node in kept} != set(_TAKEN):
        raise RuntimeError(f"the reference file lacks one of {_TAKEN}")
    namespace: dict[str, Any] = {"math": math, "print": lambda *args, **kwargs: None}
    exec(compile(ast.Module(body=kept, type_ignores=[]), "compute_udcg_scores.py", "exec"), namespace)
    function: Reference = namespace["compute_udcg_score"]
    return function


# A case: passages in rank order, each {"doc_id", "grade" (int, or None = unjudged), "p_abstain" (float, or None
# = missing), "reference_lacks" ("no_res_prob", "is_relevant" or None)}, plus k, level and weights.


def reference_passages(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's top k passages in the reference's input form."""
    out = []
    for passage in case["passages"][: case["k"]]:
        grade = passage["grade"]
        entry: dict[str, Any] = {"doc_id": passage["doc_id"]}
        lacks = passage.get("reference_lacks")
        if lacks != "is_relevant":
            entry["is_relevant"] = grade is not None and grade >= case["level"]
        if lacks != "no_res_prob":
            p = passage["p_abstain"] if passage["p_abstain"] is not None else random.random()
            entry["models_info"] = {MODEL: {"no_res_prob": p}}
        out.append(entry)
    return out


def reference_value(reference: Reference, case: dict[str, Any]) -> float:
    return float(
        reference(reference_passages(case), MODEL, case["relevant_weight"], case["irrelevant_weight"])
    )


def metric_name(case: dict[str, Any]) -> str:
    name = f"udcg.rel={case['relevant_weight']!r}.irr={case['irrelevant_weight']!r}@{case['k']}"
    return name + (f"-l{case['level']}" if case["level"] != 1 else "")


def ragmetrics_value(case: dict[str, Any]) -> float:
    passages = case["passages"]
    qrels = {"q": {p["doc_id"]: p["grade"] for p in passages if p["grade"] is not None}}
    run = {"q": {p["doc_id"]: float(len(passages) - i) for i, p in enumerate(passages)}}
    probabilities = {"q": {p["doc_id"]: p["p_abstain"] for p in passages if p["p_abstain"] is not None}}
    utilities = AbstentionProbabilities.from_dict(probabilities, source="case", missing="skip")
    metric = metric_name(case)
    if not qrels["q"]:
        qrels["q"] = {"never-retrieved": 0}  # the qrels must hold the query; no passage is relevant
    score = evaluate(qrels, run, [metric], utilities=utilities).per_query["q"][metric]
    assert score is not None
    return float(score)


def _weight(rng: random.Random, low: float, high: float) -> float:
    while True:  # a weight whose repr has no exponent (the metric name writes it as a decimal)
        value = round(rng.uniform(low, high), rng.choice((2, 6, 12)))
        if "e" not in repr(value):
            return value


def random_case(rng: random.Random, index: int) -> dict[str, Any]:
    n = rng.randint(0, 20)
    passages = []
    for i in range(n):
        grade = rng.choice((0, 0, 1, 1, 2, 3, -1, None))
        p = rng.choice((0.0, 1.0, rng.random(), rng.random(), rng.random() ** 4))
        lacks = rng.choices((None, "no_res_prob", "is_relevant"), weights=(18, 1, 1))[0]
        passages.append(
            {"doc_id": f"d{i}", "grade": grade, "p_abstain": None if lacks else p, "reference_lacks": lacks}
        )
    defaults = rng.random() < 0.4
    return {
        "id": f"random-{index}",
        "passages": passages,
        "k": rng.randint(1, 25),
        "level": rng.choice((1, 1, 2, 3)),
        "relevant_weight": 1.0 if defaults else _weight(rng, 0.0, 3.0),
        "irrelevant_weight": -1 / 3 if defaults else _weight(rng, -2.0, 0.5),
    }


STORED_IRRELEVANT_WEIGHT = -0.333
"""The irrelevant weight data/dataset_with_udcg.json was written with: its scores are those of
`compute_udcg_score` with -0.333 (the README's "[default: -0.333]"), not with the code's default -1/3, which
gives values 4e-5 to 7e-5 lower on the same passages. Found by inverting the sigmoid of its stored values."""


def sample_cases(repo: Path) -> tuple[list[dict[str, Any]], list[float]]:
    """The reference's sample items as cases (k = every passage) with the irrelevant weight its stored outputs
    were computed with (`STORED_IRRELEVANT_WEIGHT`), and the scores data/dataset_with_udcg.json stores."""
    items = json.loads(read_repo_file(repo, "data/dataset_with_scores.json"))
    stored = json.loads(read_repo_file(repo, "data/dataset_with_udcg.json"))
    cases, expected = [], []
    for item, scored in zip(items, stored, strict=True):
        model = next(iter(scored["udcg"]))
        passages = [
            {
                "doc_id": str(p["doc_id"]),
                "grade": 1 if p["is_relevant"] else 0,
                "p_abstain": p["models_info"][model]["no_res_prob"],
                "reference_lacks": None,
            }
            for p in item["passages"]
        ]
        cases.append(
            {
                "id": f"sample-{item['example_id']}",
                "passages": passages,
                "k": len(passages),
                "level": 1,
                "relevant_weight": 1.0,
                "irrelevant_weight": STORED_IRRELEVANT_WEIGHT,
            }
        )
        expected.append(float(scored["udcg"][model]))
    return cases, expected


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repo", type=Path, default=DEFAULT_REPO, help=f"copy of GiovanniTRA/UDCG (default {DEFAULT_REPO})"
    )
    parser.add_argument("--cases", type=int, default=5000, help="random passage lists (default 5000)")
    parser.add_argument("--seed", type=int, default=68)
    parser.add_argument(
        "--write-fixture",
        type=Path,
        help="also write the first 200 random cases and the sample "
        "items, with the reference's values, as a test fixture",
    )
    parser.add_argument(
        "--compiled",
        action="store_true",
        help="score with the numba-compiled kernels (default: as evaluate picks)",
    )
    args = parser.parse_args()
    try:
        reference = load_reference(args.repo)
    except (FileNotFoundError, RuntimeError) as exc:
        print(
            f"check_udcg_reference: {exc} (give --repo, a copy of github.com/GiovanniTRA/UDCG)",
            file=sys.stderr,
        )
        return 2
    if args.compiled:
        from ragmetrics.retrieval._lazy import force_path

        with force_path(True):
            return check(args, reference)
    return check(args, reference)


def check(args: argparse.Namespace, reference: Reference) -> int:
    """Both comparisons, printed; 0 when every difference is within `TOLERANCE`."""

    samples, stored = sample_cases(args.repo)
    # Each item with the weight its stored output used, then with the paper's default -1/3.
    defaults = [{**c, "id": c["id"] + "-default", "irrelevant_weight": -1 / 3} for c in samples]
    stored_gap = max(abs(s - ragmetrics_value(c)) for c, s in zip(samples, stored, strict=True))
    sample_gap = max(abs(reference_value(reference, c) - ragmetrics_value(c)) for c in [*samples, *defaults])
    rng = random.Random(args.seed)
    cases = [random_case(rng, i) for i in range(args.cases)]
    gap = 0.0
    worst = ""
    values = []
    for case in cases:
        expected = reference_value(reference, case)
        got = ragmetrics_value(case)
        values.append(expected)
        if abs(expected - got) > gap or math.isnan(got):
            gap, worst = abs(expected - got), case["id"]
    print(
        f"sample data (data/dataset_with_scores.json, {len(samples)} items, irr -0.333 and -1/3): "
        f"max |udcg - reference| = {sample_gap:.3g}"
    )
    print(f"stored outputs (data/dataset_with_udcg.json, irr -0.333): max |udcg - stored| = {stored_gap:.3g}")
    print(
        f"random passage lists: {len(cases)}, max |udcg - reference| = {gap:.3g}"
        + (f" (at {worst})" if worst else "")
    )
    if args.write_fixture:
        by_id = {c["id"]: value for c, value in zip(samples, stored, strict=True)}
        write_fixture(
            args.write_fixture, reference, args.seed, [*samples, *defaults], by_id, cases[:FIXTURE_RANDOM]
        )
    return 0 if max(gap, sample_gap, stored_gap) <= TOLERANCE else 1


FIXTURE_RANDOM = 200
PASSAGE_FIELDS = ("doc_id", "grade", "p_abstain", "reference_lacks")


def write_fixture(
    path: Path,
    reference: Reference,
    seed: int,
    samples: list[dict[str, Any]],
    stored: dict[str, float],
    kept: list[dict[str, Any]],
) -> None:
    """The cases and the reference's values on them, one case per line, passages as `PASSAGE_FIELDS` rows."""
    about = (
        "Values of udcg@k computed by GiovanniTRA/UDCG's compute_udcg_score (src/compute_udcg_scores.py, MIT "
        "licence; Trappolini et al., 'Redefining Retrieval Evaluation in the Era of LLMs', arXiv 2510.21440) on its "
        "sample data (data/dataset_with_scores.json; 'stored' holds data/dataset_with_udcg.json's values, which the "
        "reference gives with irrelevant weight -0.333, the README's default, not the code's -1/3) and on random "
        f"passage lists (seed {seed}), written by benchmarks/check_udcg_reference.py --write-fixture. The reference "
        "was given each case's top k passages with is_relevant = grade >= level (a null grade: unjudged, not "
        "relevant); a null p_abstain is a passage the reference skipped but counted because it lacked "
        "no_res_prob or is_relevant (reference_lacks)."
    )
    head = {"about": about, "passage_fields": list(PASSAGE_FIELDS), "stored": stored}
    rows = [
        {
            **c,
            "passages": [[p[f] for f in PASSAGE_FIELDS] for p in c["passages"]],
            "metric": metric_name(c),
            "expected": reference_value(reference, c),
        }
        for c in [*samples, *kept]
    ]
    body = ",\n".join(json.dumps(row, separators=(",", ":")) for row in rows)
    path.write_text(f'{json.dumps(head, indent=1)[:-2]},\n "cases": [\n{body}\n ]\n}}\n', encoding="utf-8")
    print(f"fixture: {path} ({len(rows)} cases)")


if __name__ == "__main__":
    sys.exit(main())
