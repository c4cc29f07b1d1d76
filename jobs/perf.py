"""nccl-tests on the emulated fabric: a collective measured over a range of sizes, printed as
nccl-tests prints it, so tools that parse its output parse this one unchanged.

Per size, as nccl-tests' BenchTime: out of place, then in place, each with its real buffers
(in place, the input sits in the output where nccl-tests puts it). The input is filled (when
checking), one untimed iteration runs, then `iters` iterations back to back from one
synchronised launch, no barrier between them: a row's time is each rank's elapsed time over
them / iters, averaged over the ranks (-a picks rank 0, the minimum or the maximum instead),
converted to the modelled fabric's units by the one time factor (`jobs.scale.Scale`). -z
launches every iteration on its own. Then `check` times, apart from the timed iterations: the
input is filled again, one iteration runs, and every rank compares its whole output with what
the collective promises (#wrong: elements that differ). Warm-up first, as nccl-tests: `warmup`
iterations at every size from the smallest, doubling. algbw = S / time (1 GB = 1e9 B), busbw =
algbw x nccl-tests' factor; `size` is nccl-tests' (the larger of a rank's input and output),
`count` its `count` (paramcount). A row also keeps the alpha-beta bound of its collective on
this fabric (`jobs.ccl.timing`), which the CSV and the trailer report.
"""

from __future__ import annotations

import csv
import io
import os
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count as counter

from jobs.ccl.collectives import get
from jobs.ccl.communicator import Communicator, Loaded, RunResult, members
from jobs.ccl.datatypes import NO_OP, REDOPS, DataType, datatype
from jobs.ccl.plan import SLICE_BYTES, Compiled, compile_collective
from jobs.ccl.timing import SATURATED, bound_s, busy_share, cpu_ticks
from jobs.gpus import Gpu
from jobs.scale import Scale

NCCL_TESTS_VERSION = "2.19.6"  # the nccl-tests whose output this reproduces
AVERAGES = {0: "rank 0", 1: "average", 2: "minimum", 3: "maximum"}
MAX_SIZES = 1000  # rows of one sweep
MAX_ITERS = 10_000  # iterations of one kind per size: -n, -w, -c


@dataclass
class Measurement:
    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None  # None: not checked (N/A)
    incomplete: int = 0  # runs in which some rank did not finish
    bound_us: float = 0.0  # the alpha-beta bound (modelled)
    retransmits: int = 0
    busy: float = 0.0  # the share of the machine's CPU time busy during the timed run

    @property
    def of_bound(self) -> float:
        """The bound's share of the measured time (1: at the bound)."""
        return self.bound_us / self.time_us if self.time_us > 0 else 0.0


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
    header: list[str] = field(default_factory=list)  # lines after "# ", before nccl-tests'

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


@dataclass(frozen=True)
class PerfOptions:
    """nccl-tests' flags, and the runtime's."""

    warmup: int = 1  # -w
    iters: int = 5  # -n
    check: int = 1  # -c: check iterations (0: none)
    average: int = 1  # -a
    blocking: bool = False  # -z
    root: int = 0  # -r
    channels: int | None = None  # None: Communicator.default_channels
    slice_bytes: int = SLICE_BYTES

    def problems(self) -> list[str]:
        out = []
        if not 1 <= self.iters <= MAX_ITERS:
            out.append(f"-n must be >= 1 and <= {MAX_ITERS}, got {self.iters}")
        if not 0 <= self.warmup <= MAX_ITERS:
            out.append(f"-w must be >= 0 and <= {MAX_ITERS}, got {self.warmup}")
        if not 0 <= self.check <= MAX_ITERS:
            out.append(f"-c must be >= 0 and <= {MAX_ITERS}, got {self.check}")
        if self.average not in AVERAGES:
            out.append(f"-a must be one of {', '.join(map(str, AVERAGES))}, got {self.average}")
        if self.channels is not None and not 1 <= self.channels <= 32:
            out.append(f"--channels must be 1..32, got {self.channels}")
        if self.slice_bytes < 8:
            out.append(f"--slice must be >= 8 bytes, got {self.slice_bytes}")
        return out


def parse_size(text: str) -> int:
    """nccl-tests' sizes: bytes with an optional K, M or G (1024-based)."""
    t = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    digits = t[:-1] if mult > 1 else t
    if not digits.isdigit():
        raise ValueError(f"bad size {text!r}: use bytes with an optional K, M or G")
    return int(digits) * mult


def sizes(min_bytes: int, max_bytes: int, factor: int, step_bytes: int = 0) -> list[int]:
    """nccl-tests' sweep: times `factor`, or plus `step_bytes` when the factor is 1."""
    if min_bytes <= 0 or max_bytes < min_bytes:
        raise ValueError(f"sizes must satisfy 0 < min ({min_bytes}) <= max ({max_bytes})")
    if factor < 1 or (factor == 1 and step_bytes <= 0):
        raise ValueError("the step factor must be >= 2, or 1 with a step of bytes > 0")
    if factor == 1 and (max_bytes - min_bytes) // step_bytes >= MAX_SIZES:
        raise ValueError(f"-i {step_bytes} from {min_bytes} to {max_bytes} is more than "
                         f"{MAX_SIZES} sizes")
    out, size = [], min_bytes
    while size <= max_bytes:
        out.append(size)
        size = size * factor if factor > 1 else size + step_bytes
    return out


def nccl_size(collective: str, size: int, ranks: int, type_size: int = 4) -> tuple[int, int]:
    """(size column, count column) nccl-tests prints for a requested size."""
    coll = get(collective)
    counts = coll.counts(size // type_size, ranks, type_size)
    return coll.size_column(counts, type_size), counts.param


def _time_s(result: RunResult, average: int) -> float:
    """Per-iteration time of a run: each rank's elapsed / iterations, combined as -a says."""
    per_rank = [r.elapsed_s / result.iterations for _, r in sorted(result.ranks.items())]
    if not per_rank:
        return 0.0
    if average == 0:
        return per_rank[0]
    if average == 2:
        return min(per_rank)
    if average == 3:
        return max(per_rank)
    return statistics.fmean(per_rank)


def measure(comm: Communicator, collective: str, algorithm: str, size_list: Sequence[int], *,
            dtypes: Sequence[DataType], redops: Sequence[str], options: PerfOptions,
            scale: Scale, alpha_s: float = 0.0, order: Sequence[Gpu] | None = None,
            on_row: Callable[[PerfRow], None] | None = None) -> list[PerfRow]:
    """The collective at every size, type and reduction; `on_row` sees each row as measured."""
    coll = get(collective)
    ms = members(comm)
    n = len(ms)
    channels = options.channels
    seeds = counter(1)
    rows: list[PerfRow] = []
    ops = list(redops) if coll.reduces else ["none"]

    def compiled(dt: DataType, op: str, requested: int, in_place: bool) -> Compiled:
        return compile_collective(collective, algorithm, ms, total_ranks=n,
                                  count=requested // dt.size, dtype=dt,
                                  redop=REDOPS.get(op, NO_OP), root=options.root,
                                  in_place=in_place,
                                  channels=channels or comm.default_channels(nbytes=requested),
                                  slice_bytes=options.slice_bytes)

    def timeout(c: Compiled) -> float:
        return max(30.0, 40 * bound_s(c, comm, alpha_s) * (options.iters + 2) + 10)

    for dt in dtypes:
        for op in ops:
            if options.warmup:
                size = size_list[0]
                while size <= size_list[-1]:  # nccl-tests warms every size, doubling
                    c = compiled(dt, op, size, False)
                    loaded = comm.load(c)
                    comm.run(loaded, options.warmup, timeout_s=timeout(c))
                    comm.unload(loaded)
                    size *= 2
            for requested in size_list:
                counts = coll.counts(requested // dt.size, n, dt.size)
                placed = []
                for in_place in (False, True):
                    c = compiled(dt, op, requested, in_place)
                    loaded = comm.load(c)
                    try:
                        placed.append(_bench(comm, loaded, c, options, scale, alpha_s, seeds,
                                             timeout(c), coll.size_column(counts, dt.size),
                                             coll.factor(n)))
                    finally:
                        comm.unload(loaded)
                row = PerfRow(coll.size_column(counts, dt.size), counts.param, dt.name, op,
                              options.root if coll.rooted else -1, placed[0], placed[1])
                rows.append(row)
                if on_row:
                    on_row(row)
    return rows


def _bench(comm: Communicator, loaded: Loaded, c: Compiled, options: PerfOptions, scale: Scale,
           alpha_s: float, seeds: Iterator[int], timeout: float, size: int,
           factor: float) -> Measurement:
    incomplete, retransmits = 0, 0
    first = comm.run(loaded, 1, init=options.check > 0, seed=next(seeds), timeout_s=timeout)
    incomplete += not first.complete
    ticks = cpu_ticks()
    if options.blocking:
        runs = [comm.run(loaded, 1, init=False, timeout_s=timeout) for _ in range(options.iters)]
        times = [_time_s(r, options.average) for r in runs]
        emulated = statistics.fmean(times)
        incomplete += sum(not r.complete for r in runs)
        retransmits += sum(r.total("retransmits") for r in runs)
    else:
        timed = comm.run(loaded, options.iters, init=False, timeout_s=timeout)
        emulated = _time_s(timed, options.average)
        incomplete += not timed.complete
        retransmits += timed.total("retransmits")
    busy = busy_share(ticks, cpu_ticks())
    wrong: int | None = None
    if options.check:
        wrong = 0
        for _ in range(options.check):
            checked = comm.run(loaded, 1, init=True, check=True, seed=next(seeds),
                               timeout_s=timeout)
            incomplete += not checked.complete
            wrong += checked.wrong
            if wrong:
                break
    t = scale.time_s(emulated)
    algbw = size / t / 1e9 if t > 0 else 0.0
    return Measurement(time_us=t * 1e6, algbw_gbs=algbw, busbw_gbs=algbw * factor, wrong=wrong,
                       incomplete=incomplete,
                       bound_us=scale.time_s(bound_s(c, comm, alpha_s)) * 1e6,
                       retransmits=retransmits, busy=busy)


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


def _columns(cells: Sequence[str]) -> str:
    """nccl-tests' column header layout (its `# %10s  %12s  %8s ...` with no timestamps)."""
    widths = (10, 12, 8, 6, 6, 7, 6, 6, 6, 7, 6, 6, 6)
    return "# " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)) + " "


def header_lines(report: PerfReport, *, min_bytes: int, max_bytes: int, factor: int,
                 warmup: int, iters: int, check: int, ranks: Sequence[Gpu], pids: Sequence[int],
                 step_bytes: int = 0, blocking: bool = False) -> list[str]:
    servers = list(dict.fromkeys(g.server for g in ranks))
    lines = [f"# {line}" for line in report.header]
    lines.append(f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers=0 nccl-library=0")
    lines.append(f"# Collective test starting: {program_name(report.collective)}")
    step = f"{factor}(factor)" if factor > 1 else f"{step_bytes}(bytes)"
    lines.append(f"# nThread 1 nGpus 1 minBytes {min_bytes} maxBytes {max_bytes} step: {step} "
                 f"warmup iters: {warmup} iters: {iters} agg iters: 1 validation: {int(check)} "
                 f"graph: 0 unalign: 0")
    if blocking:
        lines.append("# Blocking Enabled: wait and barrier after each inner iteration (-m) ")
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


def _body(m: Measurement) -> str:
    head = (f"  {float_str(m.time_us, 7):>7}  {float_str(m.algbw_gbs, 6):>6}  "
            f"{float_str(m.busbw_gbs, 6):>6}")
    if m.wrong is not None:
        return head + f"  {float(m.wrong):6g}"
    return head + "    N/A"


def row_line(row: PerfRow) -> str:
    pre = f"{row.size:12d}  {row.count:12d}  {row.type:>8}  {row.redop:>6}  {row.root:6d}"
    return pre + _body(row.out_of_place) + _body(row.in_place)


def trailer_lines(report: PerfReport) -> list[str]:
    errors = report.errors
    return [f"# {'Out of bounds values':<20} : {errors} {'FAILED' if errors else 'OK'}",
            f"# {'Avg bus bandwidth':<20} : {report.avg_busbw_gbs:g} ",
            "#",
            f"# Collective test concluded: {program_name(report.collective)}"]


def bound_lines(report: PerfReport) -> list[str]:
    """The alpha-beta bound beside each row (after nccl-tests' trailer, as comments)."""
    out = ["# Bound (alpha-beta, the links' rates; modelled us), the bound's share of the "
           "measured time, packets resent and the machine's CPUs busy, out of place / in place:"]
    for r in report.rows:
        o, i = r.out_of_place, r.in_place
        out.append(f"#   {r.size:>12} B {r.type:>8} {r.redop:>4}: bound {o.bound_us:9.2f} us, "
                   f"{o.of_bound:6.1%} / {i.of_bound:6.1%} of it; resent packets "
                   f"{o.retransmits} / {i.retransmits}; busy {o.busy:4.0%} / {i.busy:4.0%}")
    saturated = sum(m.busy > SATURATED for r in report.rows for m in (r.out_of_place, r.in_place))
    if saturated:
        out.append(f"# Warning: the machine was over {SATURATED:.0%} busy in {saturated} "
                   f"measurement(s): their time is partly the emulator's own; a lower "
                   f"--link-mbps or a smaller fabric gives the fabric's")
    return out


def format_table(report: PerfReport, **header: object) -> str:
    """The whole nccl-tests output (header_lines' arguments)."""
    out = header_lines(report, **header)  # type: ignore[arg-type]
    out += [row_line(r) for r in report.rows]
    out += trailer_lines(report)
    return "\n".join(out) + "\n"


CSV_FIELDS = ["size", "count", "type", "redop", "root",
              "oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs", "oop_wrong", "oop_bound_us",
              "ip_time_us", "ip_algbw_gbs", "ip_busbw_gbs", "ip_wrong", "ip_bound_us"]


def format_csv(report: PerfReport) -> str:
    """One header row, then one row per size (wrong empty when not checked)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for r in report.rows:
        cells: list[object] = [r.size, r.count, r.type, r.redop, r.root]
        for m in (r.out_of_place, r.in_place):
            cells += [round(m.time_us, 3), round(m.algbw_gbs, 6), round(m.busbw_gbs, 6),
                      "" if m.wrong is None else m.wrong, round(m.bound_us, 3)]
        writer.writerow(cells)
    return buf.getvalue()


def type_names(dtypes: Sequence[str]) -> list[DataType]:
    return [datatype(d) for d in dtypes]
