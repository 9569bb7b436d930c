"""Pipeline formulas: bubbles and point-to-point traffic, checked against a schedule simulation."""

import numpy as np
import pytest
from formula_checks import check_input_kinds, check_symbolic, sample_point
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import pipeline as pl
from formulas.core import Formula

FORMULAS = [f for f in vars(pl).values() if isinstance(f, Formula) and f.module == "pipeline"]


# -- generic: every formula ----------------------------------------------------------

@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(13)
    check_symbolic(f, [sample_point(f, rng) for _ in range(6)], rel=1e-12, lambdified=True)


@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    rng = np.random.default_rng(17)
    check_input_kinds(f, [sample_point(f, rng) for _ in range(3)])


@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_units_and_reference_declared(f):
    assert f.reference and f.result_unit, f.name
    assert all(a.unit for a in f.arguments), f.units
    assert ".. math::" in f.__doc__


@pytest.mark.parametrize("call,arg", [
    (lambda: pl.bubble_fraction_1f1b(0, 8), "pp"),
    (lambda: pl.bubble_fraction_interleaved(8, 0.5, 2), "microbatches"),
    (lambda: pl.pipeline_p2p_bytes(2048, 1, 12288, 2, 0, 1), "tp"),
    (lambda: pl.pipeline_p2p_bytes(2048, 1, -5.0, 2, 8, 1), "hidden"),
    (lambda: pl.pipeline_p2p_count(4, 8, 0), "virtual_stages"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


# -- bubbles ---------------------------------------------------------------------------

def test_bubble_values():
    # Narayanan et al. 2021 s2.2: (p-1)/m and (p-1)/(v m)
    assert pl.bubble_fraction_1f1b(8, 64) == pytest.approx(7 / 64)
    assert pl.bubble_fraction_interleaved(8, 64, 4) == pytest.approx(7 / 256)
    assert pl.bubble_fraction_interleaved(8, 64, 1) == pl.bubble_fraction_1f1b(8, 64)
    assert pl.bubble_fraction_1f1b(1, 5) == 0.0
    # GPT-3 175B Megatron example (row megatron-gpt3-175b-1024): 1024 GPUs, TP 8, PP 16
    # -> DP 8, B = 1536, b = 1 -> m = 192 micro-batches: bubble 15/192 = 7.8 %
    assert pl.bubble_fraction_1f1b(16, 1536 / 8) == pytest.approx(0.078125)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 128), st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 16),
       st.integers(1, 16))
def test_bubble_decreases_with_microbatches_and_virtual_stages(p, m1, m2, v1, v2):
    lo_m, hi_m = sorted((m1, m2))
    lo_v, hi_v = sorted((v1, v2))
    assert pl.bubble_fraction_1f1b(p, hi_m) <= pl.bubble_fraction_1f1b(p, lo_m)
    assert pl.bubble_fraction_interleaved(p, hi_m, lo_v) <= \
        pl.bubble_fraction_interleaved(p, lo_m, lo_v)
    assert pl.bubble_fraction_interleaved(p, lo_m, hi_v) <= \
        pl.bubble_fraction_interleaved(p, lo_m, lo_v)
    assert pl.bubble_fraction_1f1b(p + 1, lo_m) >= pl.bubble_fraction_1f1b(p, lo_m)


# -- a 1F1B schedule simulation ------------------------------------------------------

def _simulate_1f1b(p, m, t_f, t_b, comm):
    """Makespan of Megatron's non-interleaved 1F1B schedule.

    Stage i runs min(p-i-1, m) warm-up forwards, then alternates F/B, then drains.
    A stage that sends (forward activations downstream, gradients upstream) is
    blocked for ``comm`` seconds after the compute step (blocking send); the
    receiver may start once the transfer is complete.
    """
    order = []
    for i in range(p):
        warm = min(p - i - 1, m)
        ops = [("F", k) for k in range(warm)]
        f, b = warm, 0
        while f < m:
            ops += [("F", f), ("B", b)]
            f, b = f + 1, b + 1
        ops += [("B", k) for k in range(b, m)]
        order.append(ops)
    end, pos, free = {}, [0] * p, [0.0] * p
    remaining = sum(map(len, order))
    while remaining:
        for i in range(p):
            if pos[i] == len(order[i]):
                continue
            kind, k = order[i][pos[i]]
            if kind == "F":
                dep = None if i == 0 else ("F", i - 1, k)
            else:
                dep = ("F", i, k) if i == p - 1 else ("B", i + 1, k)
            if dep is not None and dep not in end:
                continue
            start = max(free[i], 0.0 if dep is None else end[dep])
            sends = (kind == "F" and i < p - 1) or (kind == "B" and i > 0)
            free[i] = end[(kind, i, k)] = start + (t_f if kind == "F" else t_b) \
                + (comm if sends else 0.0)
            pos[i] += 1
            remaining -= 1
    return max(free)


@pytest.mark.parametrize("p", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("m_factor", [1, 2, 4])
@pytest.mark.parametrize("t_f,t_b", [(1.0, 2.0), (1.0, 1.0)])
def test_bubble_and_p2p_count_against_simulation(p, m_factor, t_f, t_b):
    m = m_factor * p + 1
    ideal = m * (t_f + t_b)
    makespan = _simulate_1f1b(p, m, t_f, t_b, 0.0)
    # bubble: exactly (p-1)/m of the ideal compute time
    assert (makespan - ideal) / ideal == pytest.approx(pl.bubble_fraction_1f1b(p, m), abs=1e-12)
    # p2p transfers on the critical path: d(makespan)/d(comm)
    c = 1e-3
    simulated = (_simulate_1f1b(p, m, t_f, t_b, c) - makespan) / c
    count = pl.pipeline_p2p_count(p, m, 1)
    assert simulated <= count + 1e-6
    if p == 1:
        assert count == 0
    elif p == 2:
        # the two stages' exchanges overlap: the formula is conservative by ~2x here
        assert simulated == pytest.approx(m + 1, abs=1e-6)
    else:
        # fill/drain edges: the first forward and last backward slots do not send
        assert count - simulated == pytest.approx(3.0, abs=1e-6)


def test_p2p_count_values():
    assert pl.pipeline_p2p_count(1, 64, 1) == 0.0
    assert pl.pipeline_p2p_count(4, 8, 1) == 2 * (8 + 3)
    assert pl.pipeline_p2p_count(4, 8, 2) == 2 * (16 + 3)  # interleaving: v x more in steady
    assert pl.pipeline_p2p_count(4, 8, 2) > pl.pipeline_p2p_count(4, 8, 1)


def test_p2p_bytes():
    """Narayanan s4.1: b s h elements per boundary; scatter/gather (or SP) sends 1/t per rank."""
    full = 2048 * 1 * 12288 * 2.0
    assert pl.pipeline_p2p_bytes(2048, 1, 12288, 2.0, 8, 0) == full
    assert pl.pipeline_p2p_bytes(2048, 1, 12288, 2.0, 8, 1) == full / 8
    assert pl.pipeline_p2p_bytes(2048, 1, 12288, 2.0, 1, 1) == full
