"""The H100 of torchtitan's benchmark tables (Meta Grand Teton: 96 GB HBM2e at 2.4 TB/s,
500 W power limit) is its own catalog part, not the 80 GB / 700 W h100-sxm."""

from __future__ import annotations

import pytest

from hardware_catalog import load_catalog
from planner.analysis import validate
from planner.engine.layouts.evaluator import evaluate

GT, SXM = "gt-h100-96gb", "h100-sxm"


def test_part_states_what_the_benchmark_states():
    acc = load_catalog().accelerator(GT)
    assert acc.hbm_bandwidth_bytes_per_s.value == 2.4e12
    assert acc.hbm_bytes.value == 96e9
    assert acc.max_power_w.value == 500
    # the peak "between SXM and NVL" (NVL dense BF16: 1,671 / 2 TFLOP/s), an estimate
    sxm = load_catalog().accelerator(SXM)
    for name, nvl in (("peak_bf16_flops_per_s", 835.5e12), ("peak_fp8_flops_per_s", 1670.5e12)):
        q = getattr(acc, name)
        assert nvl < q.value < getattr(sxm, name).value and q.estimate
    # same GH100 silicon: the fitted efficiencies are h100-sxm's
    assert acc.gemm_max_efficiency.value == sxm.gemm_max_efficiency.value


def test_grand_teton_rows_run_on_it_and_no_other_row_does():
    cases = validate.load_independent_runs()
    gt = cases[cases.hardware == GT]
    assert len(gt) == 30 and gt.notes.str.contains("Grand Teton").all()
    assert not cases[cases.hardware != GT].notes.str.contains("Grand Teton").any()
    for name in ("modern-runs", "moe-runs"):
        assert (validate.load_cases([name]).hardware != GT).all()


def test_slower_than_the_sxm_part_most_where_memory_bound():
    # Llama 3 8B FSDP on 8 GPUs, eager (element-wise traffic 2.4x): the GEMM peak is 7.8 %
    # lower and the HBM 28 % slower, so the step is slower by more than the peak ratio
    # alone and by less than the bandwidth ratio
    run = dict(model="llama3-8b", gpus=8, tp=1, pp=1, vp=1, cp=1, global_batch=16,
               micro_batch=2, seq_len=8192, recompute="selective", zero=3, tokens=1e12,
               reliability="benchmark", precision="bf16", stack="torchtitan-fsdp2-eager")
    t = {hw: evaluate(**run, hardware=hw).iloc[0]["compute_s"] for hw in (GT, SXM)}
    ratio = t[GT] / t[SXM]
    assert 989.4 / 912.5 < ratio < 3.35 / 2.4
    assert ratio == pytest.approx(1.13, abs=0.03)
