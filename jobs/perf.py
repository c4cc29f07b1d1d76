"""nccl-tests on the emulated fabric: measure a collective over a range of sizes and print the
table nccl-tests prints, so tools that parse its output parse this one unchanged.

For every size, `-w` warm-up iterations, then `-n` timed iterations out of place and `-n` in
place (the network moves the same bytes either way; both are measured). A row's time is the
mean iteration time, converted to the modelled fabric's units by the one `Scale` factor;
algbw = S / time (1 GB = 1e9 B), busbw = algbw x nccl-tests' factor (`jobs.collectives`).
#wrong is the number of 4-byte elements the receivers found wrong (patterned payloads, checked
packet by packet) over the timed iterations, or N/A with `check` off. Sizes follow nccl-tests:
the `size` column is S (for all_gather, reduce_scatter and alltoall the whole array, each
rank's count rounded down to a multiple of 4 elements), `count` the elements per rank
(`paramcount`), type float.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from jobs.collectives import build as build_schedule
from jobs.collectives import busbw_factor
from jobs.gpus import Gpu
from jobs.runner import JobRunner
from jobs.scale import Scale
from traffic.collectives.runner import CollectiveResult

TYPE, TYPE_SIZE = "float", 4
REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "sendrecv": "sum"}  # others: none
ROOTED = ("broadcast",)  # collectives whose root column is a rank (others print -1)


@dataclass
class Measurement:
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None  # None: not checked (N/A)
    incomplete: int = 0  # iterations in which some data never arrived


@dataclass
class PerfRow:
    size: int
    count: int
    type: str
    redop: str
    root: int
    out_of_place: Measurement
    in_place: Measurement


@dataclass
class PerfReport:
    collective: str
    algorithm: str
    order: str
    rows: list[PerfRow] = field(default_factory=list)
    header: list[str] = field(default_factory=list)  # lines after "# ", before the table

    @property
    def avg_busbw_gbs(self) -> float:
        """nccl-tests' average: over every out-of-place and in-place measurement."""
        values = [m.busbw_gbs for r in self.rows for m in (r.out_of_place, r.in_place)]
        return sum(values) / len(values) if values else 0.0

    @property
    def errors(self) -> int:
        """Measurements with wrong or missing data (nccl-tests' "Out of bounds values")."""
        return sum(bool(m.wrong) or m.incomplete > 0
                   for r in self.rows for m in (r.out_of_place, r.in_place))


def parse_size(text: str) -> int:
    """nccl-tests' sizes: bytes with an optional K, M or G (1024-based)."""
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    digits = t[:-1] if mult > 1 else t
    if not digits.isdigit():
        raise ValueError(f"bad size {text!r}: use bytes with an optional K, M or G")
    return int(digits) * mult


def sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    if min_bytes <= 0 or max_bytes < min_bytes:
        raise ValueError(f"sizes must satisfy 0 < min ({min_bytes}) <= max ({max_bytes})")
    if factor < 2:
        raise ValueError(f"step factor must be >= 2, got {factor}")
    out, size = [], min_bytes
    while size <= max_bytes:
        out.append(size)
        size *= factor
    return out


def nccl_size(collective: str, size: int, ranks: int) -> tuple[int, int]:
    """(S, count) nccl-tests reports for a requested size: the size column and elements per
    rank."""
    count = size // TYPE_SIZE
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        base = (count // ranks) & ~(16 // TYPE_SIZE - 1)
        return base * ranks * TYPE_SIZE, base
    return count * TYPE_SIZE, count


def _measure(results: Sequence[CollectiveResult], size: int, factor: float, scale: Scale,
             check: bool) -> Measurement:
    mean_s = sum(r.total_s for r in results) / len(results)
    t = scale.time_s(mean_s)
    algbw = size / t / 1e9 if t > 0 else 0.0
    return Measurement(time_us=t * 1e6, algbw_gbs=algbw, busbw_gbs=algbw * factor,
                       wrong=sum(r.wrong for r in results) if check else None,
                       incomplete=sum(not r.complete for r in results))


def measure(runner: JobRunner, collective: str, algorithm: str, ranks: Sequence[Gpu],
            size_list: Sequence[int], *, warmup: int, iters: int, scale: Scale,
            root: int = 0, check: bool = True,
            on_row: Callable[[PerfRow], None] | None = None) -> list[PerfRow]:
    """Run the collective at every size; `on_row` sees each row as it is measured."""
    if iters < 1 or warmup < 0:
        raise ValueError(f"need iters >= 1 and warmup >= 0, got {iters} and {warmup}")
    n = len(ranks)
    factor = busbw_factor(collective, n)
    plan = []
    for requested in size_list:
        s, count = nccl_size(collective, requested, n)
        if s == 0:
            raise ValueError(f"{requested} B is too small for {collective} on {n} ranks "
                             f"(at least {16 * n} B)")
        plan.append((s, count))
    rows = []
    for s, count in plan:
        schedule = build_schedule(collective, algorithm, ranks, s, root)
        for _ in range(warmup):
            runner.run(schedule)
        placed = [_measure([runner.run(schedule) for _ in range(iters)], s, factor, scale, check)
                  for _ in ("out-of-place", "in-place")]
        row = PerfRow(s, count, TYPE, REDOP.get(collective, "none"),
                      root if collective in ROOTED else -1, placed[0], placed[1])
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


# ---- nccl-tests' output -------------------------------------------------------------------
def float_str(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: 2 decimals, fewer if the width needs, else exponent form."""
    for decimals in (2, 1, 0):
        text = f"{value:{width}.{decimals}f}"
        if len(text) <= width:
            return text
    return f"{value:{width}.1e}" if width >= 7 else f"{value:{width}.0e}"


def rank_line(rank: int, gpu: Gpu, server_index: int, pid: int) -> str:
    """One `#  Rank` line as nccl-tests writes it (host = server, device = local GPU index)."""
    bus = f"{0:04x}:{server_index & 0xFF:02x}:{gpu.index & 0xFF:02x}"
    return (f"#  Rank {rank:2d} Group {0:2d} Pid {pid:6d} on {gpu.server:>10} device "
            f"{gpu.index:2d} [{bus}] emulated GPU beside NIC {gpu.nic} (rail {gpu.rail}, "
            f"{gpu.ip or 'no address'})")


def program_name(collective: str) -> str:
    return f"{collective}_perf"


def format_table(report: PerfReport, *, min_bytes: int, max_bytes: int, factor: int, warmup: int,
                 iters: int, check: bool, ranks: Sequence[Gpu], pids: Sequence[int]) -> str:
    """The whole nccl-tests output."""
    out = header_lines(report, min_bytes=min_bytes, max_bytes=max_bytes, factor=factor,
                       warmup=warmup, iters=iters, check=check, ranks=ranks, pids=pids)
    out += [row_line(r, check) for r in report.rows]
    out += trailer_lines(report)
    return "\n".join(out) + "\n"


def _columns(cells: Sequence[str]) -> str:
    """nccl-tests' column header layout (its `# %10s  %12s  %8s ...` with no timestamps)."""
    widths = (10, 12, 8, 6, 6, 7, 6, 6, 6, 7, 6, 6, 6)
    return "# " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)) + " "


def header_lines(report: PerfReport, *, min_bytes: int, max_bytes: int, factor: int, warmup: int,
                 iters: int, check: bool, ranks: Sequence[Gpu], pids: Sequence[int]) -> list[str]:
    servers = list(dict.fromkeys(g.server for g in ranks))
    lines = [f"# {line}" for line in report.header]
    lines.append(f"# Collective test starting: {program_name(report.collective)}")
    lines.append(f"# nThread 1 nGpus 1 minBytes {min_bytes} maxBytes {max_bytes} step: "
                 f"{factor}(factor) warmup iters: {warmup} iters: {iters} agg iters: 1 "
                 f"validation: {int(check)} graph: 0 unalign: 0")
    lines.append("#")
    lines.append("# Using devices")
    lines += [rank_line(r, g, servers.index(g.server), pids[r] if r < len(pids) else os.getpid())
              for r, g in enumerate(ranks)]
    lines.append("#")
    lines.append("# " + "  ".join(f"{'':>{w}}" for w in (10, 12, 8, 6, 6))
                 + "           out-of-place                       in-place          ")
    lines.append(_columns(("size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                           "#wrong", "time", "algbw", "busbw", "#wrong")))
    lines.append(_columns(("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
                           "(us)", "(GB/s)", "(GB/s)", "")))
    return lines


def _body(m: Measurement, check: bool) -> str:
    head = (f"  {float_str(m.time_us, 7):>7}  {float_str(m.algbw_gbs, 6):>6}  "
            f"{float_str(m.busbw_gbs, 6):>6}")
    if check and m.wrong is not None:
        return head + f"  {float(m.wrong):6g}"
    return head + "    N/A"


def row_line(row: PerfRow, check: bool) -> str:
    pre = f"{row.size:12d}  {row.count:12d}  {row.type:>8}  {row.redop:>6}  {row.root:6d}"
    return pre + _body(row.out_of_place, check) + _body(row.in_place, check)


def trailer_lines(report: PerfReport) -> list[str]:
    errors = report.errors
    return [f"# {'Out of bounds values':<20} : {errors} {'FAILED' if errors else 'OK'}",
            f"# {'Avg bus bandwidth':<20} : {report.avg_busbw_gbs:g} ",
            "#",
            f"# Collective test concluded: {program_name(report.collective)}"]


CSV_FIELDS = ["size", "count", "type", "redop", "root",
              "oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs", "oop_wrong",
              "ip_time_us", "ip_algbw_gbs", "ip_busbw_gbs", "ip_wrong"]


def format_csv(report: PerfReport) -> str:
    """One header row, then one row per size (wrong empty when not checked)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for r in report.rows:
        cells: list[object] = [r.size, r.count, r.type, r.redop, r.root]
        for m in (r.out_of_place, r.in_place):
            cells += [round(m.time_us, 3), round(m.algbw_gbs, 6), round(m.busbw_gbs, 6),
                      "" if m.wrong is None else m.wrong]
        writer.writerow(cells)
    return buf.getvalue()
