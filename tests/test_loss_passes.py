"""The cross-entropy loss's memory-bound passes over the logits (issue 42): every stack's
loss kernel reads and writes each logit a number of times (``loss_bytes_per_logit``), which
costs a small model with a large vocabulary several per cent of its step."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import compute
from hardware_catalog import load_catalog
from hardware_catalog.schema import Quantity, SoftwareStack
from planner.engine.layouts.evaluator import evaluate

#: Llama 3.2 1B-sized run on 8 H100s (vocabulary 128,256): the loss is a visible share
SMALL = dict(model="llama3-8b", hardware="h100-sxm", gpus=8, tp=1, pp=1, vp=1, cp=1,
             global_batch=64, micro_batch=1, seq_len=8192, recompute="selective", zero=1,
             tokens=1e12, reliability="benchmark", precision="bf16")


def _passes(reads_writes) -> float:
    """Bytes a logit over a list of (bytes read, bytes written) kernel passes."""
    return float(sum(r + w for r, w in reads_writes))


def test_megatron_counts_are_the_kernels_passes():
    # megatron/core/tensor_parallel/cross_entropy.py on output.float() (unfused) and the four
    # jit-fused kernels of megatron/core/fusions/fused_cross_entropy.py
    unfused = _passes([(2, 4), (4, 0), (4, 4), (4, 4), (4, 0), (4, 4), (4, 4), (4, 2)])
    fused = _passes([(2, 4), (4, 4), (4, 4), (4, 2)])
    catalog = load_catalog()
    assert catalog.stack("megatron-lm-2021").loss_bytes_per_logit.value == unfused == 52
    # the default (execution.toml) is Megatron-Core's fused loss, which its stacks inherit
    assert catalog.stack("megatron-core-2025").loss_bytes_per_logit is None
    q = evaluate(**SMALL, stack="megatron-core-2025", overrides={"loss_bytes_per_logit": fused})
    p = evaluate(**SMALL, stack="megatron-core-2025")
    assert q.iloc[0]["step_time_s"] == pytest.approx(p.iloc[0]["step_time_s"], rel=1e-12)


def test_eager_pytorch_count_is_its_passes():
    # F.cross_entropy(x.float()): cast, log-softmax forward (3 reads, 1 write), NLL backward's
    # zero-filled gradient, log-softmax backward (3 reads, 1 write), cast back
    eager = _passes([(2, 4), (12, 4), (0, 4), (12, 4), (4, 2)])
    assert load_catalog().stack("torchtitan-fsdp2").loss_bytes_per_logit.value == eager == 48


def test_formula_example_and_symbolic_form():
    # Llama 3 8B: 8,192 tokens x 128,256 logits x 28 B = 29.4 GB on one rank
    assert compute.cross_entropy_loss_bytes(8192, 128256, 1, 28) == pytest.approx(29.42e9,
                                                                                 rel=1e-3)
    t, v, tp, e = sympy.symbols("t V t_p e_L", positive=True)
    expr = compute.cross_entropy_loss_bytes(t, v, tp, e)
    assert sympy.simplify(expr - e * t * v / tp) == 0
    values = {t: 4096, v: 50368, tp: 2, e: 8}
    assert float(expr.subs(values)) == pytest.approx(
        compute.cross_entropy_loss_bytes(4096, 50368, 2, 8), rel=1e-12)


def test_formula_runs_on_scalars_arrays_and_series():
    tokens = np.array([1024.0, 4096.0, 8192.0])
    scalar = [compute.cross_entropy_loss_bytes(x, 128256, 2, 28) for x in tokens]
    array = compute.cross_entropy_loss_bytes(tokens, 128256, 2, 28)
    series = compute.cross_entropy_loss_bytes(pd.Series(tokens), 128256, 2, 28)
    np.testing.assert_allclose(array, scalar, rtol=1e-12)
    np.testing.assert_allclose(series.to_numpy(), scalar, rtol=1e-12)
    assert isinstance(series, pd.Series)


def test_loss_time_is_the_memory_roof_of_its_bytes():
    # compute grows by exactly the loss bytes over the HBM roof, once per micro-batch
    acc = load_catalog().accelerator("h100-sxm")
    roof = acc.hbm_bandwidth_bytes_per_s.value * acc.hbm_efficiency.value
    base = evaluate(**SMALL, overrides={"loss_bytes_per_logit": 0.0}).iloc[0]
    more = evaluate(**SMALL, overrides={"loss_bytes_per_logit": 48.0}).iloc[0]
    microbatches = SMALL["global_batch"] / SMALL["gpus"] / SMALL["micro_batch"]
    expected = microbatches * compute.cross_entropy_loss_bytes(8192, 128256, 1, 48.0) / roof
    assert more["compute_s"] - base["compute_s"] == pytest.approx(expected, rel=1e-9)


def test_tensor_parallel_splits_the_loss_over_the_vocabulary():
    args = {**SMALL, "gpus": 8, "tp": 4, "global_batch": 16}
    lo = evaluate(**args, overrides={"loss_bytes_per_logit": 0.0}).iloc[0]["compute_s"]
    hi = evaluate(**args, overrides={"loss_bytes_per_logit": 48.0}).iloc[0]["compute_s"]
    one = evaluate(**{**args, "tp": 1, "global_batch": 64},
                   overrides={"loss_bytes_per_logit": 0.0}).iloc[0]["compute_s"]
    one_hi = evaluate(**{**args, "tp": 1, "global_batch": 64},
                      overrides={"loss_bytes_per_logit": 48.0}).iloc[0]["compute_s"]
    # TP 4: a quarter of the vocabulary on each rank, same micro-batches per rank (16/2 = 8)
    assert (hi - lo) == pytest.approx((one_hi - one) / 4, rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(a=st.floats(0.0, 64.0), b=st.floats(0.0, 64.0))
def test_step_time_grows_with_the_loss_traffic(a, b):
    lo, hi = sorted((a, b))
    t = [evaluate(**SMALL, overrides={"loss_bytes_per_logit": x}).iloc[0]["step_time_s"]
         for x in (lo, hi)]
    assert t[1] >= t[0] - 1e-12


def test_eager_loss_costs_a_small_model_several_per_cent():
    # Llama 3 8B at 8k tokens, one micro-batch: the eager loss (48 B) is 2-8 % of the
    # compute on H100, Megatron-Core's fused one (28 B) about 0.6x of that
    base = evaluate(**SMALL, overrides={"loss_bytes_per_logit": 0.0}).iloc[0]["compute_s"]
    eager = evaluate(**SMALL, overrides={"loss_bytes_per_logit": 48.0}).iloc[0]["compute_s"]
    assert 0.02 < eager / base - 1 < 0.08


def test_a_user_stack_with_a_bad_count_is_refused():
    stack = load_catalog().stack("torchtitan-fsdp2")
    data = stack.model_dump()
    q = Quantity(value=500.0, source="test", as_of=datetime.date(2026, 11, 30))
    data["loss_bytes_per_logit"] = q.model_dump()
    with pytest.raises(ValueError, match="loss_bytes_per_logit.value"):
        SoftwareStack.model_validate(data)
