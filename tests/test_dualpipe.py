"""DeepSeek's DualPipe schedule and the experts' activation-function recompute (issue 27):
the formulas against DeepSeek-V3's Table 2, the layout rules of deepseek-ai/DualPipe, and
what the run model does with them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import memory, pipeline
from planner.engine.layouts.evaluator import evaluate
from planner.engine.layouts.space import SpaceOptions, enumerate_layouts
from planner.errors import CapplanError

DEEPSEEK = dict(model="deepseek-v3", hardware="h800", gpus=2048, tp=1, pp=16, vp=1, cp=1,
                ep=64, etp=1, global_batch=15360, micro_batch=1, seq_len=4096,
                recompute="selective", zero=1, precision="fp8", stack="deepseek-hai-llm-2024",
                tokens=14.8e12, reliability="benchmark")

# ---- formulas ------------------------------------------------------------------------


def test_dualpipe_bubble_is_table_2s():
    # arXiv:2412.19437 Table 2 / DualPipe README: (PP/2 - 1)(F&B + B - 3W), B a full
    # backward, F&B = F + B; with F = 1, B = 2, W = 1 on 8 ranks: 3 x 2 chunk times,
    # against 1F1B's (PP - 1)(F + B) = 21
    assert pipeline.bubble_time_dualpipe(8, 1.0, 2.0, 1.0) == pytest.approx(6.0)
    assert pipeline.bubble_time_dualpipe(2, 1.0, 2.0, 1.0) == 0.0  # one rank per direction
    # a backward no longer than its weight part plus a third of the forward: no idle time
    assert pipeline.bubble_time_dualpipe(16, 1.0, 1.0, 1.0) == 0.0


@settings(max_examples=80, deadline=None)
@given(half=st.integers(1, 64), forward=st.floats(1e-3, 10), backward=st.floats(1e-3, 30),
       weight=st.floats(0, 1))
def test_dualpipe_bubble_never_exceeds_1f1b_and_grows_with_ranks(half, forward, backward,
                                                                 weight):
    pp, w = 2 * half, weight * backward  # the weight part is part of the backward
    dual = pipeline.bubble_time_dualpipe(pp, forward, backward, w)
    assert 0 <= dual <= (pp - 1) * (forward + backward) + 1e-12
    assert pipeline.bubble_time_dualpipe(pp + 2, forward, backward, w) >= dual


def test_dualpipe_holds_one_more_micro_batch_than_1f1b():
    for pp, m in ((16, 120), (8, 20), (4, 64)):
        assert memory.dualpipe_inflight_chunks(pp, m) == memory.pipeline_inflight_chunks(
            pp, 1, m) + 1


def test_activation_function_saving_is_nothing_by_default_and_never_above_the_count():
    args = (4096, 1, 2048, 8, 1, 3, 1, 1, 0)
    assert memory.moe_activation_function_saving_bytes(*args, 1, 2, 0) == 0.0
    total = memory.moe_mlp_activation_bytes(4096, 1, 7168, 2048, 8, 1, 3, 1, 1, 0, 1)
    # DeepSeek-V3 s3.3.3: SwiGLU input in FP8 (1 of 2 bytes for each of its 2 inputs) and
    # its output (the FP8 down-projection input, 1 byte) recomputed: 3 bytes of the
    # experts' 5 per element of width, 9 x 2,048 wide per token
    saved = memory.moe_activation_function_saving_bytes(*args, 1, 1, 1)
    assert saved == pytest.approx(4096 * 9 * 2048 * 3)
    assert saved < total


@settings(max_examples=60, deadline=None)
@given(tokens=st.integers(1, 65536), f=st.integers(64, 8192), k=st.integers(1, 16),
       shared=st.integers(0, 2), matrices=st.sampled_from([2, 3]),
       tp=st.sampled_from([1, 2, 4, 8]), etp=st.sampled_from([1, 2, 4]),
       sp=st.sampled_from([0, 1]), c=st.sampled_from([1, 2]), a=st.sampled_from([1, 2]),
       r=st.sampled_from([0, 1]))
def test_activation_function_saving_stays_within_the_experts_activations(
        tokens, f, k, shared, matrices, tp, etp, sp, c, a, r):
    saved = memory.moe_activation_function_saving_bytes(tokens, 1, f, k, shared, matrices, tp,
                                                        etp, sp, c, a, r)
    kept = memory.moe_mlp_activation_bytes(tokens, 1, 4096, f, k, shared, matrices, tp, etp,
                                           sp, c)
    assert 0 <= saved <= kept


# ---- layout rules (deepseek-ai/DualPipe dualpipe.py, DualPipe.step) ---------------------


@pytest.mark.parametrize(("change", "words"), [
    (dict(pp=8, vp=2), "no virtual stages"),
    (dict(gpus=1920, pp=15), "even --pp"),
    (dict(global_batch=3072), r"at least 2\*PP = 32 micro-batches, got 24"),
])
def test_dualpipe_layout_rules_name_what_to_change(change, words):
    with pytest.raises(CapplanError, match=words):
        evaluate(**{**DEEPSEEK, **change})


def test_the_search_keeps_dualpipe_layouts_only():
    common = dict(layers=61, heads=128, kv_heads=128, seq_len=4096, experts=256,
                  global_batch=1536, gpus_per_node=8, scale_up_domain=8)
    options = SpaceOptions(min_gpus=64, max_gpus=512, tp=(1,), ep=(8,), etp=(1,),
                           micro_batch=(1, 2), recompute=("selective",), zero=(1,), hsdp=(0,),
                           sequence_parallel=(0,))
    plain = enumerate_layouts(**common, options=options)
    dual = enumerate_layouts(**common, options=SpaceOptions(**{**options.__dict__,
                                                               "dualpipe": 1}))
    m = 1536 // (dual["dp"] * dual["micro_batch"])
    assert dual["gpus"].size and (dual["vp"] == 1).all() and (dual["pp"] % 2 == 0).all()
    assert ((m % 2 == 0) & (m >= 2 * dual["pp"])).all()
    assert 0 < dual["gpus"].size < plain["gpus"].size


# ---- the run model -------------------------------------------------------------------


@pytest.fixture(scope="module")
def deepseek_v3():
    """DeepSeek-V3's published layout on its own stack, and the same with 1F1B and the
    experts' activation function kept as Megatron-Core keeps it."""
    dual = evaluate(**DEEPSEEK).iloc[0]
    plain = evaluate(**DEEPSEEK, overrides={"dualpipe": 0.0, "recompute_moe_act": 0.0,
                                            "moe_act_input_bytes": 2.0}).iloc[0]
    return dual, plain


def test_dualpipe_shrinks_the_bubble_and_hides_the_pipeline_transfers(deepseek_v3):
    dual, plain = deepseek_v3
    assert dual["pp_comm_s"] == 0.0 < plain["pp_comm_s"]
    # 1F1B: 15 x (F + B); DualPipe: 7 x (F + 2B - 3W), 0.31 of it where W = F = B/2 (all
    # GEMMs), 0.78 where W = 0; DeepSeek-V3's attention core has no weight part: ~0.5
    assert 0.31 * plain["bubble_s"] < dual["bubble_s"] < 0.6 * plain["bubble_s"]


def test_dualpipe_keeps_two_copies_of_the_parameters(deepseek_v3):
    dual, plain = deepseek_v3
    for term in ("weights_bytes", "grads_bytes", "optimizer_state_bytes"):
        assert dual[term] == pytest.approx(2 * plain[term], rel=1e-12)


def test_deepseek_v3_fits_with_dualpipe_by_its_fp8_activation_function(deepseek_v3):
    # two parameter copies and PP + 1 micro-batches in flight fit in 80 GB because the
    # experts' SwiGLU input is cached in FP8 and its output recomputed (s3.3.3): 216 of
    # the experts' 584 MiB per layer and micro-batch
    dual, plain = deepseek_v3
    assert dual["fits"] and dual["memory_per_gpu_bytes"] < 80e9
    assert dual["activation_bytes"] < plain["activation_bytes"]


def test_the_rules_context_is_built_in_one_place():
    # every name a layout rule reads is a layout size or a context number, and the one
    # builder (layout_rules.rule_context) gives the search and a user's layout the same
    from planner.engine.inputs.layout_rules import (
        CONTEXT_NAMES,
        DIMENSIONS,
        LAYOUT_RULE_NAMES,
        rule_context,
    )
    from planner.engine.layouts.layout_check import context_of

    sizes = {d.name for d in DIMENSIONS}  # the layout's declared dimensions
    assert LAYOUT_RULE_NAMES - sizes == set(CONTEXT_NAMES)
    x = {"scale_up_domain_gpus": 8.0, "heads": 128.0, "kv_heads": 128.0, "layers": 61.0,
         "seq_len": 4096.0, "experts": 256.0, "global_batch": 15360.0, "dualpipe": 1.0}
    assert context_of(x) == rule_context(domain=8, heads=128, kv_heads=128, layers=61,
                                         seq_len=4096, experts=256, dualpipe=1)
    assert context_of({k: v for k, v in x.items() if k != "dualpipe"})["dualpipe"] == 0
