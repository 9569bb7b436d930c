"""Formulas that the run model's stages call, and the shape of the stages themselves.

The constants these formulas hold used to sit inline in planner/engine/run/model.py;
each is checked here against an independent statement of the same physics (a
published formula in another module, an explicit op or step list, or the source's
printed figure), and symbolically, numerically and for scalar/array/Series inputs.
"""

import ast
import inspect

import numpy as np
import pytest
from formula_checks import check_input_kinds, check_symbolic, sample_point
from hypothesis import given, settings
from hypothesis import strategies as st

from formulas import checkpoint, communication, compute, cost, energy, memory, pipeline
from planner.engine.run import model

NEW = [compute.final_norm_params, compute.model_params, compute.router_forward_flops_per_token,
       compute.attention_core_forward_flops_per_token, compute.memory_bound_time,
       compute.gemm_time, compute.qkv_projection_width, compute.tokens_per_expert,
       compute.attention_core_efficiency, compute.attention_core_bytes,
       compute.attention_scores_bytes, compute.elementwise_bytes_per_token,
       compute.optimizer_step_bytes, compute.training_pass_time, compute.backward_time,
       compute.host_launch_time, communication.achievable_bandwidth,
       communication.group_bandwidth, communication.group_latency,
       communication.tp_collectives_per_layer, communication.collective_overhead_time,
       communication.tp_recomputed_collectives_per_layer,
       communication.ring_attention_comm_time, communication.kv_chunk_bytes,
       communication.moe_alltoall_time, communication.moe_dispatch_bytes,
       communication.zero3_gather_time, checkpoint.combined_mtbf,
       checkpoint.storage_bandwidth, checkpoint.checkpoint_stall_time,
       checkpoint.checkpoint_restart_time, checkpoint.drained_checkpoint_interval,
       pipeline.microbatches_per_pipeline, cost.gpu_hours, energy.non_gpu_it_power]


# ---- every new formula: symbolic = numeric, input kinds, declared domains ----------------

@pytest.mark.parametrize("f", NEW, ids=lambda f: f.name)
def test_symbolic_equals_numeric(f):
    rng = np.random.default_rng(16)
    check_symbolic(f, [sample_point(f, rng) for _ in range(6)], rel=1e-12, lambdified=True)


@pytest.mark.parametrize("f", NEW, ids=lambda f: f.name)
def test_scalar_array_series_agree(f):
    rng = np.random.default_rng(4)
    check_input_kinds(f, [sample_point(f, rng) for _ in range(3)])


@pytest.mark.parametrize("f", NEW, ids=lambda f: f.name)
def test_every_argument_has_a_domain_and_unit(f):
    assert all(a.domain != "real" for a in f.arguments), f.name
    assert all(a.unit for a in f.arguments) and f.result_unit, f.units
    assert "Examples" in f.__doc__, f"{f.name}: no worked example"


@pytest.mark.parametrize("call,arg", [
    (lambda: compute.elementwise_bytes_per_token(8192, 28672, 8, 1.5, 2), "sequence_parallel"),
    (lambda: compute.gemm_time(0, 1, 1, 1, 2, 1e15, 0.8, 128, 3e12, 0.8), "rows"),
    (lambda: communication.ring_attention_comm_time(1e6, 0, 1e9, 0), "cp"),
    (lambda: checkpoint.checkpoint_stall_time(1, 1, 1, 0, 2, 0), "asynchronous"),
    (lambda: checkpoint.combined_mtbf(0.0, 1.0), "mtbf_a_s"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


# ---- parameters and FLOPs ----------------------------------------------------------------

def test_model_params_reproduces_released_checkpoints():
    """Exact parameter counts of released checkpoints (safetensors index, Hugging Face)."""
    # Llama 3 70B: 70,553,706,496; Llama 2 7B: 6,738,415,616; Mixtral 8x7B: 46,702,792,704
    assert compute.model_params(80, 0, 8192, 64, 8, 28672, 3, 128256, 2, 28672, 1, 0, 1) \
        == 70_553_706_496
    assert compute.model_params(32, 0, 4096, 32, 32, 11008, 3, 32000, 2, 11008, 1, 0, 1) \
        == 6_738_415_616
    assert compute.model_params(32, 32, 4096, 32, 8, 14336, 3, 32000, 2, 14336, 8, 0, 8) \
        == 46_702_792_704


def test_model_params_active_counts_top_k():
    # Mixtral 8x7B, top-2: 12.9 B active (Jiang et al. 2024, arXiv:2401.04088 s1)
    active = compute.model_params(32, 32, 4096, 32, 8, 14336, 3, 32000, 2, 14336, 2, 0, 8)
    assert active == pytest.approx(12.9e9, rel=0.01)


def test_router_flops_are_two_per_router_weight():
    h, fe, e, k, es, nm = 7168.0, 2048.0, 256.0, 8.0, 1.0, 3.0
    router_weights = compute.moe_active_mlp_params(h, fe, k, es, nm, e) - (k + es) * nm * h * fe
    assert compute.router_forward_flops_per_token(h, e) == 2 * router_weights


@pytest.mark.parametrize("s,h,b", [(2048, 12288, 1536), (4096, 8192, 1024), (8192, 5120, 64)])
def test_attention_core_is_the_sequence_term_of_narayanan_eq3(s, h, b):
    """3 x 4sh per token is the s^2 term of Narayanan's 72 B s l h^2 (1 + s/6h) (r = 0)."""
    with_s = compute.narayanan_flops_per_iteration(b, s, 1, h, 1, 0)
    without_s = 72 * b * s * h**2 + 6 * b * s * h
    core = 3 * compute.attention_core_forward_flops_per_token(h, s) * b * s
    assert core == pytest.approx(with_s - without_s, rel=1e-12)


def test_qkv_width_and_projection_make_the_attention_params():
    h, a, kv, tp = 8192.0, 64.0, 8.0, 4.0
    qkv_weights = h * compute.qkv_projection_width(h, a, kv, tp) * tp
    assert qkv_weights + h * h == compute.attention_params(h, a, kv)


# ---- op times ---------------------------------------------------------------------------

def test_gemm_time_compute_and_memory_bound_regimes():
    peak, eta, half, bw, eta_m = 989e12, 0.8, 128.0, 3.35e12, 0.8
    m = n = k = 8192.0
    big = compute.gemm_time(m, n, k, min(m, n, k), 2, peak, eta, half, bw, eta_m)
    assert big == pytest.approx(2 * m * n * k / (peak * eta * k / (k + half)), rel=1e-12)
    # one token: a matrix-vector product, bound by reading the k x n weights
    thin = compute.gemm_time(1.0, n, k, 1.0, 2, peak, eta, half, bw, eta_m)
    assert thin == pytest.approx(2 * (k + k * n + n) / (bw * eta_m), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(1, 1e5), st.floats(1.01, 4))
def test_gemm_time_grows_with_rows(m, factor):
    args = (4096.0, 4096.0)
    t1 = compute.gemm_time(m, *args, min(m, 4096.0), 2, 989e12, 0.8, 128, 3.35e12, 0.8)
    t2 = compute.gemm_time(m * factor, *args, min(m * factor, 4096.0), 2, 989e12, 0.8, 128,
                           3.35e12, 0.8)
    assert t2 >= t1


def test_memory_bound_time_is_the_roofline_without_work():
    assert compute.memory_bound_time(1e9, 2e12, 0.5) == compute.roofline_time(
        0.0, 1e9, 1e15, 0.5, 2e12, 0.5) == 1e-3


def test_attention_core_efficiency_by_kernel():
    t, d, s, f, eta, half = 4096.0, 128.0, 8192.0, 0.6, 0.8, 128.0
    assert compute.attention_core_efficiency(t, d, s, 1, f, eta, half) == \
        compute.gemm_efficiency(d, eta, half)
    assert compute.attention_core_efficiency(t, d, s, 0, f, eta, half) == pytest.approx(
        f * compute.gemm_efficiency(t, eta, half), rel=1e-15)


@pytest.mark.parametrize("s,b,h,a,t", [(2048, 1, 12288, 96, 8), (4096, 2, 8192, 64, 4)])
def test_scores_traffic_is_twice_korthikantis_score_bytes(s, b, h, a, t):
    """Written once, read once: 2 x the 5as^2b/t bytes selective recompute saves (Table 2)."""
    stored = memory.korthikanti_activation_bytes_per_layer(s, b, h, a, t, 1, 0)
    selective = memory.korthikanti_activation_bytes_per_layer(s, b, h, a, t, 1, 1)
    assert compute.attention_scores_bytes(s, b, a, t, 1) == pytest.approx(
        2 * (stored - selective), rel=1e-12)
    # context parallelism splits the query rows
    assert compute.attention_scores_bytes(s, b, a, t, 4) == pytest.approx(
        compute.attention_scores_bytes(s, b, a, t, 1) / 4, rel=1e-15)


def _elementwise_from_op_list(h, f, tp, sp, e):
    """The op list of a Megatron-LM GPT layer, summed one op at a time."""
    h_ops = ["input norm", "attention bias", "attention dropout", "residual add",
             "post-attention norm", "MLP output bias", "MLP dropout", "residual add"]
    f_ops = ["MLP bias", "GeLU"]
    h_width = h / (tp if sp else 1)
    f_width = f / tp
    return e * (sum(2 * h_width for _ in h_ops) + sum(2 * f_width for _ in f_ops))


@pytest.mark.parametrize("h,f,tp,sp", [(8192, 28672, 8, 0), (8192, 28672, 8, 1),
                                        (12288, 49152, 1, 0), (4096, 14336, 2, 1)])
def test_elementwise_bytes_follow_the_op_list(h, f, tp, sp):
    assert compute.elementwise_bytes_per_token(h, f, tp, sp, 2) == pytest.approx(
        _elementwise_from_op_list(h, f, tp, sp, 2), rel=1e-15)


def test_optimizer_step_traffic_of_mixed_precision_adam():
    # ZeRO's K = 12 bytes of states read and written, 2-byte gradients read, weights written
    assert compute.optimizer_step_bytes(1.0, 2, 2, 12) == 28.0


def test_training_pass_mirrors_the_flop_counts():
    """Time and FLOPs use the same pass structure: 3F + R and backward = 2F."""
    f, r = 1.7e-3, 0.4e-3
    assert compute.training_pass_time(f, r) == compute.hardware_flops_per_token(f, r)
    assert compute.training_pass_time(f, 0) == compute.training_flops_per_token(f)
    assert compute.backward_time(f) + f == compute.training_pass_time(f, 0)


def test_host_launches_per_pass():
    assert compute.host_launch_time(10, 1.0, 0) == 30.0  # forward 1, backward 2
    assert compute.host_launch_time(10, 1.0, 1) == 40.0  # + recomputed forward


def test_tokens_per_expert_conserves_tokens():
    t, ep, k, e = 4096.0, 8.0, 2.0, 8.0
    assert compute.tokens_per_expert(t, ep, k, e) * e == t * ep * k


# ---- communication -----------------------------------------------------------------------

def test_links_select_by_placement():
    assert communication.achievable_bandwidth(450e9, 0.8) == pytest.approx(360e9)
    assert communication.group_bandwidth(1, 360e9, 40e9) == 360e9
    assert communication.group_bandwidth(0, 360e9, 40e9) == 40e9
    assert communication.group_latency(1, 3e-6, 1e-5) == 3e-6
    assert communication.group_latency(0, 3e-6, 1e-5) == 1e-5


def test_tp_collectives_megatron_f_and_g():
    # f and g per attention and MLP block: 2 forward + 2 backward; recompute repeats 2
    assert communication.tp_collectives_per_layer(0) == 2 + 2
    assert communication.tp_collectives_per_layer(1) == 2 + 2 + 2


def test_op_sac_recomputes_the_forward_gathers_not_the_saved_reduce_scatters():
    # torchtitan's save list keeps reduce_scatter_tensor outputs: with sequence parallelism
    # only the two all-gathers (half an all-reduce each) run again; without it both
    # all-reduces; no op-level policy, nothing
    assert communication.tp_recomputed_collectives_per_layer(1, 1) == 2 * 0.5
    assert communication.tp_recomputed_collectives_per_layer(1, 0) == 2
    assert communication.tp_recomputed_collectives_per_layer(0, 1) == 0


@pytest.mark.parametrize("n", [1, 2, 3, 8, 64])
def test_collective_overhead_only_with_peers(n):
    assert communication.collective_overhead_time(80e-6, n) == (0.0 if n == 1 else 80e-6)


@pytest.mark.parametrize("cp", [1, 2, 4, 8])
def test_ring_attention_equals_its_step_list(cp):
    kv, bw, lat = 8e6, 40e9, 1e-5
    forward = [communication.p2p_time(kv, bw, lat) for _ in range(cp - 1)]
    backward = [communication.p2p_time(kv, bw, lat) for _ in range(2 * (cp - 1))]
    assert communication.ring_attention_comm_time(kv, cp, bw, lat) == pytest.approx(
        sum(forward) + sum(backward), rel=1e-12, abs=0)


def test_kv_chunk_is_half_the_core_traffic_under_mha():
    t, h, tp = 4096.0, 8192.0, 8.0
    assert communication.kv_chunk_bytes(t, h, 64, 64, tp, 2) == \
        compute.attention_core_bytes(t, h, tp, 2) / 2


@pytest.mark.parametrize("ep", [1, 2, 8, 64])
def test_moe_layer_runs_four_alltoalls(ep):
    size = communication.moe_dispatch_bytes(4096, 2, 4096, 2)
    steps = [communication.alltoall_time(size, ep, 40e9, 1e-5)
             for _ in ("dispatch", "combine") for _ in ("forward", "backward")]
    assert communication.moe_alltoall_time(size, ep, 40e9, 1e-5) == pytest.approx(
        sum(steps), rel=1e-12, abs=0)


def test_zero3_gathers_twice_per_microbatch():
    assert communication.zero3_gather_time(0.25, 8) == 0.25 * 2 * 8


# ---- reliability, pipeline, cost, energy ---------------------------------------------------

def test_failure_rates_add():
    assert checkpoint.combined_mtbf(3600.0, 3600.0) == checkpoint.system_mtbf(3600.0, 2)
    assert checkpoint.combined_mtbf(100.0, 300.0) == checkpoint.combined_mtbf(300.0, 100.0)


def test_storage_bandwidth_saturates():
    assert checkpoint.storage_bandwidth(10, 2e9, 100e9) == 20e9
    assert checkpoint.storage_bandwidth(1000, 2e9, 100e9) == 100e9


def test_checkpoint_schemes():
    w, h, p = 60.0, 2.0, 3.0
    assert checkpoint.checkpoint_stall_time(w, h, p, 1, 0, 0) == w
    assert checkpoint.checkpoint_stall_time(w, h, p, 0, 1, 0) == h
    assert checkpoint.checkpoint_stall_time(w, h, p, 0, 0, 1) == h + p
    assert checkpoint.checkpoint_restart_time(600.0, 120.0, 3.0, 0) == 720.0
    assert checkpoint.checkpoint_restart_time(600.0, 120.0, 3.0, 1) == 603.0
    assert checkpoint.drained_checkpoint_interval(300.0, 500.0, 1, 10.0) == 500.0
    assert checkpoint.drained_checkpoint_interval(300.0, 500.0, 0, 10.0) == 300.0
    assert checkpoint.drained_checkpoint_interval(900.0, 500.0, 1, 10.0) == 900.0
    # never shorter than one step (issue 29: 165 s against a 279 s step)
    assert checkpoint.drained_checkpoint_interval(165.0, 0.2, 1, 279.0) == 279.0
    assert checkpoint.drained_checkpoint_interval(165.0, 0.2, 0, 279.0) == 279.0


def test_microbatches_narayanan_table1():
    # GPT-3 175B: B = 1536, t = 8, p = 8, 1024 GPUs -> d = 16, b = 1: m = 96
    assert pipeline.microbatches_per_pipeline(1536, 16, 1) == 96.0


def test_gpu_hours_price_the_cloud_cost():
    assert cost.cloud_cost(512, 7200.0, 1.0) == pytest.approx(cost.gpu_hours(512, 7200.0))


def test_rest_of_it_power():
    assert energy.non_gpu_it_power(4, 2000.0, 250.0) == 9000.0


# ---- the stages ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stage_results(catalog):
    from planner.engine.layouts.space import layout_flags
    from planner.engine.run.run_inputs import RunChoices, base_inputs
    from planner.engine.run.spares import resolve_spares

    x = base_inputs(catalog, RunChoices(model="mixtral-8x7b", hardware="h100-sxm", tokens=1e12))
    layout = {k: np.array([v]) for k, v in dict(
        gpus=256, tp=2, pp=4, dp=32, cp=1, ep=8, vp=2, micro_batch=1, recompute=1, zero=1,
        sequence_parallel=1).items()}
    x.update(layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"], layers=x["layers"]))
    x = resolve_spares(x)  # --spares auto -> a count, as run_stages and the evaluator do
    results = {}
    per_stage = []
    for stage in model.STAGES:
        out = stage(x, dict(results))
        per_stage.append((stage.__name__, out))
        results.update(out)
    return x, results, per_stage


def test_stages_produce_every_output_once(stage_results):
    _, results, per_stage = stage_results
    seen: dict[str, str] = {}
    for name, out in per_stage:
        for key in out:
            assert key not in seen, f"{name} overwrites {key} of {seen.get(key)}"
            seen[key] = name
    assert set(model.OUTPUTS) <= set(results)


def test_stages_are_small(stage_results):
    _, _, per_stage = stage_results
    for name, out in per_stage:
        assert 1 <= len(out) <= 14, (name, len(out))
    for stage in model.STAGES:
        assert len(inspect.getsource(stage).splitlines()) <= 60, stage.__name__


def test_run_model_is_the_stages(stage_results):
    x, results, _ = stage_results
    out = model.run_model(x)
    assert list(out) == list(model.OUTPUTS)
    for name in model.OUTPUTS:
        np.testing.assert_array_equal(out[name], results[name])


def test_no_physical_constant_inline_in_the_model():
    """Numbers in the composition are 0/1 (flags, complements) or the TFLOP unit prefix
    (the output table's plot colours are not physics: it is left out)."""
    tree = ast.parse(inspect.getsource(model))
    composition = [node for node in tree.body
                   if not (isinstance(node, ast.AnnAssign)
                           and getattr(node.target, "id", "") == "OUTPUT_COLUMNS")]
    assert len(composition) == len(tree.body) - 1  # the table is there, and left out
    allowed = {0, 1, 1e12}
    numbers = {node.value for top in composition for node in ast.walk(top)
               if isinstance(node, ast.Constant) and isinstance(node.value, int | float)
               and not isinstance(node.value, bool)}
    assert numbers <= allowed, sorted(numbers - allowed)


def test_run_model_does_not_return_locals():
    assert "locals()" not in inspect.getsource(model)


def test_resolved_spares_do_not_depend_on_the_other_rows():
    # one cached search per distinct set of failure inputs, over that set's own range:
    # a candidate's spare count is the same alone and among others (blocks of a plan differ)
    from planner.engine.run.spares import SPARE_INPUTS, optimal_spare_nodes, resolve_spares

    base = {"gpus_per_node": 8.0, "gpu_mtbf_s": 285228322.0, "node_mtbf_s": 180285826.0,
            "network_mtbf_s": 273004251.0, "rack_mtbf_s": 1e18, "software_mtbf_s": 5.9733e6,
            "software_internode_mtbf_s": 7.387e5, "software_node_exponent": 0.3,
            "manual_restart_fraction": 0.00716, "manual_restart_s": 28800.0,
            "rack_nodes": 1.0, "restart_overhead_s": 600.0, "requeue_restart_s": 7200.0,
            "node_repair_s": 86400.0}
    gpus = np.array([64.0, 16384.0, 1013760.0, 16384.0, 64.0])
    batch = resolve_spares({**base, "gpus": gpus, "spare_nodes": -1.0})["spare_nodes"]
    alone = [optimal_spare_nodes(**{**base, "gpus": g})[0] for g in gpus]
    np.testing.assert_array_equal(batch, alone)
    assert set(SPARE_INPUTS) == {*base, "gpus"}
    assert batch[2] > batch[1] > batch[0]  # more nodes, more in repair, more spares
    # two inputs varying (a co-design grid of GPU MTBFs), and none (one spare column)
    mtbf = np.array([285228322.0, 1e7, 285228322.0, 1e7, 5e7])
    both = resolve_spares({**base, "gpus": gpus, "gpu_mtbf_s": mtbf, "spare_nodes": -1.0})
    alone = [optimal_spare_nodes(**{**base, "gpus": g, "gpu_mtbf_s": m})[0]
             for g, m in zip(gpus, mtbf, strict=True)]
    np.testing.assert_array_equal(both["spare_nodes"], alone)
    none = resolve_spares({**base, "gpus": 16384.0, "spare_nodes": np.array([-1.0, 3.0])})
    np.testing.assert_array_equal(none["spare_nodes"], [batch[1], 3.0])


def _spares_over_the_whole_range(**x) -> np.ndarray:
    """The former search (every spare count of each row's range, one argmin): the reference
    of the windowed search with its stopping bound."""
    from planner.engine.run.spares import billed_nodes, pool_terms

    terms = pool_terms(**x)
    spares = np.arange(int(np.nanmax(terms["top"])) + 1, dtype=float)[None, :]
    return spares[0, np.argmin(billed_nodes(terms, spares), axis=1)]


@settings(max_examples=40, deadline=None)
@given(gpus=st.lists(st.sampled_from([8.0, 64.0, 1024.0, 16384.0, 110592.0, 1013760.0]),
                     min_size=1, max_size=6),
       gpus_per_node=st.sampled_from([4.0, 8.0]),
       gpu_mtbf_s=st.floats(1e6, 1e9), node_mtbf_s=st.floats(1e6, 1e9),
       rack_nodes=st.sampled_from([1.0, 18.0, 64.0, 1536.0]),
       rack_mtbf_s=st.sampled_from([1e18, 3e7, 3e6]),
       software_mtbf_s=st.floats(1e4, 1e7), restart_overhead_s=st.floats(60.0, 3600.0),
       requeue_restart_s=st.floats(60.0, 36000.0), node_repair_s=st.floats(3600.0, 1e6))
def test_windowed_spare_search_equals_the_whole_range(gpus, gpus_per_node, gpu_mtbf_s,
                                                      node_mtbf_s, rack_nodes, rack_mtbf_s,
                                                      software_mtbf_s, restart_overhead_s,
                                                      requeue_restart_s, node_repair_s):
    # the stopping bound (the swap probability is at most 1) never cuts off the optimum,
    # whichever restart is cheaper (a re-queue may be: then the survival falls with swaps)
    from planner.engine.run.spares import optimal_spare_nodes

    n = len(gpus)
    x = {"gpus": np.array(gpus), "gpus_per_node": gpus_per_node, "gpu_mtbf_s": gpu_mtbf_s,
         "node_mtbf_s": node_mtbf_s, "network_mtbf_s": 2.7e8, "rack_mtbf_s": rack_mtbf_s,
         "software_mtbf_s": software_mtbf_s, "software_internode_mtbf_s": 4 * software_mtbf_s,
         "software_node_exponent": 0.3, "rack_nodes": rack_nodes,
         "restart_overhead_s": restart_overhead_s, "requeue_restart_s": requeue_restart_s,
         "node_repair_s": node_repair_s, "manual_restart_fraction": 0.00716,
         "manual_restart_s": 28800.0}
    x = {k: np.broadcast_to(np.asarray(v, dtype=float), (n,)) for k, v in x.items()}
    np.testing.assert_array_equal(optimal_spare_nodes(**x), _spares_over_the_whole_range(**x))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), window=st.integers(1, 80), first=st.integers(0, 300),
       single=st.floats(0.0, 400.0), rack=st.floats(0.0, 6.0),
       rack_nodes=st.sampled_from([1.0, 2.0, 18.0, 64.0, 1536.0]))
def test_batched_pool_cdfs_equal_the_formula_bit_for_bit(rows, window, first, single, rack,
                                                        rack_nodes):
    # the spare search computes both pools' 24 Poisson CDFs in one call
    from formulas.reliability import pool_swap_probability
    from planner.engine.run.spares import pool_swap_probabilities

    spares = np.arange(first, first + window, dtype=float)[None, :]
    mu1 = np.linspace(single, single * 1.5 + 1.0, rows)[:, None]
    mu_r = np.linspace(rack, rack * 0.5, rows)[:, None]
    m = np.full((rows, 1), rack_nodes)
    batched = pool_swap_probabilities(spares, (1, m), mu1, mu_r, m)
    for found, lost in zip(batched, (1, m), strict=True):
        expected = pool_swap_probability(spares, lost, mu1, mu_r, m)
        np.testing.assert_array_equal(found, expected)
