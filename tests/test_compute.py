"""Compute formulas: parameter counts, FLOP counts, efficiency, roofline, MFU.

Published values sit next to the computed ones, with their source.
"""

import csv
import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from formula_checks import check_input_kinds, check_symbolic, sample_point
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import compute as c
from formulas.core import Formula

PUBLISHED = Path(__file__).parents[1] / "hardware_catalog" / "data" / "validation" / "published_runs.csv"
FORMULAS = [f for f in vars(c).values() if isinstance(f, Formula) and f.module == "compute"]


# -- generic: every formula ----------------------------------------------------------

@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(7)
    check_symbolic(f, [sample_point(f, rng) for _ in range(5)], rel=1e-12, lambdified=True)


@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    rng = np.random.default_rng(11)
    check_input_kinds(f, [sample_point(f, rng) for _ in range(3)])


@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_units_and_reference_declared(f):
    assert f.reference and f.result_unit, f.name
    assert all(a.unit for a in f.arguments), f.units
    assert all(a.domain != "real" for a in f.arguments), f.name
    assert ".. math::" in f.__doc__


@pytest.mark.parametrize("call,arg", [
    (lambda: c.attention_params(-4096.0, 32, 8), "hidden"),
    (lambda: c.attention_params(4096.0, 32, 0), "kv_heads"),
    (lambda: c.narayanan_flops_per_iteration(1536, 2048, 96, 12288, 51200, 2.0), "recompute"),
    (lambda: c.gemm_efficiency(1024.0, 1.2, 128.0), "max_efficiency"),
    (lambda: c.roofline_time(1e12, 1e9, 1e15, np.array([0.5, 0.0]), 3e12, 0.8),
     "compute_efficiency"),
    (lambda: c.model_flops_utilization(1e14, 0.0), "peak_flops_per_s"),
    (lambda: c.moe_mlp_params(4096, 14336, 0, 0, 3), "experts"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


# -- FLOP counts -----------------------------------------------------------------------

def test_narayanan_eq3_closed_forms():
    """Narayanan et al. 2021 eq. (3): r=1 -> 96Bslh^2(1 + s/6h + V/16lh); r=0 -> 72(...V/12lh)."""
    B, s, l, h, V = sp.symbols("B s l h V", positive=True)
    with_recompute = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    without = 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))
    assert sp.simplify(c.narayanan_flops_per_iteration(B, s, l, h, V, 1) - with_recompute) == 0
    assert sp.simplify(c.narayanan_flops_per_iteration(B, s, l, h, V, 0) - without) == 0


def test_per_token_counts_compose_to_narayanan():
    """24h^2 + 4sh per layer and token (ffn = 4h, MHA, 2 matrices), and eq. (3) from per-token."""
    B, s, l, h, V, a = sp.symbols("B s l h V a", positive=True)
    layer = c.attention_forward_flops_per_token(h, a, a, s) + c.mlp_forward_flops_per_token(
        h, 4 * h, 2)
    assert sp.expand(layer - (24 * h**2 + 4 * s * h)) == 0
    fwd = l * layer + c.logits_forward_flops_per_token(h, V)
    model = B * s * c.training_flops_per_token(fwd)
    hardware = B * s * c.hardware_flops_per_token(fwd, l * layer)
    assert sp.simplify(model - c.narayanan_flops_per_iteration(B, s, l, h, V, 0)) == 0
    assert sp.simplify(hardware - c.narayanan_flops_per_iteration(B, s, l, h, V, 1)) == 0


def _sc21_rows():
    with PUBLISHED.open() as fh:
        return [r for r in csv.DictReader(fh) if r["run_id"].startswith("megatron-sc21")]


@pytest.mark.parametrize("row", _sc21_rows(), ids=lambda r: r["run_id"])
def test_narayanan_table1(row):
    """Narayanan et al. 2021 Table 1: parameters (eq. 2), aggregate PFLOP/s and % of peak."""
    layers, hidden = float(row["layers"]), float(row["hidden"])
    vocab, seq = float(row["vocab"]), float(row["seq_len"])
    # parameters, printed to 0.1 B (1008B to 1 B): eq. (2) within the rounding
    printed_params = float(row["params_total_B"]) * 1e9
    assert abs(c.narayanan_params(layers, hidden, vocab, seq) - printed_params) <= 0.05e9
    # aggregate = per-GPU x GPUs; per-GPU TFLOP/s printed as integers (<= 0.5 % rounding)
    per_gpu = float(row["tflops_per_gpu"]) * 1e12
    aggregate = float(re.search(r"aggregate ([\d.]+) PFLOP/s", row["notes"]).group(1)) * 1e15
    assert per_gpu * float(row["gpu_count"]) == pytest.approx(aggregate, rel=0.005)
    # "% of theoretical peak" (312 TFLOP/s A100 fp16), printed as an integer
    printed_pct = float(row["MFU_pct"].split()[0])
    assert 100 * c.model_flops_utilization(per_gpu, 312e12) == pytest.approx(printed_pct, abs=0.5)


def test_table1_gpt3_175b_flops_per_iteration():
    """Eq. (3) for GPT-3 175B, B=1536: 4.51e18 FLOP; Megatron-LM README: ~32 s/iteration on
    1024 A100 at 138 TFLOP/s per GPU (row megatron-gpt3-175b-1024)."""
    flops = c.narayanan_flops_per_iteration(1536, 2048, 96, 12288, 51200, 1)
    by_hand = 96 * 1536 * 2048 * 96 * 12288**2 * (1 + 2048 / (6 * 12288)
                                                    + 51200 / (16 * 96 * 12288))
    assert flops == pytest.approx(by_hand, rel=1e-12)
    assert flops == pytest.approx(4.511e18, rel=1e-3)
    assert flops / (1024 * 32.0) == pytest.approx(138e12, rel=0.03)  # "~32" s printed


@pytest.mark.parametrize("tokens,params,gpus,x,days", [
    (300e9, 175e9, 1024, 140e12, 34),   # GPT-3, Narayanan et al. 2021 s5.1
    (450e9, 1008e9, 3072, 163e12, 84),  # 1T model (1008B of Table 1), s5.1
])
def test_narayanan_end_to_end_training_time(tokens, params, gpus, x, days):
    assert c.narayanan_training_time(tokens, params, gpus, x) / 86400 == pytest.approx(days,
                                                                                     abs=0.5)


def test_kaplan_gpt3_compute():
    """Brown et al. 2020 (arXiv:2005.14165) Table D.1: GPT-3 175B, 300B tokens: 3.14e23 FLOP."""
    assert c.kaplan_training_flops(174.6e9, 300e9) == pytest.approx(3.14e23, rel=0.01)


def test_palm_mfu():
    """Chowdhery et al. 2022 App. B: PaLM 540B, 238.3k tokens/s on 6144 TPU v4 (275 TFLOP/s):
    MFU 45.7 % without, 46.2 % with the attention term 12 L H Q T (L=118, H=48, Q=256, T=2048)."""
    n, layers, heads, head_dim, seq = 540.35e9, 118, 48, 256, 2048
    per_chip_tokens = 238.3e3 / 6144
    attn_fwd = layers * 4 * seq * heads * head_dim  # the 4sh core of attention_forward_flops
    with_attn = c.training_flops_per_token(2 * n + attn_fwd) * per_chip_tokens
    without = c.training_flops_per_token(2 * n) * per_chip_tokens
    assert 100 * c.model_flops_utilization(with_attn, 275e12) == pytest.approx(46.2, abs=0.05)
    assert 100 * c.model_flops_utilization(without, 275e12) == pytest.approx(45.7, abs=0.05)


# -- parameter counts ----------------------------------------------------------------

def test_gpt3_175b_params():
    """Brown et al. 2020 Table 2.1: 175.0B (l=96, h=12288, 96 heads, V=50257, s=2048)."""
    h, l, V, s = 12288, 96, 50257, 2048
    total = l * (c.attention_params(h, 96, 96) + c.mlp_params(h, 4 * h, 2) + c.norm_params(h)) \
        + c.embedding_params(V, h, 1) + s * h
    assert total == pytest.approx(175.0e9, rel=0.01)


def test_llama2_70b_params():
    """Llama 2 70B (GQA 8/64, SwiGLU f=28672, V=32000 untied, 80 layers): 68,976,648,192
    parameters (the Hugging Face checkpoint's count), ~68.98e9."""
    h, l = 8192, 80
    total = l * (c.attention_params(h, 64, 8) + c.mlp_params(h, 28672, 3) + c.norm_params(h)) \
        + c.embedding_params(32000, h, 2) + h  # + final norm
    assert total == 68_976_648_192
    assert total == pytest.approx(68.98e9, rel=0.01)


def test_mixtral_8x7b_params():
    """Jiang et al. 2024 (arXiv:2401.04088) / Mistral release: 46.7B total, 12.9B active."""
    h, l, f = 4096, 32, 14336
    common = c.attention_params(h, 32, 8) + c.norm_params(h)
    emb = c.embedding_params(32000, h, 2) + h
    total = l * (common + c.moe_mlp_params(h, f, 8, 0, 3)) + emb
    active = l * (common + c.moe_active_mlp_params(h, f, 2, 0, 3, 8)) + emb
    assert total == pytest.approx(46.7e9, rel=0.02)
    assert active == pytest.approx(12.9e9, rel=0.02)


def test_moe_reduces_to_dense():
    h, f = 1024.0, 4096.0
    assert c.moe_mlp_params(h, f, 1, 0, 3) == c.mlp_params(h, f, 3) + h
    assert c.moe_active_mlp_params(h, f, 8, 0, 3, 8) == c.moe_mlp_params(h, f, 8, 0, 3)
    assert c.attention_params(h, 16, 16) == 4 * h * h
    assert c.attention_params(h, 16, 1) == 2 * h * h + 2 * h * h / 16  # MQA


# -- efficiency and time -------------------------------------------------------------

def test_gemm_efficiency_shape():
    assert c.gemm_efficiency(128.0, 0.8, 128.0) == pytest.approx(0.4)
    assert c.gemm_efficiency(1e9, 0.8, 128.0) == pytest.approx(0.8, rel=1e-6)
    assert c.gemm_efficiency(64.0, 0.8, 0.0) == pytest.approx(0.8)


def test_roofline_regimes():
    # A100: 312 TFLOP/s, 2.039 TB/s.  A 8192^3 fp16 GEMM is compute bound,
    # an elementwise op over 1 GiB is memory bound.
    gemm = c.roofline_time(2 * 8192.0**3, 3 * 2 * 8192.0**2, 312e12, 1.0, 2.039e12, 1.0)
    assert gemm == pytest.approx(2 * 8192.0**3 / 312e12)
    elementwise = c.roofline_time(2**29, 2 * 2**30, 312e12, 0.5, 2.039e12, 0.8)
    assert elementwise == pytest.approx(2 * 2**30 / (2.039e12 * 0.8))


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 1e15), st.floats(0, 1e12), st.floats(1e12, 1e16), st.floats(0.01, 1),
       st.floats(0.01, 1), st.floats(1e11, 1e13), st.floats(0.01, 1), st.floats(0.01, 1))
def test_roofline_never_faster_with_lower_efficiency(w, q, peak, eta_c, k_c, bw, eta_m, k_m):
    base = c.roofline_time(w, q, peak, eta_c, bw, eta_m)
    worse = c.roofline_time(w, q, peak, eta_c * k_c, bw, eta_m * k_m)
    assert worse >= base * (1 - 1e-12)
    assert base >= w / peak * (1 - 1e-12) and base >= q / bw * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(st.floats(1, 1e5), st.floats(1, 1e5), st.floats(0.01, 1), st.floats(0, 1e4))
def test_gemm_efficiency_monotone_and_bounded(d1, d2, eta, half):
    lo, hi = sorted((d1, d2))
    assert c.gemm_efficiency(lo, eta, half) <= c.gemm_efficiency(hi, eta, half) * (1 + 1e-12)
    assert 0 < c.gemm_efficiency(hi, eta, half) <= eta


def test_mfu_hfu():
    assert c.model_flops_utilization(156e12, 312e12) == pytest.approx(0.5)
    assert c.hardware_flops_utilization(
        c.hardware_flops_per_token(1.0, 1.0) * 39e12, 312e12) == pytest.approx(0.5)


@given(st.floats(1e-9, 1e3), st.floats(1e-9, 1e3), st.floats(1, 16), st.floats(0, 10))
def test_host_bound_time_between_max_and_sum_and_monotone(t_dev, t_host, k, more):
    t = c.host_bound_time(t_dev, t_host, k)
    assert max(t_dev, t_host) * (1 - 1e-12) <= t <= (t_dev + t_host) * (1 + 1e-12)
    assert c.host_bound_time(t_dev + more, t_host, k) >= t * (1 - 1e-12)
    assert c.host_bound_time(t_dev, t_host + more, k) >= t * (1 - 1e-12)


@given(st.floats(1e-6, 1e3), st.floats(1e-3, 1e3), st.floats(1, 16))
def test_host_bound_excess_is_the_smooth_maximum_less_the_device_time(t_dev, t_host, k):
    # where the difference of the absolute times keeps its digits (host >= 1e-3 device
    # with these ranges' ratio), the two forms agree
    excess = c.host_bound_excess_time(t_dev, t_host, k)
    assert excess == pytest.approx(c.host_bound_time(t_dev, t_host, k) - t_dev,
                                   rel=1e-6, abs=1e-12 * t_dev)


def test_host_bound_excess_keeps_its_digits_for_a_tiny_host_share():
    # no host time exposes none; a graph replay of 1e-5, 1e-6 of the device time exposes
    # (t_h/t_d)^k / k of it (series of (1 + u)^(1/k) - 1), which the difference rounds away
    assert c.host_bound_excess_time(0.3, 0.0, 3.0) == 0.0
    for share in (1e-5, 1e-6):
        assert c.host_bound_excess_time(0.3, share * 0.3, 3.0) == pytest.approx(
            0.3 * share**3 / 3, rel=1e-9)
    assert c.host_bound_time(0.3, 1e-6 * 0.3, 3.0) - 0.3 == 0.0


def test_host_bound_time_limits():
    # k = 1 adds the two (no overlap); a large k tends to the hard maximum
    assert c.host_bound_time(3.0, 1.0, 1.0) == pytest.approx(4.0)
    assert c.host_bound_time(3.0, 1.0, 64.0) == pytest.approx(3.0, rel=1e-12)
    # well past the crossover the host's share vanishes as t_h^k / (k t_d^(k-1))
    assert c.host_bound_time(10.0, 1.0, 4.0) - 10.0 == pytest.approx(1 / (4 * 10.0**3), rel=1e-2)
