"""The model of one training run, composed from :mod:`formulas`.

:func:`run_model` maps a dict of inputs (every one a float, a numpy array of
candidates, or a sympy Symbol) to a dict of outputs.  Called with arrays it
evaluates directly; called with Symbols it yields one sympy expression per
output, which :mod:`planner.codegen.kernel_source` compiles into a single numpy function with
common subexpressions eliminated.  Discrete choices arrive as numbers: 0/1 flags
(``selective``, ``full_recompute``, ``sequence_parallel``, ``ckpt_sync`` ...) and
shard counts computed by :mod:`planner.space` from the ZeRO stage.

The model runs as a pipeline of named stages (``STAGES``, in the manner of
pvlib's ModelChain): layout -> parameters -> FLOPs -> attention and MLP op times ->
compute time -> micro-batch and iteration communication -> step time ->
throughput -> memory -> failure domains -> reliability -> run overheads -> energy -> cost and
carbon.  Each stage is a short function ``stage(x, r)`` of the inputs ``x`` and
the quantities ``r`` of the stages before it that returns a few named
quantities and calls registered formulas only; every physical constant lives in :mod:`formulas`.
:func:`run_stages` returns every named quantity, :func:`run_model` the outputs.

Every input is in SI units (s, B, FLOP, W, J, USD); ``INPUTS`` lists them with
their meaning (read from :mod:`planner.engine.inputs.glossary`).  The assumptions are documented in docs/model.md.

>>> [stage.__name__ for stage in STAGES][:3]
['layout', 'parameters', 'flops']
"""

from __future__ import annotations

from formulas import (
    batch,
    carbon,
    checkpoint,
    communication,
    compute,
    cost,
    energy,
    finetune,
    memory,
    moe,
    overhead,
    pipeline,
    straggler,
)
from formulas import reliability as failures
from formulas.ops import exp, is_symbolic, maximum, minimum
from planner.engine.inputs.glossary import INPUTS  # noqa: F401  (the run model's inputs)
from planner.engine.run.column import EF, EPF, Column, E, memory_part, step_part
from planner.engine.run.spares import resolve_spares

# ---- the stages ------------------------------------------------------------------------
# Each stage takes the inputs ``x`` and the quantities ``r`` of the stages before it and
# returns a few named quantities, calling registered formulas only.  Per micro-batch
# quantities end in ``_mb``; times are those of the slowest (fullest) pipeline stage.


def layout(x: dict, r: dict) -> dict:
    """Shape of the work on one rank: tokens per micro-batch, micro-batches, MoE share."""
    return {
        "tokens_mb": x["micro_batch"] * x["seq_len"] / x["cp"],  # tokens a rank processes
        "microbatches": pipeline.microbatches_per_pipeline(x["global_batch"], x["dp"],
                                                           x["micro_batch"]),
        "moe_share": x["moe_layers"] / x["layers"],  # MoE layers spread evenly over stages
        # layers with a dense MLP: neither MoE nor, in a hybrid model, MLP-free
        "dense_share": (x["layers"] - x["moe_layers"] - x["mlp_free_layers"]) / x["layers"],
        "nodes": x["gpus"] / x["gpus_per_node"],
    }


def _attention_params(x: dict):
    """Weights of one layer's attention block (head sizes and MLA from ``x``)."""
    shape = (x["hidden"], x["heads"], x["kv_heads"], x["head_dim"], x["v_head_dim"],
             x["q_lora_rank"], x["kv_lora_rank"], x["qk_rope_head_dim"])
    return (compute.attention_input_params(*shape)
            + compute.attention_output_params(x["hidden"], x["heads"], x["v_head_dim"])
            + compute.latent_norm_params(x["q_lora_rank"], x["kv_lora_rank"]))


def _linear_share(x: dict):
    """Share of the layers whose token mixer is gated linear attention (0: none)."""
    return x["linear_attention_layers"] / x["layers"]


def _mamba_share(x: dict):
    """Share of the layers whose token mixer is a Mamba-2 SSD layer (0: none)."""
    return x["mamba_layers"] / x["layers"]


def softmax_attention_layers(x: dict):
    """Layers whose token mixer is softmax attention (full or windowed, the layers with a KV
    cache): not linear attention, not Mamba-2 and not a hybrid model's MLP-only block."""
    return x["layers"] - x["linear_attention_layers"] - x["mamba_layers"] \
        - x["mixer_free_layers"]


def softmax_share(x: dict):
    """Share of the layers whose token mixer is softmax attention."""
    return softmax_attention_layers(x) / x["layers"]


def block_share(x: dict):
    """The average layer's share of a transformer layer's two blocks (a norm, the TP
    collectives around it): 1, less half a layer for each block of a hybrid model that
    holds only a mixer or only an MLP (Megatron-Core's hybrid layers, one norm each)."""
    return compute.hybrid_block_share(x["layers"], x["mixer_free_layers"],
                                      x["mlp_free_layers"])


def _mamba_params(x: dict):
    """Weights of one Mamba-2 token mixer (a Mamba layer of a hybrid model)."""
    return compute.mamba2_mixer_params(x["hidden"], x["mamba_heads"], x["mamba_head_dim"],
                                       x["mamba_state_dim"], x["mamba_groups"])


def _expert_dim(x: dict):
    """Width the routed experts work in: LatentMoE's latent size, else the hidden size."""
    latent = x["moe_latent_dim"]
    return x["hidden"] + minimum(latent, 1) * (latent - x["hidden"])


def _latent_projection_params(x: dict):
    """Weights of an MoE layer's LatentMoE projections (0 without them)."""
    latent = x["moe_latent_dim"]
    return minimum(latent, 1) * compute.moe_latent_projection_params(x["hidden"],
                                                                    maximum(latent, 1))


def _dense_mlp_layers(x: dict):
    """Layers with a dense MLP: not MoE and, in a hybrid model, not mixer-only."""
    return x["layers"] - x["moe_layers"] - x["mlp_free_layers"]


def _linear_mixer_params(x: dict):
    """Weights of one Gated DeltaNet token mixer (a linear-attention layer's attention)."""
    return compute.gated_deltanet_params(x["hidden"], x["linear_key_heads"],
                                         x["linear_value_heads"], x["linear_head_dim"])


def _mixer_params(x: dict):
    """Weights of the average layer's token mixer: softmax attention, Gated DeltaNet on the
    linear-attention share of the layers, Mamba-2 on the Mamba share, none on a hybrid
    model's MLP-only layers."""
    return softmax_share(x) * _attention_params(x) \
        + _linear_share(x) * _linear_mixer_params(x) + _mamba_share(x) * _mamba_params(x)


def _mtp_on_fullest_stage(x: dict):
    """MTP modules charged to the fullest stage (they sit on the last, with the loss)."""
    return compute.mtp_layers_beyond_fullest_stage(x["layers"], x["pp"], x["stage_layers"],
                                                   x["mtp_layers"])


def _is_moe(x: dict):
    """1 for an MoE model (its MTP blocks are MoE like its last layers), 0 for a dense one."""
    return minimum(x["moe_layers"], 1)


def param_counts(x: dict) -> dict:
    """Total parameters and those one token uses, of the model described by ``x``.

    The one parameter count of capplan: the kernel's ``params``/``active_params``,
    ``capplan catalog show`` and the Excel export all come from here.  ``x`` needs
    only the model inputs (:func:`planner.engine.inputs.scenario.model_inputs`).  The terms
    of :func:`formulas.compute.model_params`, with the attention of the model's head
    sizes (or MLA), plus its multi-token-prediction modules (``mtp_params``, part of
    ``params``; their embedding and output head are shared).
    """
    h, layers, moe_layers = x["hidden"], x["layers"], x["moe_layers"]
    layer_common = _mixer_params(x) + block_share(x) * compute.norm_params(h)
    block_common = _attention_params(x) + compute.norm_params(h)  # an MTP module's block
    dense_mlp = compute.mlp_params(h, x["ffn"], x["mlp_matrices"])
    counts = {}
    for name, active in (("params", x["experts"]), ("active_params", x["experts_per_token"])):
        # (routed experts in LatentMoE's latent size, with its two projections)
        moe_mlp = compute.moe_active_mlp_params(h, x["moe_ffn"], active, x["shared_experts"],
                                                x["mlp_matrices"], x["experts"]) \
            + active * (compute.mlp_params(_expert_dim(x), x["moe_ffn"], x["mlp_matrices"])
                        - compute.mlp_params(h, x["moe_ffn"], x["mlp_matrices"])) \
            + _latent_projection_params(x)
        mtp = x["mtp_layers"] * compute.mtp_module_params(
            block_common + _is_moe(x) * moe_mlp + (1 - _is_moe(x)) * dense_mlp, h)
        counts[name] = (layers * layer_common + _dense_mlp_layers(x) * dense_mlp
                        + moe_layers * moe_mlp
                        + compute.embedding_params(x["vocab"], h, x["embedding_matrices"])
                        + compute.final_norm_params(h)) + mtp
        if name == "params":
            counts["mtp_params"] = mtp
    return counts


def parameters(x: dict, r: dict) -> dict:
    """Parameters of the model, those a token uses, and those of one rank's stage."""
    h = x["hidden"]
    layer_common = _mixer_params(x) + block_share(x) * compute.norm_params(h)
    block_common = _attention_params(x) + compute.norm_params(h)  # an MTP module's block
    dense_mlp = compute.mlp_params(h, x["ffn"], x["mlp_matrices"])
    # routed experts split over ETP x EP (parallel folding); shared experts and the router
    # over TP like the dense layers; LatentMoE's projections duplicated on every TP rank
    routed = x["experts"] * compute.mlp_params(_expert_dim(x), x["moe_ffn"], x["mlp_matrices"])
    latent = _latent_projection_params(x)
    moe_mlp = compute.moe_mlp_params(h, x["moe_ffn"], x["experts"], x["shared_experts"],
                                     x["mlp_matrices"]) \
        - x["experts"] * compute.mlp_params(h, x["moe_ffn"], x["mlp_matrices"]) \
        + routed + latent
    moe_rank = moe_mlp - routed + routed * x["tp"] / (x["ep"] * x["etp"]) \
        + latent * (x["tp"] - 1)  # x tp
    share = r["moe_share"]
    # MTP modules sit with the loss on the last stage: charged by what that stage exceeds
    mtp = _mtp_on_fullest_stage(x) * compute.mtp_module_params(
        block_common + _is_moe(x) * moe_rank + (1 - _is_moe(x)) * dense_mlp, h)
    # the first stage, the fullest: its layers and the input embedding, split over TP
    stage = (x["stage_layers"] * (layer_common + r["dense_share"] * dense_mlp + share * moe_rank)
             + compute.embedding_params(x["vocab"], h, 1) + mtp) / x["tp"]
    # DualPipe (the stack's schedule) puts two stages on every rank, stage i and stage
    # p - 1 - i: two copies of the parameters (DeepSeek-V3 arXiv:2412.19437 Table 2)
    copies = 1 + x["dualpipe"]
    counts = param_counts(x)
    stage_experts = copies * x["stage_layers"] * share * routed / (x["ep"] * x["etp"])
    # LoRA adapters beside the targeted matrices (routed experts' split as the experts');
    # a frozen base trains the adapters only
    experts_rank = x["shared_experts"] + x["experts"] * x["tp"] / (x["ep"] * x["etp"])
    stage_adapters = copies * x["stage_layers"] * (
        _lora_attention_params(x) + r["dense_share"] * _lora_mlp_params(x, x["ffn"])
        + share * experts_rank * _lora_mlp_params(x, x["moe_ffn"])) / x["tp"]
    adapters = _lora_params(x, x["experts"] + x["shared_experts"])
    frozen = x["frozen_base"]
    return {**counts, "stage_params": copies * stage, "stage_expert_params": stage_experts,
            "adapter_params": adapters,
            "trainable_params": (1 - frozen) * counts["params"] + adapters,
            "stage_adapter_params": stage_adapters,
            # what the optimizer updates: the dense part (with the adapters) and the routed
            # experts (sharded over the expert-data-parallel group)
            "stage_trainable_params": (1 - frozen) * (copies * stage - stage_experts)
            + stage_adapters,
            "stage_trainable_expert_params": (1 - frozen) * stage_experts,
            "stage_embedding_params": copies * compute.embedding_params(x["vocab"], h, 1)
            / x["tp"]}


def _lora_attention_params(x: dict):
    """LoRA adapter weights beside one layer's attention projections (the targeted ones)."""
    h, r = x["hidden"], x["lora_rank"]
    q_width, o_width = x["heads"] * x["head_dim"], x["heads"] * x["v_head_dim"]
    return (x["lora_q"] * finetune.lora_adapter_params(r, h, q_width)
            + x["lora_k"] * finetune.lora_adapter_params(r, h, x["kv_heads"] * x["head_dim"])
            + x["lora_v"] * finetune.lora_adapter_params(r, h, x["kv_heads"] * x["v_head_dim"])
            + x["lora_o"] * finetune.lora_adapter_params(r, o_width, h))


def _lora_mlp_params(x: dict, ffn):
    """LoRA adapter weights beside one MLP (or one expert) of width ``ffn``."""
    h, r = x["hidden"], x["lora_rank"]
    return (_mlp_input_adapters(x) * finetune.lora_adapter_params(r, h, ffn)
            + x["lora_down"] * finetune.lora_adapter_params(r, ffn, h))


def _lora_params(x: dict, experts):
    """LoRA adapter weights of the model, ``experts`` MLPs in each MoE layer (all of them,
    or those a token uses)."""
    moe_layers = x["moe_layers"]
    return ((x["layers"] - x["mamba_layers"] - x["mixer_free_layers"])
            * _lora_attention_params(x)
            + _dense_mlp_layers(x) * _lora_mlp_params(x, x["ffn"])
            + moe_layers * experts * _lora_mlp_params(x, x["moe_ffn"]))


def _op_sac(x: dict, r: dict):
    """1 where a selective-recompute layout runs the stack's op-level policy (torchtitan:
    every second matmul and the element-wise ops recomputed, formulas.memory
    op_sac_activation_bytes_per_layer) on a dense layer, else 0; MoE layers keep the
    attention-core accounting (their grouped GEMMs are outside the policy's matmuls), and
    so does a hybrid model with one-part blocks (the policy's count is a whole layer's)."""
    one_part = minimum(x["mixer_free_layers"] + x["mlp_free_layers"], 1)
    return x["op_selective_recompute"] * x["selective_option"] * (1 - r["moe_share"]) \
        * (1 - one_part)


def _op_sac_recomputed_params(x: dict):
    """Weights of a dense layer's matmuls the op-level policy recomputes: K, the output
    projection and the second MLP matmul (up under a gate, else down), each h x width."""
    return x["hidden"] * (x["kv_heads"] * x["head_dim"] + x["heads"] * x["v_head_dim"]
                          + x["ffn"])


def _core_recomputed(x: dict):
    """1 where selective recompute runs the attention core's forward again in backward: the
    unfused path's scores (Korthikanti et al. 2022, arXiv:2205.05198 s5) or a fused kernel
    under a checkpoint (Megatron-Core's ``core_attn`` module, ``recompute_core_attn``)."""
    return maximum(x["selective"], x["selective_option"] * x["recompute_core_attn"])


def _early_stop(x: dict):
    """1 where a full checkpoint's recomputation stops before a dense layer's down
    projection: the stack's checkpoint stops early, no dropout mask is saved after it and
    no frozen base makes an adapter's input the last tensor saved."""
    return x["recompute_early_stop"] * (1 - x["dropout_masks"]) * (1 - x["frozen_base"])


def _residual_rebuilt(x: dict):
    """1 where selective recompute runs a policy that keeps only the tensors it names (JAX
    checkpoint policies, ``remat_keeps_named_only``) and the norms run again: the
    post-attention residual, the MLP norm's input, is then rebuilt in the backward from the
    kept layer input and attention output through the output projection (its GEMM again),
    where Megatron-Core's ``layernorm`` module keeps it."""
    return x["remat_keeps_named_only"] * x["selective_option"] * x["recompute_norms"]


def flops(x: dict, r: dict) -> dict:
    """Model FLOPs per token (Narayanan counting) and hardware FLOPs (with recompute)."""
    h, s, layers = x["hidden"], x["seq_len"], x["layers"]
    moe_fwd = _moe_forward_flops(x)
    dense_fwd = compute.mlp_forward_flops_per_token(h, x["ffn"], x["mlp_matrices"])
    logits_fwd = compute.logits_forward_flops_per_token(h, x["vocab"])
    projections_fwd = compute.matmul_forward_flops_per_token(
        _attention_params(x) - compute.latent_norm_params(x["q_lora_rank"],
                                                          x["kv_lora_rank"]))
    core_full = _core_flops(x, s)
    # windowed layers attend to fewer keys; linear-attention layers (Gated DeltaNet) run
    # their own projections and the chunked delta rule, linear in s, instead
    linear = x["linear_attention_layers"]
    # (Mamba-2 layers run their projections and the SSD scan, MLP-only layers no mixer)
    mamba, mixer_free = x["mamba_layers"], x["mixer_free_layers"]
    core_all = layers * core_full + x["window_layers"] * (
        _core_flops(x, compute.attended_keys_per_query(s, x["window"])) - core_full) \
        + linear * (_linear_core_flops(x) - core_full) \
        + mamba * (_ssd_core_flops(x) - core_full) - mixer_free * core_full
    linear_projections_fwd = compute.matmul_forward_flops_per_token(_linear_mixer_params(x))
    mamba_projections_fwd = compute.matmul_forward_flops_per_token(_mamba_params(x))
    # each MTP module: a layer (MoE in an MoE model), the projection M_k and the logits
    mtp_fwd = x["mtp_layers"] * (
        projections_fwd + core_full + _is_moe(x) * moe_fwd + (1 - _is_moe(x)) * dense_fwd
        + compute.matmul_forward_flops_per_token(compute.mtp_projection_params(h))
        + logits_fwd)
    fwd = (layers * projections_fwd + linear * (linear_projections_fwd - projections_fwd)
           + mamba * (mamba_projections_fwd - projections_fwd) - mixer_free * projections_fwd
           + core_all + _dense_mlp_layers(x) * dense_fwd
           + x["moe_layers"] * moe_fwd + logits_fwd) + mtp_fwd
    # LoRA: the adapters' GEMMs join the forward; the frozen GEMMs (all but the attention
    # core's) run no weight-gradient GEMM in the backward
    base_fwd = fwd
    fwd = fwd + compute.matmul_forward_flops_per_token(
        _lora_params(x, x["experts_per_token"] + x["shared_experts"]))
    frozen_fwd = x["frozen_base"] * (base_fwd - core_all - mtp_fwd)
    # full recompute: every layer's forward again; selective: the attention core
    # (op-level selective recompute: every second matmul of each dense layer again)
    # (a checkpoint that stops early skips each dense layer's down projection)
    skipped = _early_stop(x) * _dense_mlp_layers(x) \
        * compute.matmul_forward_flops_per_token(h * x["ffn"])
    # (Megatron-Core's recompute modules mlp and moe: the dense MLPs' and the MoE layers'
    # forward again)
    # (a named-only policy rebuilding the post-attention residual: each mixer's output
    # projection again)
    recomputed = (x["full_recompute"] * (fwd - logits_fwd - skipped)
                  + (1 - x["full_recompute"])
                  * (_core_recomputed(x) * core_all + _op_sac(x, r) * layers
                     * compute.matmul_forward_flops_per_token(_op_sac_recomputed_params(x))
                     + x["recompute_mlp"] * _dense_mlp_layers(x) * dense_fwd
                     + x["recompute_moe"] * x["moe_layers"] * moe_fwd
                     + _residual_rebuilt(x) * _output_projection_flops(x)))
    # DPO: a frozen reference model's forward over the same sequences
    reference = x["reference_model"] * base_fwd
    return {
        "model_flops_per_token": finetune.frozen_training_flops_per_token(fwd, frozen_fwd)
        + reference,
        "hardware_flops_per_token": compute.hardware_flops_per_token(fwd, recomputed)
        - frozen_fwd + reference,
    }


def _output_projection_flops(x: dict):
    """Forward FLOPs per token of every layer's mixer output projection (t_proj's GEMMs,
    all TP ranks): the softmax-attention, linear-attention and Mamba-2 layers' value widths
    to h; the MLP-only layers have none."""
    h_tp = x["hidden"] * x["tp"]
    return softmax_attention_layers(x) * compute.matmul_forward_flops_per_token(
        h_tp * _out_width(x)) \
        + x["linear_attention_layers"] * compute.matmul_forward_flops_per_token(
            h_tp * _linear_out_width(x)) \
        + x["mamba_layers"] * compute.matmul_forward_flops_per_token(
            h_tp * _mamba_out_width(x))


def _moe_forward_flops(x: dict):
    """Forward FLOPs per token of one MoE layer: the experts a token uses and the shared
    ones, the router, and LatentMoE's projections (its routed experts in the latent size)."""
    h, n_m = x["hidden"], x["mlp_matrices"]
    # (every expert in h, then the routed ones moved to the expert width: the formula's
    # domain has no zero-width MLP, which a model without shared experts would ask for)
    routed_ffn = x["moe_ffn"] * x["experts_per_token"]
    return compute.mlp_forward_flops_per_token(
        h, x["moe_ffn"] * (x["experts_per_token"] + x["shared_experts"]), n_m) \
        + compute.mlp_forward_flops_per_token(_expert_dim(x), routed_ffn, n_m) \
        - compute.mlp_forward_flops_per_token(h, routed_ffn, n_m) \
        + compute.router_forward_flops_per_token(h, x["experts"]) \
        + compute.matmul_forward_flops_per_token(_latent_projection_params(x))


def _core_flops(x: dict, keys):
    """Attention-core forward FLOPs per token of one layer whose queries see ``keys`` keys."""
    return compute.attention_core_flops_per_token(keys, x["heads"], x["head_dim"],
                                                  x["v_head_dim"])


def _ssd_core_flops(x: dict):
    """Forward FLOPs per token of one Mamba-2 layer's chunked SSD scan."""
    return compute.ssd_flops_per_token(x["mamba_heads"], x["mamba_head_dim"],
                                       x["mamba_state_dim"], x["mamba_groups"],
                                       compute.SSD_CHUNK)


def _linear_core_flops(x: dict):
    """Forward FLOPs per token of one linear-attention layer's chunked gated delta rule."""
    return compute.gated_delta_rule_flops_per_token(
        x["linear_value_heads"], x["linear_head_dim"], compute.GATED_DELTA_CHUNK)


def _gemm(x: dict, rows, cols, inner, min_dim, bf16: bool = False):
    """:func:`formulas.compute.gemm_time` on this accelerator, at the recipe's GEMM
    precision, or with ``bf16`` at BF16's peak and efficiency (the attention core's inputs:
    BF16's under FP8/FP4 recipes, the recipe's own under BF16)."""
    peak, efficiency = (("attention_peak_flops_per_s", "attention_gemm_max_efficiency") if bf16
                        else ("peak_flops_per_s", "gemm_max_efficiency"))
    return compute.gemm_time(rows, cols, inner, min_dim, x["bytes_per_element"], x[peak],
                             x[efficiency], x["gemm_half_efficiency_dim"],
                             x["hbm_bandwidth_bytes_per_s"], x["hbm_efficiency"])


def _output_layer_gemm(x: dict, rows, cols, inner):
    """The output layer's GEMM: at the recipe's precision where the stack converts it
    (``low_precision_output_layer`` 1), else at BF16's (the same under a BF16 recipe)."""
    low = x["low_precision_output_layer"]
    min_dim = minimum(minimum(rows, inner), cols)
    return low * _gemm(x, rows, cols, inner, min_dim) \
        + (1 - low) * _gemm(x, rows, cols, inner, min_dim, bf16=True)


def _grouped_gemm(x: dict, copies, width, inner, tokens_per_expert, local_experts):
    """Roofline time of one grouped expert GEMM on this accelerator: ``copies`` routed
    token rows over ``local_experts`` experts of ``width`` x ``inner`` weights each, at the
    efficiency of its shape (:func:`formulas.moe.grouped_gemm_efficiency`)."""
    efficiency = moe.grouped_gemm_efficiency(
        tokens_per_expert, width, inner, x["gemm_max_efficiency"],
        x["grouped_gemm_token_half_dim"], x["grouped_gemm_inner_half_dim"],
        x["grouped_gemm_tile_tokens"], x["gemm_tile_dim"])
    return moe.grouped_gemm_time(copies, width, inner, local_experts, x["bytes_per_element"],
                                 x["peak_flops_per_s"], efficiency,
                                 x["hbm_bandwidth_bytes_per_s"], x["hbm_efficiency"])


def _memory_bound(x: dict, bytes_moved):
    """:func:`formulas.compute.memory_bound_time` on this accelerator's HBM."""
    return compute.memory_bound_time(bytes_moved, x["hbm_bandwidth_bytes_per_s"],
                                     x["hbm_efficiency"])


def _kernel_fallback(x: dict):
    """1 when the stack has no fused kernel for the model's attention variant (sinks, head
    size): :func:`formulas.compute.attention_kernel_fallback`."""
    return compute.attention_kernel_fallback(x["attention_sinks"], x["fused_attention_sinks"],
                                             x["head_dim"], x["v_head_dim"],
                                             x["fused_head_dim_max"], x["attention_softcap"],
                                             x["fused_attention_softcap"])


def _scores_stored(x: dict):
    """1 when the s x s scores go through HBM and stay for backward: kept by the layout
    (no flash attention) or by the unfused path of a variant without a fused kernel."""
    return maximum(x["attention_scores_stored"], _kernel_fallback(x))


def _core_efficiency(x: dict, tokens, unfused, padding, keys):
    """Attention-core efficiency on the unfused path (``unfused`` 1) or the fused kernel
    (0), the fused kernel's work padded to its head-size tiles (``padding``) and its fixed
    cost per query tile shared over the ``keys`` each query attends to."""
    fill = compute.attention_pipeline_efficiency(keys, x["attention_fill_keys"])
    return compute.attention_core_efficiency(
        tokens, x["head_dim"], x["seq_len"], unfused,
        x["attention_efficiency_factor"] * padding * fill, x["attention_gemm_max_efficiency"],
        x["gemm_half_efficiency_dim"])


def _tiled_keys(x: dict, window):
    """Keys per query the fused kernel computes with its tiles (non-causal counting),
    its forward's and its backward's (twice the forward's work) averaged."""
    s = x["seq_len"]
    return (compute.block_attended_keys_per_query(s, window, x["attention_block_tokens"])
            + compute.BACKWARD_PER_FORWARD * compute.block_attended_keys_per_query(
                s, window, x["attention_block_tokens_bwd"])) \
        / (1 + compute.BACKWARD_PER_FORWARD)


def _softmax_core_times(x: dict, t) -> tuple:
    """Forward time of the softmax-attention core of the average layer on one rank, and of
    its s x s scores through HBM, by the kernel the stack has for the model's variant."""
    s, tp = x["seq_len"], x["tp"]
    # the kernel the stack has for this attention: fused (flash) unless flash is off
    # (selective recompute, stored scores) or the variant has no fused kernel (sinks, too
    # large heads); fused kernels pad head sizes to their tiles
    unfused = maximum(x["selective"] + x["attention_scores_stored"], _kernel_fallback(x))
    padding = compute.attention_head_padding_efficiency(
        x["head_dim"], x["v_head_dim"], x["attention_head_dim_granule"],
        x["fused_split_head_dims"])
    # a fused kernel computes whole tiles: the causal diagonal's and, in windowed layers,
    # every tile the band touches; the unfused path computes all s keys
    full_keys = unfused * s + (1 - unfused) * _tiled_keys(x, s)
    efficiency = _core_efficiency(x, t, unfused, padding, full_keys)
    # windowed layers attend to fewer keys when the fused kernel skips the masked blocks,
    # else they run the unfused path over all s; the linear-attention share runs no core
    softmax = softmax_share(x)
    windowed = x["window_layers"] / x["layers"]
    window_unfused = 1 - (1 - unfused) * x["fused_window_attention"]
    core_full = _core_flops(x, full_keys)
    window_keys = window_unfused * s + (1 - window_unfused) * _tiled_keys(x, x["window"])
    core_window = _core_flops(x, window_keys)
    head_bytes = compute.attention_core_head_bytes(t, x["heads"], x["head_dim"],
                                                   x["v_head_dim"], tp, x["bytes_per_element"])
    # a fused kernel's softmax waits for the exponential unit where the matmuls outpace it
    # (Blackwell at small heads): the kernel reaches the same share of whichever unit
    # binds, so its compute roof is its matmul time times the slowdown. The unfused path's
    # softmax is a kernel of its own, bound by HBM (scores, below)
    exp_extra = compute.fused_attention_slowdown(compute.attention_exp_time_ratio(
        x["attention_peak_flops_per_s"], x["exp_ops_per_s"], x["head_dim"], x["v_head_dim"]),
        x["attention_exp_overlap_exponent"]) - 1  # the share the exponentials add
    full_layers = softmax - windowed
    core = compute.roofline_time(
        t * full_layers * core_full / tp, full_layers * head_bytes,
        x["attention_peak_flops_per_s"], efficiency / (1 + (1 - unfused) * exp_extra),
        x["hbm_bandwidth_bytes_per_s"], x["hbm_efficiency"]) + compute.roofline_time(
        t * windowed * core_window / tp, windowed * head_bytes, x["attention_peak_flops_per_s"],
        _core_efficiency(x, t, window_unfused, padding, window_keys)
        / (1 + (1 - window_unfused) * exp_extra),
        x["hbm_bandwidth_bytes_per_s"], x["hbm_efficiency"])
    # on the unfused path the s x s scores go through HBM: kept for the backward, or
    # (selective recompute) written and read within the forward and again in the
    # recomputed forward (Korthikanti et al. 2022, arXiv:2205.05198 s5: QK^T, softmax,
    # softmax dropout and attention over V recomputed); windowed layers too when the fused
    # kernel cannot skip their blocks; soft-capped logits (Gemma 2) add the tanh pass
    scores = ((softmax - windowed) * unfused
              + windowed * maximum(unfused, 1 - x["fused_window_attention"])) * _memory_bound(
        x, compute.attention_scores_bytes(s, x["micro_batch"], x["heads"], tp, x["cp"])
        + x["attention_softcap"] * compute.softcap_scores_bytes(s, x["micro_batch"],
                                                                x["heads"], tp, x["cp"]))
    return core, scores


def _qkv_width(x: dict):
    """Output width of one rank's QKV projection (MLA's down- and up-projections as one)."""
    return compute.projection_width(compute.attention_input_params(
        x["hidden"], x["heads"], x["kv_heads"], x["head_dim"], x["v_head_dim"],
        x["q_lora_rank"], x["kv_lora_rank"], x["qk_rope_head_dim"]), x["hidden"], x["tp"])


def _out_width(x: dict):
    """Inner size of one rank's attention output projection (its heads' value widths)."""
    return x["heads"] * x["v_head_dim"] / x["tp"]


def _linear_out_width(x: dict):
    """Inner size of one rank's linear-attention output projection (its value heads)."""
    return x["linear_value_heads"] * x["linear_head_dim"] / x["tp"]


def _mamba_out_width(x: dict):
    """Inner size of one rank's Mamba-2 output projection (its heads' widths)."""
    return x["mamba_heads"] * x["mamba_head_dim"] / x["tp"]


def attention_times(x: dict, r: dict) -> dict:
    """Forward time of one layer's attention block on one rank, per micro-batch.

    The projections are GEMMs at the run's precision; the fused attention core (and the
    linear-attention delta rule) runs at ``attention_peak_flops_per_s``, the BF16 peak under
    FP8/FP4 recipes (:func:`planner.engine.inputs.scenario.attention_precision`)."""
    h, tp, t = x["hidden"], x["tp"], r["tokens_mb"]
    qkv = _qkv_width(x)
    out_width = _out_width(x)
    # the average layer: the linear-attention share of the layers runs Gated DeltaNet (its
    # projections and the chunked delta rule), the others softmax attention
    share = _linear_share(x)
    core, scores = _softmax_core_times(x, t)
    linear_core = _recurrent_core_time(
        x, t, share, x["linear_head_dim"], _linear_core_flops(x),
        compute.gated_delta_rule_bytes(t, x["linear_value_heads"], x["linear_head_dim"],
                                       compute.GATED_DELTA_CHUNK, tp, x["bytes_per_element"]))
    linear_out = _linear_out_width(x)
    linear_in = compute.projection_width(_linear_mixer_params(x), h, tp) \
        - linear_out  # the output projection's share
    # the Mamba-2 share: its input and output projections (GEMMs), and the SSD scan with
    # the convolution and the gated norm around it (BF16, roofline of its FLOPs and bytes)
    mamba = _mamba_share(x)
    mamba_in, mamba_out = _mamba_in_width(x), _mamba_out_width(x)
    mamba_core = _recurrent_core_time(
        x, t, mamba, x["mamba_head_dim"], _ssd_core_flops(x),
        compute.ssd_bytes(t, x["mamba_heads"], x["mamba_head_dim"], x["mamba_state_dim"],
                          x["mamba_groups"], compute.SSD_CHUNK, tp, x["bytes_per_element"]))
    softmax = softmax_share(x)
    return {
        "t_qkv": softmax * _gemm(x, t, qkv, h, minimum(minimum(t, h), qkv))
        + share * _gemm(x, t, linear_in, h, minimum(minimum(t, h), linear_in))
        + mamba * _gemm(x, t, mamba_in, h, minimum(minimum(t, h), mamba_in)),
        "t_core": core + linear_core + mamba_core,
        "t_scores": scores,
        "t_proj": softmax * _gemm(x, t, h, out_width, minimum(minimum(t, h), out_width))
        + share * _gemm(x, t, h, linear_out, minimum(minimum(t, h), linear_out))
        + mamba * _gemm(x, t, h, mamba_out, minimum(minimum(t, h), mamba_out)),
    }


def _recurrent_core_time(x: dict, t, share, head_dim, flops_per_token, bytes_moved):
    """Forward time of a chunked recurrent core (the gated delta rule, the Mamba-2 scan) on
    the ``share`` of the layers that run it, one rank: in BF16 at the fused attention
    kernel's efficiency for its head size, against the HBM traffic of one such layer."""
    efficiency = compute.attention_core_efficiency(
        t, head_dim, x["seq_len"], 0, x["attention_efficiency_factor"],
        x["attention_gemm_max_efficiency"], x["gemm_half_efficiency_dim"])
    return compute.roofline_time(
        share * t * flops_per_token / x["tp"], share * bytes_moved,
        x["attention_peak_flops_per_s"], efficiency, x["hbm_bandwidth_bytes_per_s"],
        x["hbm_efficiency"])


def _mamba_in_width(x: dict):
    """Output width of one rank's Mamba-2 input projection (z, x, B, C, dt)."""
    return compute.mamba2_in_proj_width(x["mamba_heads"], x["mamba_head_dim"],
                                        x["mamba_state_dim"], x["mamba_groups"]) / x["tp"]


def mlp_times(x: dict, r: dict) -> dict:
    """Forward time of one layer's MLP (dense or MoE), element-wise ops and the logits, and
    the loss's passes over the logits (forward and backward)."""
    h, tp, t = x["hidden"], x["tp"], r["tokens_mb"]
    ffn, moe_ffn, vocab = x["ffn"] / tp, x["moe_ffn"] / tp, x["vocab"] / tp
    # routed experts: split over ETP, each GEMM sees the tokens routed to it from the ETP x
    # EP grid (parallel folding); shared experts: TP-split, on every token
    expert_ffn = x["moe_ffn"] / x["etp"]
    rank_tokens = communication.expert_rank_tokens(t, tp, x["etp"], x["sequence_parallel"])
    k = x["experts_per_token"]
    expert_tokens = compute.tokens_per_expert(rank_tokens, x["ep"], k, x["experts"])
    copies = k * rank_tokens  # routed token copies on the rank's experts
    # (the stack's element-wise kernels: fused, 1; eager PyTorch moves more bytes per op)
    # the MLP-wide ops (bias, activation) of a MoE layer run on every routed copy at the
    # expert's width and on the shared experts: the MLP width a token's ops touch (the
    # formula splits it over TP)
    share = r["moe_share"]
    moe_width = tp * (copies / t * expert_ffn + x["shared_experts"] * moe_ffn)
    # (a hybrid model's one-part blocks: one norm and residual each, half a layer's)
    elementwise = t * compute.elementwise_bytes_per_token(
        block_share(x) * h, r["dense_share"] * x["ffn"] + share * moe_width, tp,
        x["sequence_parallel"],
        x["bytes_per_element"]) * x["elementwise_traffic_factor"]
    dim = _expert_dim(x)
    routing = _moe_routing_time(x, t, rank_tokens)
    # routed experts: the busiest EP rank sets the pace (order statistics of its routed
    # copies), and each expert's GEMMs run in whole tiles along its tokens and its width
    # (dropless: the busiest rank's routed load; token dropping pads every expert to its
    # capacity, the capacity factor times the mean)
    busiest = x["token_drop"] * x["capacity_factor"] + (1 - x["token_drop"]) \
        * moe.busiest_rank_load_factor(copies, x["ep"], x["expert_load_cv"])
    # up (and gate) projections h -> f, then the down projection f -> h
    local_experts = x["experts"] / x["ep"]
    routed = (x["mlp_matrices"] - 1) * _grouped_gemm(x, copies, expert_ffn, dim,
                                                     expert_tokens, local_experts) \
        + _grouped_gemm(x, copies, dim, expert_ffn, expert_tokens, local_experts)
    return {
        "t_mlp": x["mlp_matrices"] * _gemm(x, t, ffn, h, minimum(minimum(t, h), ffn)),
        "t_moe": busiest * routed
        + x["shared_experts"] * x["mlp_matrices"] * _gemm(
            x, t, moe_ffn, h, minimum(minimum(t, h), moe_ffn)) + routing,
        "t_elem": _memory_bound(x, elementwise),
        "t_logits": _output_layer_gemm(x, t, vocab, h),
        # the loss's memory-bound passes over the logits, forward and backward together
        "t_loss": _memory_bound(x, compute.cross_entropy_loss_bytes(
            t, x["vocab"], tp, x["loss_bytes_per_logit"])),
        "routed_copies": copies,  # routed token copies on one rank's experts
        # the experts' activation function run again in backward when its output is not
        # kept (recompute_moe_act): its stored input read, its output written
        "t_moe_act": _memory_bound(x, (k * rank_tokens * expert_ffn
                                       + x["shared_experts"] * t * moe_ffn)
                                   * ((x["mlp_matrices"] - 1) * _moe_act_input_bytes(x)
                                      + x["bytes_per_element"])),
    }


def _moe_routing_time(x: dict, t, rank_tokens):
    """Forward time of an MoE layer's routing on one rank: the router GEMM (t x E, narrow),
    its score passes (softmax/sigmoid, top-k, balance statistics) and the token permutation
    before the experts and the unpermutation after them (memory-bound copies of k vectors a
    token); with LatentMoE the tokens projected to the latent size after routing and back
    after the combine (each TP rank its own tokens), permuted in the latent size."""
    h, dim = x["hidden"], _expert_dim(x)
    latent = minimum(x["moe_latent_dim"], 1)
    return _gemm(x, t, x["experts"], h, minimum(minimum(t, h), x["experts"])) \
        + _memory_bound(x, moe.router_score_bytes(t, x["experts"])) \
        + _memory_bound(x, compute.moe_permutation_bytes(t, x["experts_per_token"], dim,
                                                         x["bytes_per_element"])) \
        + latent * (_gemm(x, rank_tokens, dim, h, minimum(rank_tokens, dim))
                    + _gemm(x, rank_tokens, h, dim, minimum(rank_tokens, dim)))  # (dim <= h)


def _adapter_gemms(x: dict, t, d_in, d_out):
    """Forward time of one LoRA adapter on ``t`` tokens: x A (d_in -> r), then (x A) B."""
    r = maximum(x["lora_rank"], 1)  # (rank 0 has no adapter: its flags are 0)
    return _gemm(x, t, r, d_in, minimum(minimum(t, r), d_in)) \
        + _gemm(x, t, d_out, r, minimum(minimum(t, d_out), r))


def _adapter_mlp_time(x: dict, t, ffn):
    """Forward time of the adapters beside one MLP of TP-split width ``ffn``."""
    h = x["hidden"]
    return _mlp_input_adapters(x) * _adapter_gemms(x, t, h, ffn) + x["lora_down"] * _adapter_gemms(x, t, ffn, h)


def adapter_times(x: dict, r: dict) -> dict:
    """LoRA adapters' forward time of one layer, and QLoRA's dequantisation per micro-batch.

    Column-parallel matrices (q, k, v, gate, up) split their adapter's B over TP, row-
    parallel ones (o, down) its A (as the base weights); an NF4 base is dequantised to
    BF16 before each GEMM that reads it: forward, input-gradient backward and a full
    recompute (formulas.finetune)."""
    h, tp, t = x["hidden"], x["tp"], r["tokens_mb"]
    heads, kv = x["heads"], x["kv_heads"]
    attention = (x["lora_q"] * _adapter_gemms(x, t, h, heads * x["head_dim"] / tp)
                 + x["lora_k"] * _adapter_gemms(x, t, h, kv * x["head_dim"] / tp)
                 + x["lora_v"] * _adapter_gemms(x, t, h, kv * x["v_head_dim"] / tp)
                 + x["lora_o"] * _adapter_gemms(x, t, heads * x["v_head_dim"] / tp, h))
    share = r["moe_share"]
    moe = (x["experts_per_token"] + x["shared_experts"]) * _adapter_mlp_time(
        x, t, x["moe_ffn"] / tp)
    base_params = r["stage_params"] - r["stage_embedding_params"]  # embeddings stay BF16
    return {
        "t_adapter": attention + r["dense_share"] * _adapter_mlp_time(x, t, x["ffn"] / tp)
        + share * moe,
        "dequant_mb": x["dequantize_base"] * finetune.dequantizations_per_pass(
            x["full_recompute"]) * _memory_bound(
            x, finetune.dequantization_bytes(base_params, x["base_weight_bytes_per_param"],
                                             x["bytes_per_element"])),
    }


def cast_times(x: dict, r: dict) -> dict:
    """Time one layer spends quantising its GEMMs' operands under a low-precision recipe
    (:func:`formulas.compute.quantisation_cast_bytes_per_element`): in the forward each
    linear GEMM's input, in the backward each one's output gradient (memory bound)."""
    h, tp, t = x["hidden"], x["tp"], r["tokens_mb"]
    # per token: the column-parallel GEMMs read the (gathered) h-vector, the row-parallel
    # ones their rank's share; a MoE layer's experts cast each routed copy
    copies = r["routed_copies"] / t
    expert_ffn = x["moe_ffn"] / x["etp"]
    dense_in, dense_grad = h + x["ffn"] / tp, (x["mlp_matrices"] - 1) * x["ffn"] / tp + h
    dim = _expert_dim(x)
    moe_in = copies * (dim + expert_ffn) + x["shared_experts"] * (h + x["moe_ffn"] / tp)
    moe_grad = copies * ((x["mlp_matrices"] - 1) * expert_ffn + dim) \
        + x["shared_experts"] * ((x["mlp_matrices"] - 1) * x["moe_ffn"] / tp + h)
    share = r["moe_share"]
    # (the QKV and output-projection GEMMs of softmax and linear attention alike, or a
    # Mamba layer's projections)
    attention, mamba = softmax_share(x) + _linear_share(x), _mamba_share(x)
    inputs = attention * (h + _out_width(x)) + mamba * (h + _mamba_out_width(x)) \
        + r["dense_share"] * dense_in + share * moe_in
    grads = attention * (_qkv_width(x) + h) + mamba * (_mamba_in_width(x) + h) \
        + r["dense_share"] * dense_grad + share * moe_grad
    per_element = x["cast_bytes_per_element"]
    return {"t_cast_fwd": _memory_bound(x, t * inputs * per_element),
            "t_cast_bwd": _memory_bound(x, t * grads * per_element)}


def _moe_act_input_bytes(x: dict):
    """Bytes per element of the stored expert activation-function input: the stack's (FP8:
    1, DeepSeek-V3 s3.3.3) under an FP8 recipe, else 2."""
    return maximum(x["moe_act_input_bytes"], x["linear_input_bytes"])


def _selective_module(x: dict, flag: str):
    """1 where the stack's selective recompute module ``flag`` (``recompute_mlp``,
    ``recompute_moe``) runs: under full recompute the whole layer runs again instead."""
    return (1 - x["full_recompute"]) * x[flag]


def _moe_act_recomputed(x: dict):
    """1 where the experts' activation function alone is recomputed (``recompute_moe_act``
    without the whole MoE layer's recompute, which runs it again anyway)."""
    return x["recompute_moe_act"] * (1 - _selective_module(x, "recompute_moe"))


def compute_time(x: dict, r: dict) -> dict:
    """Compute time of one micro-batch: forward, backward and recomputed forward."""
    share = r["moe_share"]
    base_fwd = (r["t_qkv"] + r["t_core"] + r["t_scores"] + r["t_proj"] + r["t_elem"]
                + r["dense_share"] * r["t_mlp"] + share * r["t_moe"])
    layer_fwd = base_fwd + r["t_adapter"]
    # op-level selective recompute (torchtitan): K, the output projection, the second MLP
    # matmul and the element-wise ops of every dense layer again
    width_qkv = x["heads"] * x["head_dim"] + x["kv_heads"] * (x["head_dim"] + x["v_head_dim"])
    op_recompute = r["t_qkv"] * x["kv_heads"] * x["head_dim"] / width_qkv + r["t_proj"] \
        + r["t_mlp"] / x["mlp_matrices"] + r["t_elem"]
    # full recompute: the layer again, but a checkpoint that stops early skips a dense
    # layer's last matmul, the down projection, when the backward saved its input (a
    # frozen base's adapters and a dropout mask after it are saved later)
    layer_recompute = x["full_recompute"] * compute.checkpointed_layer_recompute_time(
        layer_fwd, r["dense_share"] * r["t_mlp"] / x["mlp_matrices"],
        _early_stop(x)) \
        + (1 - x["full_recompute"]) * (_core_recomputed(x) * (r["t_core"] + r["t_scores"])
                                       + share * _moe_act_recomputed(x) * r["t_moe_act"]
                                       + _op_sac(x, r) * op_recompute
                                       + r["dense_share"] * x["recompute_mlp"] * r["t_mlp"]
                                       + share * x["recompute_moe"] * r["t_moe"]
                                       + _residual_rebuilt(x) * r["t_proj"])
    # the forward's GEMMs: a frozen base skips their weight-gradient GEMMs in the backward
    # (formulas.finetune); they are the backward's weight part, the chunks of DualPipe's
    # bubble
    gemm_fwd = (r["t_qkv"] + r["t_proj"] + r["dense_share"] * r["t_mlp"] + share * r["t_moe"])
    frozen = x["frozen_base"]
    # DPO: a frozen reference model's forward over the micro-batch (no activations kept)
    reference_mb = x["reference_model"] * (x["stage_layers"] * base_fwd + r["t_logits"])
    # the recipe's casts: each layer's forward ones again under full recompute
    casts = r["t_cast_fwd"] * (1 + x["full_recompute"]) + r["t_cast_bwd"]
    # activation offloading: each layer's input copied to the host beside its forward and
    # back beside its backward (with its recompute); what the compute cannot hide shows
    layer_pass = finetune.frozen_training_pass_time(layer_fwd, layer_recompute,
                                                    frozen * gemm_fwd)
    offload_mb = x["stage_layers"] * compute.offload_exposed_time(
        _offloaded_bytes(x), x["host_copy_bytes_per_s_per_gpu"], layer_fwd,
        layer_pass - layer_fwd)
    compute_mb = x["stage_layers"] * (layer_pass + casts) \
        + finetune.frozen_training_pass_time(r["t_logits"], 0, frozen * r["t_logits"]) \
        + r["t_loss"] + offload_mb \
        + _mtp_time(x, r) + r["dequant_mb"] + reference_mb
    return {"t_layer_fwd": layer_fwd, "compute_mb": compute_mb,
            "forward_mb": x["stage_layers"] * layer_fwd + r["t_logits"] + reference_mb,
            "weight_grad_mb": (1 - frozen) * (x["stage_layers"] * gemm_fwd + r["t_logits"]),
            "compute_s": r["microbatches"] * compute_mb}


def _layer_input_bytes(x: dict):
    """Bytes of one layer's input on one rank, one micro-batch (the full-recompute
    checkpoint; split over TP ranks under sequence parallelism)."""
    return memory.full_recompute_activation_bytes_per_layer(
        x["seq_len"] / x["cp"], x["micro_batch"], x["hidden"], x["tp"],
        x["sequence_parallel"])


def _offloaded_bytes(x: dict):
    """Bytes one layer keeps in host memory for one micro-batch on one rank: the h-wide
    vectors a token the run offloads (the layer input, and what a remat policy names)."""
    return x["offloaded_activation_vectors"] * _layer_input_bytes(x)


def _mtp_time(x: dict, r: dict):
    """Forward + backward of the MTP modules on one micro-batch (with the loss's stage)."""
    h, t, tp = x["hidden"], r["tokens_mb"], x["tp"]
    block_fwd = (r["t_qkv"] + r["t_core"] + r["t_scores"] + r["t_proj"] + r["t_elem"]
                 + _is_moe(x) * r["t_moe"] + (1 - _is_moe(x)) * r["t_mlp"])
    inner = compute.mtp_projection_params(h) / h  # M_k: the concatenation of two h-vectors
    projection = _gemm(x, t, h / tp, inner, minimum(minimum(t, h / tp), inner))
    recompute = x["full_recompute"] * block_fwd \
        + (1 - x["full_recompute"]) * _core_recomputed(x) * (r["t_core"] + r["t_scores"])
    return _mtp_on_fullest_stage(x) * (
        compute.training_pass_time(block_fwd, recompute)
        + compute.training_pass_time(projection + r["t_logits"], 0) + r["t_loss"])


def _scale_up(x: dict):
    return communication.achievable_bandwidth(x["scale_up_bandwidth_bytes_per_s"],
                                              x["scale_up_bus_efficiency"])


def _scale_out(x: dict):
    return communication.achievable_bandwidth(x["scale_out_bandwidth_bytes_per_s"],
                                              x["scale_out_bus_efficiency"])


def _group_link(x: dict, intra):
    """Bandwidth and latency of a group inside (1) or across (0) scale-up domains."""
    return (communication.group_bandwidth(intra, _scale_up(x), _scale_out(x)),
            communication.group_latency(intra, x["intra_latency_s"], x["inter_latency_s"]))


def _dispatch_bytes_per_element(x: dict):
    """Bytes of a dispatched hidden-state element: FP8 (the recipe's cached-input bytes)
    where the stack dispatches in FP8, else the activation bytes."""
    return x["fp8_dispatch"] * x["linear_input_bytes"] \
        + (1 - x["fp8_dispatch"]) * x["bytes_per_element"]


def _ep_alltoall(x: dict, r: dict, bytes_per_element):
    """One dispatch (or combine) of one MoE layer and micro-batch, elements of
    ``bytes_per_element``: NVLink and network shares of the routed copies (formulas.moe)."""
    k, h, ep = x["experts_per_token"], _expert_dim(x), x["ep"]  # (LatentMoE: latent size)
    tokens = communication.expert_dispatch_tokens(r["tokens_mb"], x["tp"],
                                                  x["sequence_parallel"])
    # the EP group (etp*ep consecutive ranks) over scale-up domains; EP ranks in each
    domains = maximum(1, x["ep"] * x["etp"] / x["scale_up_domain_gpus"])
    domain_ranks = ep / domains
    token_bytes = tokens * h * bytes_per_element
    up = moe.scale_up_copies_per_token(k, domain_ranks, ep, x["hierarchical_dispatch"])
    out = moe.remote_copies_per_token(k, domains, x["routed_node_limit"],
                                      x["hierarchical_dispatch"])
    factor = x["a2a_efficiency_factor"]
    up_bytes_per_s = factor * moe.dispatch_scale_up_bandwidth(
        _scale_up(x), x["deepep_scale_up_bytes_per_s"], x["deepep_dispatch"])
    return moe.two_level_alltoall_time(
        up * token_bytes, out * token_bytes, up_bytes_per_s, factor * _scale_out(x),
        domain_ranks, domains, x["intra_latency_s"], x["inter_latency_s"])


def microbatch_communication(x: dict, r: dict) -> dict:
    """Exposed TP, CP and EP communication of one micro-batch."""
    h, tp, t, elem = x["hidden"], x["tp"], r["tokens_mb"], x["bytes_per_element"]
    # the fullest stage's layers and the MTP blocks charged to it (same collectives)
    layers, share = x["stage_layers"] + _mtp_on_fullest_stage(x), r["moe_share"]
    # TP: hierarchical when the group spans scale-up domains (one ring per NIC across)
    tp_in = x["tp_intra_ranks"]
    tp_layer = block_share(x) * (communication.tp_collectives_per_layer(x["full_recompute"])
                + communication.tp_recomputed_collectives_per_layer(
                    _op_sac(x, r), x["sequence_parallel"])) * (
        communication.hierarchical_allreduce_time(
            elem * t * h, tp_in, tp / tp_in, _scale_up(x), _scale_out(x),
            x["intra_latency_s"], x["inter_latency_s"])
        + communication.collective_overhead_time(x["collective_overhead_s"], tp))
    # CP: ring exchange of K/V chunks, hidden behind the attention core (fwd + bwd), in the
    # softmax-attention layers (the linear-attention layers' state hand-off is not costed)
    cp_layer = softmax_share(x) * communication.ring_attention_comm_time(
        communication.kv_chunk_head_bytes(t, x["kv_heads"], x["head_dim"], x["v_head_dim"], tp,
                                          elem), x["cp"],
        *_group_link(x, x["cp_intra"]))
    # EP: dispatch and combine all-to-alls of each TP rank's sequence shard over NVLink and
    # the NIC (formulas.moe: node-limited, hierarchical or flat; FP8 dispatch, BF16
    # combine; forward and backward), then the expert-TP group (ETP ranks) gathers the
    # routed tokens (and reduce-scatters on combine)
    # (a recomputed MoE layer - recompute module moe - dispatches and combines again)
    ep_layer = moe.moe_layer_alltoall_time(_ep_alltoall(x, r, _dispatch_bytes_per_element(x)),
                                           _ep_alltoall(x, r, elem),
                                           _selective_module(x, "recompute_moe")) \
        + x["sequence_parallel"] * communication.expert_tp_gather_time(
            communication.moe_dispatch_bytes(
                communication.expert_rank_tokens(t, tp, x["etp"], 1), x["experts_per_token"],
                _expert_dim(x), elem),
            x["etp"], *_group_link(x, minimum(tp_in, x["etp"]) / x["etp"]))
    ep_exposed = communication.exposed_comm_time(
        layers * share * ep_layer,
        layers * share * compute.training_pass_time(r["t_layer_fwd"], 0), x["ep_overlap"])
    # CP of the Mamba layers: all-to-alls from sequence to head shards and back around
    # the scan, in every pass (not hidden: the scan waits for them)
    mamba_cp = _mamba_share(x) * communication.mamba_context_parallel_time(
        t, _mamba_in_width(x), x["mamba_heads"] * x["mamba_head_dim"] / tp, x["cp"], elem,
        x["full_recompute"], *_group_link(x, x["cp_intra"]))
    return {
        "tp_comm_mb": communication.exposed_comm_time(layers * tp_layer, r["compute_mb"],
                                                      x["tp_overlap"]),
        # CP: the ring's cp steps, each K/V chunk's transfer behind the attention of the
        # chunk before it: the first transfer and what the attention cannot cover exposed
        "cp_comm_mb": communication.exposed_comm_time(
            layers * cp_layer, layers * compute.training_pass_time(r["t_core"], 0),
            x["cp_overlap"]) + layers * mamba_cp,
        # hidden behind the other micro-batch's whole layer (Megatron-Core's EP A2A
        # overlap, DeepSeek-V3's DualPipe), fwd + bwd; the hidden part slows the compute
        # under it by the SMs its kernels hold
        "ep_comm_mb": ep_exposed + moe.overlapped_comm_sm_time(
            layers * share * ep_layer - ep_exposed, x["comm_sm_fraction"]),
    }


def _dp_levels(x: dict) -> dict:
    """The two-level groups (ranks in a scale-up domain, domains, then the links) of the
    data-parallel collectives: ``dp``/``shard`` for the stage's shared weights (attention,
    dense and shared-expert MLPs, router, embedding: replicated over the DP group, ZeRO
    sharded over its shard group), ``expert_dp``/``expert_shard`` for the rank's routed
    experts (replicated over its expert-data-parallel group, ETP x EP ranks apart): with
    EP filling a scale-up domain no two ranks of it share experts, and each moves its own
    over its own NIC (docs/model.md, "Data-parallel traffic of routed experts")."""
    # the DP group spans one pipeline stage's GPUs (TP x CP x DP), thinned above a pod
    dp_out = communication.pod_bandwidth(_scale_out(x), x["oversubscription"],
                                         x["gpus"] / x["pp"], x["pod_gpus"])
    links = (_scale_up(x), dp_out, x["intra_latency_s"], x["inter_latency_s"])
    groups = {"dp": (x["dp"], x["dp_intra_ranks"]), "shard": (x["shard_ranks"], x["dp_intra_ranks"]),
              "expert_dp": (x["expert_dp_ranks"], x["expert_dp_intra_ranks"]),
              "expert_shard": (x["expert_shard_ranks"], x["expert_dp_intra_ranks"])}
    # a stack whose collectives run flat over the group (DeepSpeed 2021's ZeRO-3) moves each
    # rank's bytes over its own scale-out link: every rank its own domain
    node_aware = 1 - x["dp_collectives_flat"]
    levels = {}
    for name, (ranks, domain_ranks) in groups.items():
        intra = node_aware * minimum(domain_ranks, ranks) + (1 - node_aware)
        levels[name] = (intra, ranks / intra, *links)
    return {**levels, "links": links}


def _weights_collective(x: dict, collective, dense_bytes, expert_bytes, levels: dict,
                        group: str):
    """``collective`` of the shared weights' bytes over ``group`` plus that of the routed
    experts' bytes over ``expert_`` ``group`` (none for a dense model, nor its latency)."""
    return collective(dense_bytes, *levels[group]) \
        + _is_moe(x) * collective(expert_bytes, *levels["expert_" + group])


def _dp_buckets(x: dict, r: dict):
    """Data-parallel buckets of the stage, each its own collective call: FSDP's units
    (ZeRO-3) and stacks without a bucket size one per transformer layer; Megatron-Core's
    wrapper max(40M, 1M x DP) parameters each
    (:func:`formulas.communication.gradient_bucket_count`)."""
    per_layer = maximum(x["stage_layers"], 1)
    sized = communication.gradient_bucket_count(
        r["stage_trainable_params"] + r["stage_trainable_expert_params"],
        maximum(x["dp_bucket_min_params"], 1.0), x["dp_bucket_params_per_dp_rank"],
        x["dp"] * x["cp"])
    by_size = minimum(x["dp_bucket_min_params"], 1) * (1 - x["zero3"])  # 0 or 1
    return by_size * sized + (1 - by_size) * per_layer


def _in_buckets(collective_of, buckets):
    """A collective ``collective_of(share)`` (``share`` of its bytes) issued as ``buckets``
    calls: all its bytes once, its latencies (no bytes) again in every further call
    (:func:`formulas.communication.bucketed_collective_time`)."""
    return communication.bucketed_collective_time(collective_of(1.0), collective_of(0.0),
                                                  buckets)


def _bucketed_weights_collective(x: dict, collective, dense_bytes, expert_bytes,
                                 levels: dict, group: str, buckets):
    """:func:`_weights_collective` issued as ``buckets`` calls (:func:`_in_buckets`)."""
    return _in_buckets(lambda share: _weights_collective(
        x, collective, share * dense_bytes, share * expert_bytes, levels, group), buckets)


def _bucketed_replica_allreduce(x: dict, grad_bytes, shard_ranks, dp, levels: dict, buckets):
    """HSDP's all-reduce of the gradient shards across replicas, one call per bucket."""
    return _in_buckets(lambda share: communication.hsdp_replica_allreduce_time(
        share * grad_bytes, shard_ranks, dp, x["replica_intra_ranks"], *levels["links"]),
        buckets)


def iteration_communication(x: dict, r: dict) -> dict:
    """Pipeline point-to-point transfers and the data-parallel reduction of an iteration."""
    p2p = communication.p2p_time(
        pipeline.pipeline_p2p_bytes(x["seq_len"] / x["cp"], x["micro_batch"], x["hidden"],
                                    x["bytes_per_element"], x["tp"], 1.0),  # scatter/gather
        *_group_link(x, x["pp_intra"]))
    levels = _dp_levels(x)
    buckets = _dp_buckets(x, r)
    # the shared weights and the routed experts move over their own groups; a frozen base
    # (LoRA) reduces the adapters' gradients only and gathers its weights at its precision
    grads = (x["grad_comm_bytes_per_param"] * r["stage_trainable_params"],
             x["grad_comm_bytes_per_param"] * r["stage_trainable_expert_params"])
    expert_weight_bytes = ((1 - x["frozen_base"]) * x["bytes_per_element"]
                           + x["frozen_base"] * x["base_weight_bytes_per_param"]) \
        * r["stage_expert_params"]
    weights = (_gathered_weight_bytes(x, r) - expert_weight_bytes, expert_weight_bytes)
    # DP: hierarchical all-reduce of the stage's gradients, behind the last backward
    reduce_s = _bucketed_weights_collective(x, communication.hierarchical_allreduce_time,
                                            *grads, levels, "dp", buckets)
    # ZeRO-2/3 collectives run within the shard group: all DP ranks, or under HSDP the DP
    # ranks of one scale-up domain, whose replicas all-reduce their shards bucket by bucket
    # ZeRO-3/FSDP: parameter all-gathers in forward and backward of every micro-batch
    # (torchtitan under PP keeps each stage's gathered parameters through the step and
    # reduce-scatters once, after the last micro-batch: one gather, one reduce-scatter)
    kept = _fsdp_kept_under_pp(x)
    gather_one = _bucketed_weights_collective(x, communication.hierarchical_allgather_time,
                                              *weights, levels, "shard", buckets)
    gather_s = x["zero3"] * ((1 - kept) * communication.zero3_gather_time(
        gather_one, r["microbatches"]) + kept * gather_one)
    # sharded gradients (ZeRO-2/3, FSDP): a reduce-scatter in every micro-batch's backward,
    # hidden behind all of them; else one all-reduce behind the last backward
    sharded = minimum(x["grad_shards"] - 1, 1)  # 0 or 1
    scatter_s = sharded * communication.sharded_grad_reduce_time(_bucketed_weights_collective(
        x, communication.hierarchical_allreduce_time, *grads, levels, "shard", buckets),
        (1 - kept) * r["microbatches"] + kept)
    replica_s = sharded * (
        _bucketed_replica_allreduce(x, grads[0], x["shard_ranks"], x["dp"], levels, buckets)
        + _is_moe(x) * _bucketed_replica_allreduce(x, grads[1], x["expert_shard_ranks"],
                                                   x["expert_dp_ranks"], levels, buckets))
    # each bucket's collective runs as soon as the compute has produced it, so only what
    # the remaining compute cannot cover is exposed
    last_backward = compute.backward_time(x["stage_layers"] * r["t_layer_fwd"])
    return {
        # (DualPipe hides the pipeline transfers under the paired chunk's compute,
        # DeepSeek-V3 s3.2.1)
        "pp_comm_s": (1 - x["dualpipe"])
        * pipeline.pipeline_p2p_count(x["pp"], r["microbatches"], x["vp"]) * p2p,
        # the all-reduce (ZeRO-0/1: of the accumulated gradients) behind the last backward
        "dp_comm_s": communication.bucketed_exposed_comm_time(
            (1 - sharded) * reduce_s + replica_s, last_backward, buckets, x["dp_overlap"])
        # ZeRO-2/3, FSDP: every micro-batch's gathers and reduce-scatters, bucket by bucket
        # behind that micro-batch's compute (prefetched all-gathers)
        + communication.bucketed_exposed_comm_time(gather_s + scatter_s, r["compute_s"],
                                                   buckets, x["dp_overlap"]),
    }


def _named_offload(x: dict):
    """1 where selective recompute runs a policy that keeps only the tensors it names and
    the run offloads those to host memory (MaxText's remat_policy custom / *_offloaded:
    jax.checkpoint_policies.save_and_offload_only_these_names), else 0.  Such a layer holds
    no other activation: JAX recomputes every unnamed tensor from the named ones, where
    Megatron-Core's selective recompute keeps the inputs of each module it recomputes."""
    return x["remat_keeps_named_only"] * x["selective_option"] \
        * minimum(x["offloaded_activation_vectors"], 1)


def _fsdp_kept_under_pp(x: dict):
    """1 where ZeRO-3/FSDP runs under pipeline parallelism on a stack that keeps each
    stage's parameters gathered through the step (torchtitan: reshard_after_forward =
    not pp_enabled; the pipeline schedule syncs gradients on the last backward only)."""
    return x["fsdp_keeps_gathered_under_pp"] * x["zero3"] * minimum(x["pp"] - 1, 1)


def _frozen_base_bytes(x: dict, r: dict):
    """Bytes of the fullest stage's frozen base weights on one rank, unsharded: the layers
    at the base precision, the embeddings in BF16."""
    emb = r["stage_embedding_params"]
    return x["base_weight_bytes_per_param"] * (r["stage_params"] - emb) \
        + x["bytes_per_element"] * emb


def _gathered_weight_bytes(x: dict, r: dict):
    """Weight bytes of the fullest stage a ZeRO-3/FSDP all-gather moves: the trained
    weights at the activation precision, a frozen base at its own."""
    frozen = x["frozen_base"]
    return x["bytes_per_element"] * ((1 - frozen) * r["stage_params"]
                                     + r["stage_adapter_params"]) \
        + frozen * _frozen_base_bytes(x, r)


def _bubble_fraction(x: dict, r: dict, per_mb):
    """Pipeline bubble over the ideal time m x per_mb: (interleaved) 1F1B, or DualPipe from
    its chunk times (the micro-batch's time split as its compute splits into forward,
    backward and the backward's weight part)."""
    m = r["microbatches"]
    forward_mb = per_mb * r["forward_mb"] / r["compute_mb"]
    dualpipe_s = pipeline.bubble_time_dualpipe(
        x["pp"], forward_mb, per_mb - forward_mb, per_mb * r["weight_grad_mb"] / r["compute_mb"])
    return (1 - x["dualpipe"]) * pipeline.bubble_fraction_interleaved(x["pp"], m, x["vp"]) \
        + x["dualpipe"] * dualpipe_s / (m * per_mb)


def _exposed_launch_time(x: dict, r: dict, device_mb):
    """Host launch time of one micro-batch the GPU's work ``device_mb`` does not cover."""
    # the MoE layers' own launches (router, permute, all-to-all, per-expert GEMMs) run
    # ahead of the GPU unless the dispatcher makes the host wait for the token counts
    # (dropless: buffers sized on the host): then they add to the device time
    # (formulas.moe.moe_host_launch_time)
    sync = x["dispatch_host_sync"] * (1 - x["token_drop"])
    # (launch times of the stack on an x86 host, scaled by this accelerator's host)
    # (a recomputed MoE layer - full recompute or the recompute module moe - launches its
    # forward again)
    moe_host_mb = x["host_launch_factor"] * moe.moe_host_launch_time(
        x["stage_layers"] * r["moe_share"], x["moe_layer_overhead_s"], x["experts"] / x["ep"],
        x["expert_overhead_s"], maximum(x["full_recompute"], x["recompute_moe"]))
    # the layers' launches under the stack's CUDA-graph scope (none, per layer, whole
    # iteration).  A whole-iteration graph needs static shapes: a dropless MoE model (the
    # experts' token counts change every step) runs eagerly instead; Megatron-Core's
    # full_iteration scope needs a dispatch padded to the capacity (token dropping)
    scope = compute.capturable_graph_scope(x["cuda_graphs"], _is_moe(x) * (1 - x["token_drop"]))
    whole = maximum(scope - 1, 0)
    host_mb = x["host_launch_factor"] * compute.graphed_host_launch_time(
        block_share(x) * x["stage_layers"], x["layer_overhead_s"], x["graph_launch_s"],
        x["full_recompute"], scope, r["microbatches"]) + (1 - whole) * (1 - sync) * moe_host_mb
    exposed = compute.host_bound_excess_time(device_mb, host_mb, x["host_overlap_exponent"])
    return exposed + (1 - whole) * sync * moe_host_mb


def step_time(x: dict, r: dict) -> dict:
    """Time of one iteration: launches, communication, bubble, optimizer, stragglers."""
    m = r["microbatches"]
    # the host launches kernels asynchronously; the GPU waits when they outlast its work
    device_mb = r["compute_mb"] + r["tp_comm_mb"]
    launch_mb = _exposed_launch_time(x, r, device_mb)
    per_mb = r["compute_mb"] + launch_mb + r["tp_comm_mb"] + r["cp_comm_mb"] + r["ep_comm_mb"]
    optimizer_s = _memory_bound(x, compute.optimizer_step_bytes(
        r["stage_trainable_params"] / x["optimizer_shards"]
        + r["stage_trainable_expert_params"] / x["expert_optimizer_shards"],
        x["weight_bytes_per_param"],
        x["grad_bytes_per_param"], x["optimizer_bytes_per_param"]))
    bubble_fraction = _bubble_fraction(x, r, per_mb)
    parts = {
        "launch_s": m * launch_mb,
        "tp_comm_s": m * r["tp_comm_mb"],
        "cp_comm_s": m * r["cp_comm_mb"],
        "ep_comm_s": m * r["ep_comm_mb"],
        "bubble_s": bubble_fraction * m * per_mb,
        "optimizer_s": optimizer_s,
    }
    base = (r["compute_s"] + parts["launch_s"] + parts["tp_comm_s"] + parts["cp_comm_s"]
            + parts["ep_comm_s"] + parts["bubble_s"] + r["pp_comm_s"] + r["dp_comm_s"]
            + optimizer_s)
    # every iteration waits for the slowest of N ranks
    straggler_s = (straggler.expected_max_normal(x["gpus"], base, x["step_time_cv"] * base)
                   - base
                   + straggler.pause_delay(x["gpus"], x["pause_probability"],
                                           x["pause_duration_s"]))
    # software stragglers (Lin et al. OSDI'25): extra layers on the slowest stage stretch
    # every micro-batch and the bubble; unplanned GC on any rank stalls the step, planned
    # GC costs d/K; one slow node holds the whole group
    layer_pass_mb = (r["compute_mb"] - compute.training_pass_time(r["t_logits"], 0)
                     - r["t_loss"]) \
        / x["stage_layers"]
    imbalance_s = x["stage_extra_layers"] * layer_pass_mb * m * (1 + bubble_fraction)
    gc_s = x["gc_planned"] * straggler.planned_gc_delay(x["gc_duration_s"],
                                                        x["gc_planned_steps"]) \
        + (1 - x["gc_planned"]) * straggler.gc_pause_delay(
            x["gpus"], base, x["gc_interval_s"], x["gc_duration_s"])
    slow_s = (straggler.slow_node_slowdown(r["nodes"], x["slow_node_fraction"],
                                           x["slow_node_slowdown"]) - 1) * (base + imbalance_s)
    straggler_s = straggler_s + imbalance_s + gc_s + slow_s
    return {**parts, "straggler_s": straggler_s, "step_time_s": base + straggler_s}


def throughput(x: dict, r: dict) -> dict:
    """Tokens per second and FLOP utilisation."""
    # real tokens: padding is processed but not counted (token_efficiency)
    tokens_per_s = x["global_batch"] * x["seq_len"] * x["token_efficiency"] / r["step_time_s"]
    model_flops_per_s = r["model_flops_per_token"] * tokens_per_s / x["gpus"]
    return {
        "tokens_per_s": tokens_per_s,
        "tflops_per_gpu": model_flops_per_s / 1e12,  # FLOP/s -> TFLOP/s
        "mfu": compute.model_flops_utilization(model_flops_per_s, x["peak_flops_per_s"]),
        "hfu": compute.hardware_flops_utilization(
            r["hardware_flops_per_token"] * tokens_per_s / x["gpus"], x["peak_flops_per_s"]),
    }


def _layer_activation_bytes(x: dict, r: dict, s, b, h, tp):
    """Activation bytes one transformer layer keeps for backward, one micro-batch, without
    full recompute: Korthikanti's count with the attention's shape, the MoE layers' experts,
    MLA up-projection and norm recomputation and FP8-cached GEMM inputs."""
    # MoE layers keep their experts' tensors (dispatched token copies, expert widths, Linear
    # inputs at linear_input_bytes) instead of the dense MLP's; MLA layers whose
    # up-projections are recomputed keep the latents, not the per-head Q, K and V
    # (LatentMoE: the dispatched copies in the latent size)
    moe_mlp = memory.moe_mlp_activation_bytes(
        s, b, _expert_dim(x), x["moe_ffn"], x["experts_per_token"], x["shared_experts"],
        x["mlp_matrices"], tp, x["etp"], x["sequence_parallel"], x["linear_input_bytes"]) \
        - memory.mlp_activation_bytes(s, b, x["ffn"], x["mlp_matrices"], tp)
    mla_recomputed = minimum(x["kv_lora_rank"], 1) * x["recompute_mla_up_proj"] \
        * memory.mla_up_projection_activation_bytes(s, b, x["heads"], x["head_dim"],
                                                    x["v_head_dim"], tp)
    layer_act = memory.activation_bytes_per_layer(
        s, b, h, x["ffn"], x["heads"], x["kv_heads"], x["mlp_matrices"], tp,
        x["sequence_parallel"], _scores_stored(x), x["dropout_masks"]) \
        + memory.attention_shape_activation_bytes(
            s, b, h, x["heads"], x["kv_heads"], x["head_dim"], x["v_head_dim"],
            x["q_lora_rank"], x["kv_lora_rank"], x["qk_rope_head_dim"], tp) \
        + r["moe_share"] * moe_mlp - mla_recomputed \
        + _linear_share(x) * memory.gated_deltanet_activation_bytes(
            s, b, x["linear_key_heads"], x["linear_value_heads"], x["linear_head_dim"],
            compute.GATED_DELTA_CHUNK, tp) \
        + _mamba_share(x) * memory.mamba2_activation_bytes(
            s, b, x["mamba_heads"], x["mamba_head_dim"], x["mamba_state_dim"],
            x["mamba_groups"], tp)
    # the softmax-attention tensors only in the softmax-attention layers (not in the linear-
    # attention, Mamba and MLP-only ones), with the tanh output of soft-capped logits where
    # the scores are kept (Gemma 2 unfused); in a hybrid model's one-part layers no MLP
    # tensors in the mixer-only ones, one norm each (its input and output)
    one_part = (x["mixer_free_layers"] + x["mlp_free_layers"]) / x["layers"]
    layer_act = layer_act - (1 - softmax_share(x)) * memory.softmax_attention_activation_bytes(
        s, b, x["heads"], x["kv_heads"], x["head_dim"], x["v_head_dim"], tp,
        _scores_stored(x), x["dropout_masks"]) \
        + softmax_share(x) * x["attention_softcap"] * _scores_stored(x) \
        * memory.softcap_activation_bytes(s, b, x["heads"], tp) \
        - x["mlp_free_layers"] / x["layers"] * memory.mlp_activation_bytes(
            s, b, x["ffn"], x["mlp_matrices"], tp) \
        - one_part * memory.norm_output_activation_bytes(s, b, h, tp, x["sequence_parallel"])
    # the two norm outputs (QKV and MLP inputs) and a dense MLP's down-projection input are
    # GEMM inputs: kept at linear_input_bytes (FP8 recipes: 1), or not at all when the norms
    # are recomputed (DeepSeek-V3 s3.2.3)
    norms = block_share(x) * memory.norm_output_activation_bytes(s, b, h, tp,
                                                                  x["sequence_parallel"])
    # the experts' activation function: its input kept in FP8, its output recomputed
    # (DeepSeek-V3 s3.3.3; Megatron-Core's recompute module moe_act)
    layer_act = layer_act - r["moe_share"] * memory.moe_activation_function_saving_bytes(
        s, b, x["moe_ffn"], x["experts_per_token"], x["shared_experts"], x["mlp_matrices"], tp,
        x["etp"], x["sequence_parallel"], x["linear_input_bytes"], _moe_act_input_bytes(x),
        _moe_act_recomputed(x))
    # Megatron-Core's recompute modules mlp and moe: the dense MLP, or the whole MoE layer
    # (router, dispatch, experts, combine), runs again in backward from its input (the norm
    # output, kept), so nothing inside it is kept
    # (under full recompute the layer's working set is whole)
    mlp_module = _selective_module(x, "recompute_mlp")
    moe_module = _selective_module(x, "recompute_moe")
    layer_act = layer_act \
        - r["dense_share"] * mlp_module * memory.mlp_activation_bytes(
            s, b, x["ffn"], x["mlp_matrices"], tp) \
        - r["moe_share"] * moe_module * memory.moe_mlp_activation_bytes(
            s, b, _expert_dim(x), x["moe_ffn"], x["experts_per_token"], x["shared_experts"],
            x["mlp_matrices"], tp, x["etp"], x["sequence_parallel"], x["linear_input_bytes"])
    cached = memory.cached_input_saving_fraction(x["linear_input_bytes"])
    down_input = r["dense_share"] * (1 - mlp_module) * memory.mlp_activation_bytes(
        s, b, x["ffn"], 1, tp)
    layer_act = layer_act - x["recompute_norms"] * norms \
        - cached * ((1 - x["recompute_norms"]) * norms + down_input) \
        - _residual_rebuilt(x) * block_share(x) * memory.residual_activation_bytes(
            s, b, h, tp, x["sequence_parallel"])
    kept = layer_act - x["frozen_base"] * _frozen_inputs_not_kept(
        x, (1 - x["recompute_norms"]) * (1 - cached) * norms, (1 - cached) * down_input)
    # op-level selective recompute keeps what its policy saves instead
    op_kept = memory.op_sac_activation_bytes_per_layer(
        s, b, h, x["ffn"], x["heads"], x["kv_heads"], x["head_dim"], x["v_head_dim"],
        x["mlp_matrices"], tp, x["sequence_parallel"])
    op = _op_sac(x, r)
    return (1 - op) * kept + op * op_kept + _adapter_activation_bytes(x, s, b)


def _frozen_inputs_not_kept(x: dict, kept_norms, kept_down_input):
    """Activation bytes a frozen base need not keep (formulas.finetune): the QKV, MLP and
    down-projection inputs no adapter reads."""
    attention_in = maximum(x["lora_q"], maximum(x["lora_k"], x["lora_v"]))
    return finetune.frozen_inputs_not_kept_bytes(
        kept_norms, kept_down_input, attention_in, minimum(_mlp_input_adapters(x), 1),
        x["lora_down"])


def _mlp_input_adapters(x: dict):
    """Adapters beside the MLP's input matrices (up, and gate when gated)."""
    return finetune.lora_mlp_input_adapters(x["mlp_matrices"], x["lora_gate"], x["lora_up"])


def _adapter_activation_bytes(x: dict, s, b):
    """Activation bytes one layer's LoRA adapters keep: each adapter's rank-r product x A
    (the input of B, for B's gradient); their inputs are the base GEMMs' inputs."""
    targets = x["lora_q"] + x["lora_k"] + x["lora_v"] + x["lora_o"] \
        + _mlp_input_adapters(x) + x["lora_down"]
    return targets * s * b * x["lora_rank"] * x["bytes_per_element"]


def _output_layer_bytes(x: dict, s, b, h, tp):
    """Activation bytes of the output layer and the loss, one micro-batch: Korthikanti's
    (a fused FP32 cross-entropy) and what the stack's unfused loss holds beyond it. A loss
    over c sequence chunks, each backward before the next (torchtitan's ChunkedLossWrapper),
    holds one chunk's logits: the bytes of V/c columns."""
    held_vocab = x["vocab"] / x["loss_logit_chunks"]
    return memory.output_layer_activation_bytes(s, b, h, held_vocab, tp) \
        + memory.unfused_loss_logit_bytes(s, b, held_vocab, tp, x["loss_extra_bytes_per_logit"])


def _frozen_state_bytes(x: dict, r: dict):
    """Frozen weights beside the trained ones: a LoRA base at its precision, a DPO
    reference model in BF16, sharded as the weights."""
    stage, experts = r["stage_params"], r["stage_expert_params"]
    return x["frozen_base"] * (
        memory.sharded_state_bytes(_frozen_base_bytes(x, r) - x["base_weight_bytes_per_param"]
                                   * experts, 1, x["weight_shards"])
        + memory.sharded_state_bytes(experts, x["base_weight_bytes_per_param"],
                                     x["expert_weight_shards"])) \
        + x["reference_model"] * (
            memory.sharded_state_bytes(stage - experts, x["bytes_per_element"],
                                       x["weight_shards"])
            + memory.sharded_state_bytes(experts, x["bytes_per_element"],
                                         x["expert_weight_shards"]))


def _chunk_state_bytes(x: dict, s, b, tp):
    """One layer's chunk states, written in its forward and recomputed in its backward: a
    linear-attention layer's (d x d a head) and a Mamba-2 layer's (N x P a head, FP32)."""
    return minimum(x["linear_attention_layers"], 1) * memory.gated_delta_rule_state_bytes(
        s, b, x["linear_value_heads"], x["linear_head_dim"], compute.GATED_DELTA_CHUNK, tp,
        x["bytes_per_element"]) \
        + minimum(x["mamba_layers"], 1) * memory.ssd_state_bytes(
            s, b, x["mamba_heads"], x["mamba_head_dim"], x["mamba_state_dim"],
            compute.SSD_CHUNK, tp)


def memory_per_gpu(x: dict, r: dict) -> dict:
    """Memory of one GPU of the first (fullest) pipeline stage."""
    h, b, tp, s = x["hidden"], x["micro_batch"], x["tp"], x["seq_len"] / x["cp"]
    layer_act = _layer_activation_bytes(x, r, s, b, h, tp)
    # full recompute keeps each layer's input, plus one layer's working set; a policy that
    # keeps only what it names and offloads it keeps those tensors (in host memory) and
    # recomputes the rest, one layer's working set at a time, in the backward
    named = _named_offload(x)
    stored_layer = x["full_recompute"] * _layer_input_bytes(x) \
        + (1 - x["full_recompute"]) * (
            named * maximum(_offloaded_bytes(x), _layer_input_bytes(x))
            + (1 - named) * layer_act)
    # MTP modules, with the loss on the last stage: one micro-batch in flight
    mtp_act = _mtp_on_fullest_stage(x) * (
        stored_layer + _output_layer_bytes(x, s, b, h, tp))
    # layer-micro-batches the busiest rank holds: as many chunk-micro-batches as
    # Megatron-Core's (interleaved) 1F1B schedule keeps on the first rank, or on the second
    # where an uneven split leaves the first fewer layers; or DualPipe's p + 1 of one of its
    # two stages (the layers a micro-batch passes)
    inflight_layers = (1 - x["dualpipe"]) * memory.pipeline_inflight_layers(
        x["layers"], x["stage_layers"], x["pp"], x["vp"], r["microbatches"]) \
        + x["dualpipe"] * x["stage_layers"] / x["vp"] * memory.dualpipe_inflight_chunks(
            x["pp"], r["microbatches"])
    # routed experts are sharded over the expert-data-parallel group (parallel folding);
    # the trained weights: all of them, or a frozen base's adapters
    dense, routed = r["stage_trainable_params"], r["stage_trainable_expert_params"]

    def state(per_param, shards, expert_shards):
        return (memory.sharded_state_bytes(dense, x[per_param], x[shards])
                + memory.sharded_state_bytes(routed, x[per_param], x[expert_shards]))

    frozen = _frozen_state_bytes(x, r)
    unsharded = _fsdp_kept_under_pp(x) * x["bytes_per_element"] * (dense + routed)
    terms = {
        # (+ torchtitan's FSDP under PP: the stage's gathered 16-bit parameters and their
        # unsharded gradients, beside the sharded states, through the whole step)
        "weights_bytes": state("weight_bytes_per_param", "weight_shards",
                               "expert_weight_shards") + frozen + unsharded,
        "grads_bytes": state("grad_bytes_per_param", "grad_shards", "expert_grad_shards")
        + unsharded,
        "optimizer_state_bytes": state("optimizer_bytes_per_param", "optimizer_shards",
                                       "expert_optimizer_shards"),
        # (an offloaded layer input is in host memory but for the two layers in transit;
        # + one layer's chunk states)
        "activation_bytes": (inflight_layers * stored_layer
                             - memory.offloaded_layer_input_bytes(
                                 inflight_layers, minimum(_offloaded_bytes(x), stored_layer))
                             + (x["full_recompute"] + named) * layer_act
                             + _chunk_state_bytes(x, s, b, tp)
                             + _output_layer_bytes(x, s, b, h, tp)
                             + mtp_act),
        "reserve_bytes": x["memory_reserve_bytes"],
    }
    return {**terms, "memory_per_gpu_bytes": (
        terms["weights_bytes"] + terms["grads_bytes"] + terms["optimizer_state_bytes"]
        + terms["activation_bytes"] + terms["reserve_bytes"])}


def failure_domains(x: dict, r: dict) -> dict:
    """System MTBF, share of swaps and restart cost from the failure domains and spares."""
    nodes = r["nodes"]
    # GPU, node and network faults take one node out, a rack failure its rack_nodes, a
    # software fault none (restart in place); formulas.reliability
    single_rate = (failures.domain_failure_rate(x["gpus"], x["gpu_mtbf_s"])
                   + failures.domain_failure_rate(nodes, x["node_mtbf_s"])
                   + failures.domain_failure_rate(nodes, x["network_mtbf_s"]))
    rack_rate = failures.domain_failure_rate(nodes / x["rack_nodes"], x["rack_mtbf_s"])
    # job-wide software faults: per job, plus inter-node faults growing with the nodes
    software_rate = failures.software_failure_rate(nodes, x["software_mtbf_s"],
                                                   x["software_internode_mtbf_s"],
                                                   x["software_node_exponent"])
    mtbf = 1 / (single_rate + rack_rate + software_rate)
    in_repair = (failures.nodes_in_repair(single_rate, x["node_repair_s"]),
                 failures.nodes_in_repair(rack_rate, x["node_repair_s"]))
    swap_fraction = mtbf * (
        single_rate * failures.pool_swap_probability(x["spare_nodes"], 1, *in_repair,
                                                     x["rack_nodes"])
        + rack_rate * failures.pool_swap_probability(x["spare_nodes"], x["rack_nodes"],
                                                     *in_repair, x["rack_nodes"])
        + software_rate)
    # automatic restarts: a swap or a re-queue; a share of failures needs a person instead
    # (manual intervention, detected the same way)
    automatic_s = failures.effective_restart_cost(
        mtbf, x["failure_detection_s"], x["restart_overhead_s"], x["requeue_restart_s"],
        swap_fraction)
    return {"system_mtbf_s": mtbf, "swap_fraction": swap_fraction,
            "spare_nodes": x["spare_nodes"],
            "failure_restart_s": failures.manual_restart_cost(
                mtbf, automatic_s, x["failure_detection_s"] + x["manual_restart_s"],
                x["manual_restart_fraction"])}


def _tokens_needed(x: dict, r: dict):
    """Tokens the run needs with its batch: ``tokens`` with the reference batch, more with a
    larger batch beyond the critical batch ``critical_batch_tokens`` (McCandlish et al.
    2018, E = E_min (1 + B / B_noise); formulas.batch).  Equal batches need exactly
    ``tokens``."""
    return batch.tokens_at_batch(x["tokens"], x["reference_batch"] * x["seq_len"],
                                 x["global_batch"] * x["seq_len"], x["critical_batch_tokens"])


def critical_batch_tokens(x: dict):
    """Kaplan et al.'s critical batch [tokens] of the model described by ``x`` (its model
    inputs) trained on ``tokens``: B_crit at the loss L(N, D) of the non-embedding
    parameters a token uses (formulas.batch)."""
    non_embedding = param_counts(x)["active_params"] - compute.embedding_params(
        x["vocab"], x["hidden"], x["embedding_matrices"])
    return batch.kaplan_critical_batch_tokens(batch.kaplan_loss(non_embedding, x["tokens"]))


def reliability(x: dict, r: dict) -> dict:
    """Failures, checkpoints and restarts: the wall time of the whole run (Daly)."""
    nodes, mtbf, failure_restart_s = r["nodes"], r["system_mtbf_s"], r["failure_restart_s"]
    # (a frozen base is not checkpointed: the adapters and their optimizer state are)
    size = checkpoint.checkpoint_size(r["trainable_params"], x["checkpoint_bytes_per_param"])
    shard = size / x["gpus"]
    write_s = checkpoint.checkpoint_write_time(size, checkpoint.storage_bandwidth(
        nodes, x["storage_write_bytes_per_s_per_node"], x["storage_write_cap_bytes_per_s"]))
    read_s = checkpoint.checkpoint_write_time(size, checkpoint.storage_bandwidth(
        nodes, x["storage_read_bytes_per_s_per_node"], x["storage_read_cap_bytes_per_s"]))
    host_s = checkpoint.checkpoint_write_time(shard, x["host_copy_bytes_per_s_per_gpu"])
    peer_s = checkpoint.checkpoint_write_time(shard, x["scale_out_bandwidth_bytes_per_s"])
    # GoCkpt: the shard moves over k steps with the gradients of the parts already on
    # the host, overlapped with each step's forward and backward (not its optimizer)
    step_s, gockpt, host_bw = r["step_time_s"], x["ckpt_gockpt"], \
        x["host_copy_bytes_per_s_per_gpu"]
    grad_shard = x["grad_bytes_per_param"] * r["trainable_params"] / x["gpus"]
    window_s = step_s - r["optimizer_s"]
    # the fewest steps that hide the copy (at most the stack's limit); the stall is the one
    # at the limit: zero wherever fewer steps hide it, and the limit's where none do
    k = 1 + gockpt * (checkpoint.gockpt_steps(shard, grad_shard, host_bw, window_s,
                                              x["gockpt_steps"]) - 1)
    stall = checkpoint.checkpoint_stall_time(write_s, host_s, peer_s, x["ckpt_sync"],
                                             x["ckpt_async"], x["ckpt_in_memory"]) \
        + gockpt * checkpoint.gockpt_stall(shard, grad_shard, x["gockpt_steps"], host_bw,
                                           window_s)
    restart = checkpoint.checkpoint_restart_time(failure_restart_s, read_s, peer_s,
                                                 x["ckpt_in_memory"])
    # the next checkpoint starts once this one is done: its stall (a synchronous write to
    # storage, a host or peer copy) and then an async write draining to storage, or a GoCkpt
    # checkpoint moving and persisting; checkpoints are at least one step apart
    interval = checkpoint.drained_checkpoint_interval(
        checkpoint.chosen_checkpoint_interval(checkpoint.daly_interval(stall, mtbf),
                                              x["checkpoint_interval_fixed_s"]),
        stall + x["ckpt_async"] * write_s
        + gockpt * checkpoint.gockpt_min_interval(k, step_s, write_s), 1, step_s)
    commit_s = checkpoint.checkpoint_commit_latency(write_s, step_s, x["ckpt_async"], gockpt)
    steps = _tokens_needed(x, r) / (x["global_batch"] * x["seq_len"] * x["token_efficiency"])
    solve = steps * step_s
    running = checkpoint.daly_wall_time_committed(solve, interval, stall, restart, mtbf,
                                                  commit_s)
    return {
        "checkpoint_bytes": size, "checkpoint_stall_s": stall,
        "young_interval_s": checkpoint.young_interval(stall, mtbf),
        "checkpoint_interval_s": interval, "checkpoint_steps": k,
        "commit_latency_s": commit_s, "restart_s": restart, "steps": steps,
        "solve_time_s": solve, "failure_wall_s": running,
        # stepping, including work lost to failures (the rest is stalls and restarts);
        # a commit latency multiplies every segment's attempts by e^{L_c/M}
        "failure_stepping_s": checkpoint.daly_compute_time(solve, interval, stall, mtbf)
        * exp(commit_s / mtbf),
    }


def run_overheads(x: dict, r: dict) -> dict:
    """Beyond steps, checkpoints and failures (formulas.overhead): evaluations pause the
    run, loss spikes roll it back (steps redone, a restart), maintenance takes the cluster."""
    solve, steps, step_s = r["solve_time_s"], r["steps"], r["step_time_s"]
    eval_s = overhead.evaluation_time(solve, x["eval_fraction"])
    rollbacks = overhead.expected_loss_spikes(steps, x["loss_spike_probability"])
    rollback_s = rollbacks * overhead.rollback_cost(x["rollback_steps"], step_s, r["restart_s"])
    running = r["failure_wall_s"] + eval_s + rollback_s
    maintenance_s = overhead.maintenance_time(running, x["maintenance_fraction"])
    wall = running + maintenance_s
    return {
        "eval_time_s": eval_s, "rollbacks": rollbacks, "rollback_time_s": rollback_s,
        "maintenance_time_s": maintenance_s, "wall_time_s": wall,
        "expected_failures": checkpoint.expected_failures(r["failure_wall_s"], r["system_mtbf_s"]),
        "waste_fraction": 1 - solve / wall, "ettr": solve / wall,
        # evaluations and redone steps run the GPUs like training steps
        "stepping_s": r["failure_stepping_s"] + eval_s
        + rollbacks * x["rollback_steps"] * step_s,
    }


def energy_use(x: dict, r: dict) -> dict:
    """Energy of GPUs, IT and facility; average and peak facility power."""
    gpus, wall, stepping, step = x["gpus"], r["wall_time_s"], r["stepping_s"], r["step_time_s"]
    # while stepping: compute and exposed communication at their power levels, launch gaps,
    # bubbles and stragglers at idle; checkpoint stalls and restarts at idle
    comm_s = r["tp_comm_s"] + r["cp_comm_s"] + r["ep_comm_s"] + r["pp_comm_s"] + r["dp_comm_s"]
    busy_w = energy.phase_gpu_power(x["idle_power_w"], x["max_power_w"], r["compute_s"] / step,
                                    x["compute_power_fraction"], comm_s / step,
                                    x["comm_power_fraction"])
    gpu_j = gpus * (energy.energy(busy_w, stepping)
                    + energy.energy(x["idle_power_w"], wall - stepping))
    rest_w = energy.non_gpu_it_power(r["nodes"], x["node_overhead_power_w"],
                                     x["network_power_per_node_w"])
    # hot spares idle for the whole run
    spare_w = x["spare_nodes"] * (x["gpus_per_node"] * x["idle_power_w"]
                                  + x["node_overhead_power_w"] + x["network_power_per_node_w"])
    it_j = gpu_j + energy.energy(rest_w + spare_w, wall)
    facility_j = energy.energy(energy.facility_power(it_j / wall, x["pue"]), wall)
    # what fault tolerance costs: beyond the failure- and checkpoint-free run (stalls, lost
    # work, restarts, commit waits and idle hot spares)
    ideal_j = energy.energy(energy.facility_power(gpus * busy_w + rest_w, x["pue"]),
                            r["solve_time_s"])
    # the run overheads (evaluations, rollbacks, maintenance) are not fault tolerance
    overhead_busy_s = r["eval_time_s"] + r["rollbacks"] * x["rollback_steps"] * step
    overhead_j = energy.energy(energy.facility_power(gpus * busy_w + rest_w, x["pue"]),
                               overhead_busy_s) \
        + energy.energy(energy.facility_power(gpus * x["idle_power_w"] + rest_w, x["pue"]),
                        wall - r["failure_wall_s"] - overhead_busy_s)
    return {
        "energy_gpu_j": gpu_j, "energy_it_j": it_j, "energy_facility_j": facility_j,
        "energy_fault_tolerance_j": facility_j - ideal_j - overhead_j,
        "gpu_step_power_w": busy_w, "gpu_power_w": gpu_j / (gpus * wall),
        "avg_power_w": facility_j / wall,
        "peak_power_w": energy.facility_power(gpus * x["max_power_w"] + rest_w + spare_w,
                                              x["pue"]),
    }


def cost_and_carbon(x: dict, r: dict) -> dict:
    """GPU-hours, cloud or TCO cost, operational and embodied carbon.

    TCO is the cost of the job on an owned cluster (planner.engine.economics.ownership): each GPU's
    fixed cost per hour (capital less its resale value over its life, opex, the facility
    rent of its share of the peak IT power) over the cluster's utilisation, plus the job's
    electricity.
    """
    # the job's GPUs and its hot spares' are billed, bought and built
    gpus, wall = x["gpus"] + x["spare_nodes"] * x["gpus_per_node"], r["wall_time_s"]
    # a reserved tier bills its whole committed term, less the unused share resold
    cloud = cost.cloud_cost(gpus, cost.committed_time(wall, x["commitment_term_s"],
                                                      x["commitment_reuse_fraction"]),
                            x["price_usd_per_gpu_hour"])
    facility = cost.facility_usd_per_hour(x["facility_usd_per_kw_month"],
                                          r["peak_power_w"] / x["pue"] / gpus)
    fixed = cost.ownership_usd_per_hour(x["capex_usd_per_gpu"], x["residual_value_fraction"],
                                        x["lifetime_s"], x["opex_fraction_per_year"], facility)
    tco = cost.owned_job_cost(gpus, wall, fixed, x["utilisation"], r["energy_facility_j"],
                              x["electricity_usd_per_kwh"])
    operational = carbon.operational_co2e(r["energy_facility_j"], x["grid_intensity_g_per_kwh"])
    embodied = carbon.embodied_co2e(gpus, x["embodied_kg_per_gpu"], wall, x["lifetime_s"])
    return {
        "gpu_hours": cost.gpu_hours(gpus, wall),
        "cost_cloud_usd": cloud, "cost_tco_usd": tco,
        "cost_usd": x["use_tco"] * tco + (1 - x["use_tco"]) * cloud,
        "co2e_operational_kg": operational, "co2e_embodied_kg": embodied,
        "co2e_kg": operational + embodied,
        "cci_kg_per_flop": carbon.compute_carbon_intensity(
            operational + embodied, r["model_flops_per_token"] * x["tokens"]),
        "tcdp_kg_s": carbon.carbon_delay_product(operational + embodied, wall),
    }


#: The run model, in order: each stage sees the inputs and everything before it.
STAGES = (layout, parameters, flops, attention_times, mlp_times, adapter_times, cast_times,
          compute_time,
          microbatch_communication, iteration_communication, step_time, throughput,
          memory_per_gpu, failure_domains, reliability, run_overheads, energy_use,
          cost_and_carbon)


# ---- the outputs -----------------------------------------------------------------------

#: The run model's output columns, in the kernel's output order: name, unit, group, label
#: and where each is shown (:class:`planner.engine.run.column.Column`).  A new output is one row
#: here and the line of the stage that computes it, then ``python -m planner.codegen``; the
#: registry :data:`planner.engine.run.columns.COLUMNS` reads this table.
OUTPUT_COLUMNS: tuple[Column, ...] = (
    Column("step_time_s", "s", "step time", "step time", **EPF),
    step_part("compute_s", "compute", 0),
    step_part("launch_s", "host-bound launches", 12),
    step_part("tp_comm_s", "TP communication", 2),
    step_part("cp_comm_s", "CP communication", 4),
    step_part("ep_comm_s", "EP all-to-all", 8),
    step_part("pp_comm_s", "pipeline transfers", 10),
    step_part("dp_comm_s", "DP gradient sync", 18),
    step_part("bubble_s", "pipeline bubble", 14),
    step_part("optimizer_s", "optimizer step", 16),
    step_part("straggler_s", "stragglers", 6),
    memory_part("weights_bytes", "weights"),
    memory_part("grads_bytes", "gradients"),
    memory_part("optimizer_state_bytes", "optimizer states"),
    memory_part("activation_bytes", "activations"),
    memory_part("reserve_bytes", "reserved (CUDA context, NCCL, allocator)"),
    Column("memory_per_gpu_bytes", "B", "memory", "memory per GPU (fullest stage)", **EPF),
    Column("params", "1", "model", "parameters", **E),
    Column("active_params", "1", "model", "parameters active per token", **E),
    Column("trainable_params", "1", "model",
           "parameters trained (all; LoRA/QLoRA: the adapters)", **E),
    Column("tokens_per_s", "1/s", "throughput", "tokens per second", **EF),
    Column("model_flops_per_token", "FLOP", "model", "model FLOPs per token"),
    Column("tflops_per_gpu", "TFLOP/s", "throughput", "model TFLOP/s per GPU", **EF),
    Column("mfu", "1", "throughput", "model FLOPs utilisation (MFU)", **EPF),
    Column("hfu", "1", "throughput", "hardware FLOPs utilisation, recompute included", **EF),
    Column("steps", "1", "throughput", "optimizer steps (tokens / tokens per step)", **EF),
    Column("system_mtbf_s", "s", "reliability", "system MTBF (GPUs and nodes)", **EF),
    Column("checkpoint_bytes", "B", "reliability", "checkpoint size", **EF),
    Column("checkpoint_stall_s", "s", "reliability", "training blocked per checkpoint", **EF),
    Column("young_interval_s", "s", "reliability", "Young's checkpoint interval", **EF),
    Column("checkpoint_interval_s", "s", "reliability",
           "checkpoint interval (Daly or --checkpoint-interval; an asynchronous write drains "
           "first)", **EF),
    Column("checkpoint_steps", "1", "reliability",
           "steps one checkpoint is spread over (GoCkpt; 1 for the other schemes)", **EF),
    Column("commit_latency_s", "s", "reliability",
           "from a checkpoint's capture until it protects the run (persisted, consistent)",
           **EF),
    Column("restart_s", "s", "reliability", "restart after a failure (re-queue, load)", **EF),
    Column("solve_time_s", "s", "time", "failure-free run time (steps x step time)", **EF),
    Column("wall_time_s", "s", "time", "wall time (with checkpoints, failures and overheads)",
           **EF),
    Column("eval_time_s", "s", "time", "evaluation pauses (eval fraction x run time)", **EF),
    Column("rollbacks", "1", "reliability", "expected loss-spike rollbacks", **EF),
    Column("rollback_time_s", "s", "time",
           "loss-spike rollbacks (steps redone and restarts)", **EF),
    Column("maintenance_time_s", "s", "time", "planned maintenance downtime in the run", **EF),
    Column("expected_failures", "1", "reliability", "expected failures", **EPF),
    Column("waste_fraction", "1", "reliability", "wasted fraction of wall time", **EF),
    Column("ettr", "1", "reliability", "effective training time ratio", **EPF),
    Column("spare_nodes", "1", "reliability", "hot-spare nodes (idle, billed)", **EPF),
    Column("swap_fraction", "1", "reliability",
           "share of failures restarted on hot spares (no re-queue)", **EF),
    Column("gpu_hours", "h", "time", "GPU-hours ((GPUs + spare GPUs) x wall time)", **EF),
    Column("energy_gpu_j", "J", "energy", "GPU energy"),
    Column("energy_it_j", "J", "energy", "IT energy (GPUs, rest of nodes, network)"),
    Column("energy_facility_j", "J", "energy", "facility energy (IT energy x PUE)"),
    Column("energy_fault_tolerance_j", "J", "energy",
           "facility energy beyond a failure- and checkpoint-free run (stalls, lost work, "
           "restarts, idle hot spares; not the run overheads)", **EF),
    Column("gpu_step_power_w", "W", "energy",
           "GPU power while stepping (compute, exposed communication, idle gaps)", **EF),
    Column("gpu_power_w", "W", "energy",
           "GPU power over the whole run (stalls and restarts at idle)", **EF),
    Column("avg_power_w", "W", "energy", "average facility power"),
    Column("peak_power_w", "W", "energy", "peak facility power (every GPU at max power)"),
    Column("cost_cloud_usd", "USD", "cost", "cost at the cloud price per GPU-hour", **EF),
    Column("cost_tco_usd", "USD", "cost", "cost by TCO (capex share, energy, opex)", **EF),
    Column("cost_usd", "USD", "cost", "cost on the chosen basis (cloud or TCO)", **EPF),
    Column("co2e_operational_kg", "kgCO2e", "carbon",
           "operational CO2e (facility energy x grid intensity)", **EF),
    Column("co2e_embodied_kg", "kgCO2e", "carbon",
           "embodied CO2e (the run's share of the hardware's lifetime)", **EF),
    Column("co2e_kg", "kgCO2e", "carbon", "CO2e (operational + embodied)", **EF),
    Column("cci_kg_per_flop", "kgCO2e/FLOP", "carbon",
           "compute carbon intensity (CO2e per model FLOP, arXiv:2502.01671)"),
    Column("tcdp_kg_s", "kgCO2e s", "carbon", "total carbon-delay product (CO2e x wall time)"),
)

#: Outputs: name -> unit, in the kernel's output order.
OUTPUTS: dict[str, str] = {c.name: c.unit for c in OUTPUT_COLUMNS}


def run_stages(x: dict) -> dict:
    """Every named quantity of every stage (outputs and intermediates)."""
    if not is_symbolic(x.get("spare_nodes", 0.0)):  # numbers: --spares auto is resolved
        x = resolve_spares(x)
    results: dict = {}
    for stage in STAGES:
        results.update(stage(x, results))
    return results


def run_model(x: dict) -> dict:
    """Evaluate the model of a training run; see the module docstring."""
    results = run_stages(x)
    return {name: results[name] for name in OUTPUTS}
