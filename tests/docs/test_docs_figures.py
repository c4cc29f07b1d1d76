"""Figures the text quotes, checked against what produced them.

- The README's speed summary and docs/rates.md against the README's `make bench-switch` table
  (the table is the benchmark's output as recorded; the summaries must be its extremes).
- Lab 5's "largest XOFF that fits" (docs/rates.md, pfc.md) against the lab's solution at the
  incast's defaults; ecn.md's incast against the experiment's number of senders.
- Lab 0's `fabric-lab show leafspine` block against the command's output, and the answer key's
  AIPod path counts against the fabric analysis.
- Which command blocks run: every `fabric-lab` line of a shell block (sh, console, text, ...) that
  is not run with `sudo` and is one of `show FABRIC`, `run --list`, `lab list`, `--help` runs in
  test_docs_commands.py; every `sudo` line is parsed only, and lab 0's `fabric>` session runs
  below under the mininet marker.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.doc_commands import REPO, split_page

README = (REPO / "README.md").read_text()
DASH = "\u2013"  # the pages write ranges with an en dash
RATES = (REPO / "docs" / "rates.md").read_text()


def _number(text: str) -> float:
    return float(text.replace(" ", "").replace(",", "").replace("\u202f", ""))


def bench_table() -> list[dict[str, list[float]]]:
    """The README's p4switch-vs-BMv2 table (the section's first): per row, the p4switch and
    BMv2 figures and ratio."""
    section = README.split("### p4switch against BMv2, measured", 1)[1]
    rows = []
    for line in section.split("\n\n| ", 1)[1].split("\n\n", 1)[0].splitlines():
        if not line.startswith("| ecmp.p4") and not line.startswith("| dlb.p4"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        flood = re.fullmatch(r"([\d ]+) / ([\d ]+) \(([\d.]+)\)", cells[1])
        lossless = re.fullmatch(r"([\d ]+) / ([\d ]+) \(([\d.]+)\)", cells[2])
        cpu = re.fullmatch(r"([\d.]+) / ([\d.]+)", cells[4])
        assert flood and lossless and cpu, line
        rows.append({"flood": [_number(v) for v in flood.groups()],
                     "lossless": [_number(v) for v in lossless.groups()],
                     "cpu": [_number(v) for v in cpu.groups()]})
    assert len(rows) == 4
    return rows


def _span(values: list[float]) -> tuple[float, float]:
    return min(values), max(values)


SPAN = rf"([\d,.]+)(?:{DASH}([\d,.]+))?"  # "a-b" (en dash), or "a" where the ends are equal


def _quoted(match: re.Match, first: int) -> tuple[float, float]:
    """The span SPAN matched from group `first`: (a, b), or (a, a) for a single figure."""
    low = _number(match[first])
    return low, _number(match[first + 1]) if match[first + 1] else low


def test_the_ratios_in_the_table_are_its_own_quotients():
    for row in bench_table():
        for kind, decimals in (("flood", 2), ("lossless", 1)):
            ours, theirs, ratio = row[kind]
            assert round(ours / theirs, decimals) == ratio, (kind, row)


def test_the_readme_speed_summary_is_the_table():
    rows = bench_table()
    summary = re.search(r"- \*\*Speed\*\*: (.*?)(?=\n- \*\*)", README, re.S)
    assert summary
    text = " ".join(summary[1].split())
    quoted = re.search(rf"about {SPAN} packets per second per switch on one core under a "
                       rf"flood and {SPAN} without loss when paced, {SPAN} "
                       rf"times .* under a flood and {SPAN} times its lossless", text)
    assert quoted, text
    flood_pps = _span([row["flood"][0] for row in rows])
    assert _quoted(quoted, 1) == (round(flood_pps[0], -3), round(flood_pps[1], -3))
    assert _quoted(quoted, 3) == _span([row["lossless"][0] for row in rows])
    assert _quoted(quoted, 5) == _span([row["flood"][2] for row in rows])
    assert _quoted(quoted, 7) == _span([row["lossless"][2] for row in rows])


def test_rates_md_quotes_the_table():
    rows = bench_table()
    pps = re.search(rf"forwards about (\d+){DASH}(\d+) thousand packets/s on one core \(([\d.]+){DASH}([\d.]+) "
                    r"µs of CPU per packet", " ".join(RATES.split()))
    assert pps
    flood = _span([row["flood"][0] / 1000 for row in rows])
    assert (int(pps[1]), int(pps[2])) == (round(flood[0]), round(flood[1]))
    assert (float(pps[3]), float(pps[4])) == _span([row["cpu"][0] for row in rows])
    lossless = re.search(rf"{SPAN} lossless against p4switch's {SPAN}", RATES)
    assert lossless
    assert _quoted(lossless, 1) == _span([r["lossless"][1] for r in rows])
    assert _quoted(lossless, 3) == _span([r["lossless"][0] for r in rows])


def test_the_largest_xoff_the_pages_quote_is_the_labs():
    from fabric_lab.labkit import SOLUTIONS, _module

    solution = _module(SOLUTIONS / "05-pfc" / "pfc_lab.py", "pfc_answer")
    incast = _module(REPO / "labs" / "05-pfc" / "check.py", "pfc_check").INCAST
    xoff, xon = solution.pfc_thresholds(incast["depth"], incast["fabric_pps"], incast["host_pps"])
    for page in ("docs/rates.md", "docs/mechanisms/pfc.md"):
        text = " ".join((REPO / page).read_text().split())
        assert f"the largest XOFF that fits is {xoff}" in text, page
    handout = " ".join((REPO / "labs/05-pfc/README.md").read_text().split())
    assert f"-p xoff={xoff} -p xon={xon}" in handout


def test_the_incast_the_ecn_page_names_is_the_experiments():
    from experiments.incast.experiment import EXPERIMENT

    senders = EXPERIMENT.defaults["senders"]
    text = " ".join((REPO / "docs/mechanisms/ecn.md").read_text().split())
    assert f"{senders}-to-1 incast" in text


def test_the_answer_keys_aipod_paths_are_the_fabrics():
    from topos import build_fabric
    from topos.analysis import path_classes

    answers = (REPO / "labs/solutions/ANSWERS.md").read_text()
    for scale, paths in re.findall(r"`--scale (\w+=\d+)`: (\d+)", answers):
        key, value = scale.split("=")
        spec = build_fabric("aipod", **{key: int(value)})
        widest = max(path_classes(spec, spec.host_nics()[0].name), key=lambda c: c.switches)
        assert widest.paths == int(paths), scale


def _block_after(page: Path, command: str) -> list[str]:
    """The lines of the first code block that follows the block showing `command`."""
    blocks, _ = split_page(page.read_text())
    lines = [(number, text) for number, _, text in blocks]
    start = next(number for number, text in lines if text.strip() == command)
    following = [(n, t) for n, t in lines if n > start + 2]
    first = following[0][0]
    out = []
    for number, text in following:
        if number != first + len(out):
            break
        out.append(text)
    return out


def test_lab0_shows_what_fabric_lab_show_prints(tmp_path):
    page = REPO / "labs/00-first-fabric/README.md"
    shown = [line for line in _block_after(page, "fabric-lab show leafspine") if line != "..."]
    done = subprocess.run([sys.executable, "-m", "fabric_lab.cli", "show", "leafspine", "--out",
                           str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    missing = [line for line in shown if line not in printed]
    assert not missing, f"lab 0 shows lines `fabric-lab show leafspine` does not print: {missing}"


@pytest.mark.mininet
@pytest.mark.root
@pytest.mark.slow
def test_lab0_session_prints_what_the_handout_shows():
    """Lab 0's `fabric>` session as written (`sudo fabric-lab up leafspine`, default names: one
    at a time per machine): every command it shows, and the result lines it promises."""
    import os

    from tests.labs.test_lb_cli import Console

    page = (REPO / "labs/00-first-fabric/README.md").read_text()
    typed = [line.strip().removeprefix("fabric>").strip()
             for line in page.splitlines() if line.strip().startswith("fabric> ")]
    assert typed[0] == "pingall" and typed[-1] == "exit"
    expect = {"pingall": "*** Results: 0% dropped (56/56 received)",
              "traffic": "received: QP 103 from 10.0.0.1", "link_fail": "leaf0~spine0 down",
              "events": "rerouted in", "links": "leaf0~spine0", "link_restore": "leaf0~spine0 up"}
    console = Console([sys.executable, "-m", "fabric_lab.cli", "up", "leafspine"],
                      {**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        console.wait_for("  total ", timeout=120)
        for command in typed[:-1]:
            console.send(command)
            if command == "events":  # the reroute is reported once it is done: ask again
                for _ in range(20):
                    with contextlib.suppress(AssertionError):
                        console.wait_for(expect["events"], timeout=1)
                        break
                    console.send(command)
                else:
                    raise AssertionError("".join(console.out))
                continue
            line = console.wait_for(expect[command.split()[0]], timeout=60)
            if command.startswith("traffic"):
                assert "lost 0" in line, line
    finally:
        rc = console.close()
    assert rc == 0, "".join(console.out)
