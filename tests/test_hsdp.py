"""Hybrid sharding (HSDP, issue 13 item 1): the ZeRO state sharded over a group of DP ranks
and replicated across the groups, in the formula, the run model, the search, evaluate and
the CLI.  The tensor-parallel sizes the search tries follow the scale-up domain (NVL72)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas.communication import hierarchical_allreduce_time, hsdp_replica_allreduce_time
from planner.engine.layouts.evaluator import evaluate
from planner.engine.layouts.space import (
    SpaceOptions,
    default_tp_sizes,
    domain_dp_ranks,
    enumerate_layouts,
    layout_flags,
    layout_flags_one,
)
from planner.errors import CapplanError

LINKS = (3e11, 5e10, 2e-6, 5e-6)  # scale-up, scale-out bandwidth [B/s]; latencies [s]
RUN = dict(model="llama3-8b", hardware="h100-sxm", gpus=64, tp=1, pp=1, cp=1, vp=1,
           global_batch=512, micro_batch=2, tokens=1e12, recompute="selective",
           as_frame=False)


# ---- the formula -------------------------------------------------------------------

def test_replica_allreduce_is_zero_without_replicas():
    assert hsdp_replica_allreduce_time(16e9, 64, 64, 1, *LINKS) == 0.0


def test_replica_allreduce_is_the_shard_all_reduced_across_replicas():
    # 8 shard groups of 8: each rank all-reduces 1/8 of the gradients over 8 replicas,
    # one per node: the flat ring of Thakur et al. over the scale-out links
    got = hsdp_replica_allreduce_time(16e9, 8, 64, 1, 3e11, 5e10, 0.0, 0.0)
    assert got == pytest.approx(2 * 7 / 8 * 2e9 / 5e10, rel=1e-12)
    assert got == hierarchical_allreduce_time(2e9, 1, 8, 3e11, 5e10, 0.0, 0.0)


def test_replica_allreduce_symbolic_equals_numeric():
    names = "S n_s d r_a B_a B_e a_a a_e"
    syms = sympy.symbols(names, positive=True)
    expr = hsdp_replica_allreduce_time(*syms)
    for values in [(16e9, 8, 64, 1, *LINKS), (4e9, 4, 32, 2, *LINKS), (1e6, 2, 2, 1, *LINKS)]:
        got = float(expr.subs(dict(zip(syms, values, strict=True))))
        assert got == pytest.approx(hsdp_replica_allreduce_time(*values), rel=1e-12)


def test_replica_allreduce_on_arrays_and_series():
    import pandas as pd

    shards = np.array([64.0, 16.0, 8.0])
    arr = hsdp_replica_allreduce_time(16e9, shards, 64, 1, *LINKS)
    ser = hsdp_replica_allreduce_time(16e9, pd.Series(shards), 64, 1, *LINKS)
    assert arr[0] == 0.0 and np.all(np.diff(arr) > 0)
    assert np.allclose(np.asarray(ser), arr)
    assert arr[2] == hsdp_replica_allreduce_time(16e9, 8.0, 64, 1, *LINKS)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16, 32]), st.sampled_from([64, 128, 256, 1024]))
def test_replica_allreduce_grows_as_the_shard_group_shrinks(shard, dp):
    # smaller groups hold bigger shards: more bytes to all-reduce across more replicas
    assert hsdp_replica_allreduce_time(16e9, shard, dp, 1, *LINKS) >= \
        hsdp_replica_allreduce_time(16e9, 2 * shard, dp, 1, *LINKS)


# ---- layout flags ------------------------------------------------------------------

def _flags(zero, shard_group, dp=64, tp=1, domain=8):
    layout = {"gpus": [dp * tp], "tp": [tp], "pp": [1], "dp": [dp], "cp": [1], "ep": [1],
              "vp": [1], "micro_batch": [1], "recompute": [0], "zero": [zero],
              "shard_group": [shard_group], "sequence_parallel": [0]}
    return layout_flags(layout, scale_up_domain=domain, layers=32)


@pytest.mark.parametrize("zero, weights, grads, optimizer", [
    (1, 1, 1, 8), (2, 1, 8, 8), (3, 8, 8, 8)])
def test_zero_state_is_sharded_over_the_group(zero, weights, grads, optimizer):
    f = _flags(zero, 8)
    assert (f["weight_shards"][0], f["grad_shards"][0], f["optimizer_shards"][0]) == \
        (weights, grads, optimizer)
    assert f["shard_ranks"][0] == 8 and f["replica_intra_ranks"][0] == 1


def test_flags_without_a_shard_group_are_plain_zero():
    layout = {"gpus": [64], "tp": [1], "pp": [1], "dp": [64], "cp": [1], "ep": [1], "vp": [1],
              "micro_batch": [1], "recompute": [0], "zero": [3], "sequence_parallel": [0]}
    f = layout_flags(layout, scale_up_domain=8, layers=32)
    assert f["weight_shards"][0] == 64 and f["shard_ranks"][0] == 64
    assert f["replica_intra_ranks"][0] == 1


def test_replicas_inside_a_domain():
    # TP 1, shard groups of 2 DP ranks on an 8-GPU domain: 4 replicas per domain
    assert _flags(3, 2)["replica_intra_ranks"][0] == 4


@pytest.mark.parametrize("zero, shard", [(1, 8), (3, 16), (2, 64)])
def test_scalar_flags_equal_array_flags(zero, shard):
    array = _flags(zero, shard)
    one = layout_flags_one({"gpus": 64, "tp": 1, "pp": 1, "dp": 64, "cp": 1, "ep": 1, "vp": 1,
                            "micro_batch": 1, "recompute": 0, "zero": zero,
                            "shard_group": shard, "sequence_parallel": 0},
                           scale_up_domain=8, layers=32)
    for name, value in one.items():
        assert value == pytest.approx(float(array[name][0])), name


def test_domain_dp_ranks():
    assert int(domain_dp_ranks(1, 1, 64, 8)) == 8
    assert int(domain_dp_ranks(8, 1, 64, 8)) == 1
    assert int(domain_dp_ranks(2, 2, 1, 72)) == 1  # never more than DP


# ---- the run model -----------------------------------------------------------------

def test_plain_zero3_equals_a_shard_group_of_all_dp():
    full = evaluate(**RUN, zero=3)
    same = evaluate(**RUN, zero=3, shard_group=64)
    for name in ("step_time_s", "dp_comm_s", "memory_per_gpu_bytes"):
        assert same[name] == full[name], name


def test_hsdp_trades_memory_for_intra_node_collectives():
    # FSDP over 64 ranks: every micro-batch's gathers and reduce-scatters cross nodes;
    # per-node shards keep them on NVLink and add one all-reduce of 1/8 of the gradients
    full = evaluate(**RUN, zero=3)
    node = evaluate(**RUN, zero=3, shard_group=8)
    assert node["dp_comm_s"] < full["dp_comm_s"]
    assert node["weights_bytes"] == pytest.approx(8 * full["weights_bytes"])
    assert node["optimizer_state_bytes"] == pytest.approx(8 * full["optimizer_state_bytes"])
    assert node["memory_per_gpu_bytes"] > full["memory_per_gpu_bytes"]


def test_hsdp_zero1_changes_the_optimizer_state_only():
    full = evaluate(**RUN, zero=1)
    node = evaluate(**RUN, zero=1, shard_group=8)
    assert node["optimizer_state_bytes"] == pytest.approx(8 * full["optimizer_state_bytes"])
    assert node["weights_bytes"] == full["weights_bytes"]
    assert node["dp_comm_s"] == pytest.approx(full["dp_comm_s"], rel=1e-12)


def test_array_and_scalar_paths_agree():
    rows = evaluate(**{**RUN, "as_frame": True}, zero=3, shard_group=np.array([64, 16, 8]))
    for i, shard in enumerate((64, 16, 8)):
        one = evaluate(**RUN, zero=3, shard_group=shard)
        assert rows.loc[i, "shard_group"] == shard
        assert rows.loc[i, "step_time_s"] == pytest.approx(one["step_time_s"], rel=1e-9)


@pytest.mark.parametrize("kw, message", [
    (dict(zero=0, shard_group=8), r"--shard-group 8 needs --zero 1, 2 or 3"),
    (dict(zero=3, shard_group=3), r"--shard-group 3 must divide the data-parallel size 64"),
    (dict(zero=3, shard_group=128), r"--shard-group 128 must divide"),
])
def test_bad_shard_groups_say_why(kw, message):
    with pytest.raises(CapplanError, match=message):
        evaluate(**RUN, **kw)


# ---- the search --------------------------------------------------------------------

def test_search_tries_per_domain_shards_with_zero2_and_3():
    space = enumerate_layouts(layers=32, heads=32, kv_heads=8, seq_len=4096, experts=1,
                              global_batch=512, gpus_per_node=8, scale_up_domain=8,
                              options=SpaceOptions(max_gpus=256))
    hybrid = space["shard_group"] < space["dp"]
    assert hybrid.any()
    assert set(np.unique(space["zero"][hybrid])) == {2, 3}
    domain = domain_dp_ranks(space["tp"], space["cp"], space["dp"], 8)
    assert np.array_equal(space["shard_group"][hybrid], domain[hybrid])
    plain = ~hybrid
    assert np.array_equal(space["shard_group"][plain], space["dp"][plain])
    # without HSDP the same space less the hybrid rows
    none = enumerate_layouts(layers=32, heads=32, kv_heads=8, seq_len=4096, experts=1,
                             global_batch=512, gpus_per_node=8, scale_up_domain=8,
                             options=SpaceOptions(max_gpus=256, hsdp=(0,)))
    assert len(none["gpus"]) == int(plain.sum())


def test_default_tp_sizes_follow_the_scale_up_domain():
    assert default_tp_sizes(8) == (1, 2, 4, 8)
    assert default_tp_sizes(72) == (1, 2, 4, 8, 16, 32, 64)
    assert default_tp_sizes(4) == (1, 2, 4)
    assert default_tp_sizes(4096) == (1, 2, 4, 8, 16, 32, 64, 128)


def test_search_tries_tp_beyond_eight_on_nvl72():
    space = enumerate_layouts(layers=80, heads=64, kv_heads=8, seq_len=8192, experts=1,
                              global_batch=1024, gpus_per_node=4, scale_up_domain=72,
                              options=SpaceOptions(min_gpus=512, max_gpus=512))
    assert set(np.unique(space["tp"])) == {1, 2, 4, 8, 16, 32, 64}
    eight = enumerate_layouts(layers=80, heads=64, kv_heads=8, seq_len=8192, experts=1,
                              global_batch=1024, gpus_per_node=8, scale_up_domain=8,
                              options=SpaceOptions(min_gpus=512, max_gpus=512))
    assert set(np.unique(eight["tp"])) == {1, 2, 4, 8}


# ---- the CLI -----------------------------------------------------------------------

def test_cli_evaluate_shard_group(tmp_path, capsys):
    from planner.cli.main import main

    out = tmp_path / "e.json"
    assert main(["evaluate", "--model", "llama3-8b", "-H", "h100-sxm", "--gpus", "64",
                 "--tp", "1", "--pp", "1", "--zero", "3", "--shard-group", "8",
                 "-f", "json", "-o", str(out)]) == 0
    text = out.read_text()
    assert '"shard_group": 8' in text
    json.loads(text)


def test_cli_bad_shard_group_is_one_line(capsys):
    from planner.cli.main import main

    code = main(["evaluate", "--model", "llama3-8b", "-H", "h100-sxm", "--gpus", "64",
                 "--tp", "1", "--pp", "1", "--zero", "0", "--shard-group", "8"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "Traceback" not in err
    assert err.count("\n") == 0 and "--shard-group 8 needs --zero" in err


# ---- plans: the new layouts appear where they win ------------------------------------

def test_plan_picks_hsdp_across_tpu_pods(catalog):
    # TPU v6e: 256-chip ICI pods joined by the data-centre network; the fastest run of a
    # 7B model on 2,048 chips with several micro-batches a step shards within a pod and
    # replicates across pods (as JAX multislice training does): ZeRO-2 reduce-scatters
    # every micro-batch's gradients, inside the pod under HSDP, across pods without it
    from planner.engine.layouts.evaluator import evaluate
    from planner.engine.search.optimize import plan

    result = plan(model="llama2-7b", hardware=["tpu-v6e"], max_gpus=2048, global_batch=8192,
                  catalog=catalog)
    fastest = result.best["time"]
    assert fastest["shard_group"] < fastest["dp"] and fastest["zero"] >= 2
    assert fastest["shard_group"] * fastest["tp"] * fastest["cp"] <= 256
    layout = {k: int(fastest[k]) for k in ("gpus", "tp", "pp", "cp", "micro_batch", "zero")}
    full = evaluate(model="llama2-7b", hardware="tpu-v6e", global_batch=8192,
                    recompute=fastest["recompute"], shard_group=int(fastest["dp"]),
                    catalog=catalog, as_frame=False, **layout)
    assert fastest["dp_comm_s"] < full["dp_comm_s"]


def test_plan_picks_tensor_parallelism_beyond_eight_on_nvl72(catalog):
    # a 405B model with a small global batch (64 sequences): data parallelism stops at
    # 64, so the fastest run on GB200 NVL72 splits layers over more than 8 GPUs
    from planner.engine.search.optimize import plan

    result = plan(model="llama3.1-405b", hardware=["gb200"], global_batch=64, tokens=1e11,
                  max_gpus=8192, catalog=catalog)
    assert result.best["time"]["tp"] > 8


def test_workbook_sweep_keeps_the_shard_group_where_it_divides_dp():
    from planner.report.export_report import _swept_shard_groups

    dps = np.array([1, 2, 4, 8, 16, 64])
    assert _swept_shard_groups(dps, None) is None
    assert _swept_shard_groups(dps, 8).tolist() == [1, 2, 4, 8, 8, 8]
