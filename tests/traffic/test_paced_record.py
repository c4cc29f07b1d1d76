"""The paced receiver's per-flow record: a reordered packet fills the silence it left, a lost one
does not (the failover experiment's loss window counts only silences that lost packets)."""

from __future__ import annotations

from traffic.paced_recv import MAX_HOLES, FlowRecord

GAP_S = 0.005


def _arrivals(record: FlowRecord, psns_at: list[tuple[int, float]]) -> None:
    for psn, now in psns_at:
        record.arrive(now, psn, 100, 0.0, 0.01, GAP_S)


def test_a_late_packet_fills_its_silence() -> None:
    record = FlowRecord("10.0.0.1", 7)
    # 0 and 1 in order, then 4 after an 8 ms silence, then 2 and 3 late
    _arrivals(record, [(0, 0.000), (1, 0.0025), (4, 0.0105), (2, 0.011), (3, 0.0112)])
    assert record.lost == 0
    assert record.gaps == [(0.0025, 0.0105, 0)]
    summary = record.summary()
    assert summary["gaps"] == [(0.0025, 0.0105, 0)] and summary["lost"] == 0
    assert "missing" not in summary


def test_a_lost_packet_keeps_its_silence_lossy() -> None:
    record = FlowRecord("10.0.0.1", 7)
    # 2 and 3 skipped; only 3 arrives late; then a second silence that loses 6
    _arrivals(record, [(0, 0.0), (1, 0.0025), (4, 0.0105), (3, 0.011), (5, 0.0125),
                       (7, 0.020), (6, 0.021)])
    assert record.lost == 1
    assert record.gaps == [(0.0025, 0.0105, 1), (0.0125, 0.020, 0)]


def test_a_duplicate_fills_nothing() -> None:
    record = FlowRecord("10.0.0.1", 7)
    _arrivals(record, [(0, 0.0), (2, 0.0025), (0, 0.003), (1, 0.004), (1, 0.0045)])
    assert record.lost == 0
    assert record.gaps == [(0.0, 0.0025, 0)]
    assert record.packets == 5


def test_psns_before_the_first_arrival_count_lost_until_they_arrive() -> None:
    record = FlowRecord("10.0.0.1", 7)
    _arrivals(record, [(2, 0.0), (0, 0.001)])
    assert record.lost == 1
    assert record.gaps == []


def test_a_skip_longer_than_max_holes_stays_lost() -> None:
    record = FlowRecord("10.0.0.1", 7)
    skipped = MAX_HOLES + 1
    _arrivals(record, [(0, 0.0), (skipped + 1, 1.0), (1, 1.001)])
    assert record.lost == skipped
    assert record.gaps == [(0.0, 1.0, skipped)]
    assert not record.missing
