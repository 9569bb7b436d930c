"""Failure domains and hot spares: formulas, closed form vs Monte Carlo, catalog data.

Monte Carlo: planner.analysis.simulate.simulate_domains, fixed seeds.  The
closed form (planner.analysis.simulate.domains_closed_form) is Daly's complete
model with the failures' swap-or-re-queue restarts folded into one effective
restart cost; it is exact for independent restart types and holds for jobs long
compared with the node repair time.  Stated tolerances below.
"""

import math

import numpy as np
import pytest
from formula_checks import check_input_kinds, check_symbolic
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import poisson

from formulas import checkpoint as ck
from formulas import reliability as rel
from formulas.core import Formula
from hardware_catalog.loader import load_catalog
from planner.analysis.simulate import (
    FailureDomain,
    domains_closed_form,
    failure_domains,
    optimal_spares,
    repair_pool_pmf,
    simulate_domains,
    spare_swap_probability,
)

H = 3600.0
ALL = [f for f in vars(rel).values() if isinstance(f, Formula)]


@pytest.fixture(scope="module")
def llama_domains():
    profile = load_catalog().reliability_profile("llama3-405b")
    return failure_domains(profile, gpus=16384, gpus_per_node=8)


# ---- catalog ------------------------------------------------------------------------------

def test_llama3_domains_reproduce_the_419_interruptions(llama_domains):
    """Llama 3 Table 5: 419 unexpected interruptions in 54 days at 16,384 GPUs."""
    rate = sum(d.rate_per_s for d in llama_domains)
    assert rate * 54 * 86400 == pytest.approx(419, rel=1e-6)
    by_name = {d.name: d.rate_per_s * 54 * 86400 for d in llama_domains}
    # software: a per-job term plus inter-node faults, 63 together at 2,048 nodes
    by_name["software"] += by_name.pop("software-internode")
    assert by_name == pytest.approx({"gpu": 268, "node": 53, "network": 35, "software": 63},
                                    rel=1e-4)  # catalog values rounded
    # and the folded per-GPU rate of the profile agrees
    profile = load_catalog().reliability_profile("llama3-405b")
    assert 16384 / profile.gpu_mtbf_s.value == pytest.approx(rate, rel=1e-6)


def test_profile_without_domains_is_refused():
    profile = load_catalog().reliability_profile("bloom-176b")
    with pytest.raises(ValueError, match="swap_restart_s"):
        failure_domains(profile, gpus=384, gpus_per_node=8)


# ---- the restart mixture ------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.0, 0.3, 0.9, 1.0])
def test_effective_restart_monte_carlo(p):
    """Time from a failure to resumed work when failures (rate 1/M) interrupt restarts and
    each restart is R_s (prob p) or R_q: mean = M (e^{R_eff/M} - 1), within 1 % (seed 4).
    """
    rng = np.random.default_rng(4)
    mtbf, det, r_s, r_q, n = 2 * H, 60.0, 600.0, 3 * H, 200_000
    total = np.zeros(n)
    pending = np.arange(n)
    while pending.size:
        cost = det + np.where(rng.random(pending.size) < p, r_s, r_q)
        t = rng.exponential(mtbf, pending.size)
        ok = t >= cost
        total[pending] += np.where(ok, cost, t)
        pending = pending[~ok]
    r_eff = rel.effective_restart_cost(mtbf, det, r_s, r_q, p)
    assert total.mean() == pytest.approx(mtbf * math.expm1(r_eff / mtbf), rel=0.01)
    mean = rel.domain_restart_cost(det, r_s, r_q, p)
    assert det + min(r_s, r_q) - 1e-9 <= r_eff <= mean + 1e-9


@settings(max_examples=200, deadline=None)
@given(st.floats(600.0, 1e7), st.floats(0.0, 600.0), st.floats(0.0, 1e4), st.floats(0.0, 1e5),
       st.floats(0.0, 1.0))
def test_effective_restart_between_fastest_and_mean(mtbf, det, r_s, r_q, p):
    r_eff = rel.effective_restart_cost(mtbf, det, r_s, r_q, p)
    mean = rel.domain_restart_cost(det, r_s, r_q, p)
    assert det + min(r_s, r_q) * (1 - 1e-9) - 1e-6 <= r_eff <= mean * (1 + 1e-9) + 1e-6


# ---- the spare pool -----------------------------------------------------------------------

def test_repair_pool_is_compound_poisson():
    """Single-node losses: Poisson(Lambda T_r); batches of 18 nodes: mass on multiples of 18."""
    single = [FailureDomain("gpu", 1000, 1000 * H, 1)]
    pmf = repair_pool_pmf(single, 5 * H)
    np.testing.assert_allclose(pmf, poisson.pmf(np.arange(pmf.size), 5.0), atol=1e-15)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-10)
    racks = [FailureDomain("rack", 10, 10 * 50 * H, 18)]
    pmf = repair_pool_pmf(racks, 25 * H)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-10)
    assert np.all(pmf[np.arange(pmf.size) % 18 != 0] == 0)
    mean = float(np.arange(pmf.size) @ pmf)
    assert mean == pytest.approx(rel.nodes_in_repair(18 / (50 * H), 25 * H), rel=1e-9)
    # a software domain takes no node out
    assert spare_swap_probability(0, 0, pmf) == 1.0
    assert spare_swap_probability(17, 18, pmf) == 0.0


def _compare(domains, spares, solve_s, seed, replicas):
    kw = dict(spares=spares, repair_time_s=24 * H, solve_time_s=solve_s, interval_s=1800.0,
              checkpoint_cost_s=30.0)
    mc = simulate_domains(domains, replicas=replicas, seed=seed, **kw).summary()
    closed = domains_closed_form(domains, **kw)
    return mc, closed


@pytest.mark.parametrize("spares", [0, 12, 40])
def test_monte_carlo_matches_closed_form_llama3_domains(llama_domains, spares):
    """2,048 nodes, Llama 3 domain rates (M = 3.09 h), 1-day repairs, a 250-hour job.

    0 spares (every hardware failure re-queues) and 40 (always a swap):
    independent restart types, within 4 standard errors + 0.3 %.  12 spares
    (pool near its mean of 6.6 nodes in repair): within 1 % and swap share
    within 2 points (the closed form ignores the pool's one-day memory).
    """
    mc, closed = _compare(llama_domains, spares, 500 * 1800.0, seed=20 + spares, replicas=3000)
    wall = float(closed["wall_time_s"])
    if spares in (0, 40):
        assert abs(mc["wall_time_s"] - wall) <= 4 * mc["wall_time_stderr_s"] + 0.003 * wall
    else:
        assert mc["wall_time_s"] == pytest.approx(wall, rel=0.01)
    assert mc["swap_fraction"] == pytest.approx(float(closed["swap_fraction"]), abs=0.02)
    assert mc["failures"] == pytest.approx(float(closed["failures"]), rel=0.02)


@pytest.mark.parametrize("spares", [8, 18, 36])
def test_monte_carlo_matches_closed_form_rack_domains(spares):
    """NVL72-style racks (18 nodes) fail as one unit: 256 racks, GPU faults on 18,432 GPUs.

    Correlated losses need the compound-Poisson pool.  Within 1.5 % and 3
    points of swap share (8 spares, near the pool's mean of 7.1 nodes in
    repair, is the marginal case: +1.1 % wall time and -2.7 points of swaps
    measured).
    """
    domains = [FailureDomain("gpu", 256 * 72, 285e6, 1, 30, 600, 7200),
               FailureDomain("rack", 256, 256 * 12 * 86400.0, 18, 30, 600, 7200)]
    mc, closed = _compare(domains, spares, 500 * 1800.0, seed=40 + spares, replicas=3000)
    assert mc["wall_time_s"] == pytest.approx(float(closed["wall_time_s"]), rel=0.015)
    assert mc["swap_fraction"] == pytest.approx(float(closed["swap_fraction"]), abs=0.03)


def test_short_job_is_worse_than_the_closed_form(llama_domains):
    """The stated limit: a 25-hour job with 1-day repairs and marginal spares depletes its
    pool; the Monte Carlo is 5-15 % slower than the long-job closed form."""
    mc, closed = _compare(llama_domains, 8, 50 * 1800.0, seed=7, replicas=3000)
    assert 1.05 <= mc["wall_time_s"] / float(closed["wall_time_s"]) <= 1.15


def test_no_failures_reduce_to_daly(llama_domains):
    """Identical swap and re-queue costs: spares change nothing, Daly with R = t_d + R_s."""
    same = [FailureDomain(d.name, d.units, d.unit_mtbf_s, d.nodes_lost, d.detection_s,
                          d.swap_restart_s, d.swap_restart_s) for d in llama_domains]
    out = domains_closed_form(same, spares=np.arange(5), repair_time_s=H,
                              solve_time_s=1e6, interval_s=1800.0, checkpoint_cost_s=30.0)
    mtbf = out["system_mtbf_s"]
    expected = ck.daly_wall_time(1e6, 1800.0, 30.0, 630.0, mtbf)
    np.testing.assert_allclose(out["wall_time_s"], expected, rtol=1e-12)


# ---- the optimal spare count --------------------------------------------------------------

def test_optimal_spares_llama3(llama_domains):
    """54-day solve on 2,048 nodes: the GPU-hour optimum is an interior spare count, and
    it is the argmin of (nodes + spares) x wall over the grid."""
    out = optimal_spares(llama_domains, job_nodes=2048, gpus_per_node=8, max_spares=64,
                         repair_time_s=24 * H, solve_time_s=54 * 86400.0, interval_s=1800.0,
                         checkpoint_cost_s=30.0)
    best = out["best_spares"]
    assert 0 < best < 64
    hours = (2048 + out["spares"]) * 8 * out["wall_time_s"] / 3600
    np.testing.assert_allclose(out["gpu_hours"], hours, rtol=1e-12)
    assert out["gpu_hours"][best] == hours.min()
    assert out["gpu_hours"][0] > out["gpu_hours"][best]
    # wall time falls with spares
    assert np.all(np.diff(out["wall_time_s"]) <= 1e-9 * out["wall_time_s"][0])


@settings(max_examples=30, deadline=None)
@given(st.floats(600.0, 6 * H), st.floats(1.0, 4.0))
def test_costlier_requeue_never_wants_fewer_spares(requeue_s, factor):
    def best(r_q):
        domains = [FailureDomain("gpu", 8192, 285e6, 1, 30, 600, r_q),
                   FailureDomain("node", 1024, 180e6, 1, 30, 600, r_q)]
        return optimal_spares(domains, job_nodes=1024, gpus_per_node=8, max_spares=48,
                              repair_time_s=24 * H, solve_time_s=30 * 86400.0,
                              interval_s=1800.0, checkpoint_cost_s=30.0)["best_spares"]
    assert best(requeue_s * factor) >= best(requeue_s)


# ---- formulas: symbolic, kinds, domains ---------------------------------------------------

def _point(f, rng):
    out = {}
    for a in f.arguments:
        if a.domain == ">=1":
            out[a.name] = float(rng.integers(1, 5000))
        elif a.domain in ("[0,1]", "(0,1]"):
            out[a.name] = float(rng.uniform(1e-3, 1))
        else:
            out[a.name] = float(rng.uniform(1.0, 5000.0))
    return out


def test_every_formula_is_documented():
    assert len(ALL) == 9
    for f in ALL:
        assert f.reference and f.result_unit and all(a.unit for a in f.arguments), f.name


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(44)
    check_symbolic(f, [_point(f, rng) for _ in range(10)], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    rng = np.random.default_rng(45)
    check_input_kinds(f, [_point(f, rng) for _ in range(4)])


@pytest.mark.parametrize("call,arg", [
    (lambda: rel.domain_units(0, 8), "gpus"),
    (lambda: rel.domain_failure_rate(10, 0.0), "unit_mtbf_s"),
    (lambda: rel.domain_restart_cost(0.0, 1.0, 1.0, 1.5), "swap_probability"),
    (lambda: rel.effective_restart_cost(-1.0, 0.0, 1.0, 1.0, 0.5), "mtbf_s"),
    (lambda: rel.gpu_hours_with_spares(8, -1, 8, 1.0), "spares"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_bad_domain_refused():
    with pytest.raises(ValueError, match="unit_mtbf_s"):
        FailureDomain("gpu", 8, 0.0)
    with pytest.raises(ValueError, match="whole number"):
        simulate_domains([FailureDomain("gpu", 8, H)], spares=0, repair_time_s=H,
                         solve_time_s=1000.0, interval_s=300.0, checkpoint_cost_s=0.0)
