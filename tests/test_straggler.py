"""Straggler formulas: exact order statistics by quadrature, Monte Carlo, properties, input kinds."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from formula_checks import check_input_kinds, check_symbolic
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special

from formulas import straggler as s
from formulas.core import Formula
from formulas.straggler import (
    expected_max_exponential,
    expected_max_lognormal,
    expected_max_normal,
    expected_max_normal_blom,
    gc_pause_delay,
    gc_pause_probability,
    pause_delay,
)

# n = 1..200 and 300 log-spaced values up to 1e5
N_GRID = np.unique(np.concatenate([np.arange(1, 201),
                                   np.round(np.logspace(0, 5, 300))])).astype(int)


def _exact_max_moment(n, g):
    """E[g(M_n)], M_n the max of n iid N(0,1): int g(x) n phi(x) Phi(x)^(n-1) dx."""
    centre = special.ndtri((n - 0.375) / (n + 0.25))

    def density(x):
        return np.exp(np.log(n) + (n - 1) * special.log_ndtr(x) - x * x / 2) / np.sqrt(2 * np.pi)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        value, _ = integrate.quad(lambda x: g(x) * density(x), -14, 14,
                                  points=[centre - 1, centre, centre + 1], limit=500,
                                  epsabs=0, epsrel=1e-11)
    return value


@pytest.fixture(scope="module")
def exact_max_normal():
    return np.array([_exact_max_moment(n, lambda x: x) for n in N_GRID])


def test_quadrature_reproduces_known_values(exact_max_normal):
    # E[max of 2] = 1/sqrt(pi); of 3 = 3/(2 sqrt(pi)); Harter 1961 Table: n=10 1.53875,
    # n=100 2.50759
    lookup = dict(zip(N_GRID, exact_max_normal, strict=True))
    assert lookup[1] == pytest.approx(0.0, abs=1e-12)
    assert lookup[2] == pytest.approx(1 / np.sqrt(np.pi), rel=1e-10)
    assert lookup[3] == pytest.approx(1.5 / np.sqrt(np.pi), rel=1e-10)
    assert lookup[10] == pytest.approx(1.53875, abs=1e-5)
    assert lookup[100] == pytest.approx(2.50759, abs=1e-5)


def test_royston_within_stated_error_of_quadrature(exact_max_normal):
    """Docstring: <= 0.0086 std (n=2), <= 0.0017 std (n>=3), <= 0.0009 std (n>=4)."""
    err = np.abs(expected_max_normal(N_GRID, 0.0, 1.0) - exact_max_normal)
    assert expected_max_normal(1, 0.0, 1.0) == 0.0  # exact at n = 1
    assert err.max() <= 0.0086
    assert err[N_GRID >= 3].max() <= 0.0017
    assert err[N_GRID >= 4].max() <= 0.0009
    # location-scale: mean + std * z
    np.testing.assert_allclose(expected_max_normal(N_GRID, 10.0, 0.5),
                               10.0 + 0.5 * expected_max_normal(N_GRID, 0.0, 1.0), rtol=1e-14)


def test_blom_within_stated_error_of_quadrature(exact_max_normal):
    """Docstring: Blom errs by at most 0.0253 std, exact at n = 1."""
    err = np.abs(expected_max_normal_blom(N_GRID, 0.0, 1.0) - exact_max_normal)
    assert expected_max_normal_blom(1, 0.0, 1.0) == 0.0
    assert err.max() <= 0.0253
    # and Royston is the better of the two everywhere on the grid
    assert np.all(np.abs(expected_max_normal(N_GRID, 0.0, 1.0) - exact_max_normal) <= err + 1e-12)


@pytest.mark.parametrize("sigma,bound", [(0.1, 0.001), (0.25, 0.003), (0.5, 0.009),
                                         (1.0, 0.033)])
def test_lognormal_within_stated_error_of_quadrature(sigma, bound):
    grid = N_GRID[::4]
    exact = np.array([_exact_max_moment(n, lambda x: np.exp(sigma * x)) for n in grid])
    approx = expected_max_lognormal(grid, 0.0, sigma)
    assert approx[grid == 1][0] == pytest.approx(np.exp(sigma**2 / 2), rel=1e-15)
    assert np.max(np.abs(approx / exact - 1)) <= bound


# ---- Monte Carlo, fixed seeds ----------------------------------------------------------------

SAMPLES = 100_000


def _sample_max_std_normal(rng, n):
    """1e5 draws of the max of n iid N(0,1): directly for n <= 64, else by inverse CDF."""
    if n <= 64:
        return rng.standard_normal((SAMPLES, n)).max(axis=1)
    return special.ndtri(rng.random(SAMPLES) ** (1.0 / n))


@pytest.mark.parametrize("n", [2, 8, 64, 1024, 16384])
def test_normal_monte_carlo(n):
    """mean 10 s, std 1 s: within 1 % and within 4 standard errors + the stated bound."""
    rng = np.random.default_rng(1000 + n)
    sample = 10.0 + 1.0 * _sample_max_std_normal(rng, n)
    mc, se = sample.mean(), sample.std() / np.sqrt(SAMPLES)
    got = expected_max_normal(n, 10.0, 1.0)
    assert got == pytest.approx(mc, rel=0.01)
    assert abs(got - mc) <= 4 * se + 0.0086


@pytest.mark.parametrize("n", [1, 2, 8, 64, 1024, 16384])
def test_exponential_monte_carlo(n):
    rng = np.random.default_rng(2000 + n)
    mean = 3.0
    if n <= 64:
        sample = rng.exponential(mean, (SAMPLES, n)).max(axis=1)
    else:
        sample = -mean * np.log1p(-rng.random(SAMPLES) ** (1.0 / n))
    mc, se = sample.mean(), sample.std() / np.sqrt(SAMPLES)
    got = expected_max_exponential(n, mean)
    assert got == pytest.approx(mc, rel=0.01)
    assert abs(got - mc) <= 4 * se


def test_exponential_is_harmonic_number():
    for n in [1, 2, 3, 10, 1000]:
        assert expected_max_exponential(n, 2.0) == pytest.approx(
            2.0 * sum(1 / k for k in range(1, n + 1)), rel=1e-12)


@pytest.mark.parametrize("n,sigma", [(1, 0.3), (2, 0.3), (8, 0.1), (64, 0.5), (1024, 0.25),
                                     (16384, 0.1)])
def test_lognormal_monte_carlo(n, sigma):
    rng = np.random.default_rng(3000 + n)
    mu = np.log(2.0)
    sample = np.exp(mu + sigma * _sample_max_std_normal(rng, n))
    mc = sample.mean()
    got = expected_max_lognormal(n, mu, sigma)
    assert got == pytest.approx(mc, rel=0.01)


def test_pause_delay_monte_carlo():
    rng = np.random.default_rng(4000)
    n, p, d = 512, 1e-3, 2.0
    stalls = (rng.random((SAMPLES, n)) < p).any(axis=1) * d
    assert pause_delay(n, p, d) == pytest.approx(stalls.mean(), rel=0.02)
    assert pause_delay(n, p, d) == pytest.approx(2.0 * (1 - 0.999**512), rel=1e-12)


def test_pause_delay_limits():
    assert pause_delay(1, 0.01, 3.0) == pytest.approx(0.03)
    assert pause_delay(1000, 0.0, 3.0) == 0.0
    assert pause_delay(1000, 1.0, 3.0) == 3.0


# ---- properties ------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200_000), st.integers(1, 1000), st.floats(-1e3, 1e3),
       st.floats(1e-6, 1e3))
def test_expected_max_rises_with_n(n, extra, mean, std):
    assert expected_max_normal(n + extra, mean, std) > expected_max_normal(n, mean, std)
    assert expected_max_normal_blom(n + extra, mean, std) > expected_max_normal_blom(n, mean, std)
    assert expected_max_exponential(n + extra, std) > expected_max_exponential(n, std)
    assert expected_max_normal(n, mean, std) >= mean


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200_000), st.integers(1, 1000), st.floats(-5, 5), st.floats(1e-3, 3.0))
def test_expected_max_lognormal_rises_with_n(n, extra, mu, sigma):
    """Docstring: increasing in integer n for sigma <= 3."""
    assert expected_max_lognormal(n + extra, mu, sigma) > expected_max_lognormal(n, mu, sigma)
    assert expected_max_lognormal(n, mu, sigma) >= np.exp(mu + sigma**2 / 2) * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100_000), st.integers(0, 1000), st.floats(0.0, 1.0), st.floats(0.0, 1e3))
def test_pause_delay_bounded_and_rising(n, extra, p, d):
    got = pause_delay(n, p, d)
    assert 0.0 <= got <= d
    assert pause_delay(n + extra, p, d) >= got


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100_000), st.floats(0.0, 1e3), st.floats(1e-3, 1e6), st.floats(0.0, 10.0))
def test_gc_pause_delay_is_the_pause_delay_of_the_gc_probability(n, step_s, interval_s, d):
    """d (1 - e^{-nT/I}) = pause_delay(n, 1 - e^{-T/I}, d): the one-exponential form the run
    model uses (no pow per candidate) equals the two-step form to rounding, stays within
    [0, d] and rises with the ranks and the step time."""
    got = gc_pause_delay(n, step_s, interval_s, d)
    x = n * step_s / interval_s
    assert got == pytest.approx(d * -math.expm1(-x), rel=1e-14, abs=1e-300)
    # the two-step form loses ~eps / (T/I) of its digits to 1 - e^{-T/I}
    p = gc_pause_probability(step_s, interval_s)
    if p == 0.0:  # T/I under the rounding of 1 - e^{-T/I}: the two-step form is all lost
        assert got <= d * x * (1 + 1e-12)
    else:
        two_step = pause_delay(n, p, d)
        assert got == pytest.approx(two_step, rel=1e-9 + n * 4e-16 * interval_s / max(
            step_s, 1e-300))
    assert 0.0 <= got <= d
    assert gc_pause_delay(n + 1, step_s, interval_s, d) >= got
    assert gc_pause_delay(n, step_s * 2, interval_s, d) >= got


# ---- symbolic vs numeric, input kinds, domain checks ------------------------------------------

ALL = [f for f in vars(s).values() if isinstance(f, Formula)]


def test_every_formula_is_documented():
    assert len(ALL) == 12
    for f in ALL:
        assert f.reference and f.result_unit, f.name
        assert all(a.unit for a in f.arguments), f.units


def _random_point(f, rng):
    point = {}
    for a in f.arguments:
        if a.domain == ">=1":
            point[a.name] = float(rng.integers(1, 100_000))
        elif a.domain == "[0,1]":
            point[a.name] = float(rng.uniform(0, 1))
        elif a.domain == "real":
            point[a.name] = float(rng.uniform(-3, 3))
        else:
            point[a.name] = float(rng.uniform(0.01, 2))
    return point


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(11)
    check_symbolic(f, [_random_point(f, rng) for _ in range(15)], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    point = _random_point(f, np.random.default_rng(5))
    check_input_kinds(f, [point] * 3, exact=True)


def test_series_mixed_with_scalars_keeps_index():
    n = pd.Series([1, 8, 4096], index=["a", "b", "c"])
    out = expected_max_normal(n, 1.0, 0.1)
    assert isinstance(out, pd.Series) and list(out.index) == ["a", "b", "c"]
    assert out["a"] == 1.0


@pytest.mark.parametrize("call,arg", [
    (lambda: expected_max_normal(0, 1.0, 0.1), "n"),
    (lambda: expected_max_normal(8, 1.0, -0.1), "std"),
    (lambda: expected_max_normal_blom(8, np.nan, 0.1), "mean"),
    (lambda: expected_max_exponential(8, 0.0), "mean"),
    (lambda: expected_max_lognormal(8, 0.0, -1.0), "sigma"),
    (lambda: pause_delay(0.5, 0.1, 1.0), "ranks"),
    (lambda: pause_delay(8, 1.5, 1.0), "probability"),
    (lambda: pause_delay(8, 0.1, np.array([1.0, -1.0])), "duration_s"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()
