"""A stack left out is the accelerator's (catalog field ``default_stack``): MaxText on the
TPUs, where Megatron-Core (a CUDA stack) does not run; for a dense model the part's
``default_dense_stack`` (Blackwell: megatron-bridge-2025, whole-iteration CUDA graphs);
megatron-core-2025 elsewhere."""

from __future__ import annotations

import json

import pytest

from hardware_catalog import load_catalog
from planner import evaluate
from planner.cli.main import main
from planner.engine.inputs.assumptions import stack_label
from planner.engine.inputs.defaults import DEFAULTS, MOE_STACK, default_stack

TPU_RUN = dict(model="llama3.1-70b", hardware="tpu-v6e", gpus=256, global_batch=256,
               seq_len=8192, tp=4, pp=1, cp=1, ep=1, vp=1, micro_batch=1,
               reliability="benchmark", as_frame=False)


@pytest.mark.parametrize("part", ["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7"])
def test_every_tpu_defaults_to_maxtext(part):
    assert default_stack(load_catalog().accelerator(part)) == "maxtext-xla"


@pytest.mark.parametrize("part", ["h100-sxm", "h200", "mi355x", "gaudi3", "trn2"])
def test_other_parts_keep_the_planner_default(part):
    assert default_stack(load_catalog().accelerator(part)) == DEFAULTS["stack"]


@pytest.mark.parametrize("part", ["b200", "gb200", "b300", "gb300"])
def test_blackwell_dense_models_take_the_graphed_stack_and_moe_models_the_moe_stack(part):
    accelerator = load_catalog().accelerator(part)
    assert default_stack(accelerator) == "megatron-bridge-2025"
    assert default_stack(accelerator, moe=True) == MOE_STACK


def test_a_small_model_at_a_small_batch_on_blackwell_is_not_timed_host_bound():
    """Llama 3.1 8B, 64 sequences on 512 GB200: eager launches outlast the GPU's work (the
    eager stack's step is launch-bound), NVIDIA's whole-iteration graph removes them."""
    run = dict(model="llama3.1-8b", hardware="gb200", gpus=512, global_batch=64,
               seq_len=8192, tp=4, pp=1, cp=2, ep=1, vp=1, micro_batch=1,
               precision="fp8", reliability="benchmark", as_frame=False)
    left_out = evaluate(**run)
    eager = evaluate(**run, stack="megatron-core-2025")
    assert left_out["stack"] == "megatron-bridge-2025"
    assert left_out["step_time_s"] == evaluate(**run, stack="megatron-bridge-2025")["step_time_s"]
    assert eager["launch_s"] > eager["compute_s"]
    assert left_out["launch_s"] < 1e-3 * left_out["step_time_s"]
    assert left_out["step_time_s"] < 0.5 * eager["step_time_s"]


def test_a_tpu_run_without_a_stack_is_the_maxtext_run():
    left_out = evaluate(**TPU_RUN)
    named = evaluate(**TPU_RUN, stack="maxtext-xla")
    megatron = evaluate(**TPU_RUN, stack="megatron-core-2025")
    assert left_out["stack"] == "maxtext-xla"
    assert left_out["step_time_s"] == named["step_time_s"]
    assert left_out["step_time_s"] != megatron["step_time_s"]


def test_a_gpu_run_without_a_stack_is_unchanged():
    run = dict(model="llama3-8b", hardware="h100-sxm", gpus=8, tp=1, pp=1, cp=1, ep=1, vp=1,
               micro_batch=1, reliability="benchmark", as_frame=False)
    assert evaluate(**run)["stack"] == DEFAULTS["stack"]
    assert evaluate(**run)["step_time_s"] == evaluate(**run, stack=DEFAULTS["stack"])[
        "step_time_s"]


def test_int8_on_a_tpu_runs_without_naming_the_stack(capsys):
    code = main(["evaluate", "-m", "gpt3-175b", "-H", "tpu-v5p", "-n", "1024", "--tp", "4",
                 "--pp", "1", "--cp", "1", "--ep", "1", "--vp", "1", "--micro-batch", "1",
                 "--global-batch", "1536", "--seq-len", "2048", "--precision", "int8",
                 "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload = json.loads(out)
    text = json.dumps(payload)
    assert '"stack": "maxtext-xla"' in text
    assert "stack maxtext-xla" in err  # the assumptions line names it
    # no CUDA stack is offered as the alternative on a TPU
    assert "--stack torchtitan-fsdp2" not in err


def test_a_plan_over_gpus_and_tpus_names_each_parts_stack():
    catalog = load_catalog()
    assert stack_label(catalog, None, ["h100-sxm", "tpu-v6e"]) == \
        "megatron-core-2025 (maxtext-xla on tpu-v6e)"
    assert stack_label(catalog, None, ["tpu-v6e", "tpu-v7"]) == "maxtext-xla"
    assert stack_label(catalog, "torchtitan-fsdp2", ["tpu-v6e"]) == "torchtitan-fsdp2"
    assert stack_label(catalog, None, ["h100-sxm", "h200", "gb200"]) == \
        "megatron-core-2025 (megatron-bridge-2025 on gb200)"
    assert stack_label(catalog, None, ["gb200"], model="deepseek-v3") == MOE_STACK


def test_a_default_stack_that_is_no_stack_is_refused(tmp_path):
    from hardware_catalog.loader import CatalogError

    source = (load_catalog().origins[("accelerator", "tpu-v6e")]).read_text()
    (tmp_path / "tpu.toml").write_text(
        source.replace('default_stack = "maxtext-xla"', 'default_stack = "maxtxt-xla"'))
    with pytest.raises(CatalogError, match="default_stack.*maxtext-xla"):
        load_catalog((str(tmp_path),))


def test_an_moe_model_left_without_a_stack_runs_the_tuned_moe_stack():
    from planner.engine.inputs.defaults import MOE_STACK

    run = dict(model="mixtral-8x7b", gpus=64, tp=2, pp=1, cp=1, ep=8, vp=1, micro_batch=1,
               global_batch=256, seq_len=4096, reliability="benchmark", as_frame=False)
    gpu = evaluate(**run, hardware="h100-sxm")
    assert gpu["stack"] == MOE_STACK
    assert gpu["step_time_s"] == evaluate(**run, hardware="h100-sxm", stack=MOE_STACK)[
        "step_time_s"]
    # a part with its own stack keeps it for MoE models too
    assert evaluate(**run, hardware="tpu-v6e")["stack"] == "maxtext-xla"
    assert stack_label(load_catalog(), None, ["h100-sxm", "tpu-v6e"], "mixtral-8x7b") == \
        f"{MOE_STACK} (maxtext-xla on tpu-v6e)"


def test_sweep_states_the_stack_each_part_ran_on(capsys):
    code = main(["sweep", "-m", "mixtral-8x7b", "-H", "h100-sxm,tpu-v6e", "--max-gpus", "64",
                 "-f", "json"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert json.loads(out)["stack"] == "megatron-core-moe-tuned (maxtext-xla on tpu-v6e)"


def test_a_default_dense_stack_that_is_no_stack_is_refused(tmp_path):
    from hardware_catalog.loader import CatalogError

    source = (load_catalog().origins[("accelerator", "gb200")]).read_text()
    (tmp_path / "gb200.toml").write_text(
        source.replace('default_dense_stack = "megatron-bridge-2025"',
                       'default_dense_stack = "megatron-bridge-2052"'))
    with pytest.raises(CatalogError, match="default_dense_stack.*megatron-bridge-2025"):
        load_catalog((str(tmp_path),))
