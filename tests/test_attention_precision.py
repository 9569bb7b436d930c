"""The fused attention core runs in BF16 under FP8 and FP4 recipes (issue 27).

Transformer Engine's FP8 dot-product attention is opt-in (``fp8_dpa=False`` in its
recipes); DeepSeek-V3 keeps "attention operators" in BF16 (arXiv:2412.19437 s3.3).  So
an FP8 run's linear layers run at the FP8 peak and its attention core at the BF16 peak.
"""

from __future__ import annotations

import pytest

from hardware_catalog import load_catalog
from planner.engine.inputs.scenario import attention_precision, hardware_inputs
from planner.engine.layouts.evaluator import evaluate
from planner.engine.search.codesign import PARAMETERS, kernel_inputs
from planner.errors import CapplanError

RUN = dict(model="llama3-70b", hardware="h100-sxm", gpus=64, tp=8, pp=2, vp=1, cp=1,
           global_batch=128, micro_batch=1, seq_len=8192, recompute="selective", zero=1,
           tokens=1e12, reliability="benchmark")


@pytest.fixture(scope="module")
def h100():
    catalog = load_catalog()
    acc = catalog.accelerator("h100-sxm")
    return acc, catalog.node(acc.node)


@pytest.mark.parametrize("precision, core", [("fp8", "bf16"), ("fp4", "bf16"),
                                              ("bf16", "bf16"), ("tf32", "tf32")])
def test_the_core_runs_in_bf16_under_fp8_and_fp4_only(precision, core):
    assert attention_precision(precision) == core


def test_an_fp8_runs_attention_peak_is_the_bf16_peak(h100):
    acc, node = h100
    fp8 = hardware_inputs(acc, node, "fp8")
    bf16 = hardware_inputs(acc, node, "bf16")
    assert fp8["peak_flops_per_s"] == acc.peak_fp8_flops_per_s.value
    assert fp8["attention_peak_flops_per_s"] == acc.peak_bf16_flops_per_s.value
    assert bf16["attention_peak_flops_per_s"] == bf16["peak_flops_per_s"]


def test_an_fp8_runs_attention_core_is_timed_at_the_bf16_peak(h100):
    acc, _ = h100
    bf16_peak, fp8_peak = acc.peak_bf16_flops_per_s.value, acc.peak_fp8_flops_per_s.value
    default = evaluate(**RUN, precision="fp8").iloc[0]
    at_bf16 = evaluate(**RUN, precision="fp8",
                       overrides={"attention_peak_flops_per_s": bf16_peak}).iloc[0]
    at_fp8 = evaluate(**RUN, precision="fp8",
                      overrides={"attention_peak_flops_per_s": fp8_peak}).iloc[0]
    assert default["compute_s"] == pytest.approx(at_bf16["compute_s"], rel=1e-12)
    # the core alone at the FP8 peak (the model before this change) is faster, by less
    # than the whole step's compute: the GEMMs already ran at the FP8 peak
    assert at_fp8["compute_s"] < default["compute_s"] < 1.5 * at_fp8["compute_s"]


def test_a_bf16_run_is_unchanged_by_the_attention_peak_input(h100):
    acc, _ = h100
    default = evaluate(**RUN, precision="bf16").iloc[0]
    same = evaluate(**RUN, precision="bf16", overrides={
        "attention_peak_flops_per_s": acc.peak_bf16_flops_per_s.value}).iloc[0]
    assert default["step_time_s"] == pytest.approx(same["step_time_s"], rel=1e-12)


def test_codesign_peaks_reach_the_kernel_inputs_the_run_uses():
    bf16, fp8 = PARAMETERS["peak_bf16_flops_per_s"], PARAMETERS["peak_fp8_flops_per_s"]
    assert kernel_inputs(bf16, "bf16") == ("peak_flops_per_s", "attention_peak_flops_per_s")
    assert kernel_inputs(bf16, "fp8") == ("attention_peak_flops_per_s",)
    assert kernel_inputs(fp8, "fp8") == ("peak_flops_per_s",)
    with pytest.raises(CapplanError, match="precision bf16"):
        kernel_inputs(fp8, "bf16")
    assert kernel_inputs(PARAMETERS["hbm_bytes"], "fp8") == ("hbm_bytes",)
