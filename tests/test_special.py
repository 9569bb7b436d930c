"""formulas.special (numpy-only erfinv, ndtri, digamma, gammaln, poisson_cdf) against
scipy.special.

Tolerances: erfinv/ndtri 4e-15 relative; digamma 4e-15 * max(1, |psi|); gammaln 1e-14 *
max(1, |ln Gamma|); poisson_cdf 1e-12 relative for means up to 1e3 (the kernel's spare
pool: counts of nodes in repair), 5e-15 * mu above (see the module docstring).  The kernel's use: erfinv of the Royston tail argument of the
straggler term for every GPU count 1..2^24 (checked exhaustively on a log grid).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sc
from hypothesis import given
from hypothesis import strategies as st

from formulas.special import digamma, erfinv, gammaln, ndtri, poisson_cdf

REL = 4e-15


def _near_ends(n):
    gaps = np.logspace(-16, -1, n)
    return np.concatenate([1 - gaps, gaps - 1])


def test_erfinv_matches_scipy_over_the_domain():
    x = np.concatenate([np.linspace(-1, 1, 400_001)[1:-1], _near_ends(3000),
                        np.logspace(-300, -1, 1000), -np.logspace(-300, -1, 1000)])
    np.testing.assert_allclose(erfinv(x), sc.erfinv(x), rtol=REL, atol=0)


def test_erfinv_in_the_range_the_kernel_uses():
    # the straggler argument 2 p - 1 of the Royston tail area for n GPUs
    n = np.unique(np.round(np.logspace(0, np.log10(2**24), 20_000)))
    e1 = (1 - 0.419885) / (n + 0.474798)
    e2 = e1 ** 0.282765
    x = 2 * (e1 + e2 * (0.112063 + e2 * 0.080122) / n) - 1
    np.testing.assert_allclose(erfinv(x), sc.erfinv(x), rtol=REL, atol=0)


@given(st.floats(-1, 1, allow_nan=False))
def test_erfinv_scalar_matches_scipy(x):
    got = erfinv(x)
    assert isinstance(got, float)
    assert got == pytest.approx(float(sc.erfinv(x)), rel=REL, abs=1e-300)  # subnormals


def test_erfinv_edges_and_shapes():
    np.testing.assert_array_equal(erfinv(np.array([-1.0, 1.0, 0.0, -0.0])),
                                  [-np.inf, np.inf, 0.0, -0.0])
    assert np.all(np.isnan(erfinv(np.array([1.5, -1.0000001, np.nan]))))
    assert erfinv(np.zeros((2, 3))).shape == (2, 3)
    assert np.signbit(erfinv(-0.0))


def test_ndtri_matches_scipy():
    p = np.concatenate([np.linspace(0, 1, 200_001)[1:-1], np.logspace(-300, -1, 3000),
                        1 - np.logspace(-16, -1, 3000)])
    np.testing.assert_allclose(ndtri(p), sc.ndtri(p), rtol=REL, atol=0)
    np.testing.assert_array_equal(ndtri(np.array([0.0, 1.0, 0.5])), [-np.inf, np.inf, 0.0])
    assert np.all(np.isnan(ndtri(np.array([-0.1, 1.1, np.nan]))))


def test_digamma_matches_scipy():
    x = np.concatenate([np.logspace(-10, 12, 200_001), np.linspace(1, 3, 20_001),
                        np.arange(1.0, 10_001.0)])
    expected = sc.digamma(x)
    error = np.abs(digamma(x) - expected)
    assert np.max(error / np.maximum(1, np.abs(expected))) <= REL


@given(st.floats(1e-3, 1e9))
def test_digamma_recurrence(x):
    # psi(x + 1) = psi(x) + 1/x holds to rounding (of the terms, up to 1/x in size)
    assert digamma(x + 1) == pytest.approx(digamma(x) + 1 / x, rel=0, abs=1e-14 * (1 + 1 / x))


def test_digamma_outside_its_domain_is_nan():
    assert np.all(np.isnan(digamma(np.array([0.0, -1.0, -2.5, np.nan]))))
    assert digamma(1.0) == pytest.approx(-np.euler_gamma, rel=1e-15)


def test_gammaln_matches_scipy():
    x = np.concatenate([np.logspace(-300, 12, 4000), np.linspace(0.01, 40, 4001)])
    want = sc.gammaln(x)
    assert np.all(np.abs(gammaln(x) - want) <= 1e-14 * np.maximum(1, np.abs(want)))
    assert np.isnan(gammaln(np.array([0.0, -1.0]))).all()


def test_poisson_cdf_matches_pdtr_where_the_kernel_uses_it():
    # spare-pool counts 0..400 and means of nodes in repair 1e-8..1e3
    k, mu = np.meshgrid(np.arange(0, 400, 1.0), np.logspace(-8, 3, 400))
    want = sc.pdtr(k, mu)
    got = poisson_cdf(k, mu)
    tail = want > 1e-290  # below, both underflow to (sub)normals
    np.testing.assert_allclose(got[tail], want[tail], rtol=1e-12, atol=0)
    np.testing.assert_allclose(got[~tail], want[~tail], rtol=0, atol=1e-290)


@pytest.mark.parametrize("mean", [1e4, 1e5, 1e6, 1e7])
def test_poisson_cdf_near_large_means(mean):
    k = np.floor(mean + np.sqrt(mean) * np.linspace(-6, 6, 41))
    # round-off of the exponent -mu + a ln mu - ln Gamma(a): relative 5e-15 * mu
    np.testing.assert_allclose(poisson_cdf(k, mean), sc.pdtr(k, mean), rtol=5e-15 * mean,
                               atol=1e-300)


def test_poisson_cdf_edges_and_shapes():
    assert poisson_cdf(-0.5, 1.0) == 0.0  # a negative count: impossible
    assert poisson_cdf(2.9, 1.0) == pytest.approx(float(sc.pdtr(2, 1.0)), rel=1e-15)  # floored
    assert poisson_cdf(0, 0.0) == 1.0 and poisson_cdf(3, np.inf) == 0.0
    assert poisson_cdf(np.inf, 3.0) == 1.0
    assert np.isnan(poisson_cdf(1.0, -1.0)) and np.isnan(poisson_cdf(np.nan, 1.0))
    assert isinstance(poisson_cdf(1, 2.0), float)
    assert poisson_cdf(np.zeros((2, 3)), 1.0).shape == (2, 3)


@given(st.integers(0, 200), st.floats(0, 500, allow_nan=False))
def test_poisson_cdf_is_a_cdf(k, mu):
    low, high = poisson_cdf(k, mu), poisson_cdf(k + 1, mu)
    assert 0.0 <= low <= high + 1e-14 and high <= 1.0  # to round-off of sums near 1
    assert poisson_cdf(k, mu) >= poisson_cdf(k, mu + 1.0) - 1e-14  # more failures, fewer swaps


@given(st.lists(st.tuples(st.integers(-3, 3000), st.sampled_from([0.5, 37.0, 401.5, 2500.0])),
                min_size=1, max_size=300), st.integers(1, 40))
def test_poisson_cdf_of_repeated_pairs_equals_each_pair_alone(pairs, repeats):
    # the series and fraction values are computed once per distinct (k, mu) pair and
    # remembered (formulas.special._per_distinct); each must be the one the pair gives alone
    k, mu = (np.repeat(np.array(column, dtype=float), repeats)
             for column in zip(*pairs, strict=True))
    alone = np.array([poisson_cdf(np.array([a]), np.array([b]))[0] for a, b in pairs])
    np.testing.assert_array_equal(poisson_cdf(k, mu), np.repeat(alone, repeats))


def test_poisson_cdf_pair_cache_refills_when_full(monkeypatch):
    from formulas import special

    monkeypatch.setattr(special, "_PAIR_CACHE", {})
    monkeypatch.setattr(special, "_PAIR_CACHE_SIZE", 5)
    k = np.arange(3.0, 11.0)  # 8 distinct series pairs: more than the cache holds
    first = poisson_cdf(k, 2.5)
    np.testing.assert_array_equal(poisson_cdf(k[:3], 2.5), first[:3])  # served, then full
    np.testing.assert_array_equal(poisson_cdf(k, 2.5), first)
    assert len(special._PAIR_CACHE["_lower_gamma_series"]) <= 8
