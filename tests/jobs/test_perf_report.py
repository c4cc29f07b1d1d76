"""The nccl-tests report: laid out with nccl-tests' printf formats, parsed the way tools parse
nccl-tests output, busbw = algbw x nccl-tests' factor, sizes and counts as nccl-tests computes."""
# ruff: noqa: UP031  (the expected lines are built with nccl-tests' own printf formats)

from __future__ import annotations

import csv
import io

import pytest

from jobs.ccl.collectives import COLLECTIVES
from jobs.ccl.communicator import RankRun, RunResult
from jobs.gpus import Gpu
from jobs.perf import (
    Measurement,
    PerfOptions,
    PerfReport,
    PerfRow,
    _time_s,
    float_str,
    format_csv,
    format_table,
    nccl_size,
    parse_size,
    row_line,
    sizes,
)

RANKS = [Gpu(f"srv{s}", i, f"h{s}n{i}", f"10.0.{s}.{i + 1}", i) for s in range(4) for i in range(2)]


def parse_nccl_tests(text: str) -> tuple[list[dict], float, int]:
    """What scripts do with nccl-tests output: '#' lines skipped, columns by whitespace; the
    average bus bandwidth and the error count from the trailer."""
    names = ["size", "count", "type", "redop", "root", "oop_time", "oop_algbw", "oop_busbw",
             "oop_wrong", "ip_time", "ip_algbw", "ip_busbw", "ip_wrong"]
    rows, avg, errors = [], -1.0, -1
    for line in text.splitlines():
        if line.startswith("# Avg bus bandwidth"):
            avg = float(line.split(":")[1].split()[0])
        elif line.startswith("# Out of bounds values"):
            errors = int(line.split(":")[1].split()[0])
        if line.startswith("#") or not line.strip():
            continue
        cells = line.split()
        assert len(cells) == len(names), line
        rows.append(dict(zip(names, cells, strict=True)))
    return rows, avg, errors


def c_float_str(value: float, width: int) -> str:
    """nccl-tests' getFloatStr, with printf formats (Python's % is printf)."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


@pytest.mark.parametrize("value", [0.0, 1.234, 12.345, 999.99, 1234.5, 99999.4, 123456.7,
                                   1234567.0, 9.9e9])
def test_numbers_are_formatted_as_nccl_tests_formats_them(value):
    assert float_str(value, 7) == c_float_str(value, 7)
    assert float_str(value, 6) == c_float_str(value, 6)


def _row(root: int = -1, wrong: int | None = 0) -> PerfRow:
    oop = Measurement(5.29, 12.39, 21.69, wrong)
    ip = Measurement(12345678.0, 0.004, 0.007, wrong)
    return PerfRow(65536, 16384, "float", "sum", root, oop, ip)


def test_lines_match_nccl_tests_printf_layout():
    row = _row()
    body = "".join("  %7s  %6s  %6s  %6g" % (c_float_str(m.time_us, 7), c_float_str(m.algbw_gbs, 6),
                                             c_float_str(m.busbw_gbs, 6), m.wrong)
                   for m in (row.out_of_place, row.in_place))
    assert row_line(row) == "%12li  %12li  %8s  %6s  %6s" % (
        65536, 16384, "float", "sum", "%6i" % -1) + body
    unchecked = _row(wrong=None)
    assert row_line(unchecked).endswith("  %7s  %6s  %6s    N/A" % (
        c_float_str(1.2345678e7, 7), c_float_str(0.004, 6), c_float_str(0.007, 6)))
    assert row_line(unchecked).count("N/A") == 2
    report = PerfReport("all_reduce", "ring", "naive", [row], header=["a header line"])
    text = format_table(report, min_bytes=65536, max_bytes=65536, factor=2, warmup=1, iters=2,
                        check=True, ranks=RANKS[:2], pids=[101, 102])
    lines = text.splitlines()
    assert lines[0] == "# a header line"
    assert "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] " % (
        1, 0, 102, "srv0", 1, 0, 0, 1) in text
    assert "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s" % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
        "algbw", "busbw", "#wrong", 0, "") in lines
    assert "# %-20s : %d %s" % ("Out of bounds values", 0, "OK") in lines
    assert "# %-20s : %g %s" % ("Avg bus bandwidth", report.avg_busbw_gbs, "") in lines
    assert lines[1] == "# nccl-tests version 2.19.6 nccl-headers=0 nccl-library=0"
    assert "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d " \
        "iters: %d agg iters: %d validation: %d graph: %d unalign: %d" % (
            1, 1, 65536, 65536, 2, "factor", 1, 2, 1, 1, 0, 0) in lines
    assert lines[-1] == "# Collective test concluded: all_reduce_perf"
    rows, avg, errors = parse_nccl_tests(text)
    assert rows == [{"size": "65536", "count": "16384", "type": "float", "redop": "sum",
                     "root": "-1", "oop_time": "5.29", "oop_algbw": "12.39", "oop_busbw": "21.69",
                     "oop_wrong": "0", "ip_time": "1.2e+07", "ip_algbw": "0.00",
                     "ip_busbw": "0.01", "ip_wrong": "0"}]
    assert avg == pytest.approx((21.69 + 0.007) / 2, rel=1e-5) and errors == 0
    bad = PerfReport("all_reduce", "ring", "naive", [_row(wrong=3)])
    assert bad.errors == 2
    table = list(csv.DictReader(io.StringIO(format_csv(bad))))
    assert table[0]["oop_wrong"] == "3" and table[0]["size"] == "65536"


def _run(elapsed_s: list[float], iterations: int) -> RunResult:
    result = RunResult(iterations)
    for r, e in enumerate(elapsed_s):
        ends = [int(1e9 * e * (k + 1) / iterations) for k in range(iterations)]
        result.ranks[r] = RankRun("done", iterations, 0, ends[-1], ends, 0, 0, {})
    return result


def test_a_rows_time_is_nccl_tests_average_over_ranks_of_their_mean_iteration():
    run = _run([0.010, 0.020, 0.040, 0.030], iterations=5)
    assert _time_s(run, 1) == pytest.approx(0.025 / 5)  # -a 1: average
    assert _time_s(run, 0) == pytest.approx(0.010 / 5)  # -a 0: rank 0
    assert _time_s(run, 2) == pytest.approx(0.010 / 5)  # -a 2: minimum
    assert _time_s(run, 3) == pytest.approx(0.040 / 5)  # -a 3: maximum
    assert run.time_s == pytest.approx(0.025 / 5)


def test_bad_options_are_all_reported_at_once():
    problems = PerfOptions(iters=0, warmup=-1, check=-2, average=7, channels=40,
                           slice_bytes=2).problems()
    assert len(problems) == 6
    assert PerfOptions().problems() == []


@pytest.mark.parametrize("coll", COLLECTIVES)
def test_busbw_is_algbw_times_the_nccl_tests_factor(coll):
    m = Measurement(100.0, 8.0, 8.0 * COLLECTIVES[coll].factor(8), 0)
    assert m.busbw_gbs == pytest.approx(m.algbw_gbs * {
        "all_reduce": 1.75, "broadcast": 1.0, "reduce": 1.0, "sendrecv": 1.0}.get(coll, 0.875))


def test_sizes_and_counts_follow_nccl_tests():
    assert parse_size("64K") == 65536 and parse_size("4M") == 4 << 20 and parse_size("100") == 100
    with pytest.raises(ValueError, match="bad size"):
        parse_size("4MB")
    assert sizes(65536, 4 << 20, 2)[-1] == 4 << 20 and len(sizes(65536, 4 << 20, 2)) == 7
    assert nccl_size("all_reduce", 1000, 8) == (1000, 250)
    # all_gather: per-rank count rounded down to 4 elements; the size column is the whole array
    assert nccl_size("all_gather", 1000, 8) == (8 * 28 * 4, 28)
    assert nccl_size("alltoall", 65536, 8) == (65536, 2048)
