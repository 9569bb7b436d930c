"""Full activation recompute: what a checkpoint runs again (formulas.compute and the model)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import compute


def test_checkpointed_layer_recompute_time_skips_the_last_matmul_only_when_early():
    assert compute.checkpointed_layer_recompute_time(3e-3, 1e-3, 0) == pytest.approx(3e-3)
    assert compute.checkpointed_layer_recompute_time(3e-3, 1e-3, 1) == pytest.approx(2e-3)
    # scalar, array and Series alike
    layer, last = np.array([3e-3, 6e-3]), np.array([1e-3, 2e-3])
    np.testing.assert_allclose(compute.checkpointed_layer_recompute_time(layer, last, 1),
                               [2e-3, 4e-3])
    series = compute.checkpointed_layer_recompute_time(pd.Series(layer), pd.Series(last), 1)
    np.testing.assert_allclose(series.to_numpy(), [2e-3, 4e-3])


@given(layer=st.floats(1e-6, 1.0), share=st.floats(0.0, 1.0))
def test_early_stop_never_recomputes_more(layer, share):
    last = share * layer
    early = compute.checkpointed_layer_recompute_time(layer, last, 1)
    assert 0 <= early <= compute.checkpointed_layer_recompute_time(layer, last, 0)


def _llama3_8b_full(**kw):
    from planner.engine.layouts.evaluator import evaluate

    # torchtitan's long-context layout (benchmarks/llama3_h100_202412_torchtitan.md):
    # Llama 3 8B, FSDP on 8 H100 96 GB, full AC
    args = dict(model="llama3-8b", hardware="gt-h100-96gb", gpus=8, tp=1, pp=1, zero=3,
                micro_batch=1, global_batch=8, seq_len=32768, recompute="full",
                stack="torchtitan-fsdp2", reliability="benchmark")
    args.update(kw)
    return evaluate(**args).iloc[0]


def test_torchtitans_full_ac_skips_each_layers_down_projection():
    # ptd_checkpoint_wrapper is non-reentrant: its recomputation stops once the down
    # projection's input, the last tensor the block's backward needs, is back
    early = _llama3_8b_full()
    whole = _llama3_8b_full(overrides={"recompute_early_stop": 0.0})
    h, f, layers = 4096, 14336, 32
    hardware = {k: r["hfu"] / r["mfu"] * r["model_flops_per_token"]
                for k, r in (("early", early), ("whole", whole))}
    assert hardware["whole"] - hardware["early"] == pytest.approx(2 * layers * h * f, rel=1e-9)
    assert early["model_flops_per_token"] == whole["model_flops_per_token"]
    assert early["compute_s"] < whole["compute_s"]
    # the same tensors are kept either way
    assert early["memory_per_gpu_bytes"] == whole["memory_per_gpu_bytes"]


def test_megatrons_reentrant_checkpoint_reruns_the_whole_layer():
    from planner.engine.layouts.evaluator import evaluate

    args = dict(model="llama3-8b", hardware="h100-sxm", gpus=8, tp=1, pp=1, micro_batch=1,
                global_batch=8, seq_len=8192, recompute="full", stack="megatron-core-2025",
                reliability="benchmark")
    default = evaluate(**args).iloc[0]
    early = evaluate(overrides={"recompute_early_stop": 1.0}, **args).iloc[0]
    assert early["compute_s"] < default["compute_s"]
    # the default (0) is the whole forward again: hardware FLOPs 4/3 of the model's, less
    # the logits (not recomputed)
    assert default["hfu"] / default["mfu"] == pytest.approx(4 / 3, rel=0.03)


def test_a_frozen_base_keeps_the_whole_recompute():
    # LoRA's adapter on the down projection runs after the frozen GEMM and saves its input
    # last: the frozen GEMM is re-run whatever the checkpoint
    lora = dict(method="lora", lora_rank=16, lora_targets="all-linear")
    early = _llama3_8b_full(**lora)
    whole = _llama3_8b_full(overrides={"recompute_early_stop": 0.0}, **lora)
    assert early["compute_s"] == pytest.approx(whole["compute_s"], rel=1e-12)


def test_selective_recompute_without_flash_moves_the_scores_twice():
    # Korthikanti et al. 2022 (arXiv:2205.05198) Table 5's 22B (Megatron-LM on 8 A100s, TP 8,
    # no flash attention, sequence parallel): the s x s scores (softmax, dropout mask and
    # output) go through HBM in the forward whether or not they are kept, and again when
    # selective recompute reruns the core, so selective costs more than keeping them
    from planner.analysis import validate as v

    cases = v.load_cases(["sc21"]).set_index("case_id", drop=False)
    row = cases.loc[["korthikanti-22b-seqsel"]]
    kept = row.assign(recompute="none", case_id="kept")
    pred = v.predict(pd.concat([row, kept], ignore_index=True)).set_index("case_id")
    assert pred.step_time_s["korthikanti-22b-seqsel"] > pred.step_time_s["kept"]
    # Table 5: 1.10 s per iteration
    assert pred.step_time_s["korthikanti-22b-seqsel"] == pytest.approx(1.10, rel=0.08)


@settings(max_examples=25, deadline=None)
@given(model=st.sampled_from(["llama3-8b", "llama3-70b", "gpt3-175b", "mixtral-8x7b"]),
       hardware=st.sampled_from(["a100-80gb", "h100-sxm", "b200", "mi300x"]),
       tp=st.sampled_from([1, 2, 8]), micro_batch=st.sampled_from([1, 4]),
       flash=st.booleans(), sequence_parallel=st.booleans(),
       stack=st.sampled_from(["megatron-core-2025", "megatron-lm-2021", "torchtitan-fsdp2"]))
def test_more_recompute_never_shortens_the_step(model, hardware, tp, micro_batch, flash,
                                                sequence_parallel, stack):
    # none <= selective <= full: each reruns a superset of the forward work the one before
    # does (with flash off, selective's rerun core moves its s x s scores again)
    from planner.engine.layouts.evaluator import evaluate

    steps = [evaluate(model=model, hardware=hardware, gpus=64, tp=tp, pp=2, cp=1, ep=1, vp=1,
                      zero=1,
                      micro_batch=micro_batch, global_batch=256, seq_len=4096,
                      recompute=recompute, flash_attention=flash,
                      sequence_parallel=sequence_parallel and tp > 1, stack=stack,
                      reliability="benchmark").iloc[0]["step_time_s"]
             for recompute in ("none", "selective", "full")]
    assert steps[0] <= steps[1] * (1 + 1e-9) and steps[1] <= steps[2] * (1 + 1e-9)
