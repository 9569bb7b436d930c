"""Megatron-Core's recompute modules ``mlp`` and ``moe`` (stack fields ``recompute_mlp`` and
``recompute_moe``): what each frees, and what each costs again in backward, checked by hand
against the formulas the run model composes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import memory
from hardware_catalog import load_catalog
from planner.engine.layouts.evaluator import _added_modules, evaluate
from planner.engine.run.run_inputs import RunChoices, base_inputs

#: DeepSeek-V3 on 256 H100 as NVIDIA's baseline MoE stack runs it: 4 pipeline stages of
#: 16 layers (the first holds the 3 dense ones), EP 64, BF16.
DSV3 = dict(model="deepseek-v3", hardware="h100-sxm", gpus=256, tp=1, pp=4, vp=1, cp=1,
            ep=64, etp=1, global_batch=2048, micro_batch=1, seq_len=4096,
            recompute="selective", zero=1, precision="bf16",
            stack="megatron-core-moe-baseline", tokens=1e12, reliability="benchmark")
S, H = 4096, 7168


@pytest.fixture(scope="module")
def runs():
    """The layout as it is, with the dense MLPs recomputed, and with the MoE layers."""
    return {name: evaluate(**DSV3, overrides=over).iloc[0] for name, over in (
        ("kept", {}), ("mlp", {"recompute_mlp": 1.0}), ("moe", {"recompute_moe": 1.0}))}


#: The run model's average layer over the fullest stage: 16 layers (ceil(61 / 4)), each
#: 58/61 MoE, 3/61 dense; the first rank, the busiest, keeps PP = 4 micro-batches in flight
#: (1F1B) of its 15 layers (the uneven split leaves the first and last stages the 3 layers
#: the fullest lack, the first floor(3 / 2) = 1 of them: 60 layer-micro-batches against
#: the second rank's 3 x 16 = 48).
STAGE, MOE_SHARE, IN_FLIGHT = 15, 58 / 61, 4


def test_recomputed_dense_mlps_keep_none_of_their_tensors(runs):
    # the gate and up outputs and the down-projection input, f = 18,432 wide, BF16
    freed = STAGE * (1 - MOE_SHARE) * IN_FLIGHT * memory.mlp_activation_bytes(
        S, 1, 18432, 3, 1)
    kept, mlp = runs["kept"]["activation_bytes"], runs["mlp"]["activation_bytes"]
    assert kept - mlp == pytest.approx(freed, rel=1e-9)
    assert runs["mlp"]["step_time_s"] > runs["kept"]["step_time_s"]


def test_recomputed_moe_layers_keep_none_of_their_tensors(runs):
    # every routed copy's input and expert widths, and the shared expert's: 8 routed + 1
    # shared expert of 2,048 (the activation function's output is kept: recompute_moe_act
    # is off on this stack)
    freed = STAGE * MOE_SHARE * IN_FLIGHT * memory.moe_mlp_activation_bytes(
        S, 1, H, 2048, 8, 1, 3, 1, 1, 0, 2)
    kept, moe = runs["kept"]["activation_bytes"], runs["moe"]["activation_bytes"]
    assert kept - moe == pytest.approx(freed, rel=1e-9)


def test_a_recomputed_moe_layer_computes_dispatches_and_launches_again(runs):
    kept, moe = runs["kept"], runs["moe"]
    # its forward's dispatch and combine once more: the all-to-all of a layer grows from
    # 2 (T_d + T_c) to 3 (T_d + T_c); the baseline stack hides none of it (ep_overlap 0)
    assert moe["ep_comm_s"] == pytest.approx(1.5 * kept["ep_comm_s"], rel=1e-9)
    assert moe["compute_s"] > kept["compute_s"] and moe["launch_s"] >= kept["launch_s"]
    assert moe["mfu"] < kept["mfu"]  # the same model FLOPs in a longer step


def test_full_recompute_is_not_charged_twice():
    """Under full recompute the layer's forward runs again anyway: the module flags add
    neither time nor memory savings on top of it."""
    full = dict(DSV3, recompute="full")
    base = evaluate(**full).iloc[0]
    both = evaluate(**full, overrides={"recompute_mlp": 1.0, "recompute_moe": 1.0}).iloc[0]
    for column in ("step_time_s", "compute_s", "ep_comm_s", "activation_bytes"):
        assert both[column] == pytest.approx(base[column], rel=1e-12)


# ---- the command line ------------------------------------------------------------------

#: NVIDIA's DeepSeek-V3 layout on 1,024 H100 (dgxc-benchmarking v25.08: TP1 PP8 VP2 EP64),
#: which ran with the modules mla_up_proj, mlp and moe.
DGXC = ["evaluate", "--model", "deepseek-v3", "--hardware", "h100-sxm", "--gpus", "1024",
        "--tp", "1", "--pp", "8", "--vp", "2", "--ep", "64", "--etp", "1",
        "--global-batch", "8192", "--seq-len", "4096", "--stack", "megatron-core-moe-baseline"]


def _run(capsys, args):
    from planner.cli.main import main
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_published_module_list_makes_the_published_layout_fit(capsys):
    import json

    # the stack's list (mla_up_proj) needs more than the 80 GB: selective recompute, given
    # or left out, takes Megatron-Core's lighter modules, then mlp and moe, until it fits,
    # and says so; the time is the published list's (the norms cost next to nothing)
    published = _run(capsys, [*DGXC, "--recompute-modules", "mla_up_proj,mlp,moe",
                              "--format", "json"])
    assert published[0] == 0, published[2]
    run = json.loads(published[1])
    assert run["fits"] and run["memory_per_gpu_bytes"] < 80e9
    for recompute in (["--recompute", "selective"], []):
        code, out, err = _run(capsys, [*DGXC, *recompute, "--format", "json"])
        settled = json.loads(out)
        assert code == 0 and settled["fits"] and settled["inputs"]["recompute"] == "selective"
        assert settled["inputs"]["recompute_modules"] == "layernorm,mla_up_proj,moe_act,mlp,moe"
        assert settled["step_time_s"] == pytest.approx(run["step_time_s"], rel=1e-3)
        assert ("recompute modules: layernorm, mla_up_proj, moe_act, mlp, moe, as the layout "
                "does not fit in memory with the stack's (mla_up_proj)") in err
    # the Python API times the stack's list as asked, and answers that it does not fit
    row = evaluate(model="deepseek-v3", hardware="h100-sxm", gpus=1024, tp=1, pp=8, vp=2,
                   ep=64, etp=1, cp=1, micro_batch=1, global_batch=8192, seq_len=4096,
                   stack="megatron-core-moe-baseline", recompute="selective", as_frame=False)
    assert not bool(row["fits"])


@pytest.mark.parametrize("args, needle", [
    (["--recompute-modules", "moe,attn"], "did you mean: core_attn?"),
    (["--recompute-modules", " , "], "no module named"),
    (["--recompute", "full", "--recompute-modules", "moe"], "needs --recompute selective"),
])
def test_a_bad_module_list_is_one_line_exit_2(capsys, args, needle):
    code, out, err = _run(capsys, [*DGXC, *args])
    assert code == 2 and out == ""
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


#: Llama 3 8B on one H100 node, 8k tokens, Megatron-Core: selective recompute with the
#: attention core listed (Megatron-Core's default list) or not.
L8 = dict(model="llama3-8b", hardware="h100-sxm", gpus=8, tp=1, pp=1, vp=1, cp=1,
          global_batch=128, micro_batch=1, seq_len=8192, recompute="selective", zero=1,
          precision="bf16", stack="megatron-core-2025", tokens=1e12, reliability="benchmark")


@pytest.fixture(scope="module")
def core_attn_runs():
    return {name: evaluate(**L8, overrides={"recompute_core_attn": flag}).iloc[0]
            for name, flag in (("kept", 0.0), ("core_attn", 1.0))}


def test_a_checkpointed_fused_attention_core_runs_its_forward_again(core_attn_runs):
    """Megatron-Core checkpoints the core, flash kernel included: the backward runs one more
    attention forward, 4 s d_h a FLOPs a token and layer in the Narayanan count (all s
    keys), 32 layers; the memory is unchanged (the output projection keeps its input)."""
    from formulas import compute
    kept, ca = core_attn_runs["kept"], core_attn_runs["core_attn"]
    core_fwd = 32 * compute.attention_core_flops_per_token(8192, 32, 128, 128)
    # HFU / MFU is hardware over model FLOPs a token: it grows by the core's forward
    per_token_model = kept["tflops_per_gpu"] * 1e12 * 8 / kept["tokens_per_s"]
    assert (ca["hfu"] / ca["mfu"] - kept["hfu"] / kept["mfu"]) * per_token_model \
        == pytest.approx(core_fwd, rel=1e-9)
    # and it takes time, at no more than the peak and no less than a fifth of it
    tokens_per_gpu = 128 * 8192 / 8
    extra_s = ca["compute_s"] - kept["compute_s"]
    assert 1.0 <= extra_s * 989e12 / (tokens_per_gpu * core_fwd) <= 5.0
    assert ca["memory_per_gpu_bytes"] == kept["memory_per_gpu_bytes"]


def test_core_attn_is_what_the_module_list_says():
    from planner.analysis import validate
    from planner.engine.inputs import recompute_modules
    assert recompute_modules.module_flags("core_attn", "selective")["recompute_core_attn"] == 1
    assert recompute_modules.module_flags("mlp", "selective")["recompute_core_attn"] == 0
    # a data row's list replaces Megatron-Core's default ['core_attn']: unlisted, kept
    assert validate.recompute_module_flags("selective: mlp, moe_act")["recompute_core_attn"] == 0
    assert validate.recompute_module_flags("selective: core_attn")["recompute_core_attn"] == 1


# ---- the module ladder a one-layout command climbs (evaluator.MODULE_LADDER) -------------

#: (model, stack, layout) cases of dense, GQA, MoE and MLA models.
LADDER_CASES = [
    ("llama3.1-70b", "megatron-core-2025", dict(gpus=64, tp=8, pp=2, ep=1)),
    ("llama3.1-8b", "maxtext-xla", dict(gpus=16, tp=1, pp=1, ep=1)),
    ("mixtral-8x7b", "megatron-core-moe-tuned", dict(gpus=64, tp=2, pp=2, ep=8)),
    ("deepseek-v3", "megatron-core-moe-baseline", dict(gpus=256, tp=1, pp=4, ep=64)),
    ("qwen3-30b-a3b", "megatron-core-moe-deepep", dict(gpus=32, tp=1, pp=1, ep=8)),
]


@settings(max_examples=12, deadline=None)
@given(case=st.sampled_from(LADDER_CASES), micro_batch=st.sampled_from([1, 2]),
       seq_len=st.sampled_from([2048, 4096, 8192]))
def test_each_rung_of_the_ladder_keeps_less_and_costs_more(case, micro_batch, seq_len):
    """Each list the ladder tries recomputes every module the one before it did and more,
    of the modules the model has: memory never rises up the ladder and the step time never
    falls, so the first list that fits is the cheapest that does."""
    model, stack, layout = case
    x = base_inputs(load_catalog(), RunChoices(model=model, hardware="h100-sxm",
                                               stack=stack))
    rungs = list(_added_modules(x))
    assert rungs and all(set(a) < set(b) for a, b in zip(rungs, rungs[1:], strict=False))
    run = dict(model=model, hardware="h100-sxm", stack=stack, cp=1, vp=1, zero=1,
               micro_batch=micro_batch, seq_len=seq_len, global_batch=256,
               recompute="selective", tokens=1e11, as_frame=False, **layout)
    rows = [evaluate(**run, overrides=flags) for flags in ({}, *rungs)]
    for before, after in zip(rows, rows[1:], strict=False):
        assert after["memory_per_gpu_bytes"] <= before["memory_per_gpu_bytes"] * (1 + 1e-12)
        assert after["step_time_s"] >= before["step_time_s"] * (1 - 1e-12)
