"""MoE parallel folding (issue 13, item 1): expert parallelism over TP x CP x DP and expert
tensor parallelism (ETP), in the formulas, the run model, the search, evaluate and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from formulas.communication import expert_rank_tokens
from formulas.compute import mlp_params
from planner.engine.layouts.evaluator import evaluate
from planner.engine.layouts.layout_check import check_layout
from planner.engine.layouts.space import (
    SpaceOptions,
    enumerate_layouts,
    layout_flags,
    layout_flags_one,
)
from planner.errors import CapplanError

DSV3 = dict(model="deepseek-v3", hardware="gb200", gpus=256, tp=2, pp=4, cp=1, ep=64, vp=1,
            global_batch=2048, micro_batch=1, tokens=1e12, recompute="selective", zero=1,
            as_frame=False)


def test_expert_rank_tokens():
    # ETP = TP gathers the whole TP group's tokens; ETP 1 keeps one sequence shard
    assert expert_rank_tokens(4096, 2, 2, 1) == 4096
    assert expert_rank_tokens(4096, 8, 1, 1) == 512
    assert expert_rank_tokens(4096, 8, 2, 1) == 1024
    assert expert_rank_tokens(4096, 8, 1, 0) == 4096  # without SP every rank holds all tokens


def test_expert_rank_tokens_symbolic_equals_numeric():
    t, tp, etp, sp = sympy.symbols("t t_p t_e s_p", positive=True)
    expr = expert_rank_tokens(t, tp, etp, sp)
    for values in [(4096, 8, 1, 1), (8192, 4, 2, 0), (1, 1, 1, 1)]:
        got = float(expr.subs(dict(zip((t, tp, etp, sp), values, strict=True))))
        assert got == pytest.approx(expert_rank_tokens(*values), rel=1e-15)


@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8]))
def test_expert_compute_per_rank_is_balanced_under_sp(tp, etp):
    # tokens x expert width per rank: t * etp / tp x f / etp = t f / tp, whatever ETP
    t, f = 4096.0, 2048.0
    assert expert_rank_tokens(t, tp, etp, 1) * f / etp == pytest.approx(t * f / tp)


def test_folding_rule_in_check_layout():
    x = {"scale_up_domain_gpus": 72, "heads": 128, "kv_heads": 128, "seq_len": 4096,
         "layers": 61, "global_batch": 2048, "experts": 256}
    # DeepSeek-V3 on 256 GB200 (NVIDIA's recipe): TP2 PP4, DP 32, EP 64 folded over TP x DP
    check_layout(x, gpus=256, tp=2, pp=4, cp=1, ep=64, vp=1, micro_batch=1, etp=1)
    with pytest.raises(CapplanError, match=r"EP\*ETP = 64\*2 = 128 must divide TP\*CP\*DP = "
                       r"2\*1\*32 = 64"):
        check_layout(x, gpus=256, tp=2, pp=4, cp=1, ep=64, vp=1, micro_batch=1)  # ETP = TP
    check_layout(x, gpus=256, tp=2, pp=4, cp=1, ep=32, vp=1, micro_batch=1)  # ETP 2, EP 32


def test_search_explores_etp_and_folded_ep():
    space = enumerate_layouts(layers=32, heads=32, kv_heads=8, seq_len=4096, experts=8,
                              global_batch=1024, gpus_per_node=8, scale_up_domain=8,
                              options=SpaceOptions(min_gpus=8, max_gpus=64))
    etp, tp, ep, dp, cp = (space[k] for k in ("etp", "tp", "ep", "dp", "cp"))
    assert ((etp == tp) | (etp == 1)).all()
    assert ((etp == 1) & (tp > 1)).any()
    assert (ep > dp).any()  # folded over TP
    assert ((tp * cp * dp) % (ep * etp) == 0).all()
    # a dense model keeps one ETP (= TP) per layout: its space is unchanged
    dense = enumerate_layouts(layers=32, heads=32, kv_heads=8, seq_len=4096, experts=1,
                              global_batch=1024, gpus_per_node=8, scale_up_domain=8,
                              options=SpaceOptions(min_gpus=8, max_gpus=64))
    assert (dense["etp"] == dense["tp"]).all() and (dense["ep"] == 1).all()
    only_one = enumerate_layouts(layers=32, heads=32, kv_heads=8, seq_len=4096, experts=8,
                                 global_batch=1024, gpus_per_node=8, scale_up_domain=8,
                                 options=SpaceOptions(min_gpus=8, max_gpus=64, etp=(1,)))
    assert (only_one["etp"] == 1).all()


def test_flags_of_the_expert_grid():
    layout = {"gpus": 256, "tp": 2, "pp": 4, "dp": 32, "cp": 1, "ep": 64, "etp": 1, "vp": 1,
              "micro_batch": 1, "recompute": 1, "zero": 1, "sequence_parallel": 1}
    one = layout_flags_one(layout, scale_up_domain=72, layers=61)
    many = layout_flags({k: np.array([v]) for k, v in layout.items()}, scale_up_domain=72,
                        layers=61)
    for k, v in one.items():
        assert many[k][0] == pytest.approx(v, rel=1e-15), k
    assert one["etp"] == 1 and one["ep_intra"] == 1  # 64 ranks inside the NVL72 domain
    # experts sharded over the expert-data-parallel group TP x CP x DP / (ETP x EP) = 1
    assert one["expert_optimizer_shards"] == 1 and one["optimizer_shards"] == 32
    assert one["expert_grad_shards"] == 1 and one["expert_weight_shards"] == 1
    assert layout_flags_one({**layout, "ep": 8, "etp": 2}, scale_up_domain=8,
                            layers=61)["ep_intra"] == 0  # 16 ranks span two 8-GPU domains


def test_deepseek_v3_folded_layout_evaluates():
    r = evaluate(**DSV3, etp=1)
    assert r["etp"] == 1 and r["ep"] == 64 and r["dp"] == 32
    assert 0 < r["step_time_s"] < 1e3
    # left out, ETP is TP where EP x TP folds, else 1 (the recipes' choice for a wide EP
    # over a small TP); given, it is checked
    assert evaluate(**DSV3)["etp"] == 1
    with pytest.raises(CapplanError, match="must divide TP\\*CP\\*DP"):
        evaluate(**DSV3, etp=2)  # ETP = TP = 2 does not fold


def test_etp_default_is_tp_and_dense_models_ignore_it():
    moe = dict(model="mixtral-8x7b", hardware="h100-sxm", gpus=64, tp=2, pp=1, cp=1, ep=8,
               vp=1, global_batch=512, micro_batch=1, tokens=1e12, as_frame=False)
    assert evaluate(**moe)["etp"] == 2
    assert evaluate(**moe)["step_time_s"] == evaluate(**moe, etp=2)["step_time_s"]
    dense = dict(model="llama3-8b", hardware="h100-sxm", gpus=64, tp=2, pp=1, cp=1,
                 global_batch=512, micro_batch=1, tokens=1e12, as_frame=False)
    a, b = evaluate(**dense), evaluate(**dense, etp=1)
    assert b["etp"] == 2 and a["step_time_s"] == b["step_time_s"]


def test_etp_one_holds_more_expert_weights_and_skips_the_etp_gather():
    base = dict(model="mixtral-8x7b", hardware="h100-sxm", gpus=64, tp=4, pp=1, cp=1, ep=8,
                vp=1, global_batch=512, micro_batch=1, tokens=1e12, zero=0, as_frame=False)
    wide, narrow = evaluate(**base, etp=4), evaluate(**base, etp=1)
    # routed experts per rank: E f_e h n_m / (EP x ETP), every layer on the one stage (PP 1)
    routed = 8 * mlp_params(4096, 14336, 3)
    extra = 32 * routed * (1 / 8 - 1 / 32) * 2  # bf16 weights, 32 layers
    assert narrow["weights_bytes"] - wide["weights_bytes"] == pytest.approx(extra, rel=1e-9)
    # ETP 1: no expert-TP gather, so less EP communication per step
    assert narrow["ep_comm_s"] < wide["ep_comm_s"]


@given(st.sampled_from([1, 2, 4, 8]))
def test_expert_optimizer_state_shrinks_with_expert_data_parallelism(ep):
    # ZeRO-1 shards the experts' optimizer state over EDP = TP x CP x DP / (ETP x EP)
    base = dict(model="mixtral-8x7b", hardware="h100-sxm", gpus=64, tp=1, pp=1, cp=1,
                vp=1, global_batch=512, micro_batch=1, tokens=1e12, zero=1, as_frame=False)
    r = evaluate(**base, ep=ep)
    routed = 32 * 8 * mlp_params(4096, 14336, 3)
    dense = r["optimizer_state_bytes"] - routed / ep * 12 / (64 / ep)
    assert dense == pytest.approx(evaluate(**base, ep=8)["optimizer_state_bytes"]
                                  - routed / 8 * 12 / 8, rel=1e-9)


def test_cli_etp(capsys):
    from planner.cli.main import main

    argv = ["evaluate", "-m", "deepseek-v3", "-H", "gb200", "-n", "256", "--tp", "2", "--pp",
            "4", "--ep", "64", "--global-batch", "2048", "-f", "json"]
    assert main([*argv, "--etp", "1"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["inputs"]["etp"] == 1
    code = main([*argv, "--etp", "2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "EP*ETP = 64*2 = 128 must divide TP*CP*DP" in err


def test_a_published_layout_without_etp_is_evaluated():
    # NVIDIA dgxc-benchmarking's DeepSeek-V3 on 1,024 H100 states TP2 PP16 EP64 and no ETP:
    # Megatron-Core's ETP = TP would not fold (EP x ETP = 128 > TP x CP x DP = 64), so the
    # run had ETP 1, and the command must not refuse it
    from planner.cli.main import main

    code = main(["evaluate", "-m", "deepseek-v3", "-H", "h100-sxm", "-n", "1024", "--tp", "2",
                 "--pp", "16", "--cp", "1", "--ep", "64", "--vp", "1", "--micro-batch", "1",
                 "--global-batch", "8192", "--seq-len", "4096", "-f", "json"])
    assert code == 0
