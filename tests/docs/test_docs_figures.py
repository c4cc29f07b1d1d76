"""Figures the text quotes, checked against what produced them.

- The summaries of one switch's speed (docs/packet-hop.md's sentence, README's headline row)
  against docs/packet-hop.md's `make bench-switch` table (the table is the benchmark's output as
  recorded; the summaries must be its extremes and quotients), and the fabric capacity of
  README's headline row against docs/rates.md's budget table.
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
TIMES = "\u00d7"  # and ratios ("11.4 times BMv2") with a multiplication sign
RATES = (REPO / "docs" / "rates.md").read_text()
HOP = (REPO / "docs" / "packet-hop.md").read_text()
SWITCH_COLUMNS = ("native", "c", "bmv2", "c-forward")


def _number(text: str) -> float:
    return float(text.replace(" ", "").replace(",", "").replace("\u202f", ""))


def switch_table() -> dict[tuple[str, str], dict[str, list[float]]]:
    """docs/packet-hop.md's one-switch table: (program, row) -> column -> [64 B, 1000 B]."""
    section = HOP.split("## One switch under a flood", 1)[1].split("\n## ", 1)[0]
    table: dict[tuple[str, str], dict[str, list[float]]] = {}
    for line in section.splitlines():
        match = re.match(r"\| (ecmp|dlb)\.p4, ([^|]+?) \|(.*)\|$", line)
        if not match:
            continue
        cells = [cell.strip().removesuffix(" µs") for cell in match[3].split("|")]
        pairs = [re.fullmatch(r"([\d,.]+) / ([\d,.]+)", cell) for cell in cells]
        assert len(pairs) == len(SWITCH_COLUMNS) and all(pairs), line
        table[(match[1], match[2])] = {column: [_number(pair[1]), _number(pair[2])]
                                       for column, pair in zip(SWITCH_COLUMNS, pairs, strict=True) if pair}
    assert len(table) == 8, table
    return table


def _span(values: list[float]) -> tuple[float, float]:
    return min(values), max(values)


SPAN = rf"([\d,.]+)(?:{DASH}|-)([\d,.]+)"  # "a-b", with a hyphen or an en dash


def _quoted(match: re.Match, first: int) -> tuple[float, float]:
    return _number(match[first]), _number(match[first + 1])


def _thousands(span: tuple[float, float]) -> tuple[float, float]:
    return round(span[0], -3), round(span[1], -3)


def _c_over_bmv2(sender: str) -> list[float]:
    rows = [row for (_, kind), row in switch_table().items() if kind == f"forwarded pps, {sender}"]
    assert len(rows) == 2
    return [c / bmv2 for row in rows for c, bmv2 in zip(row["c"], row["bmv2"], strict=True)]


def test_the_hop_page_summary_is_its_table():
    text = " ".join(HOP.split())
    quoted = re.search(rf"forwards {SPAN} times what BMv2 forwards from the same Python sender "
                       rf"and {SPAN} times from the C sender, at {SPAN} µs of CPU per packet", text)
    assert quoted, "docs/packet-hop.md: the sentence after the one-switch table"
    python, c_sender = _c_over_bmv2("Python flood sender"), _c_over_bmv2("C flood sender")
    assert _quoted(quoted, 1) == tuple(round(v, 1) for v in _span(python))
    assert _quoted(quoted, 3) == tuple(round(v, 1) for v in _span(c_sender))
    cpu = [v for (_, kind), row in switch_table().items() if kind == "CPU per forwarded packet"
           for v in row["c"]]
    assert _quoted(quoted, 5) == _span(cpu)


def test_the_readme_headline_figures_are_the_tables():
    row = re.search(r"^\| one switch under a flood[^|]*\| (.*?) \|", README, re.M)
    assert row, "README: the headline row of one switch"
    quoted = re.fullmatch(rf"{SPAN} packets/s from a Python sender \({SPAN} {TIMES} BMv2\), {SPAN} "
                          rf"from a C sender \({SPAN} {TIMES} BMv2\)", row[1])
    assert quoted, row[1]
    table = switch_table()
    for first, sender in ((1, "Python flood sender"), (5, "C flood sender")):
        pps = [v for (_, kind), r in table.items() if kind == f"forwarded pps, {sender}"
               for v in r["c"]]
        assert _quoted(quoted, first) == _thousands(_span(pps)), sender
        ratios = _c_over_bmv2(sender)
        assert _quoted(quoted, first + 2) == tuple(round(v, 1) for v in _span(ratios)), sender
    capacity = re.search(rf"^\| a fabric's lossless capacity[^|]*\| {SPAN} packet-hops/s \|",
                         README, re.M)
    assert capacity, "README: the headline row of the fabric's capacity"
    budget = RATES.split("## The packet budget", 1)[1].split("\n## ", 1)[0]
    c_rows = [_number(line.split("|")[4]) for line in budget.splitlines()
              if re.match(r"\| (leafspine|hpn7) \| C \|", line)]
    assert len(c_rows) == 4, c_rows
    assert _quoted(capacity, 1) == _thousands(_span(c_rows))


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
