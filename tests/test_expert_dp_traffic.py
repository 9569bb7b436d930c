"""Data-parallel traffic of routed experts (issue 41 item 7; docs/model.md, "Data-parallel
traffic of routed experts").

A rank's routed experts are replicated over its expert-data-parallel group
(TP CP DP / (ETP EP) ranks, ETP x EP ranks apart), not over the DP group: with EP filling
an 8-GPU node, the 8 GPUs of the node hold different experts and each all-gathers (ZeRO-3)
and reduce-scatters its own experts over its own NIC.  The hand numbers below are computed
from DeepSeek-V3's shape (arXiv:2412.19437, config_671B.json: 61 layers, 3 dense, hidden
7,168, 256 routed experts of width 2,048, SwiGLU) and the catalog's links, independently
of the model code.
"""

import math

import pytest

from formulas.communication import bucketed_exposed_comm_time
from planner.engine.layouts.evaluator import evaluate
from planner.engine.run import model

MOE_LAYERS, EXPERTS, HIDDEN, EXPERT_FFN = 58, 256, 7168, 2048
#: one routed expert's SwiGLU matrices [params]
EXPERT_PARAMS = 3 * HIDDEN * EXPERT_FFN


def _stages(hardware, gpus, **layout):
    """Kernel inputs and every intermediate of one DeepSeek-V3 layout."""
    _, x = evaluate(model="deepseek-v3", hardware=hardware, gpus=gpus, tokens=14.8e12,
                    return_inputs=True, as_frame=False, **layout)
    x = {k: float(v) if hasattr(v, "__float__") else v for k, v in x.items()}
    return x, model.run_stages(x)


def _gather_s(size_bytes, ranks, node_ranks, nic_bytes_per_s, nvlink_bytes_per_s,
              latency_s=(0.0, 0.0)):
    """Ring all-gather over ``ranks`` ranks of which ``node_ranks`` share a node: the node
    imports (n_e - 1)/n_e of the buffer over its node_ranks NICs, then shares it; one
    message latency (inter, intra) per ring step."""
    nodes = ranks / node_ranks
    return ((nodes - 1) * latency_s[0]
            + (nodes - 1) / nodes * size_bytes / (node_ranks * nic_bytes_per_s)
            + (node_ranks - 1) * latency_s[1]
            + (node_ranks - 1) / node_ranks * size_bytes / nvlink_bytes_per_s)


def test_ep8_zero3_gathers_each_gpus_experts_over_its_own_nic():
    """2,048 H100, TP1 PP1 EP8 ZeRO-3 (the pre-fix cheapest DeepSeek-V3 plan): a gather of
    the rank's 81.7 B expert parameters (163 GB in BF16) runs over one 42.5 GB/s NIC share
    with 255 peers in other nodes: 3.83 s, ~4.0 s with the dense weights, where the
    shared-by-the-node reading gave 1.07 s."""
    x, r = _stages("h100-sxm", 2048, tp=1, pp=1, ep=8, micro_batch=2, recompute="full",
                   zero=3)
    expert_params = MOE_LAYERS * EXPERTS * EXPERT_PARAMS / 8
    assert r["stage_expert_params"] == pytest.approx(expert_params, rel=1e-12)
    assert x["expert_dp_ranks"] == 256 and x["expert_dp_intra_ranks"] == 1
    nic, nvlink = model._scale_out(x), model._scale_up(x)
    assert nic == pytest.approx(42.5e9) and nvlink == pytest.approx(360e9)
    elem = x["bytes_per_element"]
    dense_bytes = elem * (r["stage_params"] - expert_params)
    expert_gather = _gather_s(elem * expert_params, 256, 1, nic, nvlink)
    assert expert_gather == pytest.approx(3.83, abs=0.01)
    gather = expert_gather + _gather_s(dense_bytes, 2048, 8, nic, nvlink)
    assert gather == pytest.approx(4.02, abs=0.01)
    # the node-shared reading the issue suspected, for the record
    shared = _gather_s(elem * r["stage_params"], 2048, 8, nic, nvlink)
    assert shared == pytest.approx(1.07, abs=0.01)
    # per step (m micro-batches): gathers in forward and backward, one reduce-scatter of
    # the gradients (half a ring all-reduce), then the overlap with the step's compute
    m = r["microbatches"]
    grad = x["grad_comm_bytes_per_param"]
    scatter = (_gather_s(grad * expert_params, 256, 1, nic, nvlink)
               + _gather_s(grad / elem * dense_bytes, 2048, 8, nic, nvlink))
    traffic = m * (2 * gather + scatter)
    assert traffic == pytest.approx(12.1, abs=0.1)
    # (5.5 s before the MoE grouped GEMMs were timed from their shapes)
    assert r["compute_s"] == pytest.approx(5.65, abs=0.05)
    # one bucket per layer, each its own call: every call's rings pay their steps' latency
    # (255 nodes for the experts; 255 nodes and 7 NVLink peers for the dense weights)
    per_call = 255 * x["inter_latency_s"] + (255 * x["inter_latency_s"]
                                             + 7 * x["intra_latency_s"])
    assert per_call == pytest.approx(4.1e-3, abs=1e-5)
    traffic += m * 3 * x["stage_layers"] * per_call
    # the buckets behind the step's compute (formulas.communication)
    exposed = bucketed_exposed_comm_time(traffic, r["compute_s"], x["stage_layers"],
                                         x["dp_overlap"])
    assert r["dp_comm_s"] == pytest.approx(exposed, rel=1e-9)


def test_deepseek_v3_published_layout_reduces_expert_gradients_between_nodes():
    """DeepSeek-V3's own layout (arXiv:2412.19437 s3.2: 2,048 GPUs, PP16, EP64 over 8
    nodes, ZeRO-1): each expert shard has 2,048 / (16 x 64) = 2 replicas, in different
    nodes, so the expert gradients are all-reduced pairwise over each GPU's own NIC:
    2 (n-1)/n S / B = S / B."""
    x, r = _stages("h800", 2048, tp=1, pp=16, ep=64, micro_batch=1, recompute="none",
                   zero=1)
    assert x["expert_dp_ranks"] == 2 and x["expert_dp_intra_ranks"] == 1
    nic, nvlink = model._scale_out(x), model._scale_up(x)
    grad = x["grad_comm_bytes_per_param"]
    expert = 2 * _gather_s(grad * r["stage_expert_params"], 2, 1, nic, nvlink)
    assert expert == pytest.approx(grad * r["stage_expert_params"] / nic, rel=1e-12)
    dense = 2 * _gather_s(grad * (r["stage_params"] - r["stage_expert_params"]),
                          x["dp"], x["dp_intra_ranks"], nic, nvlink)
    # one call per bucket (layer), each paying its rings' latencies
    nodes = x["dp"] / x["dp_intra_ranks"]
    per_call = 2 * x["inter_latency_s"] + 2 * ((nodes - 1) * x["inter_latency_s"]
                                              + (x["dp_intra_ranks"] - 1) * x["intra_latency_s"])
    # Megatron-Core's buckets: max(40M, 1M x DP) parameters each (DP 128: 128M)
    buckets = (r["stage_trainable_params"] + r["stage_trainable_expert_params"]) / 128e6
    expert += buckets * per_call
    last_backward = 2 * x["stage_layers"] * r["t_layer_fwd"]
    exposed = bucketed_exposed_comm_time(expert + dense, last_backward, buckets,
                                         x["dp_overlap"])
    assert r["dp_comm_s"] == pytest.approx(exposed, rel=1e-9)


def test_dense_model_dp_traffic_has_no_expert_term():
    """A dense model has no expert collectives: its DP time is the hierarchical all-reduce
    of its stage's gradients alone (no extra latency from an empty expert collective)."""
    _, x = evaluate(model="llama3-70b", hardware="h100-sxm", gpus=64, tp=8, pp=1,
                    micro_batch=1, recompute="none", zero=1, global_batch=64, tokens=1e12,
                    return_inputs=True, as_frame=False)
    x = {k: float(v) if hasattr(v, "__float__") else v for k, v in x.items()}
    r = model.run_stages(x)
    assert r["stage_expert_params"] == 0
    nic = model._scale_out(x)
    size = x["grad_comm_bytes_per_param"] * r["stage_params"]
    # Megatron-Core's buckets: max(40M, 1M x DP) = 40M parameters each at DP 8
    buckets = r["stage_trainable_params"] / 40e6
    latency = 2 * (x["dp"] - 1) * x["inter_latency_s"]  # of each bucket's call
    reduce = 2 * (x["dp"] - 1) / x["dp"] * size / nic + buckets * latency
    last_backward = 2 * x["stage_layers"] * r["t_layer_fwd"]
    assert r["dp_comm_s"] == pytest.approx(bucketed_exposed_comm_time(
        reduce, last_backward, buckets, x["dp_overlap"]), rel=1e-9)
    assert math.isfinite(r["step_time_s"])
