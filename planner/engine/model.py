"""The model of one training run, composed from :mod:`formulas`.

:func:`run_model` maps a dict of inputs (every one a float, a numpy array of
candidates, or a sympy Symbol) to a dict of outputs.  Called with arrays it
evaluates directly; called with Symbols it yields one sympy expression per
output, which :mod:`planner.codegen.kernel` compiles into a single numpy function with
common subexpressions eliminated.  Discrete choices arrive as numbers: 0/1 flags
(``selective``, ``full_recompute``, ``sequence_parallel``, ``ckpt_sync`` ...) and
shard counts computed by :mod:`planner.space` from the ZeRO stage.

Every input is in SI units (s, B, FLOP, W, J, USD); ``INPUTS`` lists them with
their meaning.  The assumptions are documented in docs/model.md.
"""

from __future__ import annotations

from formulas import (
    carbon,
    checkpoint,
    communication,
    compute,
    cost,
    energy,
    memory,
    pipeline,
    straggler,
)
from formulas.ops import maximum, minimum
from planner.engine.columns import kernel_outputs

#: Inputs of the run model: name -> (unit, meaning).
INPUTS: dict[str, tuple[str, str]] = {
    # model
    "layers": ("1", "transformer layers"),
    "hidden": ("1", "hidden size h"),
    "heads": ("1", "attention heads"),
    "kv_heads": ("1", "key/value heads (GQA/MQA)"),
    "ffn": ("1", "MLP inner size of dense layers"),
    "mlp_matrices": ("1", "2 (GELU MLP) or 3 (gated: SwiGLU/GeGLU)"),
    "vocab": ("1", "vocabulary size"),
    "seq_len": ("1", "sequence length s"),
    "embedding_matrices": ("1", "1 if input/output embeddings are tied, else 2"),
    "moe_layers": ("1", "number of MoE layers (0 for dense models)"),
    "experts": ("1", "routed experts per MoE layer (1 for dense)"),
    "experts_per_token": ("1", "routed experts per token"),
    "shared_experts": ("1", "shared experts per MoE layer"),
    "moe_ffn": ("1", "inner size of one expert"),
    "dropout_masks": ("1", "1 if the model trains with dropout (masks stored), 0 without"),
    "tokens": ("1", "training tokens D"),
    # layout
    "gpus": ("1", "GPUs N = tp*pp*cp*dp"),
    "tp": ("1", "tensor-parallel size"),
    "pp": ("1", "pipeline-parallel size"),
    "dp": ("1", "data-parallel size"),
    "cp": ("1", "context-parallel size"),
    "ep": ("1", "expert-parallel size (within dp)"),
    "vp": ("1", "virtual pipeline stages per rank (interleaving)"),
    "stage_layers": ("1", "layers on the fullest pipeline stage, ceil(layers / pp)"),
    "micro_batch": ("1", "micro-batch size b [sequences]"),
    "global_batch": ("1", "global batch B [sequences]"),
    "selective": ("1", "1 for selective recompute of the attention core (without flash attention)"),
    "attention_scores_stored": ("1", "1 if the s x s attention scores are kept (no flash/selective)"),
    "full_recompute": ("1", "1 for full activation recompute"),
    "sequence_parallel": ("1", "1 if sequence parallelism is on"),
    "weight_shards": ("1", "shards of the weights (dp under ZeRO-3, else 1)"),
    "grad_shards": ("1", "shards of the gradients (dp under ZeRO>=2, else 1)"),
    "optimizer_shards": ("1", "shards of the optimizer state (dp under ZeRO>=1, else 1)"),
    "zero3": ("1", "1 under ZeRO-3/FSDP (parameters all-gathered each pass)"),
    "tp_intra_ranks": ("1", "TP ranks inside one scale-up domain, min(tp, domain)"),
    "pp_intra": ("1", "1 if pipeline neighbours share the scale-up domain"),
    "ep_intra": ("1", "1 if the EP group fits in the scale-up domain"),
    "cp_intra": ("1", "1 if the CP group (with its TP ranks) fits in the scale-up domain"),
    "dp_intra_ranks": ("1", "DP ranks inside one scale-up domain"),
    # hardware
    "peak_flops_per_s": ("FLOP/s", "dense peak at the chosen precision"),
    "gemm_max_efficiency": ("1", "fraction of peak reached by large GEMMs"),
    "gemm_half_efficiency_dim": ("1", "GEMM dimension reaching half of that"),
    "hbm_bytes": ("B", "HBM capacity per GPU"),
    "hbm_bandwidth_bytes_per_s": ("B/s", "HBM bandwidth"),
    "hbm_efficiency": ("1", "achievable fraction of HBM bandwidth"),
    "scale_up_bandwidth_bytes_per_s": ("B/s", "per-GPU scale-up link bandwidth"),
    "scale_up_bus_efficiency": ("1", "achievable bus-bandwidth fraction, scale-up"),
    "scale_out_bandwidth_bytes_per_s": ("B/s", "per-GPU network bandwidth"),
    "scale_out_bus_efficiency": ("1", "achievable bus-bandwidth fraction, scale-out"),
    "intra_latency_s": ("s", "per-message latency in the scale-up domain"),
    "inter_latency_s": ("s", "per-message latency across nodes"),
    "gpus_per_node": ("1", "GPUs per node"),
    "idle_power_w": ("W", "GPU idle power"),
    "max_power_w": ("W", "GPU max (TDP) power"),
    "node_overhead_power_w": ("W", "node power beyond the GPUs"),
    "network_power_per_node_w": ("W", "switch power attributable to one node"),
    "storage_write_bytes_per_s_per_node": ("B/s", "checkpoint write bandwidth per node"),
    "storage_read_bytes_per_s_per_node": ("B/s", "checkpoint read bandwidth per node"),
    "host_copy_bytes_per_s_per_gpu": ("B/s", "device-to-host copy bandwidth"),
    "price_usd_per_gpu_hour": ("USD/h", "cloud price per GPU-hour"),
    "capex_usd_per_gpu": ("USD", "purchase price per GPU (incl. its share of the node)"),
    "lifetime_s": ("s", "depreciation lifetime"),
    "opex_fraction_per_year": ("1", "yearly maintenance/opex as a fraction of capex"),
    "embodied_kg_per_gpu": ("kgCO2e", "embodied carbon per GPU (incl. node share)"),
    # site
    "pue": ("1", "power usage effectiveness"),
    "electricity_usd_per_kwh": ("USD/kWh", "electricity price"),
    "grid_intensity_g_per_kwh": ("gCO2e/kWh", "grid carbon intensity"),
    "use_tco": ("1", "1 to cost the run by TCO, 0 by cloud price"),
    # execution
    "bytes_per_element": ("B", "bytes of an activation/weight element (2 for bf16)"),
    "weight_bytes_per_param": ("B", "weight bytes per parameter"),
    "grad_bytes_per_param": ("B", "gradient bytes per parameter"),
    "optimizer_bytes_per_param": ("B", "optimizer-state bytes per parameter"),
    "grad_comm_bytes_per_param": ("B", "bytes per parameter in the gradient reduction"),
    "checkpoint_bytes_per_param": ("B", "checkpointed bytes per parameter"),
    "memory_reserve_bytes": ("B", "memory not available to the model (context, NCCL, allocator)"),
    "tp_overlap": ("1", "fraction of TP communication hidden behind compute"),
    "dp_overlap": ("1", "fraction of DP communication hidden behind the last backward"),
    "cp_overlap": ("1", "fraction of CP ring exchange hidden behind attention"),
    "ep_overlap": ("1", "fraction of EP all-to-all hidden behind expert compute"),
    "attention_efficiency_factor": ("1", "attention-core efficiency relative to GEMMs"),
    "layer_overhead_s": ("s", "host time to launch one layer's forward pass (kernels, Python)"),
    "host_overlap_exponent": ("1", "sharpness of the smooth max of host and device time"),
    "collective_overhead_s": ("s", "fixed time per collective call (launch, synchronisation)"),
    # reliability
    "gpu_mtbf_s": ("s", "mean time between job-stopping failures per GPU"),
    "node_mtbf_s": ("s", "mean time between job-stopping failures per node, beyond its GPUs"),
    "storage_write_cap_bytes_per_s": ("B/s", "aggregate checkpoint write bandwidth of storage"),
    "storage_read_cap_bytes_per_s": ("B/s", "aggregate checkpoint read bandwidth of storage"),
    "restart_overhead_s": ("s", "detect, re-queue and warm up after a failure"),
    "ckpt_sync": ("1", "1 for synchronous checkpoints to storage"),
    "ckpt_async": ("1", "1 for asynchronous snapshots to host memory"),
    "ckpt_in_memory": ("1", "1 for in-memory copies to a peer"),
    "step_time_cv": ("1", "coefficient of variation of a rank's iteration time"),
    "pause_probability": ("1", "per-rank per-iteration probability of a pause"),
    "pause_duration_s": ("s", "length of such a pause"),
}

#: Outputs: name -> unit, in the kernel's output order (from the column registry).
OUTPUTS: dict[str, str] = kernel_outputs()


def _gemm_time(x, flops, m, n, k, min_dim):
    """Roofline time of one GEMM (m x k times k x n) with shape-dependent efficiency."""
    eta = compute.gemm_efficiency(min_dim, x["gemm_max_efficiency"],
                                  x["gemm_half_efficiency_dim"])
    moved = x["bytes_per_element"] * (m * k + k * n + m * n)
    return compute.roofline_time(flops, moved, x["peak_flops_per_s"], eta,
                                 x["hbm_bandwidth_bytes_per_s"], x["hbm_efficiency"])


def _link(x, intra_flag):
    """Achievable per-rank bandwidth and latency of a group inside or across nodes."""
    up = x["scale_up_bandwidth_bytes_per_s"] * x["scale_up_bus_efficiency"]
    out = x["scale_out_bandwidth_bytes_per_s"] * x["scale_out_bus_efficiency"]
    bandwidth = intra_flag * up + (1 - intra_flag) * out
    latency = intra_flag * x["intra_latency_s"] + (1 - intra_flag) * x["inter_latency_s"]
    return bandwidth, latency


def run_model(x: dict) -> dict:
    """Evaluate the model of a training run; see the module docstring."""
    h, s, b = x["hidden"], x["seq_len"], x["micro_batch"]
    tp, pp, dp, cp, ep, vp = x["tp"], x["pp"], x["dp"], x["cp"], x["ep"], x["vp"]
    elem = x["bytes_per_element"]
    layers = x["layers"]
    moe_layers = x["moe_layers"]
    dense_layers = layers - moe_layers
    layers_per_stage = x["stage_layers"]  # the fullest stage: ceil(layers / pp)
    moe_share = moe_layers / layers  # MoE layers are spread evenly over the stages

    # ---- parameters -------------------------------------------------------
    attn_params = compute.attention_params(h, x["heads"], x["kv_heads"])
    dense_mlp_params = compute.mlp_params(h, x["ffn"], x["mlp_matrices"])
    moe_params = compute.moe_mlp_params(h, x["moe_ffn"], x["experts"], x["shared_experts"],
                                        x["mlp_matrices"])
    moe_active = compute.moe_active_mlp_params(h, x["moe_ffn"], x["experts_per_token"],
                                               x["shared_experts"], x["mlp_matrices"],
                                               x["experts"])
    layer_common = attn_params + compute.norm_params(h)
    emb_params = compute.embedding_params(x["vocab"], h, x["embedding_matrices"])
    params = (layers * layer_common + dense_layers * dense_mlp_params
              + moe_layers * moe_params + emb_params)
    active_params = (layers * layer_common + dense_layers * dense_mlp_params
                     + moe_layers * moe_active + emb_params)

    # ---- FLOPs (model FLOPs: Narayanan counting, recompute not included) ---
    attn_fwd_tok = compute.attention_forward_flops_per_token(h, x["heads"], x["kv_heads"], s)
    dense_mlp_fwd_tok = compute.mlp_forward_flops_per_token(h, x["ffn"], x["mlp_matrices"])
    moe_fwd_tok = compute.mlp_forward_flops_per_token(
        h, x["moe_ffn"] * (x["experts_per_token"] + x["shared_experts"]), x["mlp_matrices"]
    ) + 2 * h * x["experts"]  # router
    logits_fwd_tok = compute.logits_forward_flops_per_token(h, x["vocab"])
    fwd_tok = (layers * attn_fwd_tok + dense_layers * dense_mlp_fwd_tok
               + moe_layers * moe_fwd_tok + logits_fwd_tok)
    model_flops_per_token = compute.training_flops_per_token(fwd_tok)
    core_fwd_tok = 4 * s * h  # attention scores and values, the part selective recompute redoes
    recompute_tok = (x["full_recompute"] * (fwd_tok - logits_fwd_tok)
                     + (1 - x["full_recompute"]) * x["selective"] * layers * core_fwd_tok)
    hardware_flops_per_token = compute.hardware_flops_per_token(fwd_tok, recompute_tok)

    # ---- compute time of one micro-batch on the slowest stage --------------
    tokens_mb = b * s / cp  # tokens a rank processes per micro-batch
    kv_ratio = x["kv_heads"] / x["heads"]
    qkv_out = h * (1 + 2 * kv_ratio) / tp
    t_qkv = _gemm_time(x, 2 * tokens_mb * h * qkv_out, tokens_mb, qkv_out, h,
                       minimum(minimum(tokens_mb, h), qkv_out))
    core_flops = 4 * tokens_mb * s * h / tp
    # Unfused attention runs two batched GEMMs whose smallest dimension is the head size;
    # fused (flash) kernels run at a fraction of the large-GEMM efficiency.
    head_dim = h / x["heads"]
    unfused = x["selective"] + x["attention_scores_stored"]  # no flash attention
    core_efficiency = unfused * compute.gemm_efficiency(
        minimum(tokens_mb, head_dim), x["gemm_max_efficiency"], x["gemm_half_efficiency_dim"]
    ) + (1 - unfused) * x["attention_efficiency_factor"] * compute.gemm_efficiency(
        minimum(tokens_mb, s), x["gemm_max_efficiency"], x["gemm_half_efficiency_dim"])
    t_core = compute.roofline_time(
        core_flops, elem * tokens_mb * (4 * h / tp), x["peak_flops_per_s"], core_efficiency,
        x["hbm_bandwidth_bytes_per_s"], x["hbm_efficiency"])
    # Without flash attention the s x s scores are materialised: softmax, dropout and its
    # mask (5*a*s^2*b bytes per layer, Korthikanti et al. 2022 s4.1) are written and read.
    t_scores = x["attention_scores_stored"] * 10 * (x["heads"] / tp) * (s / cp) * s * b / (
        x["hbm_bandwidth_bytes_per_s"] * x["hbm_efficiency"])
    t_proj = _gemm_time(x, 2 * tokens_mb * h * h / tp, tokens_mb, h, h / tp,
                        minimum(minimum(tokens_mb, h), h / tp))
    ffn_tp = x["ffn"] / tp
    t_mlp = x["mlp_matrices"] * _gemm_time(x, 2 * tokens_mb * h * ffn_tp, tokens_mb, ffn_tp, h,
                                           minimum(minimum(tokens_mb, h), ffn_tp))
    # MoE: each expert GEMM sees the tokens routed to it from the whole EP group.
    moe_ffn_tp = x["moe_ffn"] / tp
    active_experts = x["experts_per_token"] + x["shared_experts"]
    tokens_per_expert = tokens_mb * ep * x["experts_per_token"] / x["experts"]
    t_moe = active_experts * x["mlp_matrices"] * _gemm_time(
        x, 2 * tokens_mb * h * moe_ffn_tp, tokens_mb, moe_ffn_tp, h,
        minimum(minimum(tokens_per_expert, h), moe_ffn_tp))
    # Element-wise work (norms, activations, residuals, dropout): memory bound.
    sp_div = 1 + x["sequence_parallel"] * (tp - 1)
    t_elem = elem * tokens_mb * (16 * h / sp_div + 4 * x["ffn"] / tp) / (
        x["hbm_bandwidth_bytes_per_s"] * x["hbm_efficiency"])
    t_layer_fwd = (t_qkv + t_core + t_scores + t_proj + t_elem + (1 - moe_share) * t_mlp
                   + moe_share * t_moe)
    t_layer_recompute = x["full_recompute"] * t_layer_fwd + (
        1 - x["full_recompute"]) * x["selective"] * t_core
    t_logits_fwd = _gemm_time(x, 2 * tokens_mb * h * x["vocab"] / tp, tokens_mb,
                              x["vocab"] / tp, h,
                              minimum(minimum(tokens_mb, h), x["vocab"] / tp))
    compute_mb = layers_per_stage * (3 * t_layer_fwd + t_layer_recompute) + 3 * t_logits_fwd

    # ---- communication per micro-batch -------------------------------------
    up_bw = x["scale_up_bandwidth_bytes_per_s"] * x["scale_up_bus_efficiency"]
    out_bw = x["scale_out_bandwidth_bytes_per_s"] * x["scale_out_bus_efficiency"]
    act_bytes = elem * tokens_mb * h
    tp_passes = 4 + 2 * x["full_recompute"]  # fwd 2, bwd 2, recomputed fwd 2 per layer
    # hierarchical when the TP group spans scale-up domains (one ring per NIC across nodes)
    tp_in = x["tp_intra_ranks"]
    tp_comm_layer = tp_passes * (communication.hierarchical_allreduce_time(
        act_bytes, tp_in, tp / tp_in, up_bw, out_bw, x["intra_latency_s"],
        x["inter_latency_s"]) + x["collective_overhead_s"] * minimum(tp - 1, 1))
    tp_comm_mb = communication.exposed_comm_time(
        layers_per_stage * tp_comm_layer, compute_mb, x["tp_overlap"])
    # context parallelism: ring exchange of K and V chunks, fwd once, bwd twice
    cp_bw, cp_lat = _link(x, x["cp_intra"])
    kv_bytes = 2 * elem * tokens_mb * h * kv_ratio / tp
    cp_comm_layer = 3 * (cp - 1) * communication.p2p_time(kv_bytes, cp_bw, cp_lat)
    cp_comm_mb = communication.exposed_comm_time(
        layers_per_stage * cp_comm_layer,
        layers_per_stage * 3 * t_core, x["cp_overlap"])
    # expert parallelism: dispatch and combine all-to-all in fwd and bwd
    ep_bw, ep_lat = _link(x, x["ep_intra"])
    a2a_bytes = elem * tokens_mb * x["experts_per_token"] * h
    ep_comm_layer = 4 * communication.alltoall_time(a2a_bytes, ep, ep_bw, ep_lat)
    ep_comm_mb = communication.exposed_comm_time(
        layers_per_stage * moe_share * ep_comm_layer,
        layers_per_stage * moe_share * 3 * t_moe, x["ep_overlap"])

    microbatches = x["global_batch"] / (dp * b)
    pp_bw, pp_lat = _link(x, x["pp_intra"])
    p2p = communication.p2p_time(
        pipeline.pipeline_p2p_bytes(s / cp, b, h, elem, tp, 1.0),  # scatter/gather (Megatron)
        pp_bw, pp_lat)
    pp_comm = pipeline.pipeline_p2p_count(pp, microbatches, vp) * p2p

    # The host launches each layer's kernels asynchronously (forward, backward ~ 2x, and
    # recomputed forward); the GPU only runs ahead when its work outlasts the launches.
    host_mb = layers_per_stage * (3 + x["full_recompute"]) * x["layer_overhead_s"]
    device_mb = compute_mb + tp_comm_mb
    launch_mb = compute.host_bound_time(device_mb, host_mb,
                                        x["host_overlap_exponent"]) - device_mb
    per_mb = compute_mb + launch_mb + tp_comm_mb + cp_comm_mb + ep_comm_mb
    compute_s = microbatches * compute_mb
    launch_s = microbatches * launch_mb
    bubble_s = pipeline.bubble_fraction_interleaved(pp, microbatches, vp) * microbatches * per_mb

    # ---- data parallel gradient reduction (hierarchical) -------------------
    stage_params = (layers_per_stage * (layer_common + (1 - moe_share) * dense_mlp_params
                                        + moe_share * moe_params / ep)
                    + x["vocab"] * h) / tp
    grad_bytes = x["grad_comm_bytes_per_param"] * stage_params
    intra = minimum(x["dp_intra_ranks"], dp)
    dp_time = communication.hierarchical_allreduce_time(
        grad_bytes, intra, dp / intra,
        x["scale_up_bandwidth_bytes_per_s"] * x["scale_up_bus_efficiency"],
        x["scale_out_bandwidth_bytes_per_s"] * x["scale_out_bus_efficiency"],
        x["intra_latency_s"], x["inter_latency_s"])
    # ZeRO-3/FSDP all-gathers the parameters in forward and backward of every micro-batch,
    # over NVLink inside the node and every NIC of the node across nodes
    gather_bytes = elem * stage_params
    zero3_time = x["zero3"] * 2 * microbatches * communication.hierarchical_allgather_time(
        gather_bytes, intra, dp / intra,
        x["scale_up_bandwidth_bytes_per_s"] * x["scale_up_bus_efficiency"],
        x["scale_out_bandwidth_bytes_per_s"] * x["scale_out_bus_efficiency"],
        x["intra_latency_s"], x["inter_latency_s"])
    dp_comm_s = communication.exposed_comm_time(
        dp_time, layers_per_stage * 2 * t_layer_fwd, x["dp_overlap"]) + \
        communication.exposed_comm_time(zero3_time, compute_s, x["dp_overlap"])

    # ---- optimizer step: memory bound over the local shard -----------------
    local_params = stage_params / x["optimizer_shards"]
    optimizer_s = (x["optimizer_bytes_per_param"] * 2 + x["weight_bytes_per_param"]
                   + x["grad_bytes_per_param"]) * local_params / (
        x["hbm_bandwidth_bytes_per_s"] * x["hbm_efficiency"])

    tp_comm_s = microbatches * tp_comm_mb
    cp_comm_s = microbatches * cp_comm_mb
    ep_comm_s = microbatches * ep_comm_mb
    base_step = (compute_s + launch_s + tp_comm_s + cp_comm_s + ep_comm_s + bubble_s + pp_comm
                 + dp_comm_s + optimizer_s)
    # ---- stragglers: every iteration waits for the slowest of N ranks ------
    straggler_s = (straggler.expected_max_normal(x["gpus"], base_step,
                                                 x["step_time_cv"] * base_step) - base_step
                   + straggler.pause_delay(x["gpus"], x["pause_probability"],
                                           x["pause_duration_s"]))
    step_time_s = base_step + straggler_s

    # ---- memory per GPU (the first pipeline stage, the fullest) ------------
    weights_bytes = memory.sharded_state_bytes(stage_params, x["weight_bytes_per_param"],
                                               x["weight_shards"])
    grads_bytes = memory.sharded_state_bytes(stage_params, x["grad_bytes_per_param"],
                                             x["grad_shards"])
    optimizer_state_bytes = memory.sharded_state_bytes(
        stage_params, x["optimizer_bytes_per_param"], x["optimizer_shards"])
    layer_act = memory.activation_bytes_per_layer(
        s / cp, b, h, x["ffn"], x["heads"], x["kv_heads"], x["mlp_matrices"], tp,
        x["sequence_parallel"], x["attention_scores_stored"], x["dropout_masks"])
    stored_layer = x["full_recompute"] * memory.full_recompute_activation_bytes_per_layer(
        s / cp, b, h, tp, x["sequence_parallel"]) + (1 - x["full_recompute"]) * layer_act
    inflight = memory.inflight_microbatches_1f1b(pp, microbatches) * \
        memory.interleaved_activation_factor(pp, vp)
    activation_bytes = (layers_per_stage * stored_layer * inflight
                        + x["full_recompute"] * layer_act
                        + memory.output_layer_activation_bytes(s / cp, b, h, x["vocab"], tp))
    reserve_bytes = x["memory_reserve_bytes"]
    memory_per_gpu_bytes = (weights_bytes + grads_bytes + optimizer_state_bytes
                            + activation_bytes + reserve_bytes)

    # ---- throughput ---------------------------------------------------------
    tokens_per_step = x["global_batch"] * s
    tokens_per_s = tokens_per_step / step_time_s
    model_flops_per_s_per_gpu = model_flops_per_token * tokens_per_s / x["gpus"]
    mfu = compute.model_flops_utilization(model_flops_per_s_per_gpu, x["peak_flops_per_s"])
    hfu = compute.hardware_flops_utilization(
        hardware_flops_per_token * tokens_per_s / x["gpus"], x["peak_flops_per_s"])

    # ---- reliability and checkpointing --------------------------------------
    nodes = x["gpus"] / x["gpus_per_node"]
    # independent failure sources add their rates
    system_mtbf_s = 1 / (1 / checkpoint.system_mtbf(x["gpu_mtbf_s"], x["gpus"])
                         + 1 / checkpoint.system_mtbf(x["node_mtbf_s"], nodes))
    checkpoint_bytes = checkpoint.checkpoint_size(params, x["checkpoint_bytes_per_param"])
    shard_bytes = checkpoint_bytes / x["gpus"]
    # storage bandwidth: the nodes' clients, up to what the storage system sustains
    write_s = checkpoint.checkpoint_write_time(checkpoint_bytes, minimum(
        nodes * x["storage_write_bytes_per_s_per_node"], x["storage_write_cap_bytes_per_s"]))
    read_s = checkpoint.checkpoint_write_time(checkpoint_bytes, minimum(
        nodes * x["storage_read_bytes_per_s_per_node"], x["storage_read_cap_bytes_per_s"]))
    host_s = checkpoint.checkpoint_write_time(shard_bytes, x["host_copy_bytes_per_s_per_gpu"])
    peer_s = checkpoint.checkpoint_write_time(shard_bytes, x["scale_out_bandwidth_bytes_per_s"])
    checkpoint_stall_s = (x["ckpt_sync"] * write_s + x["ckpt_async"] * host_s
                          + x["ckpt_in_memory"] * (host_s + peer_s))
    restart_s = x["restart_overhead_s"] + (1 - x["ckpt_in_memory"]) * read_s \
        + x["ckpt_in_memory"] * peer_s
    young_interval_s = checkpoint.young_interval(checkpoint_stall_s, system_mtbf_s)
    daly = checkpoint.daly_interval(checkpoint_stall_s, system_mtbf_s)
    # an asynchronous write must drain before the next snapshot
    checkpoint_interval_s = maximum(daly, x["ckpt_async"] * write_s)
    steps = x["tokens"] / tokens_per_step
    solve_time_s = steps * step_time_s
    wall_time_s = checkpoint.daly_wall_time(solve_time_s, checkpoint_interval_s,
                                            checkpoint_stall_s, restart_s, system_mtbf_s)
    expected_failures = checkpoint.expected_failures(wall_time_s, system_mtbf_s)
    waste_fraction = 1 - solve_time_s / wall_time_s
    ettr = solve_time_s / wall_time_s

    # ---- energy, cost, carbon ----------------------------------------------
    busy = compute_s / step_time_s
    gpu_busy_w = energy.gpu_power(x["idle_power_w"], x["max_power_w"], busy)
    # stepping (incl. work lost to failures) at step power; stalls and restarts idle
    stepping_s = checkpoint.daly_compute_time(solve_time_s, checkpoint_interval_s,
                                              checkpoint_stall_s, system_mtbf_s)
    energy_gpu_j = x["gpus"] * (energy.energy(gpu_busy_w, stepping_s) + energy.energy(
        x["idle_power_w"], wall_time_s - stepping_s))
    rest_w = nodes * (x["node_overhead_power_w"] + x["network_power_per_node_w"])
    energy_it_j = energy_gpu_j + energy.energy(rest_w, wall_time_s)
    energy_facility_j = energy.energy(
        energy.facility_power(energy_it_j / wall_time_s, x["pue"]), wall_time_s)
    avg_power_w = energy_facility_j / wall_time_s
    peak_power_w = energy.facility_power(x["gpus"] * x["max_power_w"] + rest_w, x["pue"])
    gpu_hours = x["gpus"] * wall_time_s / 3600
    cost_cloud_usd = cost.cloud_cost(x["gpus"], wall_time_s, x["price_usd_per_gpu_hour"])
    cost_tco_usd = cost.tco_cost(x["gpus"], wall_time_s, x["capex_usd_per_gpu"],
                                 x["lifetime_s"], energy_facility_j,
                                 x["electricity_usd_per_kwh"], x["opex_fraction_per_year"])
    cost_usd = x["use_tco"] * cost_tco_usd + (1 - x["use_tco"]) * cost_cloud_usd
    co2e_operational_kg = carbon.operational_co2e(energy_facility_j,
                                                  x["grid_intensity_g_per_kwh"])
    co2e_embodied_kg = carbon.embodied_co2e(x["gpus"], x["embodied_kg_per_gpu"], wall_time_s,
                                            x["lifetime_s"])
    co2e_kg = co2e_operational_kg + co2e_embodied_kg

    pp_comm_s = pp_comm
    tflops_per_gpu = model_flops_per_s_per_gpu / 1e12
    out = locals()
    return {name: out[name] for name in OUTPUTS}
