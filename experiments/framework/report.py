"""One HTML page with every plot under a results tree, each with the parameters that made it.

The page embeds only regular files inside a run (never a symbolic link, nor what one points to)
and, under sudo, only files the invoking user can read: the page is theirs, so it shows them
nothing they could not open themselves. A results tree holding any other is refused, every
such file named, before anything is written; the page is written whole or not at all.
"""

from __future__ import annotations

import base64
import html
import json
import os
import stat
import tempfile
from pathlib import Path

from experiments.framework.results import (
    PARAMS_FILE,
    give_to_invoking_user,
    invoking_user,
    make_dirs,
    run_state,
)
from topos.errors import InputError

MAX_LISTED = 8  # refused files named; the rest counted

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { border-bottom: 2px solid #444; } h2 { margin-top: 2em; border-bottom: 1px solid #aaa; }
.run { margin: 1.5em 0; padding: 1em; background: #f7f7f7; border-radius: 6px; }
table { border-collapse: collapse; font-size: 0.9em; } td, th { padding: 2px 8px; text-align: left; }
th { color: #555; font-weight: normal; } img { max-width: 100%; margin: 0.5em 0; border: 1px solid #ddd; }
.meta { color: #666; font-size: 0.85em; }
"""


class ReportError(InputError):
    """The results hold files the page will not embed, or the page cannot be written there."""


def find_runs(results: Path) -> list[Path]:
    """Result directories (those with a params.json) under `results`, newest first per experiment."""
    runs = [params.parent for params in results.rglob(PARAMS_FILE)]
    return sorted(runs, key=lambda run: (run.parent.name, run.name), reverse=True)


def unfinished_runs(results: Path) -> list[tuple[Path, str]]:
    """(run directory, state) of every run under `results` that is not complete: `failed`,
    `incomplete` (killed) or `running`; their CSV files are missing or partial."""
    out = []
    for run in find_runs(results):
        state = run_state(_record(run))
        if state != "complete":
            out.append((run, state))
    return out


def _record(run: Path) -> dict:
    try:
        return json.loads((run / PARAMS_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        return {"status": "unreadable"}


def refused_files(run: Path, reader: tuple[int, int] | None) -> list[str]:
    """Why each of the files the page would take from `run` (params.json, the PNGs) may not go
    into it, one line each; `reader`: (uid, gid) of the user the page is for, None for anyone
    who can read it here."""
    problems = []
    inside = run.resolve()
    for path in [run / PARAMS_FILE, *sorted(run.glob("*.png"))]:
        why = _refusal(path, inside, reader)
        if why:
            problems.append(f"{path}: {why}")
    if reader is not None and not _readable_by(run.stat(), *reader, directory=True):
        problems.append(f"{run}: a directory uid {reader[0]} (who ran sudo) cannot read")
    return problems


def _refusal(path: Path, inside: Path, reader: tuple[int, int] | None) -> str | None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link; the report embeds only regular files inside the run"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if path.resolve().parent != inside:
        return f"outside the run {inside}"
    if reader is not None and not _readable_by(info, *reader):
        return f"uid {reader[0]} (who ran sudo) cannot read it; the page would show it to them"
    return None


def _readable_by(info: os.stat_result, uid: int, gid: int, *, directory: bool = False) -> bool:
    """Whether user `uid` (primary group `gid`) may read a file (list and enter a directory)
    with this owner and mode."""
    try:
        import pwd

        groups = set(os.getgrouplist(pwd.getpwuid(uid).pw_name, gid))
    except KeyError:  # no such user in passwd: only the primary group
        groups = {gid}
    if info.st_uid == uid:
        bits = stat.S_IRUSR | (stat.S_IXUSR if directory else 0)
    elif info.st_gid in groups:
        bits = stat.S_IRGRP | (stat.S_IXGRP if directory else 0)
    else:
        bits = stat.S_IROTH | (stat.S_IXOTH if directory else 0)
    return info.st_mode & bits == bits


def build_report(results: Path, out: Path) -> tuple[Path, int]:
    """Write the page to `out`; returns it and the number of plots on it. ReportError (nothing
    written) when a run holds a file the page may not embed, or `out` cannot be written."""
    runs = find_runs(results)
    reader = invoking_user()
    refused = [line for run in runs for line in refused_files(run, reader)]
    if refused:
        more = len(refused) - MAX_LISTED
        raise ReportError("\n".join(refused[:MAX_LISTED] + ([f"... and {more} more"] if more > 0 else [])))
    sections: dict[str, list[str]] = {}
    plot_count = 0
    for run in runs:
        record = _record(run)
        plots = sorted(run.glob("*.png"))
        plot_count += len(plots)
        sections.setdefault(record.get("experiment", run.parent.name), []).append(_run_html(run, record, plots))
    unfinished = sum(1 for run in runs if run_state(_record(run)) != "complete")
    body = [f"<h1>AI Fabric Lab results</h1><p class='meta'>{len(runs)} run(s), {plot_count} plot(s) "
            f"from {html.escape(str(results))}"
            f"{f'; {unfinished} did not complete (marked below)' if unfinished else ''}</p>"]
    if not runs:
        body.append("<p>No results yet: run <code>fabric-lab run EXPERIMENT</code> first.</p>")
    for experiment, parts in sorted(sections.items()):
        body.append(f"<h2>{html.escape(experiment)}</h2>")
        body.extend(parts)
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>AI Fabric Lab results"
            f"</title><style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")
    _write_page(out, page)
    return out, plot_count


def _write_page(out: Path, page: str) -> None:
    """`page` into `out` whole: written beside it and renamed over it (a link named `out` is
    replaced, never written through), handed to the user behind sudo before it appears."""
    try:
        if out.is_dir():
            raise IsADirectoryError(21, "Is a directory", str(out))
        make_dirs(out.parent)
        fd, partial = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(page)
            os.chmod(partial, 0o644)
            give_to_invoking_user(Path(partial))
            os.replace(partial, out)
        finally:
            Path(partial).unlink(missing_ok=True)
    except FileExistsError as err:  # a file where a directory above `out` belongs
        raise ReportError(f"{err.filename}: not a directory") from None
    except OSError as err:
        raise ReportError(f"{err.filename or out}: {err.strerror or err}") from None


def _run_html(run: Path, record: dict, plots: list[Path]) -> str:
    params = record.get("params", {})
    rows = "".join(f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(json.dumps(value))}</td></tr>"
                   for key, value in sorted(params.items()))
    state = run_state(record)
    warning = "" if state == "complete" else " (did not complete: its CSV files may be missing or partial)"
    # a run over several fabrics (lb-compare) names them in its parameters, not in `fabric`
    fabric = (record.get("fabric") or params.get("fabric")
              or ", ".join(map(str, params.get("fabrics") or [])))
    meta = (f"{html.escape(run.name)} · status {html.escape(state + warning)} · target "
            f"{html.escape(str(record.get('target', '?')))}"
            f"{' · fabric ' + html.escape(str(fabric)) if fabric else ''}"
            f" · git {html.escape(str(record.get('git_revision', '?'))[:12])}"
            f"{' · quick' if record.get('quick') else ''}")
    images = "".join(
        f"<figure><img alt='{html.escape(plot.name)}' src='data:image/png;base64,"
        f"{base64.b64encode(plot.read_bytes()).decode()}'><figcaption class='meta'>"
        f"{html.escape(plot.name)}</figcaption></figure>" for plot in plots)
    return (f"<div class='run'><p class='meta'>{meta}</p><table>{rows}</table>{images}</div>")
