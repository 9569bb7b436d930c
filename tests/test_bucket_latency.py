"""Every bucket of a data-parallel collective is its own call (docs/model.md, "Overlap of
the data-parallel collectives"): the bytes move once, but each call pays the ring's
per-step latencies again (formulas.communication.bucketed_collective_time).  The hand
numbers use the catalog's links (hardware_catalog/data/nodes/dgx-h100.toml: 3 us inside
a node, 8 us across), independently of the model code.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from formulas.communication import (
    allgather_time,
    bucketed_collective_time,
    hierarchical_allgather_time,
    reduce_scatter_time,
)
from planner.engine.layouts.evaluator import evaluate
from planner.engine.run import model


@given(st.floats(1e3, 1e11), st.integers(2, 4096), st.floats(1e9, 1e12), st.floats(0, 2e-5),
       st.integers(1, 128))
def test_n_calls_of_a_ring_cost_the_bytes_once_and_the_latency_n_times(size, ranks, bw,
                                                                        latency, buckets):
    """For the alpha-beta ring, n calls over S/n bytes each are exactly T(S) + (n-1) T(0)."""
    for collective in (allgather_time, reduce_scatter_time):
        calls = buckets * collective(size / buckets, ranks, bw, latency)
        assert bucketed_collective_time(collective(size, ranks, bw, latency),
                                        collective(0.0, ranks, bw, latency), buckets) \
            == pytest.approx(calls, rel=1e-9)


def test_one_bucket_is_one_call():
    t = hierarchical_allgather_time(26e9, 8, 8, 240e9, 40e9, 3e-6, 8e-6)
    assert bucketed_collective_time(t, 7 * 3e-6 + 7 * 8e-6, 1) == t


def _fsdp_8b(gpus, **overrides):
    """Llama 3 8B under FSDP (ZeRO-3) on ``gpus`` H100, its collectives not overlapped."""
    _, x = evaluate(model="llama3-8b", hardware="h100-sxm", gpus=gpus, tp=1, pp=1,
                    micro_batch=2, global_batch=2 * gpus, zero=3, recompute="selective",
                    tokens=1e12, stack="torchtitan-fsdp2", return_inputs=True, as_frame=False,
                    overrides={"dp_overlap": 0.0, **overrides})
    x = {k: float(v) if hasattr(v, "__float__") else v for k, v in x.items()}
    return x, model.run_stages(x)


def test_fsdp_pays_each_layers_ring_latency_in_every_gather_and_reduce_scatter():
    """512 H100 (64 nodes of 8): every layer's all-gather (forward and backward) and
    reduce-scatter crosses 63 nodes and 7 NVLink peers: 32 layers x 3 calls x
    (63 x 8 + 7 x 3 us) = 50 ms a micro-batch over the same collectives without latency,
    where one call for all layers would have paid 1/32 of it."""
    x, r = _fsdp_8b(512)
    free = _fsdp_8b(512, inter_latency_s=0.0, intra_latency_s=0.0)[1]
    assert x["stage_layers"] == 32 and x["dp_intra_ranks"] == 8 and r["microbatches"] == 1
    assert x["inter_latency_s"] == pytest.approx(8e-6) and x["intra_latency_s"] == 3e-6
    added = r["dp_comm_s"] - free["dp_comm_s"]
    assert added == pytest.approx(3 * 32 * (63 * 8e-6 + 7 * 3e-6), rel=1e-9)
    assert added == pytest.approx(0.0504, abs=1e-4)


def test_the_latency_grows_with_the_nodes_the_ring_crosses():
    """The same layout on 64 and 512 GPUs: the latency the calls add grows with the
    7 -> 63 nodes their rings cross."""
    def latency_s(gpus):
        free = _fsdp_8b(gpus, inter_latency_s=0.0, intra_latency_s=0.0)[1]["dp_comm_s"]
        return _fsdp_8b(gpus)[1]["dp_comm_s"] - free
    assert latency_s(512) - latency_s(64) == pytest.approx(3 * 32 * (63 - 7) * 8e-6, rel=1e-9)


def _megatron_8b(gpus, **overrides):
    """Llama 3 8B on Megatron-Core's distributed optimizer (ZeRO-1), TP1, its DP all-reduce
    not overlapped."""
    _, x = evaluate(model="llama3-8b", hardware="h100-sxm", gpus=gpus, tp=1, pp=1,
                    micro_batch=1, global_batch=gpus, zero=1, recompute="selective",
                    tokens=1e12, stack="megatron-core-2025", return_inputs=True,
                    as_frame=False, overrides={"dp_overlap": 0.0, **overrides})
    x = {k: float(v) if hasattr(v, "__float__") else v for k, v in x.items()}
    return x, model.run_stages(x)


def test_megatron_buckets_grow_with_the_data_parallel_size():
    """Megatron-Core's buckets hold max(40M, 1M x DP) parameters: the 7.50 B gradients of
    Llama 3 8B on a TP1 rank (the fullest stage's: the layers and the input embedding; the
    run model charges the output layer to the last stage) in 187.6 buckets at 8-way DP and
    14.7 at 512-way, each one all-reduce call paying 2 x (63 x 8 + 7 x 3 us) over 64 nodes."""
    x, r = _megatron_8b(512)
    params = r["stage_trainable_params"]
    assert params == pytest.approx(7.50e9, rel=0.001)
    assert x["dp_bucket_min_params"] == 4e7 and x["dp_bucket_params_per_dp_rank"] == 1e6
    buckets = model._dp_buckets(x, r)
    assert buckets == pytest.approx(params / 512e6, rel=1e-12)
    assert model._dp_buckets(*_megatron_8b(8)) == pytest.approx(params / 4e7, rel=1e-12)
    free = _megatron_8b(512, inter_latency_s=0.0, intra_latency_s=0.0)[1]
    added = r["dp_comm_s"] - free["dp_comm_s"]
    assert added == pytest.approx(buckets * 2 * (63 * 8e-6 + 7 * 3e-6), rel=1e-9)


def test_fsdp_and_unsized_stacks_keep_one_bucket_per_layer():
    """FSDP's units are layers whatever the stack (ZeRO-3), and a stack that states no
    bucket size (torchtitan) reduces layer by layer."""
    x, r = _fsdp_8b(512)
    assert model._dp_buckets(x, r) == 32
    _, x3 = evaluate(model="llama3-8b", hardware="h100-sxm", gpus=512, tp=1, pp=1,
                     micro_batch=2, global_batch=1024, zero=3, recompute="selective",
                     tokens=1e12, stack="megatron-core-2025", return_inputs=True,
                     as_frame=False)
    x3 = {k: float(v) if hasattr(v, "__float__") else v for k, v in x3.items()}
    assert model._dp_buckets(x3, model.run_stages(x3)) == 32
