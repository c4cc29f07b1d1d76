"""Lab 9 (collectives as schedules): the solution passes every replay step for several seeds, and
each shortcut fails the step that should catch it: the library imported, everything sent over
the fabric, a phase skipped, flows tagged NVLink across servers, servers taken from positions
in the rank list, a flat alltoall called PXN. The last test runs the real HPN 7.0 segment step
(root, Mininet)."""

from __future__ import annotations

import os

import pytest

from fabric_lab.labkit import SOLUTIONS, lab, run_checks

SOLUTION = SOLUTIONS / "09-collectives" / "collectives_lab.py"
FLAT_RING = '''

def hierarchical_all_reduce(ranks, size):
    """A flat ring all-reduce: every byte leaves its server on the ring's edges."""
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    steps = [Step([flow(ranks, r, (r + 1) % n, ((r - k - 1) % n,), chunk) for r in range(n)],
                  "reduce-scatter") for k in range(n - 1)]
    steps += [Step([flow(ranks, r, (r + 1) % n, ((r - k) % n,), chunk) for r in range(n)],
                   "all-gather") for k in range(n - 1)]
    return Schedule("all_reduce_ring", n, size, steps, 2 * (n - 1) / n)
'''
FLAT_ALLTOALL = '''

def pxn_alltoall(ranks, size):
    n = len(ranks)
    chunk = chunk_bytes(size, n)
    flows = [flow(ranks, s, d, (s * n + d,), chunk) for s in range(n) for d in range(n) if s != d]
    return Schedule("alltoall_flat", n, size, [Step(flows, "alltoall")], (n - 1) / n)
'''
BY_POSITION = '''

def servers(ranks):
    """Blocks of G consecutive ranks: right for the naive order only."""
    g = len(ranks) // len({gpu.server for gpu in ranks})
    return [list(range(r, r + g)) for r in range(0, len(ranks), g)]
'''


def _edited(old: str, new: str) -> str:
    text = SOLUTION.read_text()
    assert old in text, f"the solution changed: {old!r} not found"
    return text.replace(old, new)


# name: (program text, the step that must fail, what its detail says)
SHORTCUTS = {
    "the library's build()": (
        "from jobs.ccl.collectives import build\n\n\ndef ring_all_gather(ranks, size):\n"
        "    return build('all_gather', 'ring', ranks, size)\n\n\n"
        "def hierarchical_all_reduce(ranks, size):\n"
        "    return build('all_reduce', 'hierarchical', ranks, size)\n\n\n"
        "def pxn_alltoall(ranks, size):\n    return build('alltoall', 'pxn', ranks, size)\n",
        1, "imports jobs.ccl.collectives"),
    "everything over the fabric (a flat ring called hierarchical)": (
        SOLUTION.read_text() + FLAT_RING, 3, "sends over the fabric to"),
    "the rail all-gather skipped": (
        _edited('    phases.append(("rail all-gather",\n'
                '                   _merge([_ring(rail, pieces[j], False) for j, rail in '
                'enumerate(rails)])))\n', ''), 3, "it must hold it as the data of ranks"),
    "cross-server flows tagged NVLink": (
        _edited("link = NVLINK if ranks[src].server == ranks[dst].server else FABRIC",
                "link = NVLINK"), 2, "tagged 'nvlink'"),
    "servers taken from positions in the rank list": (
        SOLUTION.read_text() + BY_POSITION, 4, "ranks interleaved across servers"),
    "a flat alltoall called PXN": (
        SOLUTION.read_text() + FLAT_ALLTOALL, 5, "across rails only over NVLink"),
}


@pytest.mark.parametrize("name", SHORTCUTS)
def test_a_shortcut_fails_lab9(name, tmp_path):
    text, step, said = SHORTCUTS[name]
    program = tmp_path / "collectives_lab.py"
    program.write_text(text)
    results = run_checks(lab(9), program, experiments=False, seed=7)
    failed = results[step - 1]
    assert not failed.passed and not failed.skipped, (name, [(r.step.name, r.passed, r.detail)
                                                            for r in results])
    assert said in failed.detail, failed.detail


@pytest.mark.parametrize("seed", [3, 77, 123457])
def test_the_solution_passes_lab9_with_any_seed(seed):
    results = run_checks(lab(9), SOLUTION, experiments=False, seed=seed)
    assert [r.passed for r in results[:-1]] == [True] * (len(results) - 1), [
        (r.step.name, r.detail) for r in results if not r.passed]
    assert results[-1].skipped and results[-1].step.after_all
    assert "hidden shapes" in results[-2].detail
    assert "busiest NIC sends 768 KB of 1024 KB (flat ring: 1792 KB" in results[2].detail


@pytest.mark.mininet
@pytest.mark.root
def test_lab9_real_segment_the_solution_keeps_off_the_aggregation_switches():
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    if os.geteuid() != 0:
        pytest.skip("needs root (Mininet)")
    (last,) = [r for r in run_checks(lab(9), SOLUTION, seed=5) if r.step.after_all]
    assert last.passed, last.detail
    assert "yours: busbw" in last.detail and "0 B through them" in last.detail
    ring_kb = int(last.detail.split("GB/s, ")[1].split(" KB")[0])
    assert ring_kb > 0  # the flat ring's cross-rail edges do cross the aggregation switches
