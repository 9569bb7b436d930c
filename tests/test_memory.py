"""Memory formulas: ZeRO model states and Korthikanti activation accounting.

Published values sit next to the computed ones, with their source.
"""

import itertools

import numpy as np
import pytest
import sympy as sp
from formula_checks import check_input_kinds, check_symbolic, sample_point
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import memory as m
from formulas.core import Formula

GiB = 2.0**30
FORMULAS = [f for f in vars(m).values() if isinstance(f, Formula) and f.module == "memory"]

# Korthikanti et al. 2022, Table 3: a, h, L, t, p; Fig. 1 runs: micro-batch b and interleaving
# v (b and v from the runs' configurations as used by Calculon's validation,
# calculon-ai/calculon validation/*_seqsel.json); s = 2048.
KORTHIKANTI_MODELS = {
    "22B": dict(a=64, h=6144, L=48, t=8, p=1, b=4, v=1),
    "175B": dict(a=96, h=12288, L=96, t=8, p=8, b=1, v=3),
    "530B": dict(a=128, h=20480, L=105, t=8, p=35, b=1, v=3),
    "1T": dict(a=160, h=25600, L=128, t=8, p=64, b=1, v=1),
}


# -- generic: every formula ----------------------------------------------------------

def _sample(f, rng):
    point = sample_point(f, rng)
    if "zero_stage" in point:
        point["zero_stage"] = float(rng.integers(0, 4))
    return point


@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(3)
    check_symbolic(f, [_sample(f, rng) for _ in range(6)], rel=1e-12, lambdified=True)


@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    rng = np.random.default_rng(5)
    check_input_kinds(f, [_sample(f, rng) for _ in range(3)])


@pytest.mark.parametrize("f", FORMULAS, ids=lambda f: f.name)
def test_units_and_reference_declared(f):
    assert f.reference and f.result_unit, f.name
    assert all(a.unit for a in f.arguments), f.units
    assert all(a.domain != "real" for a in f.arguments), f.name
    assert ".. math::" in f.__doc__


@pytest.mark.parametrize("call,arg", [
    (lambda: m.korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 0, 1, 1), "tp"),
    (lambda: m.activation_bytes_per_layer(2048, 1, -1.0, 4, 1, 1, 2, 1, 0, 0, 1), "hidden"),
    (lambda: m.activation_bytes_per_layer(2048, 1, 8, 32, 8, 8, 2, 1, 2, 0, 1),
     "sequence_parallel"),
    (lambda: m.zero_state_bytes(1e9, 0, 1), "dp"),
    (lambda: m.sharded_state_bytes(1e9, 2.0, np.array([1.0, 0.0])), "shards"),
    (lambda: m.interleaved_activation_factor(8, 0), "virtual_stages"),
    (lambda: m.inflight_microbatches_1f1b(0, 4), "pp"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


# -- Korthikanti et al. 2022 -----------------------------------------------------------

@pytest.mark.parametrize("model,none_gib,seqsel_gib,states_gib", [
    # Korthikanti et al. 2022 Fig. 1 (values as transcribed in calculon-ai/calculon
    # calculon/llm/validation.py, seqsel_fig1): activations without recomputation
    # (tensor parallel only) and with sequence parallel + selective recompute, and
    # parameters + optimizer state (18 B/param on 12 L h^2 / (t p) parameters), GiB.
    ("22B", 59.25, 9.5625, 45.5625),
    ("175B", 66.84375, 12.3515625, 45.5625),
    ("530B", 114.0234375, 23.076171875, 31.640625),
    ("1T", 131.25, 26.5625, 32.958984375),
])
def test_korthikanti_figure1(model, none_gib, seqsel_gib, states_gib):
    c = KORTHIKANTI_MODELS[model]
    # first stage: min(p, m) micro-batches in flight (m >= p here) of L/p layers each,
    # times the interleaving factor (s4.2.3)
    stage = c["L"] / c["p"] * m.inflight_microbatches_1f1b(c["p"], 1e6) \
        * m.interleaved_activation_factor(c["p"], c["v"])

    def act(sp_, sel):
        return stage * m.korthikanti_activation_bytes_per_layer(
            2048, c["b"], c["h"], c["a"], c["t"], sp_, sel) / GiB

    assert act(0, 0) == pytest.approx(none_gib, rel=1e-3)
    assert act(1, 1) == pytest.approx(seqsel_gib, rel=1e-3)
    states = m.sharded_state_bytes(12 * c["L"] * c["h"] ** 2, 18.0, c["t"] * c["p"]) / GiB
    assert states == pytest.approx(states_gib, rel=1e-3)
    # the same through the ZeRO formula (stage 0: fp16 weights 2, fp32 grads 4, Adam+master 12)
    zero0 = m.zero_state_bytes(12 * c["L"] * c["h"] ** 2 / (c["t"] * c["p"]), 64, 0, 2.0, 4.0,
                               12.0) / GiB
    assert zero0 == pytest.approx(states_gib, rel=1e-3)


@pytest.mark.parametrize("model,seq,sel,seqsel,full", [
    # Korthikanti et al. 2022 Fig. 7: % of the tensor-parallel-only activation memory
    # (values as transcribed in calculon-ai/calculon calculon/llm/validation.py, seqsel_fig7)
    ("22B", 66.84, 49.42, 16.18, 7.64),
    ("175B", 62.04, 56.53, 18.49, 8.71),
    ("530B", 58.31, 62.04, 20.27, 9.42),
    ("1T", 58.31, 62.04, 20.27, 9.42),
])
def test_korthikanti_figure7(model, seq, sel, seqsel, full):
    c = KORTHIKANTI_MODELS[model]

    def k(sp_, sel_):
        return m.korthikanti_activation_bytes_per_layer(2048, 1, c["h"], c["a"], c["t"], sp_, sel_)

    none = k(0, 0)
    # Table 2 reproduces the figure within 1.1 % (largest: full recompute, 530B/1T,
    # 9.52 vs 9.42 - the figure includes small terms outside the layers)
    assert 100 * k(1, 0) / none == pytest.approx(seq, rel=0.015)
    assert 100 * k(0, 1) / none == pytest.approx(sel, rel=0.015)
    assert 100 * k(1, 1) / none == pytest.approx(seqsel, rel=0.015)
    full_layer = m.full_recompute_activation_bytes_per_layer(2048, 1, c["h"], c["t"], 0)
    assert 100 * full_layer / none == pytest.approx(full, rel=0.015)


def test_korthikanti_table2_rows():
    """Table 2 in units of sbh: 10+24/t+5as/(ht); 34/t+5as/(ht); 10+24/t; 34/t."""
    s, b, h, a, t = sp.symbols("s b h a t", positive=True)
    unit = s * b * h
    rows = {(0, 0): 10 + 24 / t + 5 * a * s / (h * t), (1, 0): 34 / t + 5 * a * s / (h * t),
            (0, 1): 10 + 24 / t, (1, 1): 34 / t}
    for (sp_, sel), row in rows.items():
        got = m.korthikanti_activation_bytes_per_layer(s, b, h, a, t, sp_, sel)
        assert sp.simplify(got - unit * row) == 0
    # no parallelism: 34 sbh + 5 a s^2 b (s4.1)
    assert sp.expand(m.korthikanti_activation_bytes_per_layer(s, b, h, a, 1, 0, 0)
                     - (34 * s * b * h + 5 * a * s**2 * b)) == 0


@pytest.mark.parametrize("sp_,stored", list(itertools.product([0, 1], [0, 1])))
def test_general_reduces_to_korthikanti(sp_, stored):
    s, b, h, a, t = sp.symbols("s b h a t", positive=True)
    general = m.activation_bytes_per_layer(s, b, h, 4 * h, a, a, 2, t, sp_, stored, 1)
    korthikanti = m.korthikanti_activation_bytes_per_layer(s, b, h, a, t, sp_, 1 - stored)
    assert sp.simplify(general - korthikanti) == 0
    # and numerically on the 175B model
    num = m.activation_bytes_per_layer(2048, 1, 12288, 4 * 12288, 96, 96, 2, 8, sp_, stored,
                                       1)
    ref = m.korthikanti_activation_bytes_per_layer(2048, 1, 12288, 96, 8, sp_, 1 - stored)
    assert num == pytest.approx(ref, rel=1e-14)


def test_general_gqa_swiglu_by_hand():
    """Llama-2-70B layer (h=8192, f=28672, 64 heads, 8 KV heads, SwiGLU), s=4096, b=1,
    no TP, flash attention.  Tensors: 2 norm inputs, QKV input, Q, K, V (1/8 width),
    out-proj input, MLP input, gate, up, down input; 2 dropout masks only with dropout."""
    s, b, h, f = 4096, 1, 8192, 28672
    sbh = s * b * h
    by_hand = (2 * 2 * sbh + 2 * sbh + 2 * sbh + 2 * 2 * sbh / 8 + 2 * sbh + 2 * sbh
               + 3 * 2 * s * b * f + 2 * sbh * 1)
    assert m.activation_bytes_per_layer(s, b, h, f, 64, 8, 3, 1, 0, 0, 1) == pytest.approx(by_hand)
    # Llama trains without dropout: no masks
    assert m.activation_bytes_per_layer(s, b, h, f, 64, 8, 3, 1, 0, 0, 0) == pytest.approx(
        by_hand - 2 * sbh)


@pytest.mark.parametrize("sp_,stored", list(itertools.product([0, 1], [0, 1])))
def test_dropout_masks_are_one_byte_each(sp_, stored):
    """Without dropout the two residual masks (sbh each, split by SP) and the attention
    mask (as^2b, split by TP, only when the scores are kept) are not stored."""
    s, b, h, a, t = sp.symbols("s b h a t", positive=True)
    diff = (m.activation_bytes_per_layer(s, b, h, 4 * h, a, a, 2, t, sp_, stored, 1)
            - m.activation_bytes_per_layer(s, b, h, 4 * h, a, a, 2, t, sp_, stored, 0))
    expected = 2 * s * b * h * (1 - sp_ + sp_ / t) + a * s**2 * b * stored / t
    assert sp.simplify(diff - expected) == 0


def test_output_layer_and_embedding():
    """Korthikanti s4.3: 4sbh/t (1 + v/h) for the last norm, output projection, fp32 logits."""
    s, b, h, v, t = 2048, 1, 6144, 51200, 8
    assert m.output_layer_activation_bytes(s, b, h, v, t) == pytest.approx(
        2 * s * b * h / t + 2 * s * b * h / t + 4 * s * b * v / t)
    assert m.input_embedding_activation_bytes(s, b, h, t) == s * b * h / t


def test_full_recompute_and_interleaving():
    assert m.full_recompute_activation_bytes_per_layer(2048, 1, 12288, 8, 0) == 2 * 2048 * 12288
    assert m.full_recompute_activation_bytes_per_layer(2048, 1, 12288, 8, 1) == \
        2 * 2048 * 12288 / 8
    assert m.interleaved_activation_factor(8, 1) == 1.0           # plain 1F1B
    assert m.interleaved_activation_factor(8, 3) == pytest.approx(1 + 7 / 24)
    assert m.interleaved_activation_factor(1, 4) == 1.0
    assert m.inflight_microbatches_1f1b(8, 3) == 3
    assert m.inflight_microbatches_1f1b(8, 64) == 8


# -- ZeRO ----------------------------------------------------------------------------

@pytest.mark.parametrize("stage,printed_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_figure1(stage, printed_gb):
    """Rajbhandari et al. 2020 Fig. 1: Psi = 7.5B, N_d = 64, K = 12: 120, 31.4, 16.6, 1.9 GB."""
    got = m.zero_state_bytes(7.5e9, 64, stage) / 1e9
    assert got == pytest.approx(printed_gb, abs=0.05)


# -- properties ----------------------------------------------------------------------

_flag = st.sampled_from([0.0, 1.0])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([512, 2048, 8192, 32768]), st.integers(1, 16),
       st.sampled_from([1024, 4096, 8192, 16384]), st.floats(1.0, 8.0),
       st.sampled_from([8, 32, 64, 128]), st.integers(0, 3), st.sampled_from([2, 3]),
       st.integers(1, 64), st.integers(1, 64), _flag, _flag, _flag)
def test_more_tp_never_increases_activations(s, b, h, ffn_ratio, a, kv_pow, mats, t1, t2,
                                             sp_, stored, drop):
    kv = max(a >> kv_pow, 1)
    lo, hi = sorted((t1, t2))

    def act(t):
        return m.activation_bytes_per_layer(s, b, h, ffn_ratio * h, a, kv, mats, t, sp_, stored,
                                            drop)

    assert act(hi) <= act(lo) * (1 + 1e-12)
    # sequence parallelism and dropping the scores never increase memory either
    assert m.activation_bytes_per_layer(s, b, h, ffn_ratio * h, a, kv, mats, lo, 1, stored,
                                        drop) <= act(lo) * (1 + 1e-12)
    assert m.activation_bytes_per_layer(s, b, h, ffn_ratio * h, a, kv, mats, lo, sp_, 0,
                                        drop) <= act(lo) * (1 + 1e-12)
    # training without dropout never needs more memory
    assert m.activation_bytes_per_layer(s, b, h, ffn_ratio * h, a, kv, mats, lo, sp_, stored,
                                        0) <= act(lo) * (1 + 1e-12)
    # full recomputation keeps less than the whole layer
    assert m.full_recompute_activation_bytes_per_layer(s, b, h, lo, sp_) < act(lo)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e6, 1e12), st.integers(1, 4096), st.integers(0, 2))
def test_higher_zero_stage_never_uses_more(params, dp, stage):
    assert m.zero_state_bytes(params, dp, stage + 1) <= m.zero_state_bytes(params, dp, stage)
    assert m.zero_state_bytes(params, dp + 1, stage + 1) <= \
        m.zero_state_bytes(params, dp, stage + 1)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 128), st.integers(2, 16))
def test_interleaving_factor_bounds(p, v):
    factor = m.interleaved_activation_factor(p, v)
    assert 1.0 <= factor < 1.5 + 1e-12
    assert m.interleaved_activation_factor(p, v + 1) <= factor


# ---- issue 27: the published MoE and 405B layouts ---------------------------------------

def test_inflight_chunks_follow_megatron_core_schedule():
    # schedules.py get_pp_rank_microbatches (NVIDIA/Megatron-LM@d98e8a64dd): rank 0 warms
    # up 2(p - 1) + (v - 1)p chunks, holds one more, never more than the m v of an iteration
    for p, v, m_ in [(16, 1, 64), (16, 8, 64), (16, 8, 16), (4, 2, 3), (8, 1, 3)]:
        warmup = (p - 1) if v == 1 else 2 * (p - 1) + (v - 1) * p
        expected = min(warmup + 1, m_ * v)
        assert float(m.pipeline_inflight_chunks(p, v, m_)) == expected
    # with many micro-batches it is Korthikanti's factor (s4.2.3) on p micro-batches of L
    for p, v in [(8, 2), (16, 8), (35, 3)]:
        chunks = float(m.pipeline_inflight_chunks(p, v, 10_000))
        assert chunks / v == pytest.approx(p * m.interleaved_activation_factor(p, v))


def _megatron_rank_layers(layers, p, v):
    """Layers on each rank under Megatron-Core's split: L + 2 units (the embedding and the
    loss) when they divide over p v virtual stages, the loss alone (L + 1), else evenly."""
    stages = p * v
    for extra in (0, 1, 2):
        if (layers + extra) % stages == 0:
            per = (layers + extra) // stages
            ranks = [v * per] * p
            if extra:
                ranks[-1] -= 1
            if extra == 2:
                ranks[0] -= 1
            return ranks
    return None


@settings(max_examples=200, deadline=None)
@given(p=st.integers(2, 32), v=st.sampled_from([1, 2, 3, 4, 8]), m_=st.integers(1, 256),
       layers=st.integers(8, 160))
def test_busiest_rank_holds_the_most_layers(p, v, m_, layers):
    # rank r holds p - r micro-batches (1F1B) or 2(p - r - 1) + (v - 1)p + 1 chunks
    # (interleaved) of its own layers, capped at the m v chunks of the iteration; where
    # Megatron-Core counts the embedding and the loss as stage units the first and last
    # rank hold one layer fewer
    ranks = _megatron_rank_layers(layers, p, v)
    if ranks is None or p * v > layers + 2:
        return
    stage_layers = max(ranks)
    held = [min((p - r) if v == 1 else 2 * (p - r - 1) + (v - 1) * p + 1, m_ * v)
            * ranks[r] / v for r in range(p)]
    computed = float(m.pipeline_inflight_layers(layers, stage_layers, p, v, m_))
    # exact under 1F1B; under interleaving the first rank's embedding chunk is counted at
    # the rank's mean chunk size, never below what it holds
    assert computed >= max(held) - 1e-9
    if v == 1:
        assert computed == pytest.approx(max(held))
    # never more than every rank at the fullest stage's layers, equal when even
    bound = float(m.pipeline_inflight_chunks(p, v, m_)) * stage_layers / v
    assert computed <= bound + 1e-9
    if layers % (p * v) == 0:
        assert computed == pytest.approx(bound)


def test_uneven_split_frees_the_first_rank_of_llama_405b():
    # Llama 3.1 405B, 126 layers, PP 16: 128 units, the first and last ranks 7 layers;
    # the second rank (15 micro-batches of 8) is the busiest, 120 against 16 x 8 = 128;
    # PP 8 x VP 8 (NVIDIA's recipe): the second rank's 69 chunks of 2 against 71 of 2
    assert float(m.pipeline_inflight_layers(126, 8, 16, 1, 64)) == 120.0
    assert float(m.pipeline_inflight_layers(126, 16, 8, 8, 64)) == 138.0
    assert float(m.pipeline_inflight_chunks(8, 8, 64)) * 2 == 142.0


def test_moe_activation_by_hand():
    # DeepSeek-V3 MoE layer, 4,096 tokens, TP 1: 8 routed pairs a token of
    # c*h (dispatched copy) + f_e*(2*2 + c) (gate, up, down input), one shared expert
    s, h, fe = 4096, 7168, 2048
    for c in (2, 1):
        by_hand = s * (8 * (c * h + fe * (4 + c)) + fe * (4 + c))
        assert m.moe_mlp_activation_bytes(s, 1, h, fe, 8, 1, 3, 1, 1, 0, c) == by_hand
    # sequence parallelism splits the routed tokens over TP, ETP gathers them back
    full = m.moe_mlp_activation_bytes(s, 1, h, fe, 8, 0, 3, 4, 4, 1, 2)
    assert full == s / 4 * 8 * (2 * 4 * h + fe / 4 * 6)
    # a dense MLP is the MoE formula's shared part with k = 0 at c = 2
    assert m.mlp_activation_bytes(s, 1, 18432, 3, 2) == pytest.approx(
        s * 18432 * 6 / 2)


def test_mla_and_norm_recompute_bytes():
    # DeepSeek-V3: Q and K of 128 x 192, V of 128 x 128, 16-bit, per token
    assert m.mla_up_projection_activation_bytes(4096, 1, 128, 192, 128, 1) == \
        4096 * 2 * 128 * (192 + 192 + 128)
    assert m.norm_output_activation_bytes(4096, 1, 7168, 8, 1) == 4 * 4096 * 7168 / 8


def _published(name):
    from planner.analysis import validate as v
    from planner.engine.layouts.evaluator import evaluate

    return evaluate(reliability="benchmark", **v.PUBLISHED_LAYOUTS[name]).iloc[0]


def test_llama3_405b_interleaved_layout_fits_where_meta_ran_it():
    # arXiv:2407.21783 s3.3.1-3.3.2, Table 4: TP 8, PP 16 interleaved (126 layers on 128
    # stage units), DP 128 of 16 micro-batches of 8,192 tokens, no activation checkpointing,
    # FSDP sharding gradients and optimizer states (ZeRO-2) - on 80 GB H100
    r = _published("Llama 3 405B (Meta), 16,384 H100")
    assert r["fits"], r["memory_per_gpu_bytes"] / 1e9
    # m v = 128 chunks <= the 143 of the warm-up: the interleaved schedule holds the same
    # 16 micro-batches of 8 layers as 1F1B would
    assert 60e9 < r["activation_bytes"] < 72e9
    assert r["memory_per_gpu_bytes"] <= 80e9


def test_deepseek_v3_published_layout_fits_on_h800():
    # arXiv:2412.19437 s3.2-3.3: 2,048 H800, PP 16, EP 64, no TP, ZeRO-1, FP8 caching,
    # RMSNorm and MLA up-projection recompute, BF16 Adam moments (before: 107 GB)
    r = _published("DeepSeek-V3, 2,048 H800")
    assert r["fits"], r["memory_per_gpu_bytes"] / 1e9
    assert r["optimizer_state_bytes"] < r["weights_bytes"]  # 8 bytes over DP 128 / EDP 2
    # the same layout kept in BF16 without those recomputations does not fit
    from planner.analysis import validate as v
    from planner.engine.layouts.evaluator import evaluate

    args = {**v.PUBLISHED_LAYOUTS["DeepSeek-V3, 2,048 H800"], "precision": "bf16",
            "stack": "megatron-core-2025"}
    assert not evaluate(reliability="benchmark", **args).iloc[0]["fits"]


def test_op_sac_keeps_the_tensors_torchtitans_policy_saves():
    # torchtitan's op-level SAC saves every aten.mm output but the 2nd, 4th, 6th of a block
    # (Q, K, V, O, gate, up, down: Q, V, gate and down kept), the SDPA output and, under TP
    # with sequence parallelism, the two reduce-scatters' outputs; 16-bit tensors
    s, b, h, f, a, kv, d = 8192, 1, 8192, 28672, 64, 8, 128  # Llama 3 70B
    t = 8
    by_hand = 2 * s * b * (h / t            # the block input, split by SP
                           + a * d / t      # Q (column parallel)
                           + kv * d / t     # V
                           + a * d / t      # the attention output
                           + f / t          # gate
                           + h              # down, a partial sum before its reduce-scatter
                           + 2 * h / t)     # the two reduce-scattered outputs
    got = m.op_sac_activation_bytes_per_layer(s, b, h, f, a, kv, d, d, 3, t, 1)
    assert got == pytest.approx(by_hand, rel=1e-12)
    # without TP: no reduce-scatter; a non-gated MLP keeps its up projection only
    assert m.op_sac_activation_bytes_per_layer(s, b, h, f, a, kv, d, d, 2, 1, 0) == \
        pytest.approx(2 * s * b * (h + a * d + kv * d + a * d + f), rel=1e-12)
    # it keeps less than Megatron's accounting of the same layer (which keeps the norms,
    # K and every MLP tensor)
    assert got < m.activation_bytes_per_layer(s, b, h, f, a, kv, 3, t, 1, 0, 0)


def _torchtitan_8b(stack, recompute="selective", gpus=8):
    from planner.engine.layouts.evaluator import evaluate

    return evaluate(model="llama3-8b", hardware="gt-h100-96gb", gpus=gpus, tp=1, pp=1, zero=3,
                    cp=1, ep=1, vp=1, micro_batch=2, global_batch=2 * gpus, seq_len=8192, recompute=recompute,
                    stack=stack, reliability="benchmark").iloc[0]


def test_torchtitans_published_8b_fsdp_runs_fit():
    # pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3: Llama
    # 3.1 8B, FSDP on 8 and 128 Grand Teton H100 96 GB, local batch 2 of 8,192 tokens,
    # selective (op) AC: 82.4 and 67.0 GiB peak (eager), 77.0 and 62.0 GiB (compiled).
    # Megatron's selective accounting (the attention core) kept 99.5 GB: not to fit.
    for gpus, published_gib in ((8, 82.4), (128, 67.0)):
        r = _torchtitan_8b("torchtitan-fsdp2-eager", gpus=gpus)
        assert r["fits"]
        # below the published peak, which also holds the allocator's cache, the unfused
        # loss's FP32 logits and the collectives' buffers (not modelled)
        assert 0.6 < r["memory_per_gpu_bytes"] / (published_gib * GiB) < 1.0
    # the same layout without recompute keeps every tensor (and more than fits)
    assert _torchtitan_8b("torchtitan-fsdp2-eager", "none")["memory_per_gpu_bytes"] > 96e9
    # Megatron-Core's selective recompute (the attention core, already flash) keeps as much
    # as no recompute
    megatron = _torchtitan_8b("megatron-core-2025")
    assert megatron["memory_per_gpu_bytes"] == pytest.approx(
        _torchtitan_8b("megatron-core-2025", "none")["memory_per_gpu_bytes"], rel=1e-12)


def test_op_sac_recomputes_matmuls():
    # the recomputed K, output projection and up matmuls cost time and hardware FLOPs,
    # not model FLOPs
    sel = _torchtitan_8b("torchtitan-fsdp2", "selective")
    none = _torchtitan_8b("torchtitan-fsdp2", "none")
    assert sel["step_time_s"] > none["step_time_s"]
    assert sel["model_flops_per_token"] == none["model_flops_per_token"]
    h, kv, a, d, f, layers = 4096, 8, 32, 128, 14336, 32
    extra = 2 * layers * h * (kv * d + a * d + f)  # forward FLOPs a token of the three
    hardware = {k: r["hfu"] / r["mfu"] * r["model_flops_per_token"]
                for k, r in (("sel", sel), ("none", none))}
    assert hardware["sel"] - hardware["none"] == pytest.approx(extra, rel=1e-9)


def _torchtitan_405b(**overrides):
    from planner.engine.layouts.evaluator import evaluate

    # torchtitan's Table 5 layout: Llama 3.1 405B, FSDP 8 x TP 8 x PP 8 on 512 H100 96 GB,
    # local batch 32 in micro-batches of 4, full AC (benchmarks/llama3_h100_202412_torchtitan.md)
    return evaluate(model="llama3.1-405b", hardware="gt-h100-96gb", gpus=512, tp=8, pp=8,
                    cp=1, ep=1, vp=1, zero=3, micro_batch=4, global_batch=256, seq_len=8192, recompute="full",
                    stack="torchtitan-fsdp2", reliability="benchmark",
                    overrides=overrides).iloc[0]


def test_torchtitans_fsdp_under_pp_keeps_the_stage_gathered():
    # reshard_after_forward = not pp_enabled, gradients synchronised on the last backward
    # only: the stage's 16-bit parameters and gradients stay unsharded through the step
    kept, per_microbatch = _torchtitan_405b(), _torchtitan_405b(fsdp_keeps_gathered_under_pp=0.0)
    extra = kept["memory_per_gpu_bytes"] - per_microbatch["memory_per_gpu_bytes"]
    stage_params = 405.85e9 / 64  # ~ the 405B over TP 8 x PP 8 (the first stage: embeddings)
    assert extra == pytest.approx(2 * 2 * stage_params, rel=0.1)
    assert kept["weights_bytes"] - per_microbatch["weights_bytes"] == pytest.approx(extra / 2)
    # one gather and one reduce-scatter a step instead of two gathers and one reduce-scatter
    # per micro-batch: less data-parallel time
    assert kept["dp_comm_s"] < per_microbatch["dp_comm_s"]
    # published peak 82.5 GiB (1F1B): now within the allocator's margin, not at half of it
    assert 0.7 < kept["memory_per_gpu_bytes"] / (82.5 * GiB) < 1.0


def test_a_chunked_loss_holds_one_chunks_logits():
    """torchtitan's ChunkedLossWrapper (stack torchtitan-fsdp2-2026, 8 chunks): the output
    layer's logits and the unfused loss's extra bytes are held for one chunk of the
    sequence at a time, (4 + extra) s b V (1 - 1/c) / t bytes fewer than all at once."""
    from planner import evaluate

    run = dict(model="llama3-8b", hardware="gb200", gpus=4, tp=1, pp=1, cp=1, ep=1, vp=1,
               micro_batch=32, global_batch=128, seq_len=2048, zero=3,
               recompute="selective", as_frame=False)
    whole = evaluate(**run, stack="torchtitan-fsdp2")
    chunked = evaluate(**run, stack="torchtitan-fsdp2-2026")
    saved = (4 + 6) * 2048 * 32 * 128256 * (1 - 1 / 8)
    assert whole["memory_per_gpu_bytes"] - chunked["memory_per_gpu_bytes"] == \
        pytest.approx(saved, rel=1e-9)
    # the chunks move the same bytes: with the 2024 stack's eager loss traffic the step is
    # the same; the 2026 stack's compiled loss (8 B a logit, not 48) makes it shorter
    same_loss = evaluate(**run, stack="torchtitan-fsdp2-2026",
                         overrides={"loss_bytes_per_logit": 48.0})
    assert whole["step_time_s"] == pytest.approx(same_loss["step_time_s"], rel=1e-12)
    assert chunked["step_time_s"] < whole["step_time_s"]


def _maxtext_70b_v6e(**overrides):
    from planner.engine.inputs.recompute_modules import module_flags
    from planner.engine.layouts.evaluator import evaluate

    # AI-Hypercomputer/tpu-recipes Llama 3.1 70B on v6e-256: FSDP 256, 5 sequences of 8,192
    # a chip, remat_policy custom offloading the layer input and Q, K, V (2.25 h-vectors)
    # and recomputing the rest (read as the mlp, norm and attention-core modules)
    return evaluate(model="llama3.1-70b", hardware="tpu-v6e", gpus=256, tp=1, pp=1, cp=1,
                    ep=1, vp=1, micro_batch=5, global_batch=1280, seq_len=8192, zero=3,
                    recompute="selective", stack="maxtext-xla", reliability="benchmark",
                    overrides={"offloaded_activation_vectors": 2.25,
                               **module_flags("mlp,layernorm,core_attn", "selective"),
                               **overrides}).iloc[0]


def test_a_jax_policy_that_offloads_what_it_names_keeps_nothing_else_on_the_device():
    # jax.checkpoint_policies.save_and_offload_only_these_names: the named tensors go to
    # host memory and every other one is recomputed, so the device holds the two layers in
    # transit and one layer's working set, not each recomputed module's inputs
    named, module_inputs = _maxtext_70b_v6e(), _maxtext_70b_v6e(remat_keeps_named_only=0.0)
    layer_input = 5 * 8192 * 8192 * 2  # the h-vector of 40,960 tokens, 16-bit
    assert named["activation_bytes"] < module_inputs["activation_bytes"] / 3
    # 138 GB a 32 GiB chip under the module accounting, 32.7 GB under the policy's (with
    # the 0.8 GB XLA:TPU withholds), within the chip's 34.4 GB: the recipe ran
    assert module_inputs["memory_per_gpu_bytes"] == pytest.approx(138e9, rel=0.01)
    assert named["memory_per_gpu_bytes"] == pytest.approx(32.7e9, rel=0.02)
    assert named["memory_per_gpu_bytes"] < 32 * 2**30
    # what grows with the named tensors: the two layers in transit, nothing per layer
    twice = _maxtext_70b_v6e(offloaded_activation_vectors=4.5)
    assert twice["activation_bytes"] - named["activation_bytes"] == \
        pytest.approx(2 * 2.25 * layer_input, rel=1e-9)
    # both offload the same tensors; the policy's rebuilt post-attention residual runs
    # each output projection again: 1.5 % longer
    assert named["step_time_s"] / module_inputs["step_time_s"] == pytest.approx(1.015, abs=0.002)


def _maxtext_70b_tpu7x(**overrides):
    from planner.engine.inputs.recompute_modules import module_flags
    from planner.engine.layouts.evaluator import evaluate

    # AI-Hypercomputer/tpu-recipes Llama 3.1 70B on TPU7x-64: FSDP 64, 4 sequences of 8,192
    # a chip, remat_policy custom keeping the layer input, Q, K, V and the attention output
    # on the device (read as the mlp and norm modules recomputed)
    return evaluate(model="llama3.1-70b", hardware="tpu-v7", gpus=64, tp=1, pp=1, cp=1, ep=1,
                    vp=1, micro_batch=4, global_batch=256, seq_len=8192, zero=3,
                    recompute="selective", stack="maxtext-xla", reliability="benchmark",
                    overrides={**module_flags("mlp,layernorm", "selective"),
                               **overrides}).iloc[0]


def test_a_named_only_policy_rebuilds_the_post_attention_residual():
    # without offload the module list reads the policy's names, but a policy that keeps
    # only what it names rebuilds the MLP norm's input from the layer input and attention
    # output (the output projection again) instead of keeping it as Megatron-Core does
    named, module_inputs = _maxtext_70b_tpu7x(), _maxtext_70b_tpu7x(remat_keeps_named_only=0.0)
    residual = 4 * 8192 * 8192 * 2  # one h-vector of 32,768 tokens, 16-bit
    assert module_inputs["activation_bytes"] - named["activation_bytes"] == \
        pytest.approx(80 * residual, rel=1e-12)  # every layer in flight
    # docs/model.md: 1.06 of the chip's 192 GiB under Megatron's accounting, 0.86 under the
    # policy's (the recipe ran); the step 1.6 % longer for the output projection again
    hbm = 192 * 2**30
    assert module_inputs["memory_per_gpu_bytes"] / hbm == pytest.approx(1.064, abs=0.005)
    assert named["memory_per_gpu_bytes"] / hbm == pytest.approx(0.856, abs=0.005)
    assert named["step_time_s"] / module_inputs["step_time_s"] == pytest.approx(1.016, abs=0.002)
    assert named["hfu"] / named["mfu"] > module_inputs["hfu"] / module_inputs["mfu"]
    # norms kept (their outputs, and so the residual): nothing to rebuild
    kept = dict(recompute_norms=0.0)
    assert _maxtext_70b_tpu7x(**kept)["activation_bytes"] == pytest.approx(
        _maxtext_70b_tpu7x(remat_keeps_named_only=0.0, **kept)["activation_bytes"], rel=1e-12)
    assert _maxtext_70b_tpu7x(**kept)["step_time_s"] == pytest.approx(
        _maxtext_70b_tpu7x(remat_keeps_named_only=0.0, **kept)["step_time_s"], rel=1e-12)


def test_xla_on_a_tpu_withholds_less_memory_than_a_cuda_runtime():
    # XLA:TPU assigns buffers at compile time: the runtime keeps 0.75 GiB of a 32 GiB chip
    # (a TensorCore), not the CUDA context, NCCL buffers and allocator slack of a GPU stack
    tpu = _maxtext_70b_v6e()
    cuda_reserve = _maxtext_70b_v6e(memory_reserve_bytes=2.8e9)
    assert tpu["reserve_bytes"] == 0.75 * 2**30
    assert cuda_reserve["memory_per_gpu_bytes"] - tpu["memory_per_gpu_bytes"] == \
        pytest.approx(2.8e9 - 0.75 * 2**30, rel=1e-9)
    # MaxText on a GPU keeps the execution default; TPU7x's two TensorCores withhold twice
    from hardware_catalog import load_catalog
    from planner.engine.inputs.scenario import execution_defaults, stack_inputs

    stack = load_catalog().stack("maxtext-xla")
    assert stack_inputs(stack, "h100-sxm")["memory_reserve_bytes"] == \
        execution_defaults()["memory_reserve_bytes"]
    assert stack_inputs(stack, "tpu-v7")["memory_reserve_bytes"] == 1.5 * 2**30
