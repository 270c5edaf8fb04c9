"""The package's layers, enforced: every import (top-level, inside functions, importlib with a literal) is
checked against the dependency direction documented in docs/architecture.md.

    cli -> nightly -> (api, engines, render, collection, retrievers) -> (retrieval | judge | comparison | trust)
        -> (schema, errors, options, _async, embeddings)

retrieval and judge never import each other; comparison imports neither; nothing imports cli, and only cli
imports nightly. A new arrow against this direction fails here with the file and line that added it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ragmetrics"

# Which part each module belongs to, by the longest matching dotted prefix.
PARTS: dict[str, str] = {
    "ragmetrics": "facade",
    "ragmetrics.__main__": "cli",
    "ragmetrics.cli": "cli",
    "ragmetrics.nightly": "nightly",
    "ragmetrics.history": "nightly",
    "ragmetrics.live": "nightly",
    "ragmetrics.sweep": "nightly",
    "ragmetrics.api": "api",
    "ragmetrics.qrels_fill": "api",
    "ragmetrics.metric_check": "api",
    "ragmetrics.utility": "api",
    "ragmetrics.alignment": "api",
    "ragmetrics.panels": "api",
    "ragmetrics.traces": "api",
    "ragmetrics.mlflow": "api",
    "ragmetrics.testset": "testset",
    "ragmetrics.attacks": "attacks",
    "ragmetrics.validity": "validity",
    "ragmetrics.testing": "facade",
    "ragmetrics.engines": "engines",
    "ragmetrics.render": "render",
    "ragmetrics.collection": "extras",
    "ragmetrics.retrievers": "extras",
    "ragmetrics.chunking": "extras",
    "ragmetrics.index": "extras",
    "ragmetrics.retrieval": "retrieval",
    "ragmetrics.judge": "judge",
    "ragmetrics.comparison": "comparison",
    "ragmetrics.trust": "trust",
    "ragmetrics.schema": "base",
    "ragmetrics.schema_base": "base",
    "ragmetrics.schema_run": "base",
    "ragmetrics.schema_trust": "base",
    "ragmetrics.schema_comparison": "base",
    "ragmetrics.schema_gate": "base",
    "ragmetrics.schema_nightly": "base",
    "ragmetrics.schema_report": "base",
    "ragmetrics.schema_sufficiency": "base",
    "ragmetrics.schema_utility": "base",
    "ragmetrics.errors": "base",
    "ragmetrics.options": "base",
    "ragmetrics._async": "base",
    "ragmetrics._version": "base",
    "ragmetrics._jsonl": "base",
    "ragmetrics._textfile": "base",
    "ragmetrics._callables": "base",
    "ragmetrics._team_code": "base",
    "ragmetrics._numbers": "base",
    "ragmetrics._yaml": "base",
    "ragmetrics._format": "base",
    "ragmetrics.embeddings": "base",
}

CORE = {"retrieval", "judge", "comparison", "trust"}
# The parts each part may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "base": {"base"},
    "retrieval": {"base"},
    "judge": {"base"},
    "comparison": {"base"},
    "trust": {"base"},
    "render": {"base", "comparison"},
    "api": {"base"} | CORE,
    "engines": {"base"} | CORE,
    "extras": {"base", "retrieval", "judge"},
    "testset": {"base", "api", "extras"} | CORE,
    # attack sets are built from test sets and corpora, and render their own page
    "attacks": {"base", "api", "extras", "testset", "render"} | CORE,
    # which metric tracks the answers: reads results of every core part, lays out its own table and plots
    "validity": {"base", "render"} | CORE,
    "nightly": {"base", "api", "engines", "render", "extras", "testset", "attacks", "validity"} | CORE,
    "cli": {"base", "api", "engines", "render", "extras", "nightly", "facade", "testset", "attacks", "validity"}
    | CORE,
    "facade": {"base", "api", "engines", "render", "extras", "nightly", "testset", "attacks", "validity"} | CORE,
}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    path: str
    line: int


def part_of(module: str) -> str:
    best = ""
    for prefix in PARTS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    if not best:
        raise AssertionError(
            f"module {module!r} belongs to no part: add it to PARTS and docs/architecture.md"
        )
    return PARTS[best]


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(path: Path) -> list[Edge]:
    """Every ragmetrics module `path` imports, wherever the import statement sits."""
    source = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    edges: list[Edge] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(source, path.name == "__init__.py", node.level, node.module)
                if node.level
                else (node.module or "")
            )
            # `from ragmetrics import x` may name a submodule; count it as importing that submodule.
            targets = [
                f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base for alias in node.names
            ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
        ):
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                targets = [first.value]
            elif (
                isinstance(first, ast.JoinedStr)
                and first.values
                and isinstance(first.values[0], ast.Constant)
            ):
                # f"ragmetrics.cli.{name}": the literal prefix names the package it reaches into.
                targets = [str(first.values[0].value).rstrip(".")]
        for target in targets:
            if target == "ragmetrics" or target.startswith("ragmetrics."):
                edges.append(Edge(source, target, str(path.relative_to(PACKAGE.parent)), node.lineno))
    return edges


def _is_module(dotted: str) -> bool:
    relative = Path(*dotted.split("."))
    return (PACKAGE.parent / relative).with_suffix(".py").exists() or (PACKAGE.parent / relative).is_dir()


def violations(edges: list[Edge]) -> list[str]:
    found = []
    for edge in edges:
        source_part, target_part = part_of(edge.source), part_of(edge.target)
        if source_part == target_part:
            continue
        if target_part not in ALLOWED[source_part]:
            found.append(
                f"{edge.path}:{edge.line}: {edge.source} ({source_part}) imports {edge.target} ({target_part})"
            )
    return found


def all_edges() -> list[Edge]:
    return [edge for path in sorted(PACKAGE.rglob("*.py")) for edge in imports_of(path)]


def test_every_module_belongs_to_a_part() -> None:
    for path in PACKAGE.rglob("*.py"):
        part_of(module_name(path))


def test_imports_follow_the_layers() -> None:
    found = violations(all_edges())
    assert not found, "imports against the layer direction:\n" + "\n".join(found)


def test_the_walk_sees_imports_everywhere() -> None:
    """The checker is only as good as its walk: lazy imports inside functions and importlib calls count."""
    edges = all_edges()
    assert any(e.source == "ragmetrics.cli.main" and e.target.startswith("ragmetrics.cli") for e in edges)
    lazy = [e for e in edges if e.source.startswith("ragmetrics.nightly")]
    assert lazy, "the nightly package imports nothing? the walk is broken"


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("ragmetrics.retrieval.evaluate", "ragmetrics.judge.base"),
        ("ragmetrics.judge.evaluate", "ragmetrics.retrieval.run"),
        ("ragmetrics.comparison.stats", "ragmetrics.retrieval.evaluate"),
        ("ragmetrics.render.tables", "ragmetrics.nightly.pipeline"),
        ("ragmetrics.nightly.pipeline", "ragmetrics.cli.main"),
        ("ragmetrics.schema", "ragmetrics.judge.base"),
        ("ragmetrics.api", "ragmetrics.render.tables"),
    ],
)
def test_an_arrow_against_the_direction_is_caught(source: str, target: str) -> None:
    assert violations([Edge(source, target, "synthetic.py", 1)])


def test_allowed_arrows_pass() -> None:
    allowed = [
        Edge("ragmetrics.cli.run", "ragmetrics.nightly.pipeline", "x.py", 1),
        Edge("ragmetrics.nightly.pipeline", "ragmetrics.judge.evaluate", "x.py", 1),
        Edge("ragmetrics.render.tables", "ragmetrics.comparison.align", "x.py", 1),
        Edge("ragmetrics.judge.backends.local", "ragmetrics.embeddings.minilm", "x.py", 1),
    ]
    assert violations(allowed) == []


def test_only_the_ray_engine_imports_ray() -> None:
    # Ray is an optional extra: the core must import and run without it.
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "engines/ray" in path.as_posix():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "ray" or n.startswith("ray.") for n in names):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, offenders


# -- one registry for every metric -----------------------------------------------------------------------

SPEC_MAKERS = {"ragmetrics/judge/registry.py", "ragmetrics/judge/custom.py", "ragmetrics/judge/rubric.py"}


def test_metric_specs_are_made_in_one_place_per_kind_and_registered_in_one() -> None:
    """A built-in metric is a spec in judge/registry.py; a team's (contains, matches, python, rubric from YAML
    or an entry point) is a spec made by its definition in judge/custom.py or judge/rubric.py. Both kinds
    enter the one registry, whose tables no other module touches."""
    makers: set[str] = set()
    touching: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "JudgeMetricSpec":
                makers.add(relative)
            if isinstance(node, ast.Name | ast.Attribute) and relative != "ragmetrics/judge/registry.py":
                name = node.id if isinstance(node, ast.Name) else node.attr
                if name in ("_registered", "_BUILTIN", "_BUILTIN_ALIASES"):
                    touching.append(f"{relative}:{node.lineno}")
    assert makers == SPEC_MAKERS
    assert not touching, touching


def test_a_yaml_metric_and_a_built_in_one_are_seen_alike(tmp_path: Path) -> None:
    from ragmetrics.judge.backends.local import LocalJudge
    from ragmetrics.judge.own_metrics import load_metric_file
    from ragmetrics.judge.registry import JudgeMetricSpec, judge_metric_names, registered_metrics, spec

    path = tmp_path / "tone.yaml"
    path.write_text("name: tone\ntype: rubric\nquestion: Polite?\nscale: {type: binary}\n", encoding="utf-8")
    own = load_metric_file(path).to_spec(str(path))
    assert type(own) is type(spec("faithfulness")) is JudgeMetricSpec
    with registered_metrics([own]):
        assert spec("tone") is own and "tone" in judge_metric_names()
        assert "tone" in LocalJudge().supported_metrics()
    assert "tone" not in judge_metric_names()


def test_no_module_imports_itself_in_a_circle() -> None:
    """No circle of imports between modules (lazy and TYPE_CHECKING imports included; a package's __init__,
    which re-exports, left out): a circle means two modules are one job split in two, or a type defined in
    the wrong place. Breaking the five there were made `history.update`, `judge.backends.local_thresholds`,
    `nightly.runs` and two protocols."""
    packages = {".".join(p.relative_to(PACKAGE.parent).parent.parts) for p in PACKAGE.rglob("__init__.py")}
    edges = all_edges()
    modules = {e.source for e in edges}

    def module_of(target: str) -> str | None:
        while target not in modules and "." in target:
            target = target.rsplit(".", 1)[0]
        return target if target in modules else None

    graph: dict[str, set[str]] = {}
    for edge in edges:
        target = module_of(edge.target)
        if edge.source not in packages and target and target != edge.source and target not in packages:
            graph.setdefault(edge.source, set()).add(target)
    circles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not circles, "import circles:\n" + "\n".join(circles)
