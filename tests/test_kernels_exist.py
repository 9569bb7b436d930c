"""Issue 42 item 5: kernels that exist - MoE grouped GEMMs timed from their shapes per
accelerator generation, and the attention core timed by the kernel the stack has."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import moe
from hardware_catalog import load_catalog

# ---- MoE grouped GEMMs -------------------------------------------------------------------

#: DeepGEMM README (github.com/deepseek-ai/DeepGEMM, 2025-02 release), 'Grouped GEMMs for
#: MoE models', contiguous and masked layouts, H800 SXM5, FP8: (groups, tokens per group,
#: n, k, TFLOP/s)
DEEPGEMM_H800 = (
    (4, 8192, 4096, 7168, 1297), (4, 8192, 7168, 2048, 1099),
    (8, 4096, 4096, 7168, 1288), (8, 4096, 7168, 2048, 1093),
    (1, 1024, 4096, 7168, 1233), (1, 1024, 7168, 2048, 925),
    (2, 512, 4096, 7168, 1040), (2, 512, 7168, 2048, 916),
    (4, 256, 4096, 7168, 932), (4, 256, 7168, 2048, 815),
)


def _h800_grouped(m, n, k, max_efficiency):
    acc = load_catalog().accelerator("h800")
    return moe.grouped_gemm_efficiency(
        m, n, k, max_efficiency, acc.grouped_gemm_token_half_dim.value,
        acc.grouped_gemm_inner_half_dim.value, acc.grouped_gemm_tile_tokens.value, 128.0)


def test_grouped_gemm_shapes_reproduce_deepgemm_h800_table():
    # every shape within 10 % and on average within 4 % of DeepGEMM's published TFLOP/s
    # (max efficiency 0.715: DeepGEMM's blockwise-scaled kernel at its largest shape)
    peak = load_catalog().accelerator("h800").peak_fp8_flops_per_s.value
    errors = np.array([_h800_grouped(m, n, k, 0.715) * peak / (tf * 1e12) - 1
                       for _, m, n, k, tf in DEEPGEMM_H800])
    assert np.abs(errors).max() < 0.10
    assert np.abs(errors).mean() < 0.04


def test_grouped_gemm_shape_model_beats_the_smallest_dimension_model():
    # the former efficiency, eta_max d / (d + d_1/2) of d = min(m, n, k) with H800's
    # d_1/2 = 256, misses DeepGEMM's shape ratios (the 2048-deep GEMMs by 20-28 %)
    def ratios(efficiency):
        base = efficiency(*DEEPGEMM_H800[0][1:4])
        return np.array([efficiency(m, n, k) / base / (tf / DEEPGEMM_H800[0][4]) - 1
                         for _, m, n, k, tf in DEEPGEMM_H800])

    def old(m, n, k):
        d = min(m, n, k)
        return d / (d + 256.0) * moe.tile_quantisation_efficiency(m, 128)

    new = ratios(lambda m, n, k: _h800_grouped(m, n, k, 1.0))
    assert np.abs(new).mean() < 0.5 * np.abs(ratios(old)).mean()
    assert np.abs(ratios(old)).max() > 0.2


def test_catalog_tiles_per_generation():
    catalog = load_catalog()
    for hw in ("h100-sxm", "h200", "h800"):
        assert catalog.accelerator(hw).grouped_gemm_tile_tokens.value == 128  # wgmma
    for hw in ("b200", "gb200", "b300", "gb300"):
        assert catalog.accelerator(hw).grouped_gemm_tile_tokens.value == 256  # 2-CTA tcgen05


def test_blackwell_two_cta_tile_pads_small_experts_more():
    # 300 tokens per expert: 384 rows of 128-row tiles (78 %), 512 of 256-row tiles (59 %)
    hopper = moe.grouped_gemm_efficiency(300, 2048, 7168, 1.0, 0.0, 0.0, 128, 128)
    blackwell = moe.grouped_gemm_efficiency(300, 2048, 7168, 1.0, 0.0, 0.0, 256, 128)
    assert hopper == pytest.approx(300 / 384)
    assert blackwell == pytest.approx(300 / 512)


@settings(max_examples=80, deadline=None)
@given(tiles=st.integers(1, 64), extra=st.integers(1, 64), n=st.integers(128, 16384),
       k=st.integers(64, 16384), k_more=st.integers(1, 8192),
       tile=st.sampled_from([64.0, 128.0, 256.0]), m_half=st.floats(0, 1000),
       k_half=st.floats(0, 3000))
def test_grouped_gemm_efficiency_grows_with_whole_tiles_and_depth(tiles, extra, n, k, k_more,
                                                                   tile, m_half, k_half):
    m = tiles * tile
    eff = moe.grouped_gemm_efficiency(m, n, k, 0.8, m_half, k_half, tile, 128.0)
    assert 0 < eff <= 0.8 + 1e-12
    assert moe.grouped_gemm_efficiency(m + extra * tile, n, k, 0.8, m_half, k_half, tile,
                                       128.0) >= eff - 1e-12
    assert moe.grouped_gemm_efficiency(m, n, k + k_more, 0.8, m_half, k_half, tile,
                                       128.0) >= eff - 1e-12
