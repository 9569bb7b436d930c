"""``evaluate`` searches the layout sizes it is not given: the fastest layout for the GPU
count that fits in memory, keeping the sizes given (planner.engine.layouts.layout_check)."""

from __future__ import annotations

import pytest

from planner.engine.layouts.evaluator import evaluate

RUN = dict(model="llama3-8b", hardware="gb200", gpus=512, global_batch=512, seq_len=8192,
           precision="fp8-cs", reliability="benchmark")
FIXED = dict(cp=1, ep=1, vp=1, micro_batch=1)


def test_a_small_model_is_not_timed_at_a_large_models_layout():
    # Llama 3 8B on 512 GB200, one sequence a GPU: the search takes TP1 x DP512, twice as
    # fast as Llama 3 70B's TP8 x PP4 (the fixed default before) on the part's graphed
    # stack (0.27 against 0.59 s), six times on the eager one, where the small per-GPU
    # GEMMs of TP8 are also host-bound
    for stack, speedup in (("megatron-bridge-2025", 2), ("megatron-core-2025", 4)):
        searched = evaluate(**RUN, stack=stack).iloc[0]
        fixed = evaluate(**RUN, stack=stack, tp=8, pp=4, **FIXED).iloc[0]
        assert (searched["tp"], searched["pp"]) == (1, 1) and searched["fits"]
        assert searched["step_time_s"] < fixed["step_time_s"] / speedup


@pytest.mark.parametrize("given", [dict(tp=2), dict(pp=2), dict(tp=2, micro_batch=2)])
def test_given_sizes_are_kept_and_the_search_beats_the_old_fill_in(given):
    # the sizes left out searched, never slower than filling them with TP8 / PP4 / 1
    searched = evaluate(**RUN, **given).iloc[0]
    for name, value in given.items():
        assert searched[name] == value
    old = {"tp": 8, "pp": 4, **FIXED, **given}
    fixed = evaluate(**RUN, **old).iloc[0]
    assert searched["fits"]
    assert searched["step_time_s"] <= fixed["step_time_s"] * (1 + 1e-9) or not fixed["fits"]


def test_an_expert_tensor_size_left_out_is_the_tensor_size():
    # Megatron-Core's default, ETP = TP, also when TP itself is searched
    row = evaluate(model="mixtral-8x7b", hardware="h100-sxm", gpus=64, global_batch=256,
                   seq_len=4096, reliability="benchmark").iloc[0]
    assert row["etp"] == row["tp"]


def test_every_size_given_evaluates_that_layout_and_nothing_else():
    row = evaluate(**RUN, tp=8, pp=4, **FIXED).iloc[0]
    assert (row["tp"], row["pp"], row["cp"], row["ep"], row["vp"], row["micro_batch"]) == \
        (8, 4, 1, 1, 1, 1)


def test_a_gpu_count_that_only_an_uneven_pipeline_splits_is_searched_with_one():
    # 72 GPUs (an NVL72 rack) and 512 sequences: DP must divide 512, so TP*PP*CP holds the
    # factor 9, which Llama 3.1 8B's 32 heads do not split over: only 9 pipeline stages
    # (Megatron-Core's uneven split, e.g. 2 + 7 x 4 + 2 layers) do
    row = evaluate(model="llama3.1-8b", hardware="gb200", gpus=72, global_batch=512).iloc[0]
    assert int(row["gpus"]) == 72 and row["pp"] % 9 == 0 and row["fits"]
    # docs/quickstart.md: GPT-3 175B (96 layers) on 2,496 GPUs = 2^6 x 3 x 13
    row = evaluate(model="gpt3-175b", hardware="gb200", gpus=2496, global_batch=3072,
                   seq_len=2048).iloc[0]
    assert (int(row["tp"]), int(row["pp"])) == (4, 13) and row["fits"]


def test_no_layout_names_the_batch_rule_and_a_batch_that_has_one():
    # 71 GPUs and 512 sequences: DP must divide 512, so DP = 1 and 71 pipeline stages,
    # more than Llama 3.1 8B's 32 layers
    from planner.errors import CapplanError

    with pytest.raises(CapplanError) as refused:
        evaluate(model="llama3.1-8b", hardware="gb200", gpus=71, global_batch=512)
    text = str(refused.value)
    assert "8*4*1" not in text  # not the rule of a layout nobody asked for
    assert "no layout of 71 GPUs" in text and "e.g. 568" in text
    # the batch it names has a layout
    row = evaluate(model="llama3.1-8b", hardware="gb200", gpus=71, global_batch=568)
    assert int(row.loc[0, "gpus"]) == 71
    # DualPipe needs a pipeline: no DP-only layout, so no batch is promised
    with pytest.raises(CapplanError) as refused:
        evaluate(model="deepseek-v3", hardware="h800", gpus=71, global_batch=512,
                 stack="deepseek-hai-llm-2024")
    assert str(refused.value).endswith("try another --gpus")


@pytest.mark.parametrize("stack, zero", [("megatron-core-2025", 1), ("torchtitan-fsdp2", 3),
                                         ("torchtitan-fsdp2-2026", 3), ("maxtext-xla", 3),
                                         ("llm-foundry-2023", 3), ("deepspeed-zero", 1)])
def test_a_zero_stage_left_out_is_the_stacks(stack, zero):
    # torchtitan, MaxText and llm-foundry shard everything (FSDP: ZeRO-3); a run on them
    # evaluated at Megatron-Core's distributed optimizer (ZeRO-1) held replicated weights
    # and gradients they never hold, and its typical alternative compared stacks so
    run = dict(model="llama3-8b", hardware="h100-sxm", gpus=64, tp=1, pp=1, cp=1, ep=1, vp=1,
               micro_batch=1, stack=stack, as_frame=False)
    assert evaluate(**run)["zero"] == zero
    assert evaluate(**run, zero=2)["zero"] == 2  # given, it is kept


def test_an_fsdp_stack_with_pipeline_stages_searches_its_virtual_stages():
    # FSDP2 under PP (torchtitan, Meta's Llama 3 405B): the ZeRO-3 layouts with PP are
    # searched, not replaced by the preferred VP1 x micro-batch 1 (the search used to try
    # ZeRO-3 without PP only, so it found nothing and fell back to VP1)
    run = dict(model="llama3-70b", hardware="h100-sxm", gpus=256, global_batch=256,
               seq_len=8192, stack="torchtitan-fsdp2", reliability="benchmark",
               tp=8, pp=8, cp=1, recompute="full")
    searched = evaluate(**run).iloc[0]
    assert searched["zero"] == 3 and searched["fits"]
    every = [evaluate(**run, vp=vp, micro_batch=mb).iloc[0] for vp in (1, 2, 4)
             for mb in (1, 2)]
    fastest = min(r["step_time_s"] for r in every if r["fits"])
    assert searched["vp"] > 1
    assert searched["step_time_s"] == pytest.approx(fastest, rel=1e-9)


def test_sequence_parallelism_asked_for_at_tp1_still_searches():
    # SP has nothing to split at TP 1 (Megatron-LM turns it off): the search keeps those
    # layouts instead of finding none and falling back to the preferred PP4
    run = dict(model="llama3-8b", hardware="h100-sxm", gpus=8, tp=1, reliability="benchmark")
    asked = evaluate(**run, sequence_parallel=True).iloc[0]
    left = evaluate(**run).iloc[0]
    assert (asked["pp"], asked["cp"], asked["micro_batch"]) == \
        (left["pp"], left["cp"], left["micro_batch"])
    assert asked["step_time_s"] == pytest.approx(left["step_time_s"], rel=1e-12)


def test_a_given_pipeline_that_splits_the_layers_unevenly_is_searched():
    # DeepSeek-V3's 61 layers over PP 16 (NVIDIA's dgxc-benchmarking layout, TP2 PP16 EP64 on
    # 1,024 H100): the search took only whole splits of L, L + 1 or L + 2 units, found no
    # layout and fell back to EP1, which does not fit (a published run refused)
    row = evaluate(model="deepseek-v3", hardware="h100-sxm", gpus=1024, tp=2, pp=16,
                   global_batch=8192, seq_len=4096, precision="fp8",
                   reliability="benchmark").iloc[0]
    assert (row["tp"], row["pp"]) == (2, 16) and row["ep"] > 1 and row["fits"]


@pytest.mark.parametrize("model, hardware, gpus, given", [
    ("llama3-8b", "mi355x", 64, dict(vp=3)),
    ("deepseek-v3", "h100-sxm", 256, dict(vp=3)),
    ("deepseek-v3", "mi355x", 128, dict(vp=2, micro_batch=2, ep=4)),
])
def test_sizes_outside_the_searchs_preferred_shapes_are_still_searched(model, hardware, gpus,
                                                                       given):
    # a VP given leaves no whole pipeline split in the search's preferred shapes: it then
    # searches every split evaluate times, instead of falling back to the preferred TP8 PP4
    row = evaluate(model=model, hardware=hardware, gpus=gpus, global_batch=2 * gpus,
                   seq_len=4096, reliability="benchmark", **given).iloc[0]
    assert all(row[k] == v for k, v in given.items())
    fallback = evaluate(model=model, hardware=hardware, gpus=gpus, global_batch=2 * gpus,
                        seq_len=4096, reliability="benchmark",
                        **{"tp": 8, "pp": 4, "cp": 1, "ep": 1, "vp": 1, "micro_batch": 1,
                           **given}).iloc[0]
    assert row["fits"]
    assert row["step_time_s"] < fallback["step_time_s"] or not fallback["fits"]
