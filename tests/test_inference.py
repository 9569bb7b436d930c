"""formulas.inference: KV cache, prefill, decode roofline, response-length order statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import inference


def test_kv_cache_bytes_per_token_llama3_8b_and_deepseek_v3():
    # Llama 3 8B: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 128 KiB (vLLM's own
    # per-token figure for this model)
    assert inference.kv_cache_bytes_per_token(32, 8, 128, 2) == 131072.0
    # DeepSeek-V3 MLA: 61 layers x (512 + 64) x 2 B (DeepSeek-V2 s2.1.3: (d_c + d_h^R) l)
    assert inference.mla_kv_cache_bytes_per_token(61, 512, 64, 2) == 70272.0


def test_scalar_array_series_agree():
    args = dict(weight_bytes_per_step=16e9, kv_bytes_read=2e9, decode_flops=1e12,
                memory_bandwidth_bytes_per_s=3.35e12, memory_efficiency=0.76,
                peak_flops_per_s=989e12, compute_efficiency=0.8)
    steps = [1.0, 100.0, 1000.0]
    scalar = [inference.decode_time(s, **args) for s in steps]
    array = inference.decode_time(np.array(steps), **args)
    series = inference.decode_time(pd.Series(steps, index=list("abc")), **args)
    assert isinstance(scalar[0], float)
    np.testing.assert_allclose(array, scalar, rtol=1e-15)
    assert list(series.index) == list("abc")
    np.testing.assert_allclose(series.to_numpy(), scalar, rtol=1e-15)


def test_decode_time_is_the_roofline_max():
    # memory-bound: 1 step reading 16 GB at 3.35 TB/s x 0.76
    t = inference.decode_time(1, 16e9, 0.0, 1e9, 3.35e12, 0.76, 989e12, 0.8)
    assert t == pytest.approx(16e9 / (3.35e12 * 0.76), rel=1e-12)
    # compute-bound once the FLOP term is larger
    t = inference.decode_time(1, 1e9, 0.0, 1e15, 3.35e12, 0.76, 989e12, 0.8)
    assert t == pytest.approx(1e15 / (989e12 * 0.8), rel=1e-12)


def test_max_concurrent_sequences():
    # 72 GB usable, 16 GB weights, 2.8 GB reserve, 1.5k tokens x 128 KiB per sequence
    kv_seq = 1536 * 131072
    n = inference.max_concurrent_sequences(72e9, 16e9, 2.8e9, kv_seq)
    assert n == np.floor((72e9 - 16e9 - 2.8e9) / kv_seq) == 264
    assert inference.max_concurrent_sequences(40e9, 41e9, 0, kv_seq) == 0


def test_experts_touched_fraction_limits():
    assert inference.experts_touched_fraction(1, 128, 8) == pytest.approx(8 / 128, rel=1e-12)
    assert inference.experts_touched_fraction(0, 128, 8) == 0.0
    assert inference.experts_touched_fraction(1000, 128, 8) > 0.999
    # Monte Carlo (fixed seed): 16 tokens each choosing 8 distinct experts of 64
    rng = np.random.default_rng(0)
    touched = [len(set(np.concatenate([rng.choice(64, 8, replace=False) for _ in range(16)])))
               / 64 for _ in range(4000)]
    assert inference.experts_touched_fraction(16, 64, 8) == pytest.approx(np.mean(touched),
                                                                          rel=0.01)


def test_expected_max_response_len_against_monte_carlo():
    mean, cv = 1000.0, 0.5
    sigma = np.sqrt(np.log(1 + cv * cv))
    rng = np.random.default_rng(1)
    for n in (1, 8, 64, 512):
        draws = rng.lognormal(np.log(mean) - sigma ** 2 / 2, sigma, size=(4000, n))
        assert inference.expected_max_response_len(n, mean, cv) == pytest.approx(
            draws.max(axis=1).mean(), rel=0.02), n
    # no spread: every response is the mean
    assert inference.expected_max_response_len(64, mean, 0.0) == pytest.approx(mean, rel=1e-12)


def test_kv_tokens_read_per_sequence_against_monte_carlo():
    rng = np.random.default_rng(2)
    prompt, mean, cv = 512.0, 1000.0, 0.8
    sigma = np.sqrt(np.log(1 + cv * cv))
    lengths = np.round(rng.lognormal(np.log(mean) - sigma ** 2 / 2, sigma, 200_000))
    exact = np.mean(prompt * lengths + lengths * (lengths - 1) / 2)  # sum_{j<L} (P + j)
    assert inference.kv_tokens_read_per_sequence(prompt, mean, cv) == pytest.approx(exact,
                                                                                   rel=0.01)


def test_decode_steps():
    # all at once: the longest response
    assert inference.decode_steps(64, 256, 1000, 2500) == 2500
    # four waves of equal lengths: 4 x the length
    assert inference.decode_steps(1024, 256, 1000, 1000) == 4000


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10_000), st.integers(2, 4), st.floats(0, 3))
def test_expected_max_grows_with_n_and_spread(n, factor, cv):
    """Over integer counts (responses are counted): Royston's mean is monotone there."""
    a = inference.expected_max_response_len(n, 1000.0, cv)
    assert inference.expected_max_response_len(n * factor, 1000.0, cv) >= a * (1 - 1e-12)
    assert inference.expected_max_response_len(n, 1000.0, cv + 0.1) >= a * (1 - 1e-12)
    assert a >= 1000.0 * (1 - 1e-9)
