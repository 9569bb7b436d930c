"""Monte Carlo simulation (planner.analysis.simulate) against the closed forms.

Tolerances are stated against the Monte Carlo standard error (s.e.): a check
``|sim - closed| < 4 s.e.`` fails by chance with probability ~6e-5; every test
uses a fixed seed, so results are deterministic anyway.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from formulas import checkpoint as ck
from planner.analysis.simulate import (
    RunSpec,
    closed_form,
    failure_times,
    max_normal_moments,
    optimal_interval,
    sample_compute_time,
    sample_max_normal,
    simulate,
    step_stats,
)


def _expected_step(n, mean, std, p, d):
    """Closed form E[step]: formulas.straggler if present, else exact integration."""
    try:
        from formulas import straggler

        return float(straggler.expected_max_normal(n, mean, std)
                     + straggler.pause_delay(n, p, d))
    except ImportError:  # pragma: no cover - straggler module not merged yet
        from scipy import integrate, stats

        e = integrate.quad(lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1),
                           -12, 12, points=[0, 3, 4])[0]
        return mean + std * e + d * (1 - (1 - p) ** n)


# M = 2 h, delta = 2 min, R = 10 min, 200 h of compute: ~100+ failures per run.
EXP = RunSpec(steps=72_000, step_time_s=10.0, components=1024,
              component_mtbf_s=1024 * 7200.0, checkpoint_interval_s=1200.0,
              checkpoint_cost_s=120.0, restart_cost_s=600.0)


def test_exponential_mean_wall_matches_daly_within_1_percent():
    res = simulate(EXP, replicas=20_000, seed=11)
    cf = closed_form(EXP)
    # Daly's complete model directly: 60 full segments of 1200 s.
    daly = float(ck.daly_wall_time(720_000.0, 1200.0, 120.0, 600.0, 7200.0))
    assert cf["wall_time_s"] == pytest.approx(daly, rel=1e-12)
    mean = res.wall_time_s.mean()
    se = res.wall_time_s.std(ddof=1) / math.sqrt(res.replicas)
    assert se / daly < 1e-3                      # 1% is > 10 s.e.: a sharp test
    assert abs(mean - daly) < 4 * se
    assert abs(mean / daly - 1) < 0.01
    # lost work and energy split also follow the closed forms
    assert res.lost_work_s.mean() == pytest.approx(cf["lost_work_s"], rel=0.02)
    assert res.busy_time_s.mean() == pytest.approx(cf["busy_time_s"], rel=0.005)
    assert res.overshoots == 0


def test_mean_wall_with_final_short_segment_and_small_delta_over_m():
    spec = replace(EXP, steps=71_234, checkpoint_interval_s=830.0, checkpoint_cost_s=30.0)
    res = simulate(spec, replicas=10_000, seed=5)
    cf = closed_form(spec)
    se = res.wall_time_s.std(ddof=1) / math.sqrt(res.replicas)
    assert abs(res.wall_time_s.mean() - cf["wall_time_s"]) < 4 * se
    assert abs(res.wall_time_s.mean() / cf["wall_time_s"] - 1) < 0.01


def test_delta_comparable_to_mtbf_still_matches_daly():
    spec = replace(EXP, checkpoint_cost_s=3600.0, checkpoint_interval_s=7200.0, steps=36_000)
    res = simulate(spec, replicas=10_000, seed=2)
    cf = closed_form(spec)
    se = res.wall_time_s.std(ddof=1) / math.sqrt(res.replicas)
    assert abs(res.wall_time_s.mean() - cf["wall_time_s"]) < 4 * se


def test_expected_failures_equal_wall_over_mtbf():
    res = simulate(EXP, replicas=20_000, seed=3)
    m = EXP.system_mtbf_s
    # Wald: E[N(T)] = E[T]/M; compare the per-replica difference N - T/M with its s.e.
    diff = res.failures - res.wall_time_s / m
    assert abs(diff.mean()) < 4 * diff.std(ddof=1) / math.sqrt(res.replicas)
    cf = closed_form(EXP)
    se = res.failures.std(ddof=1) / math.sqrt(res.replicas)
    assert abs(res.failures.mean() - cf["failures"]) < 4 * se


@pytest.mark.parametrize("interval", [30.0, 5_000.0])  # 5 steps: exact sums; 800: CLT
def test_mean_step_matches_order_statistics(interval):
    n, mean, std, p, d = 16_384, 6.0, 0.3, 2e-6, 4.0
    spec = RunSpec(steps=20_000, step_time_s=mean, step_time_std_s=std, sync_ranks=n,
                   pause_probability=p, pause_duration_s=d, checkpoint_interval_s=interval)
    res = simulate(spec, replicas=2_000, seed=4)
    expected = _expected_step(n, mean, std, p, d)
    sim = res.mean_step_time_s.mean()
    assert abs(sim / expected - 1) < 0.01
    # far tighter in fact: the per-step s.e. is ~1e-4 s
    assert abs(sim - step_stats(spec).mean_step_s) < 4 * res.mean_step_time_s.std() / math.sqrt(
        res.replicas) + 1e-9
    assert closed_form(spec)["mean_step_time_s"] == pytest.approx(expected, rel=1e-12)


def test_max_normal_sampler_against_brute_force():
    rng = np.random.default_rng(0)
    brute = rng.normal(1.0, 2.0, (40_000, 64)).max(axis=1)
    fast = sample_max_normal(rng, 64, 1.0, 2.0, 200_000)
    e, v = max_normal_moments(64)
    assert brute.mean() == pytest.approx(1 + 2 * e, abs=4 * brute.std() / 200)
    assert fast.mean() == pytest.approx(1 + 2 * e, abs=4 * fast.std() / 447)
    assert fast.var() == pytest.approx(4 * v, rel=0.02)
    assert np.quantile(fast, [0.1, 0.5, 0.9]) == pytest.approx(
        np.quantile(brute, [0.1, 0.5, 0.9]), abs=0.03)
    # exact sums (m <= 32) and CLT sums (m > 32) agree in mean and variance
    stats = step_stats(RunSpec(steps=1, step_time_s=1.0, step_time_std_s=2.0, sync_ranks=64))
    for m in (32, 33):
        s = sample_compute_time(rng, stats, np.full(100_000, m))
        assert s.mean() == pytest.approx(m * (1 + 2 * e), abs=4 * s.std() / 316)
        assert s.var() == pytest.approx(m * 4 * v, rel=0.03)


def test_no_failures_no_noise_is_exact():
    spec = RunSpec(steps=100_003, step_time_s=3.7, checkpoint_interval_s=370.0,
                   checkpoint_cost_s=45.0, restart_cost_s=600.0, busy_power_w=1e6,
                   idle_power_w=2e5, gpus=512)
    res = simulate(spec, replicas=64, seed=0)
    checkpoints = math.ceil(100_003 / 100)
    wall = 100_003 * 3.7 + checkpoints * 45.0
    np.testing.assert_allclose(res.wall_time_s, wall, rtol=1e-12)
    assert (res.failures == 0).all() and (res.lost_work_s == 0).all()
    np.testing.assert_allclose(res.energy_j, 1e6 * 100_003 * 3.7 + 2e5 * checkpoints * 45.0,
                               rtol=1e-12)
    np.testing.assert_allclose(res.gpu_hours, 512 * wall / 3600, rtol=1e-12)
    cf = closed_form(spec)
    assert cf["wall_time_s"] == pytest.approx(wall, rel=1e-12)
    assert cf["checkpoints"] == checkpoints


def test_weibull_shape_one_equals_exponential():
    spec = replace(EXP, weibull_shape=1.0)
    a = simulate(spec, replicas=8_000, seed=21, failure_method="poisson")
    b = simulate(spec, replicas=8_000, seed=22, failure_method="renewal")
    se = math.hypot(a.wall_time_s.std(), b.wall_time_s.std()) / math.sqrt(8_000)
    assert abs(a.wall_time_s.mean() - b.wall_time_s.mean()) < 4 * se
    sef = math.hypot(a.failures.std(), b.failures.std()) / math.sqrt(8_000)
    assert abs(a.failures.mean() - b.failures.mean()) < 4 * sef
    assert b.failures.std() == pytest.approx(a.failures.std(), rel=0.05)


@pytest.mark.parametrize("shape", [0.5, 0.7])
@pytest.mark.parametrize("ratio", [0.003, 0.03])
def test_weibull_below_one_on_new_cluster_wastes_more(shape, ratio):
    """Infant mortality: 1024 new components with k < 1 fail far more often early on."""
    m = 7200.0
    base = replace(EXP, components=1024, component_mtbf_s=1024 * m, steps=36_000,
                   checkpoint_cost_s=ratio * m, checkpoint_interval_s=float(
                       ck.daly_interval(ratio * m, m)), component_age="new")
    exp_ = simulate(base, replicas=2_000, seed=8, failure_method="renewal")
    wei = simulate(replace(base, weibull_shape=shape), replicas=2_000, seed=8)
    se = math.hypot(exp_.wall_time_s.std(), wei.wall_time_s.std()) / math.sqrt(2_000)
    assert wei.wall_time_s.mean() > exp_.wall_time_s.mean() + 4 * se
    assert wei.failures.mean() > 1.5 * exp_.failures.mean()


@pytest.mark.parametrize("shape", [0.5, 0.7])
def test_weibull_below_one_in_service_clusters_failures(shape):
    """Components in service (stationary ages): same failure rate on average, but k < 1
    bunches failures (many strike during the restart after the previous one), so at a
    fixed interval the waste is *lower* for one renewing system, and for 16,384
    components the superposition is Poisson (Palm-Khintchine): no change at all."""
    single = replace(EXP, components=1, component_mtbf_s=7200.0, steps=36_000)
    a = simulate(single, replicas=3_000, seed=8)
    b = simulate(replace(single, weibull_shape=shape), replicas=3_000, seed=8)
    se = math.hypot(a.wall_time_s.std(), b.wall_time_s.std()) / math.sqrt(3_000)
    assert b.wall_time_s.mean() < a.wall_time_s.mean() - 4 * se
    many = replace(EXP, components=16_384, component_mtbf_s=16_384 * 7200.0, steps=36_000)
    c = simulate(many, replicas=3_000, seed=8)
    d = simulate(replace(many, weibull_shape=shape), replicas=3_000, seed=8)
    se = math.hypot(c.wall_time_s.std(), d.wall_time_s.std()) / math.sqrt(3_000)
    assert abs(d.wall_time_s.mean() - c.wall_time_s.mean()) < 4 * se


def _brute_force_failures(n, mtbf, shape, horizon, replicas, rng, age):
    """Every component's renewal process simulated in full (stationary: 60 means burn-in)."""
    from scipy.special import gamma

    scale = mtbf / gamma(1 + 1 / shape)
    burn = 60 * mtbf if age == "stationary" else 0.0
    gaps = scale * rng.weibull(shape, (replicas, n, 400))
    t = np.cumsum(gaps, axis=2) - burn
    assert (t[:, :, -1] > horizon).all()
    out = []
    for r in range(replicas):
        v = t[r][(t[r] >= 0) & (t[r] < horizon)]
        out.append(np.sort(v))
    return out


@pytest.mark.parametrize("age", ["stationary", "new"])
def test_renewal_superposition_against_per_component_simulation(age):
    n, mtbf, shape = 6, 1000.0, 0.5
    horizon, reps = 1500.0, 6_000
    spec = RunSpec(steps=1, step_time_s=1.0, components=n, component_mtbf_s=mtbf,
                   weibull_shape=shape, component_age=age)
    fast = failure_times(spec, reps, horizon, seed=1, method="renewal")
    brute = _brute_force_failures(n, mtbf, shape, horizon, reps, np.random.default_rng(2), age)

    def stats(runs):
        counts = np.array([r.size for r in runs])
        gaps = np.concatenate([np.diff(r) for r in runs])
        first = np.array([r[0] for r in runs if r.size])
        return counts, gaps, first

    cf, gf, ff = stats(fast)
    cb, gb, fb = stats(brute)
    se = math.hypot(cf.std(), cb.std()) / math.sqrt(reps)
    assert abs(cf.mean() - cb.mean()) < 4 * se
    if age == "stationary":
        assert cf.mean() == pytest.approx(n * horizon / mtbf, abs=4 * cf.std() / math.sqrt(reps))
    assert cf.var() == pytest.approx(cb.var(), rel=0.08)           # clustering
    for x in (1.0, 10.0, 100.0):                                    # short gaps
        pf, pb = (gf < x).mean(), (gb < x).mean()
        assert abs(pf - pb) < 4 * math.sqrt(pf * (1 - pf) * (1 / gf.size + 1 / gb.size)) + 1e-3
    assert ff.mean() == pytest.approx(fb.mean(), rel=0.05)


def _reference_run(spec, fail_times, rng):
    """Event-driven reference: every rank of every step drawn, failures from a list."""
    k = max(1, round(spec.checkpoint_interval_s / step_stats(spec).mean_step_s))
    n_seg = -(-spec.steps // k)
    t, seg, fi, fails, lost, restart = 0.0, 0, 0, 0, 0.0, False
    while seg < n_seg:
        nxt = fail_times[fi]
        if restart:
            if nxt < t + spec.restart_cost_s:
                t, fi, fails = nxt, fi + 1, fails + 1
                continue
            t, restart = t + spec.restart_cost_s, False
        m = k if seg < n_seg - 1 else spec.steps - (n_seg - 1) * k
        ranks = rng.normal(spec.step_time_s, spec.step_time_std_s, (m, spec.sync_ranks))
        paused = (rng.random((m, spec.sync_ranks)) < spec.pause_probability).any(axis=1)
        dur = float(ranks.max(axis=1).sum() + spec.pause_duration_s * paused.sum()
                    + spec.checkpoint_cost_s)
        if nxt < t + dur:
            lost += nxt - t
            t, fi, fails, restart = nxt, fi + 1, fails + 1, True
        else:
            t, seg = t + dur, seg + 1
    return t, fails, lost


@pytest.mark.slow  # an event-driven reference simulation: ~4 s each
@pytest.mark.parametrize("age", ["stationary", "new"])
def test_whole_run_against_event_driven_reference(age):
    """Stragglers, pauses, Weibull components, checkpoints, restarts: all at once."""
    spec = RunSpec(steps=600, step_time_s=10.0, step_time_std_s=1.0, sync_ranks=8,
                   pause_probability=0.01, pause_duration_s=5.0, components=4,
                   component_mtbf_s=4 * 3000.0, weibull_shape=0.6, checkpoint_interval_s=250.0,
                   checkpoint_cost_s=60.0, restart_cost_s=120.0, component_age=age)
    reps = 2_000
    fast = simulate(spec, replicas=reps, seed=3)
    rng = np.random.default_rng(4)
    fails = _brute_force_failures(4, 12_000.0, 0.6, 200_000.0, reps, rng, age)
    ref = np.array([_reference_run(spec, f, rng) for f in fails])
    for col, name in enumerate(("wall_time_s", "failures", "lost_work_s")):
        a, b = np.asarray(getattr(fast, name), float), ref[:, col]
        se = math.hypot(a.std(), b.std()) / math.sqrt(reps)
        assert abs(a.mean() - b.mean()) < 4 * se, name


def test_same_seed_same_results_and_seed_reported():
    spec = replace(EXP, step_time_std_s=0.5, sync_ranks=4096, pause_probability=1e-6,
                   pause_duration_s=3.0, steps=20_000)
    a, b = simulate(spec, 500, seed=123), simulate(spec, 500, seed=123)
    for name in ("wall_time_s", "failures", "gpu_hours", "energy_j", "lost_work_s"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.seed == 123 and a.summary()["seed"] == 123
    c = simulate(spec, 500, seed=124)
    assert not np.array_equal(a.wall_time_s, c.wall_time_s)
    w = simulate(replace(spec, weibull_shape=0.7), 300, seed=9)
    np.testing.assert_array_equal(w.wall_time_s,
                                  simulate(replace(spec, weibull_shape=0.7), 300, 9).wall_time_s)


def test_summary_and_closed_form_side_by_side():
    spec = replace(EXP, busy_power_w=2e6, idle_power_w=5e5, gpus=1024)
    res = simulate(spec, replicas=5_000, seed=6)
    s, cf = res.summary(), closed_form(spec)
    for name in ("wall_days", "gpu_hours", "energy_kwh", "failures"):
        assert set(s[name]) == {"mean", "stderr", "p10", "p50", "p90"}
        assert s[name]["p10"] <= s[name]["p50"] <= s[name]["p90"]
        assert abs(s[name]["mean"] - cf[name]) < 4 * s[name]["stderr"], name


def test_optimal_interval_near_daly_for_exponential():
    m, delta = 7200.0, 120.0
    spec = replace(EXP, steps=36_000)
    daly = float(ck.daly_interval(delta, m))
    grid = daly * np.array([0.4, 0.7, 1.0, 1.4, 2.5])
    opt = optimal_interval(spec, grid, replicas=2_000, seed=1)
    # the waste curve is flat near the optimum: the best grid point is Daly's or a neighbour
    assert 0.7 * daly * 0.95 <= opt["best_interval_s"] <= 1.4 * daly * 1.05
    assert opt["mean_wall_s"][0] > opt["best_mean_wall_s"]
    assert opt["mean_wall_s"][-1] > opt["best_mean_wall_s"]


def test_invalid_spec_rejected():
    with pytest.raises(ValueError, match="steps"):
        RunSpec(steps=0, step_time_s=1.0)
    with pytest.raises(ValueError, match="pause_probability"):
        RunSpec(steps=1, step_time_s=1.0, pause_probability=2.0)
    with pytest.raises(ValueError, match="component_age"):
        RunSpec(steps=1, step_time_s=1.0, component_age="old")


# ---- loss-spike rollbacks: a count per replica (issue 26) ------------------------------
# 8 expected rollbacks, each redoing 100 steps of 10 s and restarting in 10 min


SPIKES = replace(EXP, rollbacks=8.0, rollback_busy_s=8 * 100 * 10.0,
                 rollback_idle_s=8 * 600.0)


def test_rollbacks_add_their_expectation_to_the_mean_wall_time():
    base = simulate(EXP, replicas=20_000, seed=3)
    spiky = simulate(SPIKES, replicas=20_000, seed=3)
    # the same failures and step times (common random numbers): the difference is the
    # rollbacks alone, Poisson(8) x 1,600 s; its mean within 4 standard errors
    extra = spiky.wall_time_s - base.wall_time_s
    assert extra.min() >= 0 and len(np.unique(np.round(extra / 1600.0, 9))) > 5
    se = extra.std(ddof=1) / math.sqrt(extra.size)
    assert abs(extra.mean() - 8 * 1600.0) < 4 * se
    # and a Poisson count's spread: sd of sqrt(8) rollbacks, within 3 %
    assert extra.std(ddof=1) == pytest.approx(math.sqrt(8) * 1600.0, rel=0.03)
    assert closed_form(SPIKES)["wall_time_s"] == pytest.approx(
        closed_form(EXP)["wall_time_s"] + 8 * 1600.0, rel=1e-12)


def test_rollbacks_widen_the_spread_of_the_wall_time():
    base = simulate(EXP, replicas=5_000, seed=5).wall_time_s
    spiky = simulate(SPIKES, replicas=5_000, seed=5).wall_time_s
    assert np.percentile(spiky, 90) - np.percentile(spiky, 10) > \
        np.percentile(base, 90) - np.percentile(base, 10)


def test_each_replica_pays_a_whole_number_of_rollbacks():
    # the rollback stream is a third child of the seed, so the failures and step times are
    # the ones the run without rollbacks draws: the difference is k x 1,600 s, k = 0, 1, ...
    base = simulate(EXP, replicas=2_000, seed=7).wall_time_s
    counts = (simulate(SPIKES, replicas=2_000, seed=7).wall_time_s - base) / 1600.0
    assert np.allclose(counts, np.round(counts), atol=1e-6)
    assert counts.min() <= 3 and counts.max() >= 14  # P = 0.042 and 0.034 each


def test_rollbacks_must_not_be_negative():
    with pytest.raises(ValueError, match="rollbacks"):
        replace(EXP, rollbacks=-1.0)
