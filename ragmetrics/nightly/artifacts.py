"""The artifacts of one evaluation, in a dated folder: report.json, per-query Parquet/CSV, report.md, report.html.

The folder is written under a hidden temporary name and renamed when complete, so an interrupted or killed run
never leaves a half-written report where a later `--baseline` could pick it up. `latest` (a symlink, or a
one-line text file where symlinks are unavailable) then points at the newest folder.
Before anything is written, the payloads are scanned for the judge's API key; a match is replaced.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics._textfile import read_utf8
from ragmetrics.errors import InputError
from ragmetrics.schema import GateResult, Report

if TYPE_CHECKING:
    from ragmetrics.render.html import PagePlot

REDACTED = "[redacted]"
FORMATS = ("json", "parquet", "csv", "md", "html")
_STAMP = "%Y-%m-%dT%H%M%SZ"


def dated_folder(root: Path, now: datetime | None = None) -> Path:
    """root/<UTC stamp>, with -2, -3, ... appended when that name is taken."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime(_STAMP)
    candidate = root / stamp
    n = 2
    while candidate.exists():
        candidate = root / f"{stamp}-{n}"
        n += 1
    return candidate


def per_query_frame(report: Report) -> Any:
    """One row per (run, query), one column per metric; a failed score is empty (its cause is in report.json)."""
    import pandas as pd

    metrics: list[str] = list(report.metrics)
    for run in report.runs:
        metrics.extend(m for m in run.metrics if m not in metrics)
    rows = []
    for run in report.runs:
        for qid, scores in run.per_query.items():
            rows.append({"run": run.name, "query_id": qid, **{m: scores.get(m) for m in metrics}})
    frame = pd.DataFrame(rows, columns=["run", "query_id", *metrics])
    for metric in metrics:
        frame[metric] = frame[metric].astype("Float64")
    return frame


def markdown_report(report: Report, gate: GateResult | None) -> str:
    from ragmetrics.render.safe_text import strip_controls
    from ragmetrics.render.tables import format_report

    meta = report.metadata
    name = meta.nightly.name if meta.nightly is not None else "ragmetrics report"
    from ragmetrics.render.safe_text import markdown_text

    lines = [
        f"# {markdown_text(name)}",
        "",
        f"- created: {meta.created_at.strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"- dataset fingerprint: `{meta.dataset_fingerprint}`",
        f"- queries: {meta.query_count}; runs: {', '.join(markdown_text(r.name) for r in report.runs)}",
        f"- versions: {', '.join(f'{k} {v}' for k, v in meta.versions.items())}",
        *_judge_md(report),
        "",
        *_verdict_md(report),
        "## Summary",
        "",
        format_report(report, "markdown").rstrip(),
        "",
    ]
    partial = partial_metrics_table(report)
    if partial:
        lines += ["## Metrics not every run has", "", *partial, ""]
    from ragmetrics.nightly.validity_night import validity_markdown_section

    lines += validity_markdown_section(report)
    from ragmetrics.render.qrels_note import qrels_lines, report_qrels
    from ragmetrics.render.verdict import verdict_lines

    provenance = qrels_lines(report_qrels(report), warnings=not verdict_lines(report))
    if provenance:
        lines += ["## Where the relevance grades came from", "",
                  *(f"- {'**Warning:** ' + markdown_text(p[2:]) if p.startswith('! ') else markdown_text(p)}"
                    for p in provenance), ""]  # fmt: skip
    lines += _sufficiency_md(report)
    if gate is not None:
        from ragmetrics.render._text import to_markdown
        from ragmetrics.render.baseline import baseline_grid, baseline_rows

        rows = baseline_rows(report, gate)
        if rows:
            lines += ["## Against the baseline", "", to_markdown(baseline_grid(rows, gate)).rstrip(), ""]
        described = strip_controls(gate.describe())
        longest = max((len(m) for m in re.findall(r"`+", described)), default=0)
        fence = "`" * max(3, longest + 1)  # a fence the text cannot close
        lines += ["## Regression gate", "", fence, described, fence, ""]
    work = meta.nightly.work if meta.nightly is not None else None
    if work is not None:
        from ragmetrics.render._text import to_markdown
        from ragmetrics.render.work import work_grid

        lines += ["## Cost and time", "", to_markdown(work_grid(work)).rstrip(), ""]
    if meta.power:
        from ragmetrics.render._text import to_markdown
        from ragmetrics.render.power import power_grid

        lines += ["## Power", "", to_markdown(power_grid(meta.power)).rstrip(), ""]
    if meta.notes:
        lines += ["## Notes", "", *(f"- {markdown_text(n)}" for n in meta.notes), ""]
    return "\n".join(lines)


def _judge_md(report: Report) -> list[str]:
    """Who judged, and for the local judge its measured weaknesses, as list items."""
    from ragmetrics.render.judge_note import judge_line, judge_note
    from ragmetrics.render.safe_text import markdown_text

    judge = report.metadata.nightly.judge if report.metadata.nightly is not None else None
    if judge is None:
        return []
    metrics = list(dict.fromkeys(m for run in report.runs for m in run.metrics))
    note = judge_note(judge, metrics)
    lines = [f"- {markdown_text(judge_line(judge))}"]
    if note:
        lines += [f"  - {markdown_text(line.strip())}" for line in note.splitlines()[1:]]
    return lines


def _sufficiency_md(report: Report) -> list[str]:
    """Where answers were lost: each pair's sentences (answers, retrieval, generation), then each run's cells
    and each pair's moved cells (`render.sufficiency`)."""
    from ragmetrics.render._text import to_markdown
    from ragmetrics.render.safe_text import markdown_text
    from ragmetrics.render.sufficiency import breakdown_grid, pair_grid, report_sufficiency, sufficiency_intro

    section = report_sufficiency(report)
    if section is None:
        return []
    lines = ["## Sufficient context: retrieval or generation", "", markdown_text(sufficiency_intro(section)), ""]
    for pair in section.pairs:
        lines += [f"**{markdown_text(pair.run_b)} against {markdown_text(pair.run_a)}**", ""]
        lines += [f"- {markdown_text(line)}" for line in pair.lines]
        lines.append("")
    for run in section.runs:
        lines += [to_markdown(breakdown_grid(run)).rstrip(), ""]
    for pair in section.pairs:
        lines += [to_markdown(pair_grid(pair)).rstrip(), ""]
    lines += [f"- {markdown_text(note)}" for note in section.notes]
    return [*lines, ""] if section.notes else lines


def _verdict_md(report: Report) -> list[str]:
    """The verdict lines (one the source-only qrels contradict in bold), then the runs the pooled qrels may
    favour: with the verdict, not under the tables."""
    from ragmetrics.render.qrels_note import report_qrels, verdict_warnings
    from ragmetrics.render.safe_text import markdown_text
    from ragmetrics.render.verdict import DIFFERS, verdict_lines

    lines = verdict_lines(report)
    if not lines:
        return []
    shown = [
        f"- **{markdown_text(line)}**" if DIFFERS in line else f"- {markdown_text(line)}" for line in lines
    ]
    warned = [
        f"- **Warning:** {markdown_text(w[2:])}" if w.startswith("! ") else f"- {markdown_text(w)}"
        for w in verdict_warnings(report_qrels(report))
    ]
    return ["## Verdict", "", *shown, *warned, ""]


def partial_metrics_table(report: Report) -> list[str]:
    """Markdown rows of the means of metrics some runs lack; the comparison tables leave these out."""
    from ragmetrics.render.safe_text import markdown_text

    metrics = list(dict.fromkeys(m for run in report.runs for m in run.metrics if m not in report.metrics))
    if not metrics:
        return []
    lines = ["| run | " + " | ".join(metrics) + " |", "|:---|" + "---:|" * len(metrics)]
    for run in report.runs:
        cells = [_mean_cell(run.aggregate.get(m)) if m in run.metrics else "-" for m in metrics]
        lines.append(f"| {markdown_text(run.name)} | " + " | ".join(cells) + " |")
    return lines


def _mean_cell(value: float | None) -> str:
    return "all failed" if value is None else f"{value:.4f}"


def secrets_from_env(report: Report, base_url: str | None = None) -> list[str]:
    """What to keep out of every artifact: the values of the API-key variable the config names (and
    OPENAI_API_KEY), and the user info and query values of the judge's base_url."""
    from ragmetrics.judge.openai.scrub import url_secrets

    names = {"OPENAI_API_KEY"}
    config = report.metadata.config or {}
    judge = config.get("judge")
    if isinstance(judge, dict) and isinstance(judge.get("api_key_env"), str):
        names.add(judge["api_key_env"])
    values = [os.environ.get(n, "").strip() for n in sorted(names)]
    found = [v for v in values if len(v) >= 6]
    return found + url_secrets(base_url)


def redact(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def write_artifacts(
    report: Report,
    root: Path,
    *,
    formats: Sequence[str] = ("json", "parquet", "csv", "md", "html"),
    plots: bool = True,
    gate: GateResult | None = None,
    now: datetime | None = None,
    base_url: str | None = None,
    keep: int | None = None,
    extra_texts: dict[str, str] | None = None,
    secrets: Sequence[str] = (),
    protect: Sequence[Path] = (),
) -> tuple[Path, dict[str, Path]]:
    """Write the requested artifacts into a new dated folder under `root`; returns it and the files.

    `extra_texts` are further files by name (pipeline_outputs.jsonl); `secrets` more values to redact;
    `protect` folders that `keep` must not delete (the pinned baseline's)."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or "json" not in formats:
        raise InputError(
            f"formats must include 'json' and be among {', '.join(FORMATS)}; got {list(formats)}"
        )
    root.mkdir(parents=True, exist_ok=True)
    # A private partial folder per process: concurrent runs of one config never touch each other's files.
    partial = Path(tempfile.mkdtemp(dir=root, prefix=".run-", suffix=".partial"))
    secrets = [*secrets_from_env(report, base_url), *(s for s in secrets if len(s) >= 6)]
    written: dict[str, Path] = {}
    try:
        texts: dict[str, str] = {}
        if "html" in formats:
            from ragmetrics.nightly.validity_night import validity_page
            from ragmetrics.render.html import render_html, report_plots

            images: list[PagePlot] = []
            if plots:
                images, note = report_plots(report)
                if note:
                    report.metadata.notes.append(note)
            sections, validity_plots = validity_page(report, plots)
            images += validity_plots
            files = _write_plots(partial, images)
            texts["report.html"] = render_html(
                report, gate=gate, plots=images, plot_files=files, sections=sections
            )
        if "md" in formats:
            texts["report.md"] = markdown_report(report, gate)
        texts["report.json"] = report.model_dump_json(indent=2)
        texts.update(extra_texts or {})
        for filename, text in texts.items():
            clean = redact(text, secrets)
            (partial / filename).parent.mkdir(parents=True, exist_ok=True)  # utility/utility.qrels
            (partial / filename).write_text(clean, encoding="utf-8")
            written[filename] = partial / filename
        if "parquet" in formats or "csv" in formats:
            frame = per_query_frame(report)
            if "parquet" in formats:
                frame.to_parquet(partial / "per_query.parquet", index=False)
                written["per_query.parquet"] = partial / "per_query.parquet"
            if "csv" in formats:
                from ragmetrics.render.safe_text import csv_cell

                cells = frame.copy()
                for column in ("run", "query_id"):  # the text columns: names and ids can hold formulas
                    cells[column] = cells[column].map(csv_cell)
                csv = redact(cells.to_csv(index=False), secrets)
                (partial / "per_query.csv").write_text(csv, encoding="utf-8")
                written["per_query.csv"] = partial / "per_query.csv"
                if gate is not None:
                    from ragmetrics.render.baseline import baseline_csv, baseline_rows

                    text = redact(baseline_csv(baseline_rows(report, gate)), secrets)
                    (partial / "baseline.csv").write_text(text, encoding="utf-8")
                    written["baseline.csv"] = partial / "baseline.csv"
        _sync_folder(partial)
        # mkdtemp makes the folder 0700: a report is published (CI artifacts, a web server), so it is made
        # readable like any folder the user creates (0755), its files 0644.
        os.chmod(partial, 0o755)
        for path in written.values():
            os.chmod(path, 0o644)
        final = _claim_folder(root, now)
        os.replace(partial, final)  # replaces only our own empty claim, atomically
        _fsync_path(root)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    written = {name: final / path.name for name, path in written.items()}
    point_latest(root, final)
    if keep is not None:
        prune(root, keep, protect=(final, *protect))
    return final, written


PLOTS_FOLDER = "plots"


def _write_plots(folder: Path, plots: Sequence[PagePlot]) -> list[str]:
    """Each plot as its own PNG in `folder`/plots (numbered in page order: names are never run names, so no
    name can collide or escape the folder); returns their paths relative to the page. Files beside the page
    instead of data URIs inside it: the page stays kilobytes however many plots a night has, and the browser
    fetches a plot only when it is shown."""
    if not plots:
        return []
    (folder / PLOTS_FOLDER).mkdir()
    os.chmod(folder / PLOTS_FOLDER, 0o755)
    files = []
    for number, plot in enumerate(plots, start=1):
        name = f"{PLOTS_FOLDER}/{number:03d}.png"
        (folder / name).write_bytes(plot.png)
        os.chmod(folder / name, 0o644)  # published like the page (write_artifacts)
        files.append(name)
    return files


def prune(root: Path, keep: int, *, protect: Path | Sequence[Path]) -> list[Path]:
    """Delete all but the newest `keep` complete dated folders under `root` (never one in `protect`, never the
    pinned night nor `latest`'s, never another run's partial folder, never anything that is not a dated
    folder)."""
    kept = {p.resolve() for p in ([protect] if isinstance(protect, Path) else protect)}
    # The pinned night (root/baseline, from `ragmetrics bless`) and what `latest` names are never pruned,
    # whatever baseline this night's gate was given.
    for pointer in (root / PINNED, latest_folder(root)):
        if pointer is not None and pointer.exists():
            kept.add(pointer.resolve())
    dated = sorted(
        (p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and _DATED.fullmatch(p.name)),
        key=lambda p: p.name,
        reverse=True,
    )
    removed = []
    for folder in dated[keep:]:
        if folder.resolve() in kept:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


_DATED = re.compile(r"\d{4}-\d{2}-\d{2}T\d{4,6}Z(-\d+)?")


def is_dated_folder(path: Path) -> bool:
    """A night's complete folder (not `latest`, not a partial folder, not a symlink)."""
    return path.is_dir() and not path.is_symlink() and _DATED.fullmatch(path.name) is not None


def _claim_folder(root: Path, now: datetime | None) -> Path:
    """Create root/<UTC stamp>[-n] exclusively (mkdir is atomic), so two runs never get the same folder."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime(_STAMP)
    n = 1
    while True:
        candidate = root / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            n += 1
            continue
        return candidate


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a directory; the data files were synced
        pass
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """Every file and the folder itself on disk before the folder is renamed into place."""
    for item in folder.iterdir():
        _fsync_path(item)
    _fsync_path(folder)


def latest_folder(root: Path) -> Path | None:
    """The folder root/latest refers to (a symlink, or the text file written where symlinks fail), if any."""
    link = root / "latest"
    if link.is_dir():
        return link
    try:
        name = read_utf8(link, limit=4096).strip()
    except InputError:
        return None
    return root / name if name and "/" not in name and (root / name).is_dir() else None


PINNED = "baseline"
"""root/baseline: a relative symlink to the night `ragmetrics bless` pinned; the gate's default baseline."""


def pinned_report(root: Path) -> Path | None:
    """root/baseline/report.json when a night is pinned there (a symlink to a night, or a folder holding a
    report), else None."""
    report = root / PINNED / "report.json"
    return report if report.is_file() else None


def pin_baseline(root: Path, night: Path) -> Path:
    """Pin `night` (a dated folder of `root`, or `latest`) as root/baseline: a relative symlink replaced
    atomically, so the history keeps knowing which night the gate compares with."""
    folder = night.resolve()
    if not (folder / "report.json").is_file():
        raise InputError("not a night's folder: no report.json in it", source=str(night))
    if folder.parent != root.resolve() or not is_dated_folder(folder):
        raise InputError(
            f"not one of the nights of {root}: pin a dated folder of the output root (or its latest)",
            source=str(night),
        )
    link = root / PINNED
    if link.exists() and not link.is_symlink():
        raise InputError(
            "a real folder is in the way; move it aside (the pin is a link to a night)", source=str(link)
        )
    temp = root / f".baseline.{os.getpid()}.{uuid.uuid4().hex}"
    try:
        temp.symlink_to(folder.name, target_is_directory=True)
        os.replace(temp, link)
    except OSError as exc:
        if temp.is_symlink():
            temp.unlink()
        raise InputError(
            f"cannot make a link here ({exc.strerror or exc}); set baseline.path to {folder / 'report.json'}",
            source=str(link),
        ) from None
    return link


def point_latest(root: Path, folder: Path) -> Path:
    """Make root/latest refer to `folder`: a relative symlink, replaced atomically; else a text file."""
    link = root / "latest"
    temp = root / f".latest.{os.getpid()}.{uuid.uuid4().hex}"  # unique per process and thread
    try:
        if temp.is_symlink() or temp.exists():
            temp.unlink()
        temp.symlink_to(folder.name, target_is_directory=True)
        if link.is_dir() and not link.is_symlink():
            raise OSError(f"{link} is a real folder; not replacing it")
        os.replace(temp, link)
    except OSError:
        if temp.is_symlink():
            temp.unlink()
        if not (link.is_dir() and not link.is_symlink()):
            if link.is_symlink():
                link.unlink()
            link.write_text(folder.name + "\n", encoding="utf-8")
    return link
