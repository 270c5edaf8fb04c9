"""What decides a target's output, besides its input: the part of the pipeline cache's key that names the build.

Why: a key of the target module's source alone served a broken build from the cache (issue 66). An output is
decided by the code that runs (the target's module and every module of the team's project it imports, at
any depth, also inside functions), by the environment variables that code reads, by the config that reaches
the call, and by what the team knows and the code cannot show (an index version, a git SHA: `cache_key`).

- Code: the target's module and, transitively, the modules it imports whose files live in the team's project
  (the config's folder, `python_path`, the working directory, or the folder holding the target's top-level
  package), never the standard library or installed packages (site-packages). Imports are read from the
  source (the AST), not from what happens to be imported, so a lazy `import helper` inside a function
  counts, and nothing is executed to find them. Keyed on module name and bytes, not paths, so two checkouts
  of one commit share a key. Installed packages the project imports are keyed by their distribution's
  version (ragmetrics too, also when it runs from a checkout: it is the evaluator, not the team's code).
- Environment: the variables that code reads by a literal name (`os.environ["X"]`, `os.environ.get("X")`,
  `os.getenv("X")`, `"X" in os.environ`), and those the config declares in `cache_key_env` (read under another
  name, by a library, or by an HTTP service's deploy). Only a hash of their values enters the key; the values
  are stored nowhere (they may be secrets).
- Config: the call settings that reach the output (target, version, cache_key, cache_key_env).

A module imported by a computed name (`importlib.import_module(name)`) or data files read at run time are
not seen: declare them with `cache_key` (or `version`), as docs/nightly.md says.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.machinery
import inspect
import json
import os
import site
import sys
import sysconfig
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CallIdentity", "CodeFootprint", "call_identity", "code_footprint"]

_ENV_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__", "__contains__"})


@dataclass(frozen=True)
class CodeFootprint:
    """The team's modules a callable runs (name -> sha256 of the file's bytes), the variables they read, and the
    installed packages they import."""

    modules: dict[str, str] = field(default_factory=dict)
    env_read: tuple[str, ...] = ()
    packages: dict[str, str] = field(default_factory=dict)
    """Installed distributions the project imports -> their versions (an upgrade may change outputs)."""

    def digest(self) -> str:
        blob = json.dumps([sorted(self.modules.items()), sorted(self.packages.items())], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CallIdentity:
    """The build a target's outputs come from, as one key (`key`), and what went into it, for the report
    (`describe`): module names, variable names and whether a cache_key is set; never a variable's value."""

    key: str
    modules: tuple[str, ...]
    env_names: tuple[str, ...]
    cache_key: str | None
    packages: tuple[str, ...] = ()

    def describe(self) -> str:
        shown = ", ".join(self.modules[:6]) + (
            f" and {len(self.modules) - 6} more" if len(self.modules) > 6 else ""
        )
        plural = "s" if len(self.modules) != 1 else ""
        code = f"{len(self.modules)} project module{plural} ({shown})" if self.modules else "no module"
        env = (
            f"environment variables {', '.join(self.env_names)}"
            if self.env_names
            else "no environment variable"
        )
        extra = "; cache_key set" if self.cache_key is not None else ""
        installed = f", installed {', '.join(self.packages)}" if self.packages else ""
        return f"keyed on {code}{installed}, {env}{extra}"


def call_identity(
    settings: Mapping[str, Any],
    *,
    fn: Callable[..., Any] | None,
    search: Sequence[Path],
    env: Mapping[str, str] | None = None,
) -> CallIdentity:
    """The identity of one target's build: `settings` are the call settings that reach the output (target,
    version, cache_key, cache_key_env), `fn` the imported callable (None for an HTTP endpoint), `search` the
    folders its project lives in."""
    env = os.environ if env is None else env
    footprint = code_footprint(fn, search) if fn is not None else CodeFootprint()
    declared = [str(name) for name in settings.get("cache_key_env") or ()]
    names = tuple(sorted({*declared, *footprint.env_read}))
    # Values enter only this hash, and the hash only the key (itself hashed with the input): never stored.
    values = hashlib.sha256(
        json.dumps([[name, env.get(name)] for name in names], ensure_ascii=False).encode("utf-8")
    ).hexdigest()
    blob = json.dumps(
        {"settings": dict(settings), "code": footprint.digest(), "env": values, "env_names": names},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    cache_key = settings.get("cache_key")
    return CallIdentity(
        key=hashlib.sha256(blob.encode("utf-8")).hexdigest(),
        modules=tuple(sorted(footprint.modules)),
        env_names=names,
        cache_key=None if cache_key is None else str(cache_key),
        packages=tuple(f"{dist} {version}" for dist, version in sorted(footprint.packages.items())),
    )


def code_footprint(fn: Callable[..., Any], search: Sequence[Path]) -> CodeFootprint:
    """The project modules `fn` runs, found from its module's imports at any depth (module docstring), and
    the installed distributions they import, by version."""
    module = inspect.getmodule(fn)
    if module is None:
        return CodeFootprint()
    start = _source_file(module)
    if start is None:
        return CodeFootprint()
    roots = _project_roots(module.__name__, start, search)
    installed = _install_dirs()
    find = functools.lru_cache(maxsize=None)(_module_file)  # one lookup per name, however often imported
    modules: dict[str, str] = {}
    packages: set[str] = set()
    env_read: set[str] = set()
    queue: list[tuple[str, Path]] = [(module.__name__, start)]
    seen: set[Path] = set()
    while queue:
        name, path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            data = path.read_bytes()
        except OSError:
            continue
        modules[name] = hashlib.sha256(data).hexdigest()
        try:
            tree = ast.parse(data, filename=str(path))
        except (SyntaxError, ValueError):
            continue  # its bytes are keyed; an unparsable file imports nothing we could follow
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported, env = _imports_and_env(tree, package, reads_env=b"environ" in data or b"getenv" in data)
        env_read |= env
        for other in imported:
            if other.partition(".")[0] == _OWN_PACKAGE:
                packages.add(_OWN_PACKAGE)  # the evaluator, keyed by its version as when it is installed
                continue
            found = find(other)
            if found is None:
                continue
            if _is_project_file(found, roots, installed):
                queue.append((other, found))
            elif "." not in other:
                packages.add(other)
    return CodeFootprint(modules=modules, env_read=tuple(sorted(env_read)), packages=_versions(packages))


_OWN_PACKAGE = __name__.partition(".")[0]


def _versions(top_level: set[str]) -> dict[str, str]:
    """Installed distribution -> version, for the top-level modules imported (the standard library has none)."""
    from importlib import metadata

    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    wanted = sorted(name for name in top_level if name not in stdlib)
    if not wanted:
        return {}
    found: dict[str, str] = {}
    unnamed = []
    for name in wanted:  # most distributions are named as their module (bm25s): no scan of every distribution
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            unnamed.append(name)
    owners = metadata.packages_distributions() if unnamed else {}  # sklearn -> scikit-learn: seconds, once
    for name in unnamed:
        for dist in owners.get(name, []):
            try:
                found[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
    return found


def _source_file(module: Any) -> Path | None:
    try:
        path = inspect.getsourcefile(module)
    except TypeError:  # a built-in module
        return None
    return Path(path).resolve() if path is not None else None


def _project_roots(module_name: str, start: Path, search: Sequence[Path]) -> list[Path]:
    """The search folders, and the folder holding the target's top-level package (an editable install)."""
    top = start.parent
    for _ in range(module_name.count(".") + (start.name == "__init__.py")):
        top = top.parent
    return [p.resolve() for p in (*search, top)]


def _install_dirs() -> list[Path]:
    """Where the standard library and installed packages live: never the team's project."""
    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    dirs.add(user if isinstance(user, str) else None)
    return [Path(d).resolve() for d in dirs if d]


def _is_project_file(path: Path, roots: Iterable[Path], installed: Iterable[Path]) -> bool:
    if path.suffix != ".py" or any(part in ("site-packages", "dist-packages") for part in path.parts):
        return False
    if any(path.is_relative_to(d) for d in installed):
        return False
    return any(path.is_relative_to(root) for root in roots)


def _module_file(name: str) -> Path | None:
    """The source file `name` is (or would be) imported from, without importing anything new."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return _source_file(loaded)
    parent, _, _ = name.rpartition(".")
    locations: Any = None
    if parent:
        owner = sys.modules.get(parent)
        locations = getattr(owner, "__path__", None) if owner is not None else None
        if locations is None:
            parent_file = _module_file(parent)
            if parent_file is None or parent_file.name != "__init__.py":
                return None
            locations = [str(parent_file.parent)]
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, locations)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    return Path(spec.origin).resolve()


def _imports_and_env(tree: ast.AST, package: str, *, reads_env: bool) -> tuple[list[str], set[str]]:
    """One walk over `tree`: every module an `import` anywhere in it may load (the module, its parent packages,
    and for `from m import x` also `m.x`, x being perhaps a submodule), and, when `reads_env`, the
    environment variables it reads by a literal name."""
    names: list[str] = []
    env: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".") if package else []
                if node.level - 1 > len(anchor):
                    continue
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if not base:
                continue
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
        elif reads_env:
            name = _env_name(node)
            if name is not None:
                env.add(name)
    out: list[str] = []
    for name in names:
        parts = name.split(".")
        out += [".".join(parts[: i + 1]) for i in range(len(parts))]
    return list(dict.fromkeys(out)), env


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` or a bare `environ` (from os import environ)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and node.id == "environ"


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _env_name(node: ast.AST) -> str | None:
    """The environment variable `node` reads by a literal name, if it reads one."""
    if isinstance(node, ast.Subscript) and _is_environ(node.value):
        return _literal(node.slice)
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if (
            (isinstance(func, ast.Attribute) and func.attr in _ENV_METHODS and _is_environ(func.value))
            or (isinstance(func, ast.Attribute) and func.attr in ("getenv", "getenvb"))
            or (isinstance(func, ast.Name) and func.id == "getenv")
        ):
            return _literal(node.args[0])
    if isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
        return _literal(node.left)
    return None
