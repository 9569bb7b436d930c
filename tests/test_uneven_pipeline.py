"""Uneven pipeline stages (issue 13, item 1): Megatron-Core's split when PP x VP does not
divide the layers, in evaluate, in the search and in the validation rows that need it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from formulas.pipeline import fullest_stage_layers
from planner.engine.layouts.space import (
    SpaceOptions,
    enumerate_layouts,
    layout_flags,
    layout_flags_one,
    pipeline_split_text,
)


def test_llama31_405b_recipe_split():
    # NVIDIA's 405B recipe: 126 layers + embedding + loss = 128 units over PP 8 x VP 8
    assert fullest_stage_layers(126, 8, 8) == 16
    assert fullest_stage_layers(126, 8, 1) == 16
    assert fullest_stage_layers(126, 9, 7) == 14  # even: 2 per virtual stage
    text = pipeline_split_text(126, 8, 8)
    assert "embedding and the loss counted as stage units" in text
    assert "128 units, 2 per virtual stage" in text and "fullest GPU holds 16 layers" in text
    assert pipeline_split_text(126, 9, 7) == ""
    assert "loss counted as a stage unit" in pipeline_split_text(31, 4, 2)  # 32 units / 8
    assert "fewer in all on the first and last stages" in pipeline_split_text(29, 4, 1)


def test_symbolic_equals_numeric():
    L, p, v = sympy.symbols("L p v", positive=True, integer=True)
    expr = fullest_stage_layers(L, p, v)
    for layers, pp, vp in [(126, 8, 8), (80, 4, 5), (61, 16, 1), (96, 8, 3), (7, 2, 2)]:
        assert float(expr.subs({L: layers, p: pp, v: vp})) == fullest_stage_layers(layers, pp, vp)


@given(st.integers(1, 512), st.integers(1, 64), st.integers(1, 8))
def test_fullest_stage_bounds(layers, pp, vp):
    stages = pp * vp
    if stages > layers:
        return
    fullest = fullest_stage_layers(layers, pp, vp)
    assert layers / pp <= fullest < layers / pp + vp  # at most one layer more per chunk
    if layers % stages == 0:
        assert fullest == layers / pp
    # every other stage can hold the rest: (pp - 1) stages of at most `fullest` layers
    assert pp * fullest >= layers


def test_array_and_scalar_flags_agree_on_uneven_layouts():
    layout = enumerate_layouts(layers=126, heads=128, kv_heads=8, seq_len=8192, experts=1,
                               global_batch=2048, gpus_per_node=8, scale_up_domain=8,
                               options=SpaceOptions(min_gpus=512, max_gpus=512, vp=(1, 2, 4, 8)))
    pairs = set(zip(layout["pp"].tolist(), layout["vp"].tolist(), strict=True))
    assert (8, 8) in pairs and (8, 1) in pairs  # 128 units / 64 and / 8: searched
    flags = layout_flags(layout, scale_up_domain=8, layers=126)
    expected = layout["vp"] * np.ceil(126 / (layout["pp"] * layout["vp"]))
    np.testing.assert_array_equal(flags["stage_layers"], expected)
    for i in range(0, len(layout["gpus"]), max(1, len(layout["gpus"]) // 50)):
        one = layout_flags_one({k: v[i] for k, v in layout.items()}, scale_up_domain=8,
                               layers=126)
        assert one["stage_layers"] == flags["stage_layers"][i]


def test_search_takes_only_megatron_core_splits():
    layout = enumerate_layouts(layers=126, heads=128, kv_heads=8, seq_len=8192, experts=1,
                               global_batch=2048, gpus_per_node=8, scale_up_domain=8,
                               options=SpaceOptions(min_gpus=8, max_gpus=4096))
    stages = layout["pp"] * layout["vp"]
    assert np.all((126 % stages == 0) | (127 % stages == 0) | (128 % stages == 0))
    # up to 126 + 2 units (the embedding and the loss as stage units), Meta's PP 16 x VP 8
    assert np.all(stages <= 128) and np.any(stages == 128)
    assert 16 in set(layout["pp"].tolist())  # 128 / 16: uneven, searched


def test_evaluate_states_the_split(capsys):
    from planner.cli.main import main

    code = main(["evaluate", "-m", "llama3.1-405b", "-H", "h100-sxm", "-n", "512", "--tp", "8",
                 "--pp", "8", "--vp", "8", "--cp", "2", "--ep", "1", "--micro-batch", "1",
                 "--global-batch", "512", "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    # the split, the assumptions the query used, what a typical alternative would change
    lines = err.strip().splitlines()
    assert len(lines) == 3 and "Megatron-Core's uneven split" in lines[0], err
    assert lines[1].startswith("capplan: assumed: ")
    assert lines[2].startswith("capplan: what a typical alternative would change: ")
    import json

    assert json.loads(out)["step_time_s"] > 0


def test_even_split_says_nothing(capsys):
    from planner.cli.main import main

    assert main(["evaluate", "-m", "llama3-70b", "-H", "h100-sxm", "-n", "64", "--tp", "8",
                 "--pp", "4", "-f", "json"]) == 0
    assert "uneven" not in capsys.readouterr().err


def test_too_many_virtual_stages_is_one_line(capsys):
    from planner.cli.main import main

    code = main(["evaluate", "-m", "llama3.1-405b", "-H", "h100-sxm", "-n", "512", "--tp", "8",
                 "--pp", "8", "--vp", "17", "-f", "json"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    # up to 126 + 2 stage units (the embedding and the loss): 136 is too many
    assert err.startswith("capplan: error: --vp 17: PP*VP = 136 virtual stages exceed the "
                          "126 layers")


def test_embedding_and_loss_as_stage_units_allow_layers_plus_two_virtual_stages():
    # Meta's Llama 3 405B layout: 126 layers on PP 16 x VP 8 = 128 virtual stages, the first
    # and the last chunk holding the embedding and the loss (arXiv:2407.21783 s3.3.2;
    # Megatron-Core transformer_block.get_num_layers_to_build)
    from planner.engine.layouts.evaluator import evaluate

    r = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=2048, tp=8, pp=16, vp=8,
                 cp=1, micro_batch=1, global_batch=256, seq_len=8192, zero=2,
                 recompute="none").iloc[0]
    assert r["step_time_s"] > 0


def test_uneven_split_costs_the_fullest_stage():
    from planner.engine.layouts.evaluator import evaluate

    def step(pp, vp):  # DP 8, 8 micro-batches of 1 per pipeline
        return float(evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=8 * pp, tp=1,
                              pp=pp, vp=vp, cp=1, micro_batch=1, global_batch=64,
                              as_frame=False)["compute_s"])

    # 126 layers: PP 8 runs 16 layers on its fullest stage, PP 9 runs 14 (even)
    ratio = step(8, 1) / step(9, 1)
    assert ratio == pytest.approx(16 / 14, rel=0.05)
    assert math.isfinite(step(8, 8))
