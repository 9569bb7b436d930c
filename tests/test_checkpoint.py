"""Checkpoint/restart formulas: symbolic derivation, optimality, Monte Carlo, input kinds."""

import numpy as np
import pandas as pd
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from formulas.checkpoint import (
    checkpoint_size,
    checkpoint_write_time,
    daly_interval,
    daly_wall_time,
    daly_waste_fraction,
    expected_failures,
    first_order_waste_fraction,
    system_mtbf,
    young_interval,
)


def test_young_derived_by_sympy_from_first_order_waste():
    tau, delta, m, r = sp.symbols("tau delta M R", positive=True)
    waste = first_order_waste_fraction(tau, delta, r, m)
    (solution,) = sp.solve(sp.diff(waste, tau), tau)
    assert sp.simplify(solution - young_interval(delta, m)) == 0


def test_young_reference_value():
    # delta = 60 s, M = 1 h: sqrt(2 * 60 * 3600) = 657.267 s
    assert young_interval(60.0, 3600.0) == pytest.approx(657.2670690, rel=1e-9)


@pytest.mark.parametrize("ratio", [1e-4, 1e-3, 1e-2, 0.05, 0.1])
def test_daly_interval_near_true_optimum_of_complete_model(ratio):
    """Daly 2006 s4: the higher-order estimate is close to the exact optimum of T_w(tau)."""
    mtbf, delta, restart = 3600.0, 3600.0 * ratio, 300.0
    exact = minimize_scalar(lambda t: daly_wall_time(1e6, t, delta, restart, mtbf),
                            bounds=(1e-3, 10 * mtbf), method="bounded",
                            options={"xatol": 1e-6}).x
    daly = daly_interval(delta, mtbf)
    young = young_interval(delta, mtbf)
    # Daly is within 1% of the optimum here and never worse than Young's first-order rule.
    assert daly == pytest.approx(exact, rel=0.01)
    assert abs(daly - exact) <= abs(young - exact) + 1e-9


def test_daly_worked_example():
    """Daly 2006 eq. (37) worked by hand: delta = 5 min, M = 24 h.

    sqrt(2*300*86400) = 7200 s; x = 300/172800 = 1/576;
    7200 * (1 + (1/24)/3 + (1/576)/9) - 300 = 7001.389 s.
    """
    delta, mtbf = 300.0, 86400.0
    x = delta / (2 * mtbf)
    by_hand = np.sqrt(2 * delta * mtbf) * (1 + np.sqrt(x) / 3 + x / 9) - delta
    assert daly_interval(delta, mtbf) == pytest.approx(by_hand, rel=1e-12)
    assert daly_interval(delta, mtbf) == pytest.approx(7001.389, rel=1e-6)
    assert daly_interval(3 * mtbf, mtbf) == mtbf  # delta >= 2M -> M


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 3600.0), st.floats(3600.0, 1e7), st.floats(0.0, 3600.0),
       st.floats(0.2, 5.0))
def test_waste_minimal_at_optimal_interval(delta, mtbf, restart, factor):
    tau_star = young_interval(delta, mtbf)
    w_star = first_order_waste_fraction(tau_star, delta, restart, mtbf)
    assert first_order_waste_fraction(tau_star * factor, delta, restart, mtbf) >= w_star - 1e-12


def test_monte_carlo_wall_time_matches_daly_complete_model():
    """Exponential failures, fixed seed: simulated E[T_w] within 1% of Daly's eq. (20)."""
    rng = np.random.default_rng(20240501)
    mtbf, tau, delta, restart, segments = 3600.0, 600.0, 60.0, 120.0, 20
    replicas = 100_000
    total = np.zeros(replicas)
    for _ in range(segments):
        done = np.zeros(replicas, dtype=bool)
        while not done.all():
            live = ~done
            # a restart (exposed to failures, as in Daly's model) precedes every retry
            t_fail = rng.exponential(mtbf, live.sum())
            success = t_fail >= tau + delta
            spent = np.where(success, tau + delta, t_fail)
            idx = np.flatnonzero(live)
            total[idx] += spent
            failed = idx[~success]
            # restart: repeat until R completes without failure
            pending = failed
            while pending.size:
                t = rng.exponential(mtbf, pending.size)
                ok = t >= restart
                total[pending] += np.where(ok, restart, t)
                pending = pending[~ok]
            done[idx[success]] = True
    expected = daly_wall_time(segments * tau, tau, delta, restart, mtbf)
    assert total.mean() == pytest.approx(expected, rel=0.01)


def test_system_mtbf_and_failures():
    assert system_mtbf(50_000 * 3600.0, 16_384) == pytest.approx(50_000 * 3600 / 16_384)
    assert expected_failures(54 * 86400.0, system_mtbf(54 * 86400 * 16384 / 419, 16384)) \
        == pytest.approx(419)
    # Llama 3: 419 interruptions / 54 days -> system MTBF 3.09 h at 16,384 GPUs
    assert system_mtbf(54 * 24 * 16384 / 419 * 3600, 16384) / 3600 == pytest.approx(3.093, 1e-3)


def test_checkpoint_size_and_time():
    # BLOOM-176B: 2.3 TB reported; 13 B/param with bf16 weights + fp32 optimizer state
    assert checkpoint_size(176.247e9, 13.0) == pytest.approx(2.3e12, rel=0.01)
    assert checkpoint_write_time(2.3e12, 2.3e12 / 40) == pytest.approx(40.0)


@pytest.mark.parametrize("f,args", [
    (young_interval, (60.0, 3600.0)), (daly_interval, (60.0, 3600.0)),
    (daly_wall_time, (1e5, 600.0, 60.0, 120.0, 3600.0)),
    (daly_waste_fraction, (600.0, 60.0, 120.0, 3600.0)),
])
def test_scalar_array_series_agree(f, args):
    scalar = f(*args)
    arr = f(*(np.full(3, a) for a in args))
    ser = f(*(pd.Series([a] * 3, index=[5, 6, 7]) for a in args))
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float64
    assert isinstance(ser, pd.Series) and list(ser.index) == [5, 6, 7]
    np.testing.assert_allclose(arr, scalar, rtol=1e-15)
    np.testing.assert_allclose(ser.to_numpy(), scalar, rtol=1e-15)


@pytest.mark.parametrize("call,arg", [
    (lambda: young_interval(-1.0, 3600.0), "checkpoint_cost_s"),
    (lambda: daly_interval(60.0, 0.0), "mtbf_s"),
    (lambda: system_mtbf(3600.0, 0.5), "count"),
    (lambda: checkpoint_size(-5.0), "params"),
    (lambda: checkpoint_write_time(1e9, np.array([1e9, 0.0])), "bandwidth_bytes_per_s"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_integers_give_float64():
    assert isinstance(checkpoint_size(10**12, 14), float)
    assert checkpoint_size(np.array([10**12]), 14).dtype == np.float64


def test_compute_time_monte_carlo_and_limit():
    """Busy (computing) time of Daly's model vs a fixed-seed simulation, within 1%."""
    from formulas.checkpoint import daly_compute_time

    assert daly_compute_time(1e6, 600.0, 60.0, 1e12) == pytest.approx(1e6, rel=1e-6)
    rng = np.random.default_rng(7)
    mtbf, tau, delta, segments, replicas = 3600.0, 900.0, 120.0, 10, 50_000
    busy = np.zeros(replicas)
    for _ in range(segments):
        pending = np.arange(replicas)
        while pending.size:
            t = rng.exponential(mtbf, pending.size)
            busy[pending] += np.minimum(t, tau)  # computing until the failure or tau
            pending = pending[t < tau + delta]   # failed during compute or checkpoint
    expected = daly_compute_time(segments * tau, tau, delta, mtbf)
    assert busy.mean() == pytest.approx(expected, rel=0.01)
    assert expected > segments * tau
