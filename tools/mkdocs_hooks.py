"""MkDocs hook (mkdocs.yml `hooks:`): links from docs/ to the rest of the repository work on the site too.

A page links to `../examples/nightly.py` or `../configs/quickstart.yaml` because that works where the docs are
read most, on the repository's web view and in a clone. The site holds only docs/, so MkDocs would call such
a link broken. This hook puts every repository file a page links to into the site, as a page of its own
(the file's text in a code block, under `repo/<path>.md`; a folder becomes a page listing its files; a binary
file is copied as is), and points the link there. A link to a path that does not exist in the repository is
reported as a warning naming the page and the link, so `mkdocs build --strict` fails on it as on any other
broken link. Nothing is copied that no page links to. The README's relative links are checked the same way.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.repo_links")

# `](target)` of inline links and images, and `[label]: target` of reference definitions.
INLINE = re.compile(r"(\]\()([^)\s]+)(\))")
REFERENCE = re.compile(r"^(\s{0,3}\[[^\]]+\]:\s*)(\S+)", re.MULTILINE)
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
PREFIX = "repo"  # where the linked repository files live in the site
LANGUAGES = {".py": "python", ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".jsonl": "json",
             ".toml": "toml", ".sh": "bash", ".cfg": "ini", ".ini": "ini", ".html": "html", ".md": "markdown"}
SKIPPED_DIRS = {"__pycache__", ".git", ".mypy_cache", ".ruff_cache", ".pytest_cache"}

_state: dict[str, Any] = {}


def _outside_target(page_src: str, target: str, docs_dir: Path, root: Path) -> tuple[str, str] | None:
    """(repository path, anchor) when `target`, written in docs page `page_src`, leaves docs/; else None."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return None  # a URL, an anchor on the page, or a site-absolute path: not ours
    path, _, anchor = target.partition("#")
    if not path:
        return None
    joined = (docs_dir / posixpath.dirname(page_src) / path).resolve()
    try:
        joined.relative_to(docs_dir.resolve())
        return None  # inside docs/: MkDocs checks it
    except ValueError:
        pass
    try:
        rel = joined.relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = ""  # outside the repository as well: nothing on the site can stand for it
    return rel, anchor


def _site_path(rel: str, is_dir: bool) -> str:
    """The docs-relative source path that stands for repository path `rel` on the site."""
    if is_dir:
        return f"{PREFIX}/{rel}/index.md" if rel else f"{PREFIX}/index.md"
    return f"{PREFIX}/{rel}.md"


def _fenced(text: str, language: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}\n"


def _file_page(rel: str, text: str) -> str:
    suffix = Path(rel).suffix.lower()
    language = LANGUAGES.get(suffix, "text")
    return f"# `{rel}`\n\nThe repository's `{rel}`, as the documentation links to it.\n\n{_fenced(text, language)}"


def _dir_entries(folder: Path) -> list[Path]:
    entries = []
    for child in sorted(folder.iterdir()):
        if child.name in SKIPPED_DIRS or child.name.startswith("."):
            continue
        if child.is_dir():
            entries.extend(_dir_entries(child))
        else:
            entries.append(child)
    return entries


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    _state["docs_dir"] = Path(config.docs_dir)
    _state["root"] = Path(config.config_file_path).parent
    _state["targets"] = {}  # page src_uri -> {link target: site src path}
    return config


def _links(markdown: str) -> list[str]:
    """Link targets outside fenced code blocks (a code sample's `](x)` is not a link)."""
    found: list[str] = []
    outside = []
    fence: str | None = None
    for line in markdown.splitlines():
        opening = FENCE.match(line)
        if opening:
            mark = opening.group(2)
            if fence is None:
                fence = mark
                continue
            if mark[0] == fence[0] and len(mark) >= len(fence) and line.strip() == mark:
                fence = None
                continue
        if fence is None:
            outside.append(line)
    text = "\n".join(outside)
    found.extend(m.group(2) for m in INLINE.finditer(text))
    found.extend(m.group(2) for m in REFERENCE.finditer(text))
    return found


def on_files(files: Files, config: MkDocsConfig) -> Files:
    docs_dir: Path = _state["docs_dir"]
    root: Path = _state["root"]
    made: dict[str, File] = {}

    def add_file(path: Path) -> str:
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            src = f"{PREFIX}/{rel}"
            if src not in made:
                made[src] = File.generated(config, src, content=path.read_bytes())
            return src
        src = _site_path(rel, is_dir=False)
        if src not in made:
            made[src] = File.generated(config, src, content=_file_page(rel, text))
        return src

    for page in [f for f in files if f.is_documentation_page()]:
        markdown = Path(page.abs_src_path).read_text(encoding="utf-8") if page.abs_src_path else page.content_string
        for target in _links(markdown):
            outside = _outside_target(page.src_uri, target, docs_dir, root)
            if outside is None:
                continue
            rel, _anchor = outside
            path = root / rel
            if not rel or not path.exists():
                log.warning("Doc file '%s' links to '%s', which is not a file of the repository", page.src_uri, target)
                continue
            if path.is_dir():
                listed = [(child.relative_to(root).as_posix(), add_file(child)) for child in _dir_entries(path)]
                src = _site_path(rel, is_dir=True)
                if src not in made:
                    here = posixpath.dirname(src)
                    lines = [f"# `{rel}/`\n", f"The repository's folder `{rel}/`, as the documentation links to it.\n"]
                    lines += [f"- [`{name}`]({posixpath.relpath(site, here)})" for name, site in listed]
                    made[src] = File.generated(config, src, content="\n".join(lines) + "\n")
            else:
                src = add_file(path)
            _state["targets"].setdefault(page.src_uri, {})[target] = src
    for file in made.values():
        files.append(file)
    _check_readme(root)
    return files


def _check_readme(root: Path) -> None:
    """The README is no page of the site, but its links to the docs and examples break the same way: each
    relative link must name a file or folder of the repository."""
    readme = root / "README.md"
    if not readme.is_file():
        return
    for target in _links(readme.read_text(encoding="utf-8")):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = target.partition("#")[0]
        if path and not (root / path).exists():
            log.warning("README.md links to '%s', which is not a file of the repository", target)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    targets: dict[str, str] = _state["targets"].get(page.file.src_uri, {})
    if not targets:
        return markdown
    here = posixpath.dirname(page.file.src_uri) or "."

    def swap(match: re.Match[str]) -> str:
        target = match.group(2)
        src = targets.get(target)
        if src is None:
            return match.group(0)
        anchor = target.partition("#")[2]
        # a line anchor of the repository's web view (#L10) means nothing on the site's copy
        suffix = f"#{anchor}" if anchor and not re.fullmatch(r"L\d+(-L\d+)?", anchor) else ""
        return f"{match.group(1)}{posixpath.relpath(src, here)}{suffix}{match.group(3) if match.lastindex == 3 else ''}"

    markdown = INLINE.sub(swap, markdown)
    return REFERENCE.sub(swap, markdown)
