"""Issue 42 item 5: kernels that exist - MoE grouped GEMMs timed from their shapes per
accelerator generation, and the attention core timed by the kernel the stack has."""

from __future__ import annotations

import datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import compute, moe
from hardware_catalog import load_catalog
from hardware_catalog.schema import Quantity, SoftwareStack, StackOnAccelerator
from planner.engine.inputs.scenario import execution_defaults, stack_inputs
from planner.engine.layouts.evaluator import evaluate

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


# ---- attention core by the kernel the stack has -------------------------------------------

#: gpt-oss-120b (sinks, 18 of 36 layers in a 128-token window) at 32k tokens on 8 H100s
GPT_OSS = dict(model="gpt-oss-120b", hardware="h100-sxm", gpus=8, tp=1, pp=1, vp=1, cp=1,
               ep=8, global_batch=64, micro_batch=1, seq_len=32768, recompute="none", zero=1,
               tokens=1e12, reliability="benchmark", precision="bf16",
               stack="megatron-core-2025")  # named: an MoE model left out runs the MoE stack


def _run(overrides=None, **changes):
    return evaluate(**{**GPT_OSS, **changes}, overrides=overrides or {}).iloc[0]


def test_sliding_window_core_cost_follows_the_window_not_the_sequence():
    # a fused kernel that skips masked blocks: the core's FLOPs are linear in the keys per
    # query its 128-token tiles compute, so compute time differences follow them exactly
    fused = {"fused_attention_sinks": 1.0}
    t = {w: _run({**fused, "window": w})["compute_s"] for w in (1024, 2048, 4096)}
    k = {w: compute.block_attended_keys_per_query(32768, w, 128) for w in t}
    assert (t[2048] - t[1024]) / (t[4096] - t[1024]) == pytest.approx(
        (k[2048] - k[1024]) / (k[4096] - k[1024]), rel=1e-6)
    # a window as long as the sequence costs what full attention costs
    full = _run({**fused, "window": 32768.0})["compute_s"]
    assert full == pytest.approx(_run({**fused, "window_layers": 0.0})["compute_s"], rel=1e-9)


def _enumerated_tile_keys(s, w, b):
    """Keys per query (non-causal counting) of a kernel that computes every b x b tile
    holding a visible (query, key) pair: query i sees keys max(0, i-w+1)..i."""
    computed = 0
    for q0 in range(0, s, b):
        rows = min(q0 + b, s) - q0
        first, last = max(0, q0 - w + 1) // b, (min(q0 + b, s) - 1) // b
        computed += rows * sum(min(kb * b + b, s) - kb * b for kb in range(first, last + 1))
    return 2 * computed / s


@pytest.mark.parametrize("s,w,b", [(8192, 8192, 128), (8192, 128, 1024), (4096, 4096, 2048),
                                   (4096, 1000, 256), (2048, 1, 64), (1024, 700, 1024),
                                   (8192, 4096, 512)])
def test_tiled_keys_match_an_enumeration_of_the_tiles(s, w, b):
    assert compute.block_attended_keys_per_query(s, w, b) == pytest.approx(
        _enumerated_tile_keys(s, w, b), rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2**16), st.integers(1, 2**16), st.integers(0, 10), st.integers(0, 10))
def test_tiles_compute_at_least_the_band_and_more_with_larger_tiles(s, w, e1, e2):
    # tiles of powers of two: larger ones never compute less, a one-token tile computes
    # the band to within its diagonal, and no tiling computes more than all s x s pairs
    small, large = sorted((2**e1, 2**e2))
    exact = compute.attended_keys_per_query(s, w)
    k_small = compute.block_attended_keys_per_query(s, w, small)
    k_large = compute.block_attended_keys_per_query(s, w, large)
    assert exact * (1 - 1e-12) <= k_small + 2 <= k_large + 2 + 1e-9 * s
    assert k_large <= 2 * s * (1 + 1e-12)
    assert compute.block_attended_keys_per_query(s, w, 1) <= exact + 2


def test_splash_tiles_make_a_narrow_window_cost_a_share_of_full_attention():
    # gpt-oss on TPU7x under MaxText: 1,024-token forward and 2,048-token backward tiles
    # (the tpu-recipes gpt-oss-120b recipe) compute about two tiles a query for a
    # 128-token window - half the work of a causal layer at 8k, not 3 %
    run = dict(GPT_OSS, hardware="tpu-v7", stack="maxtext-xla", seq_len=8192, ep=1, gpus=64,
               global_batch=64, recompute="full", zero=3)
    tiles = {"attention_block_tokens": 1024.0, "attention_block_tokens_bwd": 2048.0}
    base = _run(**run)["compute_s"]
    recipe = _run(tiles, **run)["compute_s"]
    assert recipe > base
    s = 8192
    share = compute.block_attended_keys_per_query(s, 128, 2048) \
        / compute.block_attended_keys_per_query(s, s, 2048)
    # two tiles for three of the four query blocks, against 5/2 on average for causal
    assert share == pytest.approx((1 + 3 / 4) / (5 / 2))
    # the catalog's MaxText tiles on TPU are base.yml's 512
    own = load_catalog().stack("maxtext-xla").on_accelerator["tpu-v7"]
    assert own.attention_block_tokens.value == own.attention_block_tokens_bwd.value == 512


def test_a_stack_without_a_window_kernel_pays_the_full_sequence_unfused():
    fused = {"fused_attention_sinks": 1.0}
    skipping = _run(fused)["compute_s"]
    no_kernel = {**fused, "fused_window_attention": 0.0}
    masked = _run(no_kernel)["compute_s"]
    assert masked > 2 * skipping  # s x s scores of 18 layers through HBM at 32k tokens
    # the window size no longer matters, and it is never cheaper than full attention
    assert _run({**no_kernel, "window": 4096.0})["compute_s"] == pytest.approx(masked,
                                                                                rel=1e-9)
    assert masked >= _run({**fused, "window_layers": 0.0})["compute_s"]


def test_sinks_without_a_sink_kernel_run_unfused_and_keep_the_scores():
    # gpt-oss on Megatron-Core 2025 (TE 2.8 fell back to the unfused path for sinks)
    assert load_catalog().model("gpt-oss-120b").attention_sinks
    assert load_catalog().stack("megatron-core-2025").fused_attention_sinks.value == 0
    unfused, fused = _run(), _run({"fused_attention_sinks": 1.0})
    assert unfused["compute_s"] > 2 * fused["compute_s"]
    assert unfused["memory_per_gpu_bytes"] > fused["memory_per_gpu_bytes"]
    # a model without sinks runs fused whatever the stack says about sinks
    plain = {"attention_sinks": 0.0}
    assert _run(plain)["compute_s"] == pytest.approx(
        _run({**plain, "fused_attention_sinks": 1.0})["compute_s"], rel=1e-12)


#: Gemma 2 9B (logits soft-capped at 50, 21 of 42 layers in a 4,096-token window) at
#: 8,192 tokens on 8 H100s, one sequence a micro-batch, nothing recomputed
GEMMA2 = dict(model="gemma2-9b", hardware="h100-sxm", gpus=8, tp=1, pp=1, vp=1, cp=1, ep=1,
              global_batch=8, micro_batch=1, seq_len=8192, recompute="none", zero=3,
              tokens=1e12, reliability="benchmark", precision="bf16")


def _gemma(stack, overrides=None):
    return evaluate(**GEMMA2, stack=stack, overrides=overrides or {}).iloc[0]


def test_soft_capped_logits_run_unfused_where_the_kernel_cannot_cap_them():
    """Megatron-Bridge runs Gemma 2's attention unfused for its soft cap
    (gemma2_provider.py: Gemma2DotProductAttention); MaxText's TPU splash kernel caps in
    its tiles.  Unfused: the s x s scores of every layer through HBM (windowed ones too),
    kept for the backward with the tanh output."""
    assert load_catalog().model("gemma2-9b").attention_softcap == 50.0
    assert load_catalog().stack("maxtext-xla").fused_attention_softcap.value == 1
    assert execution_defaults()["fused_attention_softcap"] == 0
    unfused = _gemma("megatron-core-2025")
    fused = _gemma("megatron-core-2025", {"fused_attention_softcap": 1.0})
    assert unfused["compute_s"] > 1.5 * fused["compute_s"]
    assert unfused["memory_per_gpu_bytes"] > fused["memory_per_gpu_bytes"]
    # a kernel that caps runs Gemma 2 as it runs the same model without a cap
    plain = _gemma("megatron-core-2025", {"attention_softcap": 0.0})
    for column in ("compute_s", "memory_per_gpu_bytes", "step_time_s"):
        assert fused[column] == pytest.approx(plain[column], rel=1e-12)
    capped = _gemma("maxtext-xla")
    assert capped["compute_s"] == pytest.approx(
        _gemma("maxtext-xla", {"attention_softcap": 0.0})["compute_s"], rel=1e-12)


def test_the_unfused_cap_keeps_its_tanh_output_and_moves_it_through_hbm():
    """With the scores stored (flash off), the cap adds per layer exactly one 16-bit s x s
    tensor a head to the activations (formulas.memory.softcap_activation_bytes) and its
    pass to the scores' traffic (formulas.compute.softcap_scores_bytes)."""
    flash_off = {"attention_scores_stored": 1.0, "fused_attention_softcap": 1.0}
    on = _gemma("megatron-core-2025", flash_off)
    off = _gemma("megatron-core-2025", {**flash_off, "attention_softcap": 0.0})
    layers = load_catalog().model("gemma2-9b").layers
    from formulas import memory
    assert on["activation_bytes"] - off["activation_bytes"] == pytest.approx(
        layers * memory.softcap_activation_bytes(8192, 1, 16, 1), rel=1e-9)
    assert on["compute_s"] > off["compute_s"]
    assert compute.softcap_scores_bytes(8192, 1, 16, 1, 1) == pytest.approx(
        0.4 * compute.attention_scores_bytes(8192, 1, 16, 1, 1))


def test_unfused_attention_is_slower_than_fused_for_every_window_and_length():
    for seq in (4096, 16384):
        for window in (128.0, 1024.0):
            fused = _run({"fused_attention_sinks": 1.0, "window": window}, seq_len=seq,
                         global_batch=32)["compute_s"]
            unfused = _run({"window": window}, seq_len=seq, global_batch=32)["compute_s"]
            assert unfused > fused


def test_head_sizes_off_the_kernel_tiles_are_padded_and_too_large_ones_fall_back():
    fused = {"fused_attention_sinks": 1.0, "window_layers": 0.0}
    # 80-wide heads: no padding in steps of 16, 128 in steps of 64 (62.5 % useful)
    fine = _run({**fused, "head_dim": 80.0, "v_head_dim": 80.0,
                 "attention_head_dim_granule": 16.0})["compute_s"]
    coarse = _run({**fused, "head_dim": 80.0, "v_head_dim": 80.0,
                   "attention_head_dim_granule": 64.0})["compute_s"]
    assert coarse > fine
    # 320-wide heads exceed FlashAttention's 256: unfused, unless the kernel takes them
    big = {**fused, "head_dim": 320.0, "v_head_dim": 320.0}
    assert _run(big)["compute_s"] > 2 * _run({**big, "fused_head_dim_max": 512.0})["compute_s"]


def test_mla_heads_are_padded_on_a_kernel_without_separate_v_size():
    run = dict(model="deepseek-v3", hardware="h100-sxm", gpus=64, tp=1, pp=8, vp=1, cp=1,
               ep=8, global_batch=64, micro_batch=1, seq_len=4096, recompute="none", zero=1,
               tokens=1e12, reliability="benchmark", precision="bf16")
    split = evaluate(**run).iloc[0]["compute_s"]  # Megatron-Core: 192/128 natively
    padded = evaluate(**run, overrides={"fused_split_head_dims": 0.0}).iloc[0]["compute_s"]
    assert padded > split
    assert compute.attention_head_padding_efficiency(192, 128, 32, 0) == pytest.approx(
        320 / 384)


@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 256), dv=st.integers(1, 256), g=st.sampled_from([8, 16, 32, 64]),
       split=st.sampled_from([0, 1]))
def test_head_padding_never_adds_useful_work(d, dv, g, split):
    eff = compute.attention_head_padding_efficiency(d, dv, g, split)
    assert 0 < eff <= 1 + 1e-12
    # a finer tile step never wastes more, a split kernel never more than a shared size
    assert compute.attention_head_padding_efficiency(d, dv, 1, split) >= eff - 1e-12
    assert compute.attention_head_padding_efficiency(d, dv, g, 1) >= \
        compute.attention_head_padding_efficiency(d, dv, g, 0) - 1e-12


@settings(max_examples=60, deadline=None)
@given(sinks=st.sampled_from([0, 1]), fused_sinks=st.sampled_from([0, 1]),
       d=st.integers(16, 512), d_max=st.integers(64, 512),
       cap=st.sampled_from([0, 1]), fused_cap=st.sampled_from([0, 1]))
def test_kernel_fallback_is_a_flag_set_exactly_by_a_missing_variant(sinks, fused_sinks, d,
                                                                     d_max, cap, fused_cap):
    u = float(compute.attention_kernel_fallback(sinks, fused_sinks, d, d, d_max, cap,
                                                fused_cap))
    assert u == float(bool(sinks and not fused_sinks) or bool(cap and not fused_cap)
                      or d > d_max)


def test_a_stack_states_its_fused_variants_per_accelerator():
    # e.g. a cuDNN with sinks on Blackwell while the Hopper build falls back
    base = load_catalog().stack("megatron-core-2025")
    sinks = Quantity(value=1.0, source="test", as_of=datetime.date(2026, 1, 1))
    stack = base.model_copy(update={"on_accelerator": {
        **base.on_accelerator, "b200": StackOnAccelerator(fused_attention_sinks=sinks)}})
    assert stack_inputs(stack, "b200")["fused_attention_sinks"] == 1.0
    assert stack_inputs(stack, "h100-sxm")["fused_attention_sinks"] == 0.0
    # the fields it does not set on b200 stay the stack's own
    assert stack_inputs(stack, "b200")["attention_efficiency_factor"] == \
        base.attention_efficiency_factor.value
    run = {**GPT_OSS, "seq_len": 8192}
    for hw, faster in (("b200", True), ("h100-sxm", False)):
        own = evaluate(**{**run, "hardware": hw, "stack": stack}).iloc[0]["compute_s"]
        general = evaluate(**{**run, "hardware": hw}).iloc[0]["compute_s"]
        assert (own < general) if faster else own == pytest.approx(general, rel=1e-12)


def test_on_accelerator_variant_flags_are_checked():
    data = load_catalog().stack("megatron-core-2025").model_dump()
    data["on_accelerator"] = {"b200": {"fused_attention_sinks": {
        "value": 0.5, "source": "x", "as_of": "2026-01-01"}}}
    with pytest.raises(ValueError, match="on_accelerator.b200.fused_attention_sinks"):
        SoftwareStack.model_validate(data)


# ---- the softmax's exponential unit -------------------------------------------------------

def test_no_exponential_work_means_no_slowdown():
    rho = np.array([0.0, 1e-9])
    np.testing.assert_allclose(compute.fused_attention_slowdown(rho, 10.0), 1.0, rtol=1e-12)
    # scalar, array and Series alike
    import pandas as pd
    rhos = np.array([0.25, 1.0, 2.0])
    s = compute.fused_attention_slowdown(pd.Series(rhos), 3.0)
    np.testing.assert_allclose(s.to_numpy(), compute.fused_attention_slowdown(rhos, 3.0))
    assert float(compute.fused_attention_slowdown(1.0, 3.0)) == pytest.approx(
        (2 ** (1 / 3) + 9 ** (1 / 3)) / 3, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 50.0), st.floats(0.0, 10.0), st.floats(1.0, 200.0))
def test_slowdown_grows_with_the_exponentials_and_stays_between_max_and_sum(rho, more, k):
    g = float(compute.fused_attention_slowdown(rho, k))
    assert float(compute.fused_attention_slowdown(rho + more, k)) >= g * (1 - 1e-12)
    # forward max(1, rho) and backward max(2, rho) at the least; their sums at most
    low = (max(1.0, rho) + max(2.0, rho)) / 3
    assert low * (1 - 1e-9) <= g <= (3 + 2 * rho) / 3 * (1 + 1e-9)


def test_slowdown_tends_to_the_slower_unit_and_does_not_overflow():
    assert float(compute.fused_attention_slowdown(2.0, 1000.0)) == pytest.approx(4 / 3,
                                                                                 rel=1e-2)
    assert np.isfinite(float(compute.fused_attention_slowdown(1e6, 200.0)))


def test_exponential_time_ratio_is_the_matmul_flops_per_exponential():
    # 2 (d_h + d_v) FLOPs per score: H100 at 128-wide heads needs half the unit's rate
    h100 = load_catalog().accelerator("h100-sxm")
    assert float(compute.attention_exp_time_ratio(
        h100.peak_bf16_flops_per_s.value, h100.exp_ops_per_s.value, 128, 128)) == \
        pytest.approx(0.5, rel=1e-3)


def test_exponential_rates_follow_the_generations_sfu_per_clock():
    # 16 exponentials per clock and SM on Ampere, Hopper and Blackwell (FlashAttention-3/4),
    # twice that on Blackwell Ultra: the rate over the BF16 peak is 16 over the MMA FLOPs
    # per clock and SM (2,048 / 4,096 / 8,192), 32 on B300/GB300
    catalog = load_catalog()
    per_clock = {"a100-80gb": 16 / 2048, "h100-sxm": 16 / 4096, "b200": 16 / 8192,
                 "gb200": 16 / 8192, "b300": 32 / 8192, "gb300": 32 / 8192}
    for hw, ratio in per_clock.items():
        acc = catalog.accelerator(hw)
        assert acc.exp_ops_per_s.value / acc.peak_bf16_flops_per_s.value == pytest.approx(
            ratio, rel=2e-3)
    # FlashAttention-3 s3.1: "3.9 TFLOPS of special functions" on the H100 SXM5
    assert catalog.accelerator("h100-sxm").exp_ops_per_s.value == pytest.approx(3.9e12,
                                                                                rel=0.01)


#: a dense model with 64-wide heads (gpt-oss's attention without its sinks and windows)
#: and its 128-wide twin of the same FLOPs, at 8k tokens on one rank
HEADS = dict(model="gpt-oss-120b", gpus=8, tp=1, pp=1, vp=1, cp=1, ep=8, global_batch=8,
             micro_batch=1, seq_len=8192, recompute="none", zero=1, tokens=1e12,
             reliability="benchmark", precision="bf16")
PLAIN = {"attention_sinks": 0.0, "window_layers": 0.0}


def _core_s(hardware, head_dim, exp=None):
    """compute_s of the 64- or 128-wide-head variant less the same run without attention
    core work (a window of one key): the core's own compute time."""
    heads = 64 * 64 // head_dim
    over = {**PLAIN, "heads": heads, "head_dim": head_dim, "v_head_dim": head_dim,
            "kv_heads": 8}
    if exp is not None:
        over["exp_ops_per_s"] = exp
    run = {**HEADS, "hardware": hardware}
    full = evaluate(**run, overrides=over).iloc[0]["compute_s"]
    none = evaluate(**run, overrides={**over, "window_layers": 36.0, "window": 1.0}
                    ).iloc[0]["compute_s"]
    return full - none


def test_blackwell_waits_for_its_exponentials_at_small_heads_and_blackwell_ultra_less():
    # B200: 2 (64 + 64) = 256 FLOPs per exponential against 512 the unit keeps up with, so
    # the forward's exponentials take twice its matmuls and the backward's (one pass beside
    # twice the matmuls) as long: at the catalog's exponent k_e the core's training time is
    # (max_k(1, 2) + max_k(2, 2)) / 3 of its matmul time; at 128-wide heads the forward's
    # two units are equal and the core pays a few per cent
    k = execution_defaults()["attention_exp_overlap_exponent"]
    unbound = 1e30
    b200_64 = _core_s("b200", 64) / _core_s("b200", 64, unbound)
    b200_128 = _core_s("b200", 128) / _core_s("b200", 128, unbound)
    assert b200_64 == pytest.approx(float(compute.fused_attention_slowdown(2.0, k)), rel=0.03)
    assert b200_64 > 1.3
    assert 1.0 < b200_128 < 1.1
    # GB300's doubled exponential unit: 64-wide heads cost what 128-wide ones cost on B200
    gb300_64 = _core_s("gb300", 64) / _core_s("gb300", 64, unbound)
    assert gb300_64 == pytest.approx(b200_128, rel=0.02)
    # Hopper at 128-wide heads (half the unit's rate needed) and A100: not measurably bound
    assert _core_s("h100-sxm", 128) / _core_s("h100-sxm", 128, unbound) == pytest.approx(
        1.0, abs=1e-3)
    assert _core_s("a100-80gb", 64) / _core_s("a100-80gb", 64, unbound) == pytest.approx(
        1.0, abs=1e-3)


def test_a_part_without_a_published_exponential_rate_is_never_bound():
    assert load_catalog().accelerator("mi300x").exp_ops_per_s is None
    assert _core_s("mi300x", 64) == pytest.approx(_core_s("mi300x", 64, 1e30), rel=1e-12)
