"""Software stragglers: GC pauses, pipeline imbalance, slow nodes, wasted GPU-hours.

Each closed form is checked against an executable model (a flow-shop
recurrence for the pipeline) or a fixed-seed Monte Carlo with a stated
tolerance; properties with hypothesis.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.straggler import (
    gc_pause_probability,
    lm_head_layer_equivalents,
    pause_delay,
    pipeline_imbalance_slowdown,
    planned_gc_delay,
    slow_node_slowdown,
    straggler_waste_fraction,
)
from planner.analysis.simulate import (
    StragglerSpec,
    simulate_stragglers,
    straggler_closed_form,
)


@pytest.mark.parametrize("ranks,step_s,gc_interval_s", [(8, 2.0, 30.0), (128, 4.0, 600.0),
                                                        (1024, 1.0, 3600.0)])
def test_gc_pauses_monte_carlo(ranks, step_s, gc_interval_s):
    """Per-rank Poisson collections (seed 5, 50k steps): a step with any collection is
    d longer; mean within 2 % of pause_delay(n, 1 - e^{-T/I}, d)."""
    rng = np.random.default_rng(5)
    steps, d = 50_000, 0.8
    runs = rng.poisson(step_s / gc_interval_s, (steps, ranks))
    delay = d * (runs.sum(axis=1) > 0)
    expected = pause_delay(ranks, gc_pause_probability(step_s, gc_interval_s), d)
    assert delay.mean() == pytest.approx(expected, rel=0.02)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 100_000), st.floats(1e-12, 1.0), st.floats(0.0, 10.0))
def test_planned_gc_never_worse_than_unsynchronised(ranks, probability, duration):
    """Same collections per rank (K = 1/p): d p <= d (1 - (1 - p)^n), equal at n = 1."""
    planned = planned_gc_delay(duration, 1 / probability)
    unsync = pause_delay(ranks, probability, duration)
    assert planned <= unsync * (1 + 1e-12) + 1e-15
    if ranks == 1:
        assert planned == pytest.approx(unsync, rel=1e-12, abs=1e-15)


def test_unmitigated_gc_at_128_ranks_is_the_size_of_the_published_fix():
    """Lin et al. (OSDI'25) measured +12.6 % from planned GC at 128 DP ranks.  With the
    catalog's unmitigated-GC setting (p = 0.005 per rank and step, d = 1 s) and a 4 s
    step, the closed forms give +11.7 %.  The step time and GC length of the measured
    job are not given in the sources available here, so this is a plausibility check
    (within 2 points), not a reproduction."""
    step, p, d = 4.0, 0.005, 1.0
    gain = (step + pause_delay(128, p, d)) / (step + planned_gc_delay(d, 1 / p)) - 1
    assert gain == pytest.approx(0.117, abs=0.001)
    assert abs(gain - 0.126) < 0.02


def _flow_shop_makespan(stage_times, microbatches):
    """Each micro-batch passes every stage in order; a stage does one at a time."""
    done = np.zeros(len(stage_times))
    for _ in range(microbatches):
        prev = 0.0
        for i, t in enumerate(stage_times):
            done[i] = max(done[i], prev) + t
            prev = done[i]
    return done[-1]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 96), st.integers(1, 16), st.floats(0.0, 8.0), st.integers(1, 64))
def test_pipeline_slowdown_equals_flow_shop(layers, stages, extra, microbatches):
    """The closed form equals the makespan recurrence over a balanced split, to 1e-12."""
    per = layers / stages
    times = [per] * (stages - 1) + [per + extra]
    balanced = [(layers + extra) / stages] * stages
    ratio = _flow_shop_makespan(times, microbatches) / _flow_shop_makespan(balanced,
                                                                          microbatches)
    assert pipeline_imbalance_slowdown(layers, stages, extra, microbatches) == \
        pytest.approx(ratio, rel=1e-12)


def test_pipeline_limits():
    assert pipeline_imbalance_slowdown(32, 1, 2.0, 16) == pytest.approx(1.0)
    assert pipeline_imbalance_slowdown(32, 8, 2.0, 1) == pytest.approx(1.0)
    assert pipeline_imbalance_slowdown(32, 8, 0.0, 16) == pytest.approx(1.0)
    assert pipeline_imbalance_slowdown(32, 8, 2.0, 10**9) == pytest.approx((32 + 16) / 34,
                                                                           rel=1e-6)


def test_lm_head_against_narayanan_flops():
    """Narayanan et al. 2021 eq. (3): 72 B s l h^2 (1 + s/6h + V/(12 l h)) without recompute,
    so the logit term over one layer's term is V/(12 h (1 + s/6h))."""
    v, h, s, layers = 51200, 12288, 2048, 96  # GPT-3 175B shape of the paper's Table 1
    per_layer = 72 * s * h**2 * (1 + s / (6 * h))
    logits = 72 * s * layers * h**2 * v / (12 * layers * h)
    assert lm_head_layer_equivalents(v, h, s) == pytest.approx(logits / per_layer, rel=1e-12)


@pytest.mark.parametrize("ranks,fraction,factor", [(64, 0.01, 1.1), (4096, 1e-4, 1.25),
                                                   (16384, 2e-5, 2.0)])
def test_slow_nodes_monte_carlo(ranks, fraction, factor):
    """Independent slow ranks (seed 6, 100k steps): mean factor within 0.3 %."""
    rng = np.random.default_rng(6)
    slow = rng.binomial(ranks, fraction, 100_000) > 0
    got = np.where(slow, factor, 1.0).mean()
    assert slow_node_slowdown(ranks, fraction, factor) == pytest.approx(got, rel=0.003)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 100_000), st.integers(0, 10_000), st.floats(0.0, 1.0),
       st.floats(1.0, 5.0))
def test_slow_node_slowdown_bounded_and_rising(ranks, extra, fraction, factor):
    got = slow_node_slowdown(ranks, fraction, factor)
    assert 1.0 <= got <= factor * (1 + 1e-12)
    assert slow_node_slowdown(ranks + extra, fraction, factor) >= got * (1 - 1e-12)


def test_waste_of_the_published_tail():
    """Lin et al.: ~1 % of jobs waste >= 45 % of their GPU-hours, i.e. S >= 1.82; 10.4 %
    overall is S = 1.116 (reliability.csv row sg-waste, third-party summaries)."""
    assert straggler_waste_fraction(1 / 0.55) == pytest.approx(0.45)
    assert 1 / (1 - 0.104) == pytest.approx(1.116, abs=5e-4)
    assert straggler_waste_fraction(1.0) == 0.0


# ---- causes combined: closed form vs Monte Carlo -------------------------------------------

SCENARIOS = {
    "noise": dict(step_time_cv=0.005),
    "slow-10%": dict(step_time_cv=0.02, slow_rank_fraction=1e-4, slow_node_slowdown=1.1),
    "slow-2%": dict(step_time_cv=0.005, slow_rank_fraction=1e-3, slow_node_slowdown=1.02),
    "gc": dict(step_time_cv=0.005, gc_interval_s=800.0, gc_pause_s=1.0),
    "all": dict(step_time_cv=0.01, gc_interval_s=800.0, gc_pause_s=1.0, slow_rank_fraction=1e-4,
                slow_node_slowdown=1.1, layers=32, stages=8, microbatches=64,
                last_stage_extra_layers=lm_head_layer_equivalents(128256, 4096, 8192)),
}


@pytest.mark.parametrize("ranks", [128, 1024, 4096, 16384])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_combined_causes_closed_form_matches_monte_carlo(ranks, name):
    """4 s steps, 100k simulated steps (seed 1): within 0.3 % (0.13 % measured)."""
    spec = StragglerSpec(ranks=ranks, step_time_s=4.0, **SCENARIOS[name])
    closed = straggler_closed_form(spec)
    mc = simulate_stragglers(spec, steps=100_000, seed=1)
    assert closed["step_time_s"] == pytest.approx(mc["step_time_s"], rel=0.003)
    assert closed["waste_fraction"] == pytest.approx(1 - 4.0 / closed["step_time_s"])
    # each cause alone never exceeds the combination
    for slowdown in closed["slowdown_by_cause"].values():
        assert 1.0 <= slowdown <= closed["slowdown"] * (1 + 1e-12)
