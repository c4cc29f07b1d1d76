"""Loss windows and recovery times from receiver records (pure computation)."""

from __future__ import annotations

import pytest

from experiments.framework.recovery import loss_window, outcome, recovery_time, rolling_mean

T = 1000.0  # failure time (epoch seconds)


def test_the_loss_window_is_the_lossy_silence_after_the_failure():
    gaps = [(T - 2.0, T - 1.9, 0),      # jitter long before: no loss
            (T - 0.004, T + 0.087, 9),  # the failure
            (T + 1.0, T + 1.04, 0)]     # jitter after: no loss
    assert loss_window(gaps, T) == pytest.approx(0.091)


def test_silences_without_lost_packets_or_outside_the_horizon_do_not_count():
    assert loss_window([(T + 0.1, T + 0.3, 0)], T) == 0.0
    assert loss_window([(T - 1.0, T + 0.2, 5)], T) == 0.0  # began long before the failure
    assert loss_window([(T + 6.0, T + 6.5, 5)], T, horizon_s=5.0) == 0.0


def test_a_silent_drop_spans_from_its_first_to_its_last_loss():
    gaps = [(T + 0.01, T + 0.02, 1), (T + 0.5, T + 0.51, 1), (T + 2.2, T + 2.21, 2)]
    assert loss_window(gaps, T, span=True) == pytest.approx(2.2)
    assert loss_window(gaps, T) == pytest.approx(0.01)


def test_rolling_mean_uses_the_values_seen_so_far_at_the_start():
    assert rolling_mean([2, 4, 6, 8], 2) == [2, 3, 5, 7]


def test_recovery_counts_from_the_failure_until_throughput_holds_again():
    bins = {i: 100 for i in range(0, 100)}  # 10 ms bins, failure at bin 100 (1.0 s)
    bins.update({i: 0 for i in range(100, 120)})  # 200 ms outage
    bins.update({i: 100 for i in range(120, 200)})
    back = recovery_time(bins, 0.01, 1.0, smooth=5, hold=10)
    assert back == pytest.approx(0.24, abs=0.011)  # the 5-bin mean is full 4 bins after


def test_recovery_is_zero_without_a_dip_and_none_without_a_return():
    steady = {i: 100 for i in range(200)}
    assert recovery_time(steady, 0.01, 1.0) == 0.0
    dead = {i: (100 if i < 100 else 0) for i in range(200)}
    assert recovery_time(dead, 0.01, 1.0) is None
    assert recovery_time({}, 0.01, 1.0) is None


def test_an_untouched_flow_is_not_affected():
    record = {"gaps": [[T + 0.2, T + 0.25, 0]], "lost": 0}
    result = outcome("f", record, {i: 10 for i in range(300)}, 0.01, T - 1.0, T)
    assert not result.affected and result.loss_window_s == 0 and result.recovery_s == 0


def test_losses_after_the_restore_are_counted_apart():
    t_restore = T + 4.0
    record = {"gaps": [[T - 0.004, T + 0.05, 5], [t_restore + 0.01, t_restore + 0.04, 3]],
              "lost": 8}
    result = outcome("f", record, {}, 0.01, T - 1.0, T, horizon_s=4.0, t_restore=t_restore)
    assert result.lost == 8 and result.lost_at_restore == 3
    assert result.loss_window_s == pytest.approx(0.054)
    assert outcome("f", record, {}, 0.01, T - 1.0, T).lost_at_restore == 0  # no restore time


def test_a_flow_that_never_comes_back_is_not_taken_for_an_untouched_one():
    """A silence with no packet after it leaves no gap in the receiver's records: only the end
    of the run shows it (the demo once reported 0 ms for flows that stayed at 0 Mb/s)."""
    t0 = T - 1.0
    bins = {i: 10 for i in range(100)}  # 10 ms bins: delivering until the failure at T
    dead = outcome("f", {"gaps": [], "lost": 0}, bins, 0.01, t0, T, t_end=T + 3.0)
    assert not dead.recovered and dead.affected and dead.recovery_s is None
    assert dead.loss_window_s == pytest.approx(3.0)
    alive = {i: 10 for i in range(400)}  # delivering to the end of the run
    ok = outcome("f", {"gaps": [], "lost": 0}, alive, 0.01, t0, T, t_end=T + 3.0)
    assert ok.recovered and not ok.affected and ok.loss_window_s == 0
    never = outcome("f", {}, {}, 0.01, t0, T, t_end=T + 3.0)  # nothing ever arrived
    assert not never.recovered
