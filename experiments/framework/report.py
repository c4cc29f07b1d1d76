"""One HTML page with every plot under a results tree, each with the parameters that made it."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from experiments.framework.results import PARAMS_FILE, give_to_invoking_user, make_dirs, run_state

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { border-bottom: 2px solid #444; } h2 { margin-top: 2em; border-bottom: 1px solid #aaa; }
.run { margin: 1.5em 0; padding: 1em; background: #f7f7f7; border-radius: 6px; }
table { border-collapse: collapse; font-size: 0.9em; } td, th { padding: 2px 8px; text-align: left; }
th { color: #555; font-weight: normal; } img { max-width: 100%; margin: 0.5em 0; border: 1px solid #ddd; }
.meta { color: #666; font-size: 0.85em; }
"""


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


def build_report(results: Path, out: Path) -> tuple[Path, int]:
    """Write the page to `out`; returns it and the number of plots on it."""
    runs = find_runs(results)
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
    make_dirs(out.parent)
    out.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>AI Fabric Lab results"
                   f"</title><style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")
    give_to_invoking_user(out)
    return out, plot_count


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
