"""Memory per GPU: model states (ZeRO sharding) and activations.

Activations follow Korthikanti et al. (2022): 16-bit activations, 1-byte
dropout masks, tensor parallelism t, optional sequence parallelism (sp) and
selective recomputation (or flash attention), which drops the attention
score matrices.  Sizes are per micro-batch of b sequences of s tokens.  Flags
(sp, stored, recompute) are 0/1 numbers so that one expression covers all
layouts.

References
----------
.. [Korthikanti2022] V. Korthikanti et al., "Reducing Activation
   Recomputation in Large Transformer Models", MLSys 2023, arXiv:2205.05198.
.. [Rajbhandari2020] S. Rajbhandari et al., "ZeRO: Memory Optimizations
   Toward Training Trillion Parameter Models", SC'20, arXiv:1910.02054.
.. [Narayanan2021] D. Narayanan et al., "Efficient Large-Scale Language
   Model Training on GPU Clusters Using Megatron-LM", SC'21, arXiv:2104.04473.
"""

from __future__ import annotations

from .core import formula
from .ops import floor, maximum, minimum, where

KORTHIKANTI = "Korthikanti et al. 2022, arXiv:2205.05198"
ZERO = "Rajbhandari et al. 2020 (ZeRO), arXiv:1910.02054"

_SYM = {
    "params": r"\Psi", "bytes_per_param": "K", "shards": "n", "dp": "N_d",
    "zero_stage": "z", "weight_bytes_per_param": "K_w", "grad_bytes_per_param": "K_g",
    "optimizer_bytes_per_param": "K_o", "seq_len": "s", "micro_batch": "b",
    "hidden": "h", "heads": "a", "kv_heads": "a_{kv}", "ffn": "f", "mlp_matrices": "n_m",
    "tp": "t", "sequence_parallel": r"\sigma", "selective_recompute": r"\rho",
    "attention_scores_stored": r"\chi", "dropout_masks": r"\delta", "vocab": "V", "pp": "p",
    "microbatches": "m",
    "virtual_stages": "v", "layers": "L", "stage_layers": "l_s",
}


# -- model states ----------------------------------------------------------------

@formula(reference=ZERO + ", s5 (each state partitioned over its shards)",
         domain={"params": ">=0", "bytes_per_param": ">=0", "shards": ">=1"},
         symbols=_SYM, result_latex="M")
def sharded_state_bytes(params, bytes_per_param, shards):
    """Bytes per GPU of a per-parameter state split evenly over ``shards`` GPUs.

    The planner computes the shard count outside (e.g. TP x PP for weights,
    x DP when ZeRO/FSDP shards that state).

    Parameters
    ----------
    params : numeric
        Parameters Psi [1].
    bytes_per_param : numeric
        Bytes of this state per parameter K [B].
    shards : numeric
        GPUs the state is split over n [1].

    Returns
    -------
    numeric
        Bytes per GPU [B].

    .. math:: M = \\Psi K / n
    """
    return params * bytes_per_param / shards


@formula(reference=ZERO + ", Fig. 1 and s5.1-5.3 (P_os, P_os+g, P_os+g+p)",
         domain={"params": ">=0", "dp": ">=1", "zero_stage": ">=0",
                 "weight_bytes_per_param": ">=0", "grad_bytes_per_param": ">=0",
                 "optimizer_bytes_per_param": ">=0"},
         symbols=_SYM, result_latex="M_{states}")
def zero_state_bytes(params, dp, zero_stage, weight_bytes_per_param=2.0,
                     grad_bytes_per_param=2.0, optimizer_bytes_per_param=12.0):
    """Model-state bytes per GPU (weights, gradients, optimizer) under ZeRO stage 0-3.

    Stage >= 1 shards the optimizer states over the dp data-parallel ranks,
    stage >= 2 also the gradients, stage 3 (FSDP) also the weights.  A display
    formula (Piecewise); hot paths use :func:`sharded_state_bytes`.  The
    defaults are mixed-precision Adam (2 + 2 + 12 bytes per parameter).

    Parameters
    ----------
    params : numeric
        Parameters held by this model-parallel rank Psi [1].
    dp : numeric
        Data-parallel degree N_d [1].
    zero_stage : numeric
        ZeRO stage 0, 1, 2 or 3 [1].
    weight_bytes_per_param : numeric
        Bytes of weights per parameter [B].
    grad_bytes_per_param : numeric
        Bytes of gradients per parameter [B].
    optimizer_bytes_per_param : numeric
        Bytes of optimizer states (incl. fp32 master weights) per parameter [B].

    Returns
    -------
    numeric
        Bytes per GPU [B].

    .. math:: M = \\Psi\\left(\\frac{K_w}{n_w} + \\frac{K_g}{n_g} + \\frac{K_o}{n_o}\\right),
        \\; n_w = N_d^{[z\\ge3]}, n_g = N_d^{[z\\ge2]}, n_o = N_d^{[z\\ge1]}
    """
    return params * (weight_bytes_per_param / where(zero_stage >= 3, dp, 1)
                     + grad_bytes_per_param / where(zero_stage >= 2, dp, 1)
                     + optimizer_bytes_per_param / where(zero_stage >= 1, dp, 1))


# -- activations -----------------------------------------------------------------

@formula(reference=KORTHIKANTI + ", Table 2 (s4.2.2, s5)",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "heads": ">=1",
                 "tp": ">=1", "sequence_parallel": "[0,1]", "selective_recompute": "[0,1]"},
         symbols=_SYM, result_latex="A_{layer}")
def korthikanti_activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, tp,
                                           sequence_parallel, selective_recompute):
    """Activation bytes per GPU of one GPT layer for one micro-batch (Korthikanti Table 2).

    16-bit activations, 1-byte dropout masks, MLP width 4h.  Sequence
    parallelism splits the 10sbh that tensor parallelism replicates;
    selective recomputation (or flash attention) drops the 5as^2b of
    attention scores, softmax output and dropout mask.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Attention heads a [1].
    tp : numeric
        Tensor-parallel degree t [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].
    selective_recompute : numeric
        1 with selective recomputation or flash attention, 0 otherwise [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    .. math:: A = s b h \\left(10(1-\\sigma) + \\frac{24 + 10\\sigma}{t}
        + \\frac{5 a s}{h t}(1-\\rho)\\right)
    """
    return seq_len * micro_batch * hidden * (
        10 * (1 - sequence_parallel) + (24 + 10 * sequence_parallel) / tp
        + 5 * heads * seq_len / (hidden * tp) * (1 - selective_recompute))


@formula(reference=KORTHIKANTI + ", s4.1 term by term (attention 11sbh + 5as^2b, MLP 19sbh, "
         "norms 4sbh), generalised to f, GQA and gated MLPs; reduces to Table 2",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "ffn": ">0",
                 "heads": ">=1", "kv_heads": ">=1", "mlp_matrices": ">=1", "tp": ">=1",
                 "sequence_parallel": "[0,1]", "attention_scores_stored": "[0,1]",
                 "dropout_masks": "[0,1]"},
         symbols=_SYM, result_latex="A_{layer}")
def activation_bytes_per_layer(seq_len, micro_batch, hidden, ffn, heads, kv_heads,
                               mlp_matrices, tp, sequence_parallel, attention_scores_stored,
                               dropout_masks):
    """Activation bytes per GPU of one transformer layer for one micro-batch.

    Korthikanti's s4.1 accounting (16-bit tensors, 1-byte dropout masks),
    term by term, with g = kv/a:

    * replicated under TP (split by sequence parallelism), (8 + 2δ)sbh: the
      two norm inputs 4sbh, the QKV input 2sbh, the MLP input 2sbh and, when
      the model trains with dropout (δ = 1), the two residual dropout masks 2sbh;
    * split by TP: Q 2sbh, K and V 2sbh g each, the output-projection input
      2sbh, the MLP's n_m tensors of width f (GELU: activation input and
      second-matmul input; gated: gate and up outputs and the down-projection
      input) 2 n_m sbf, and, when stored, the attention scores and softmax
      output 4as^2b plus their dropout mask δas^2b.

    With f = 4h, g = 1, n_m = 2 and δ = 1 this is exactly
    :func:`korthikanti_activation_bytes_per_layer`.  Models trained without
    dropout (Llama, MPT, OLMo: δ = 0) store no masks.  Flash attention's
    softmax statistics (4asb bytes) are neglected.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    ffn : numeric
        MLP intermediate width f [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads [1].
    mlp_matrices : numeric
        MLP weight matrices: 2 (GELU) or 3 (SwiGLU/GeGLU) [1].
    tp : numeric
        Tensor-parallel degree t [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].
    attention_scores_stored : numeric
        1 if the s x s attention scores are kept, 0 with flash attention or
        selective recomputation [1].
    dropout_masks : numeric
        1 if the model trains with dropout (1-byte masks stored), 0 without [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    .. math:: A = (8 + 2\\delta) s b h\\left(1 - \\sigma + \\frac{\\sigma}{t}\\right)
        + \\frac{s b h (4 + 4 a_{kv}/a) + 2 n_m s b f + (4 + \\delta) a s^2 b \\chi}{t}
    """
    sbh = seq_len * micro_batch * hidden
    replicated = (8 + 2 * dropout_masks) * sbh
    split = sbh * (2 + 4 * kv_heads / heads) + 2 * sbh \
        + 2 * mlp_matrices * seq_len * micro_batch * ffn \
        + (4 + dropout_masks) * heads * seq_len**2 * micro_batch * attention_scores_stored
    return replicated * (1 - sequence_parallel + sequence_parallel / tp) + split / tp


TORCHTITAN_OP_SAC = (
    "torchtitan's op-level selective activation checkpointing, selective_ac_option = 'op' "
    "(pytorch/torchtitan, torchtitan/models/llama3/infra/parallelize.py 2025 and "
    "torchtitan/distributed/activation_checkpoint.py until 2026: _save_list = aten.mm, the "
    "SDPA flash/efficient/cuDNN kernels, c10d reduce_scatter_tensor, abs/max; 'Saves output "
    "of all compute ops, except every second mm', the count restarting in every block); "
    "PyTorch torch.utils.checkpoint.create_selective_checkpoint_contexts")


@formula(reference=TORCHTITAN_OP_SAC,
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "ffn": ">=0",
                 "heads": ">=1", "kv_heads": ">=1", "head_dim": ">0", "v_head_dim": ">0",
                 "mlp_matrices": ">=1", "tp": ">=1", "sequence_parallel": "[0,1]"},
         symbols={**_SYM, "head_dim": "d_h", "v_head_dim": "d_v"}, result_latex="A_{op}")
def op_sac_activation_bytes_per_layer(seq_len, micro_batch, hidden, ffn, heads, kv_heads,
                                      head_dim, v_head_dim, mlp_matrices, tp,
                                      sequence_parallel):
    """Activation bytes per GPU one dense layer keeps under op-level selective checkpointing.

    The policy keeps the output of every matmul but every second one (counted from 1 in
    each block, in the order Q, K, V, O, then gate, up, down, or up, down without a gate),
    the attention kernel's output and the TP reduce-scatters' outputs, and recomputes the
    rest (norms, RoPE, activation function, the skipped matmuls) in the backward pass.
    Kept, 16-bit: the block input (split by sequence parallelism), Q and V (``a d_h / t``,
    ``a_kv d_v / t``), the attention output ``a d_v / t``, the first MLP matmul's output
    ``f / t``, with a gate also the down projection's output (``h``, a partial sum before
    its reduce-scatter) and, under TP with sequence parallelism, the two reduce-scattered
    outputs ``2 h / t``.  The attention's softmax statistics (4 bytes a head and token)
    are neglected as in :func:`activation_bytes_per_layer`.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    ffn : numeric
        MLP intermediate width f [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads a_kv [1].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    mlp_matrices : numeric
        MLP weight matrices: 2 (GELU) or 3 (SwiGLU/GeGLU) [1].
    tp : numeric
        Tensor-parallel degree t [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    >>> # Llama 3 8B, micro-batch 2 of 8,192 tokens, no TP: 2 s b (4h + a_kv d + f)
    >>> float(op_sac_activation_bytes_per_layer(8192, 2, 4096, 14336, 32, 8, 128, 128, 3,
    ...                                         1, 0)) / 2**30
    0.96875

    .. math:: A_{op} = 2 s b \\left[h\\left(1 - \\sigma + \\frac{\\sigma}{t}\\right)
        + \\frac{a d_h + a_{kv} d_v + a d_v + f}{t} + (n_m - 2) h
        + \\frac{2 \\sigma h}{t}\\min(t - 1, 1)\\right]
    """
    sb = seq_len * micro_batch
    block_input = hidden * (1 - sequence_parallel + sequence_parallel / tp)
    kept = (heads * head_dim + kv_heads * v_head_dim + heads * v_head_dim + ffn) / tp
    down_output = (mlp_matrices - 2) * hidden
    scattered = 2 * sequence_parallel * hidden / tp * minimum(tp - 1, 1)
    return 2 * sb * (block_input + kept + down_output + scattered)


@formula(reference=KORTHIKANTI + ", s5 (full recomputation keeps 2sbh per layer, or "
         "2sbh/t if split over the TP ranks)",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "tp": ">=1",
                 "sequence_parallel": "[0,1]"},
         symbols=_SYM, result_latex="A_{full}")
def full_recompute_activation_bytes_per_layer(seq_len, micro_batch, hidden, tp,
                                              sequence_parallel):
    """Activation bytes per GPU kept per layer under full recomputation (the layer input).

    With sequence parallelism the 16-bit layer input is split over the t
    ranks; without it every rank keeps all of it.  The one layer being
    recomputed at a time needs a further :func:`activation_bytes_per_layer`.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    tp : numeric
        Tensor-parallel degree t [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    .. math:: A = \\frac{2 s b h}{1 + \\sigma (t - 1)}
    """
    return 2 * seq_len * micro_batch * hidden / (1 + sequence_parallel * (tp - 1))


#: Offloaded layer inputs still in device memory: the one being copied out or in and the
#: one the compute reads (double buffering of the copy stream).
OFFLOAD_LAYERS_IN_TRANSIT = 2


@formula(reference="Rajbhandari et al. 2021 (ZeRO-Infinity), arXiv:2104.07857 s5.1 (activation "
         "checkpoints offloaded to CPU memory); Megatron-Core/Transformer Engine CPU offloading "
         "(NVIDIA/TransformerEngine transformer_engine/pytorch/cpu_offload.py: double-buffered "
         "copies)",
         domain={"inflight_layers": ">=0", "layer_input_bytes": ">=0"},
         symbols={"inflight_layers": "n_l", "layer_input_bytes": "A_{in}"},
         result_latex="A_{off}")
def offloaded_layer_input_bytes(inflight_layers, layer_input_bytes):
    """Device memory that activation offloading frees: the inputs of the layers in flight
    but the two in transit live in host memory.

    Parameters
    ----------
    inflight_layers : numeric
        Layer-micro-batches whose activations a rank holds at its peak n_l [1].
    layer_input_bytes : numeric
        Bytes of one layer's input for one micro-batch on the rank A_in [B].

    Returns
    -------
    numeric
        Bytes moved from device to host memory at the peak [B].

    Examples
    --------
    >>> offloaded_layer_input_bytes(126, 1e9)
    124000000000.0
    >>> offloaded_layer_input_bytes(1, 1e9)
    0.0

    .. math:: A_{off} = \\max(n_l - 2, 0)\\, A_{in}
    """
    return where(inflight_layers > OFFLOAD_LAYERS_IN_TRANSIT,
                 inflight_layers - OFFLOAD_LAYERS_IN_TRANSIT, 0.0) * layer_input_bytes


@formula(reference=KORTHIKANTI + ", s4.3 (final norm 2sbh/t, output projection input 2sbh/t, "
         "fp32 logits 4sbV/t)",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "vocab": ">0",
                 "tp": ">=1"},
         symbols=_SYM, result_latex="A_{out}")
def output_layer_activation_bytes(seq_len, micro_batch, hidden, vocab, tp):
    """Activation bytes per GPU of the final norm, output projection and cross-entropy.

    Held on the last pipeline stage, per micro-batch; assumes sequence
    parallelism for the norm and a vocabulary-parallel output layer.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    vocab : numeric
        Vocabulary size V [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per micro-batch [B].

    .. math:: A_{out} = \\frac{4 s b h}{t}\\left(1 + \\frac{V}{h}\\right)
    """
    return 4 * seq_len * micro_batch * hidden / tp * (1 + vocab / hidden)


@formula(reference="pytorch/torchtitan torchtitan/components/loss.py cross_entropy_loss "
         "(2024-2025): torch.nn.functional.cross_entropy(pred.flatten(0, 1).float(), ...), "
         "the loss not compiled ('compiling loss function causes CUDA errors, turning off "
         "for now', torchtitan train.py 2024-12); PyTorch log_softmax keeps its FP32 output "
         "for backward; " + KORTHIKANTI + ", s4.3 (fused: FP32 logits 4sbV/t)",
         domain={"seq_len": ">0", "micro_batch": ">0", "vocab": ">0", "tp": ">=1",
                 "extra_bytes_per_logit": ">=0"},
         symbols={**_SYM, "extra_bytes_per_logit": "c_{\\ell}"}, result_latex="A_{loss}")
def unfused_loss_logit_bytes(seq_len, micro_batch, vocab, tp, extra_bytes_per_logit):
    """Activation bytes per GPU an unfused cross-entropy loss holds beyond Korthikanti's
    FP32 logits, per micro-batch, at the loss (the activation peak: every layer's tensors
    are still kept).

    A fused vocabulary-parallel cross-entropy (Megatron-Core's) keeps the FP32 logits,
    4sbV/t (:func:`output_layer_activation_bytes`).  PyTorch's unfused loss also holds the
    16-bit logits the output layer wrote (2 bytes) and their FP32 copy (4 bytes) while its
    log-softmax writes the FP32 output it keeps for backward: 6 bytes a logit more.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    vocab : numeric
        Vocabulary size V [1].
    tp : numeric
        Tensor-parallel degree t (a vocabulary-parallel loss) [1].
    extra_bytes_per_logit : numeric
        Bytes a logit held beyond the fused loss's 4 (fused: 0; PyTorch's unfused
        loss: 6) [B].

    Returns
    -------
    numeric
        Bytes per micro-batch [B].

    Examples
    --------
    >>> # Llama 3 8B's 128,256-token vocabulary, 2 x 8,192 tokens, unfused
    >>> round(float(unfused_loss_logit_bytes(8192, 2, 128256, 1, 6)) / 1e9, 2)
    12.61

    .. math:: A_{loss} = \\frac{c_{\\ell} s b V}{t}
    """
    return extra_bytes_per_logit * seq_len * micro_batch * vocab / tp


@formula(reference=KORTHIKANTI + ", s4.3 (input-embedding dropout mask sbh/t per micro-batch)",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "tp": ">=1"},
         symbols=_SYM, result_latex="A_{emb}")
def input_embedding_activation_bytes(seq_len, micro_batch, hidden, tp):
    """Activation bytes per GPU of the input-embedding dropout mask (first stage).

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per micro-batch [B].

    .. math:: A_{emb} = s b h / t
    """
    return seq_len * micro_batch * hidden / tp


@formula(reference="Narayanan et al. 2021, arXiv:2104.04473 s2.2.1 (1F1B: at most p "
         "micro-batches in flight); " + KORTHIKANTI + " s4.2.3",
         domain={"pp": ">=1", "microbatches": ">=1"}, symbols=_SYM, result_latex="n_{inflight}")
def inflight_microbatches_1f1b(pp, microbatches):
    """Micro-batches whose activations the first pipeline stage holds at once under 1F1B.

    Parameters
    ----------
    pp : numeric
        Pipeline-parallel degree p [1].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        Micro-batches in flight [1].

    .. math:: n = \\min(p, m)
    """
    return minimum(pp, microbatches)


@formula(reference=KORTHIKANTI + ", s4.2.3 (interleaved schedule)",
         domain={"pp": ">=1", "virtual_stages": ">=1"}, symbols=_SYM,
         result_latex=r"\gamma")
def interleaved_activation_factor(pp, virtual_stages):
    """Extra activation memory of the first stage under the interleaved 1F1B schedule.

    Multiplies the first stage's activation memory of the non-interleaved
    1F1B schedule (L layers' worth).  With v >= 2 model chunks per GPU the
    first stage holds 2(p-1) + (v-1)p + 1 chunk-micro-batches of L/(pv)
    layers, i.e. 1 + (p-1)/(pv) times more; v = 1 means the plain 1F1B
    schedule, factor 1 (the min(v-1, 1) switch; v is an integer).

    Parameters
    ----------
    pp : numeric
        Pipeline-parallel degree p [1].
    virtual_stages : numeric
        Model chunks per GPU (interleaving stages) v; 1 = not interleaved [1].

    Returns
    -------
    numeric
        Memory factor [1].

    .. math:: \\gamma = 1 + \\frac{p - 1}{p v} \\min(v - 1, 1)
    """
    return 1 + (pp - 1) / (pp * virtual_stages) * minimum(virtual_stages - 1, 1)


@formula(reference=KORTHIKANTI + ", s4.1 (attention: Q, K, V and the output-projection input "
         "stored, 2 bytes per element), with head sizes d_h and d_v set apart from h/a: "
         "Qwen Team 2025, arXiv:2505.09388; multi-head latent attention stores the compressed "
         "latents (inputs of the up-projections): DeepSeek-AI 2024, arXiv:2405.04434 s2.1.2",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "heads": ">=1",
                 "kv_heads": ">=1", "head_dim": ">0", "v_head_dim": ">0",
                 "q_lora_rank": ">=0", "kv_lora_rank": ">=0", "qk_rope_head_dim": ">=0",
                 "tp": ">=1"},
         symbols={**_SYM, "head_dim": "d_h", "v_head_dim": "d_v", "q_lora_rank": "r_q",
                  "kv_lora_rank": "r_{kv}", "qk_rope_head_dim": "d_r"},
         result_latex=r"\Delta A_{attn}")
def attention_shape_activation_bytes(seq_len, micro_batch, hidden, heads, kv_heads, head_dim,
                                     v_head_dim, q_lora_rank, kv_lora_rank, qk_rope_head_dim,
                                     tp):
    """Activation bytes per GPU one layer stores beyond :func:`activation_bytes_per_layer`
    when its heads are not h/a wide, or its attention is MLA.

    :func:`activation_bytes_per_layer` stores Q (2sbh), K and V (2sbh a_kv/a each) and
    the output-projection input (2sbh), i.e. heads of size h/a.  With query/key heads
    of d_h and value heads of d_v these tensors are 2sb a d_h, 2sb a_kv d_h, 2sb a_kv d_v
    and 2sb a d_v, split over t; this is the difference (0 when d_h = d_v = h/a, negative
    when the heads are narrower).  MLA also keeps its compressed query and key/value
    latents (with the RoPE key), r_q + r_kv + d_r wide, replicated on the TP ranks.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per context-parallel rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads [1].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    q_lora_rank : numeric
        MLA query compression rank r_q (0: none) [1].
    kv_lora_rank : numeric
        MLA key/value compression rank r_kv (0: standard attention) [1].
    qk_rope_head_dim : numeric
        MLA decoupled RoPE key size d_r (0 without MLA) [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    Llama 3 70B (d_h = d_v = h/a): nothing beyond the standard count.

    >>> attention_shape_activation_bytes(8192, 1, 8192, 64, 8, 128, 128, 0, 0, 0, 8)
    0.0

    Qwen3-235B-A22B (h = 4096, 64 heads of 128 = 2h wide, 4 KV heads), TP 4:

    >>> attention_shape_activation_bytes(4096, 1, 4096, 64, 4, 128, 128, 0, 0, 0, 4)
    17825792.0

    .. math::
        \\Delta A_{attn} = \\frac{2 s b \\left[(a + a_{kv})(d_h + d_v)
            - 2h (1 + a_{kv}/a)\\right]}{t} + 2 s b (r_q + r_{kv} + d_r)
    """
    sb = seq_len * micro_batch
    heads_wide = (heads + kv_heads) * (head_dim + v_head_dim)
    standard = 2 * hidden * (1 + kv_heads / heads)
    return 2 * sb * (heads_wide - standard) / tp \
        + 2 * sb * (q_lora_rank + kv_lora_rank + qk_rope_head_dim)


MCORE_SCHEDULE = ("Megatron-Core megatron/core/pipeline_parallel/schedules.py "
                  "(NVIDIA/Megatron-LM@d98e8a64dd), get_pp_rank_microbatches: warm-up "
                  "2(p - r - 1) + (v - 1) N forward chunks on rank r (N = "
                  "microbatch_group_size_per_vp_stage, default p), capped at the m v chunks "
                  "of the iteration; max_outstanding_backprops = warm-up + 1")


@formula(reference=MCORE_SCHEDULE + "; " + KORTHIKANTI + " s4.2.3 (1 + (p - 1)/(p v))",
         domain={"pp": ">=1", "virtual_stages": ">=1", "microbatches": ">=1"},
         symbols=_SYM, result_latex="n_{chunks}")
def pipeline_inflight_chunks(pp, virtual_stages, microbatches):
    """Model-chunk micro-batches whose activations the first pipeline rank holds at once.

    Each of the v model chunks of a rank holds 1/v of its layers.  Under
    1F1B (v = 1) the first rank holds min(p, m) micro-batches.  Under the
    interleaved schedule it runs 2(p - 1) + (v - 1)p forward chunks before
    its first backward and holds one more in the steady state: v p + p - 1
    chunks, i.e. Korthikanti's factor 1 + (p - 1)/(p v) of p micro-batches
    of all its layers - unless the iteration has fewer chunks (m v), when
    every chunk of every micro-batch is in flight before the first backward.
    With m = p (Llama 3 405B at 16,384 GPUs: 16 micro-batches on PP 16) the
    interleaved schedule therefore holds no more than 1F1B.

    Parameters
    ----------
    pp : numeric
        Pipeline-parallel degree p [1].
    virtual_stages : numeric
        Model chunks per rank v (1: not interleaved) [1].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        Chunk micro-batches in flight on the first rank [1].

    Examples
    --------
    >>> float(pipeline_inflight_chunks(16, 1, 64))  # 1F1B: p micro-batches
    16.0
    >>> float(pipeline_inflight_chunks(16, 8, 64))  # interleaved: 2(p-1) + (v-1)p + 1
    143.0
    >>> float(pipeline_inflight_chunks(16, 8, 16))  # capped at m v
    128.0

    .. math:: n = \\min\\left(v p + (p - 1)\\min(v - 1, 1),\\; m v\\right)
    """
    return minimum(virtual_stages * pp + (pp - 1) * minimum(virtual_stages - 1, 1),
                   microbatches * virtual_stages)


MCORE_UNEVEN_SPLIT = ("Megatron-Core TransformerConfig account_for_embedding_in_pipeline_split "
                      "and num_layers_in_first/last_pipeline_stage (megatron/core/transformer/"
                      "transformer_config.py, core_r0.12.0): the first and last stages hold "
                      "the layers the fullest stages do not")


@formula(reference=MCORE_SCHEDULE + "; " + MCORE_UNEVEN_SPLIT + "; " + KORTHIKANTI
         + " s4.2.3",
         domain={"layers": ">=1", "stage_layers": ">=1", "pp": ">=1", "virtual_stages": ">=1",
                 "microbatches": ">=1"},
         symbols=_SYM, result_latex="n_l")
def pipeline_inflight_layers(layers, stage_layers, pp, virtual_stages, microbatches):
    """Layer micro-batches whose activations the busiest pipeline rank holds at once.

    Rank r of Megatron-Core's 1F1B schedule holds p - r micro-batches at the peak, and
    2(p - r - 1) + (v - 1)p + 1 model chunks of them under the interleaved one
    (:func:`pipeline_inflight_chunks` for r = 0), each chunk l_s / v of its l_s layers.
    Where the L layers do not split evenly, the first and last stages hold the p l_s - L
    layers the fullest stages lack (the embedding's and the loss's stage units, or fewer
    layers on each): the first rank d_0 = floor((p l_s - L) / 2) fewer, while the second
    rank holds all l_s with one (1F1B) or two (interleaved) chunks fewer in flight, so
    either can be the busiest.  Llama 3.1 405B (126 layers) on PP 16: the first rank holds
    16 micro-batches of 7 layers, the second 15 of 8, against 16 of 8 if every rank held
    the fullest stage's layers.

    Parameters
    ----------
    layers : numeric
        Transformer layers L [1].
    stage_layers : numeric
        Layers on the fullest rank l_s [1].
    pp : numeric
        Pipeline ranks p [1].
    virtual_stages : numeric
        Model chunks per rank v (1: not interleaved) [1].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        Layer micro-batches in flight on the busiest rank [1].

    Examples
    --------
    >>> float(pipeline_inflight_layers(126, 8, 16, 1, 64))  # rank 1: 15 x 8
    120.0
    >>> float(pipeline_inflight_layers(128, 8, 16, 1, 64))  # even: rank 0, 16 x 8
    128.0
    >>> float(pipeline_inflight_layers(126, 8, 16, 4, 64))  # rank 1: 77 chunks of 2
    154.0

    .. math::
        n_l = \\max\\left(n_0 \\frac{l_s - d_0}{v},\\; n_1 \\frac{l_s}{v}\\right),\\quad
        d_0 = \\left\\lfloor \\frac{p l_s - L}{2} \\right\\rfloor,\\quad
        n_r = \\min(v p + (p - 1) k - r (1 + k),\\; m v),\\ k = \\min(v - 1, 1)
    """
    interleaved = minimum(virtual_stages - 1, 1)
    first = virtual_stages * pp + (pp - 1) * interleaved
    cap = microbatches * virtual_stages
    first_chunks = minimum(first, cap)
    second_chunks = minimum(maximum(first - 1 - interleaved, 0), cap)
    shortfall = floor((pp * stage_layers - layers) / 2)
    return maximum(first_chunks * maximum(stage_layers - shortfall, 0),
                   second_chunks * stage_layers) / virtual_stages


@formula(reference="DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437 s3.2.1 "
         "Table 2 (DualPipe: activation PP + 1, against 1F1B's PP)",
         domain={"pp": ">=1", "microbatches": ">=1"}, symbols=_SYM, result_latex="n_{chunks}")
def dualpipe_inflight_chunks(pp, microbatches):
    """Stage micro-batches whose activations a rank holds at once under DualPipe.

    DeepSeek-V3's Table 2 gives DualPipe p + 1 micro-batches of a stage's
    activations at the peak, one more than 1F1B's p (:func:`pipeline_inflight_chunks`
    with v = 1), capped at the m micro-batches of the iteration.

    Parameters
    ----------
    pp : numeric
        Pipeline ranks p [1].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        Stage micro-batches in flight on the fullest rank [1].

    Examples
    --------
    >>> float(dualpipe_inflight_chunks(16, 120))
    17.0

    .. math:: n = \\min(p + 1,\\; m)
    """
    return minimum(pp + 1, microbatches)


@formula(reference=KORTHIKANTI + ", s4.1 (MLP: 2 n_m s b f / t of the split tensors)",
         domain={"seq_len": ">0", "micro_batch": ">0", "ffn": ">=0", "mlp_matrices": ">=1",
                 "tp": ">=1"},
         symbols=_SYM, result_latex="A_{mlp}")
def mlp_activation_bytes(seq_len, micro_batch, ffn, mlp_matrices, tp):
    """Activation bytes per GPU of a dense MLP's f-wide tensors, one layer and micro-batch.

    The term of :func:`activation_bytes_per_layer` that an MoE layer replaces
    by :func:`moe_mlp_activation_bytes`: the n_m tensors of width f (GELU:
    activation input and second-matmul input; gated: gate and up outputs and
    the down-projection input), 16-bit, split over the t TP ranks.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    ffn : numeric
        MLP intermediate width f [1].
    mlp_matrices : numeric
        MLP weight matrices: 2 (GELU) or 3 (SwiGLU/GeGLU) [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    >>> float(mlp_activation_bytes(4096, 1, 18432, 3, 1)) / 2**20  # DeepSeek-V3 dense layer
    432.0

    .. math:: A_{mlp} = \\frac{2 n_m s b f}{t}
    """
    return 2 * mlp_matrices * seq_len * micro_batch * ffn / tp


@formula(reference=KORTHIKANTI + ", s4.1 term by term for the experts' tensors; "
         "dispatched copies of each token: Lepikhin et al. 2020 (GShard), arXiv:2006.16668 "
         "s2.2; Linear inputs cached in FP8 for the backward pass: DeepSeek-AI 2024, "
         "DeepSeek-V3, arXiv:2412.19437 s3.3.2 and NVIDIA Transformer Engine "
         "(transformer_engine/pytorch/module/linear.py saves the quantised input of an FP8 "
         "GEMM for its weight gradient)",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "moe_ffn": ">0",
                 "experts_per_token": ">=1", "shared_experts": ">=0", "mlp_matrices": ">=1",
                 "tp": ">=1", "etp": ">=1", "sequence_parallel": "[0,1]",
                 "linear_input_bytes": ">0"},
         symbols={**_SYM, "moe_ffn": "f_e", "experts_per_token": "k",
                  "shared_experts": "n_s", "etp": "t_e", "linear_input_bytes": "c"},
         result_latex="A_{moe}")
def moe_mlp_activation_bytes(seq_len, micro_batch, hidden, moe_ffn, experts_per_token,
                             shared_experts, mlp_matrices, tp, etp, sequence_parallel,
                             linear_input_bytes):
    """Activation bytes per GPU of one MoE layer's experts, one micro-batch.

    A rank holds s b (1 - σ + σ/t) tokens of the sequence (sequence
    parallelism splits them over the t TP ranks) and, with balanced routing,
    as many routed (token, expert) pairs times k; the expert-TP group of
    t_e ranks gathers its pairs, each rank keeping an f_e/t_e-wide slice.
    Per pair the backward pass needs the expert's input (an h-vector, the
    dispatched copy of the token, gathered over t_e), its first GEMM's
    n_m - 1 outputs (gated: gate and up; GELU: the activation input) of
    width f_e/t_e and the down-projection input of width f_e/t_e.  Linear
    inputs are kept at c bytes per element (2: BF16; 1: cached in FP8 as
    DeepSeek-V3 and Transformer Engine's FP8 recipes do), the rest at 2.
    Shared experts are dense MLPs of width n_s f_e split over the TP ranks.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per CP rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    moe_ffn : numeric
        Inner width of one expert f_e [1].
    experts_per_token : numeric
        Routed experts per token k [1].
    shared_experts : numeric
        Shared experts n_s [1].
    mlp_matrices : numeric
        Weight matrices of an expert: 2 (GELU) or 3 (SwiGLU) [1].
    tp : numeric
        Tensor-parallel degree t [1].
    etp : numeric
        Expert-tensor-parallel degree t_e [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].
    linear_input_bytes : numeric
        Bytes per element of a cached Linear input c (2 BF16, 1 FP8) [B].

    Returns
    -------
    numeric
        Bytes per MoE layer per micro-batch [B].

    Examples
    --------
    DeepSeek-V3 (h 7,168, 8 routed + 1 shared expert of 2,048), 4,096 tokens,
    TP 1, BF16 and FP8-cached:

    >>> round(float(moe_mlp_activation_bytes(4096, 1, 7168, 2048, 8, 1, 3, 1, 1, 0, 2)) / 2**20)
    880
    >>> round(float(moe_mlp_activation_bytes(4096, 1, 7168, 2048, 8, 1, 3, 1, 1, 0, 1)) / 2**20)
    584

    .. math::
        A_{moe} = s b \\left(1 - \\sigma + \\frac{\\sigma}{t}\\right) k
            \\left[c\\, t_e h + \\frac{f_e}{t_e}\\left(2 (n_m - 1) + c\\right)\\right]
            + \\frac{s b\\, n_s f_e \\left(2 (n_m - 1) + c\\right)}{t}
    """
    tokens = seq_len * micro_batch * (1 - sequence_parallel + sequence_parallel / tp)
    per_width = 2 * (mlp_matrices - 1) + linear_input_bytes
    routed = tokens * experts_per_token * (linear_input_bytes * etp * hidden
                                          + moe_ffn / etp * per_width)
    shared = seq_len * micro_batch * shared_experts * moe_ffn * per_width / tp
    return routed + shared


@formula(reference="DeepSeek-AI 2024, DeepSeek-V3, arXiv:2412.19437 s3.3.3 ('we cache the "
         "inputs of the SwiGLU operator and recompute its output in the backward pass. These "
         "activations are also stored in FP8'); Megatron-Core --recompute-modules moe_act",
         domain={"seq_len": ">0", "micro_batch": ">0", "moe_ffn": ">=0",
                 "experts_per_token": ">=0", "shared_experts": ">=0", "mlp_matrices": ">=1",
                 "tp": ">=1", "etp": ">=1", "sequence_parallel": "[0,1]",
                 "linear_input_bytes": ">0", "act_input_bytes": ">0",
                 "recompute_act": "[0,1]"},
         symbols={**_SYM, "moe_ffn": "f_e", "experts_per_token": "k",
                  "shared_experts": "n_s", "mlp_matrices": "n_m", "etp": "t_e",
                  "linear_input_bytes": "c", "act_input_bytes": "a",
                  "recompute_act": "r_{act}"},
         result_latex=r"\Delta A_{act}")
def moe_activation_function_saving_bytes(seq_len, micro_batch, moe_ffn, experts_per_token,
                                         shared_experts, mlp_matrices, tp, etp,
                                         sequence_parallel, linear_input_bytes,
                                         act_input_bytes, recompute_act):
    """Bytes one MoE layer's experts keep less than :func:`moe_mlp_activation_bytes` counts.

    :func:`moe_mlp_activation_bytes` keeps, per routed pair and shared-expert
    token, the n_m - 1 first-GEMM outputs (the activation function's input)
    at 2 bytes and the down-projection input (its output) at c bytes.
    DeepSeek-V3 stores the activation function's input in FP8 (a = 1 byte)
    and recomputes its output in the backward pass (r = 1), as Megatron-Core's
    recompute module ``moe_act`` does (there with a = 2).  The recomputed
    output costs one memory-bound pass in the backward (not counted here).

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per CP rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    moe_ffn : numeric
        Inner width of one expert f_e [1].
    experts_per_token : numeric
        Routed experts per token k [1].
    shared_experts : numeric
        Shared experts n_s [1].
    mlp_matrices : numeric
        Weight matrices of an expert: 2 (GELU) or 3 (SwiGLU) [1].
    tp : numeric
        Tensor-parallel degree t [1].
    etp : numeric
        Expert-tensor-parallel degree t_e [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].
    linear_input_bytes : numeric
        Bytes per element of a cached Linear input c [B].
    act_input_bytes : numeric
        Bytes per element of the stored activation-function input a (2 BF16,
        1 FP8) [B].
    recompute_act : numeric
        1 if the activation function's output is recomputed in backward, else 0 [1].

    Returns
    -------
    numeric
        Bytes per MoE layer per micro-batch not kept [B].

    Examples
    --------
    DeepSeek-V3 (8 routed + 1 shared expert of 2,048), 4,096 tokens, TP 1,
    FP8-cached inputs: 216 MiB of :func:`moe_mlp_activation_bytes`' 584 MiB:

    >>> round(float(moe_activation_function_saving_bytes(
    ...     4096, 1, 2048, 8, 1, 3, 1, 1, 0, 1, 1, 1)) / 2**20)
    216

    .. math::
        \\Delta A_{act} = \\left[s b \\left(1 - \\sigma + \\frac{\\sigma}{t}\\right)
            \\frac{k f_e}{t_e} + \\frac{s b\\, n_s f_e}{t}\\right]
            \\left[(n_m - 1)(2 - a) + r_{act}\\, c\\right]
    """
    tokens = seq_len * micro_batch * (1 - sequence_parallel + sequence_parallel / tp)
    widths = tokens * experts_per_token * moe_ffn / etp \
        + seq_len * micro_batch * shared_experts * moe_ffn / tp
    return widths * ((mlp_matrices - 1) * (2 - act_input_bytes)
                     + recompute_act * linear_input_bytes)


@formula(reference="DeepSeek-AI 2024, DeepSeek-V3, arXiv:2412.19437 s3.2.3 ('we recompute "
         "all RMSNorm operations and MLA up-projections during back-propagation'); "
         "Megatron-Core --recompute-modules mla_up_proj; " + KORTHIKANTI + " s4.1",
         domain={"seq_len": ">0", "micro_batch": ">0", "heads": ">=1", "head_dim": ">0",
                 "v_head_dim": ">0", "tp": ">=1"},
         symbols={**_SYM, "head_dim": "d_h", "v_head_dim": "d_v"},
         result_latex=r"A_{up}")
def mla_up_projection_activation_bytes(seq_len, micro_batch, heads, head_dim, v_head_dim, tp):
    """Activation bytes per GPU of the MLA up-projection outputs, one layer and micro-batch.

    Multi-head latent attention up-projects compressed latents into per-head
    queries (a d_h), keys (a d_h) and values (a d_v); the attention core
    keeps them for its backward pass.  Recomputing the up-projections in the
    backward pass frees them: only the latents (already counted by
    :func:`attention_shape_activation_bytes`) and the attention output stay.
    These are the bytes a layer does not keep under that recomputation.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    heads : numeric
        Query heads a [1].
    head_dim : numeric
        Query/key head size d_h (MLA: nope + rope) [1].
    v_head_dim : numeric
        Value head size d_v [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    DeepSeek-V3 (128 heads, d_h 192, d_v 128), 4,096 tokens, TP 1:

    >>> float(mla_up_projection_activation_bytes(4096, 1, 128, 192, 128, 1)) / 2**20
    512.0

    .. math:: A_{up} = \\frac{2 s b\\, a (2 d_h + d_v)}{t}
    """
    return 2 * seq_len * micro_batch * heads * (2 * head_dim + v_head_dim) / tp


@formula(reference=KORTHIKANTI + ", s4.1 (each layer norm keeps its input, 2sbh, split by "
         "sequence parallelism); JAX checkpoint policies keep only the tensors they name "
         "(jax.checkpoint_policies.save_only_these_names; MaxText remat_policy custom, "
         "AI-Hypercomputer/maxtext configs/base.yml) and recompute the rest",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "tp": ">=1",
                 "sequence_parallel": "[0,1]"},
         symbols=_SYM, result_latex="A_{res}")
def residual_activation_bytes(seq_len, micro_batch, hidden, tp, sequence_parallel):
    """16-bit activation bytes per GPU of one residual-stream tensor of a layer, one micro-batch.

    The post-attention residual (the MLP norm's input) is such a tensor: Megatron-Core's
    recompute module ``layernorm`` keeps it to run the norm again; a policy that keeps only
    the tensors it names (the layer input and the attention output, say) rebuilds it from
    them through the output projection instead.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    tp : numeric
        Tensor-parallel degree t [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    >>> float(residual_activation_bytes(8192, 4, 8192, 1, 0)) / 2**20  # Llama 3.1 70B
    512.0

    .. math:: A_{res} = 2 s b h \\left(1 - \\sigma + \\frac{\\sigma}{t}\\right)
    """
    return 2 * seq_len * micro_batch * hidden * (1 - sequence_parallel + sequence_parallel / tp)


@formula(reference=KORTHIKANTI + ", s4.1 (the QKV-projection input 2sbh and the MLP input "
         "2sbh: the two norms' outputs, split by sequence parallelism)",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0", "tp": ">=1",
                 "sequence_parallel": "[0,1]"},
         symbols=_SYM, result_latex="A_{norm}")
def norm_output_activation_bytes(seq_len, micro_batch, hidden, tp, sequence_parallel):
    """16-bit activation bytes per GPU of one layer's two norm outputs, one micro-batch.

    The outputs of the attention and MLP norms are the inputs of the QKV
    projection and of the MLP's first GEMM; Korthikanti's count keeps both
    (2sbh each).  They are what FP8 recipes cache at one byte (the quantised
    GEMM inputs) and what recomputing the norms in the backward pass frees
    (DeepSeek-V3, arXiv:2412.19437 s3.2.3; Megatron-Core's recompute module
    ``layernorm``).

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    tp : numeric
        Tensor-parallel degree t [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    >>> float(norm_output_activation_bytes(4096, 1, 7168, 1, 0)) / 2**20  # DeepSeek-V3
    112.0

    .. math:: A_{norm} = 4 s b h \\left(1 - \\sigma + \\frac{\\sigma}{t}\\right)
    """
    return 4 * seq_len * micro_batch * hidden * (1 - sequence_parallel + sequence_parallel / tp)


@formula(reference="Transformer Engine FP8 recipes (GEMM inputs cached quantised); "
         "DeepSeek-V3 arXiv:2412.19437 s3.3.2 (activations cached in FP8)",
         domain={"linear_input_bytes": ">0"}, symbols={**_SYM, "linear_input_bytes": "c"},
         result_latex=r"\phi")
def cached_input_saving_fraction(linear_input_bytes):
    """Share of a 16-bit activation's bytes saved by keeping a Linear input at c bytes.

    Korthikanti's activation counts assume 2-byte (BF16/FP16) tensors; a GEMM input
    cached in FP8 keeps 1 byte of the 2.

    Parameters
    ----------
    linear_input_bytes : numeric
        Bytes per element of a cached Linear input c (2 BF16, 1 FP8) [B].

    Returns
    -------
    numeric
        Fraction of the 16-bit bytes saved [1].

    Examples
    --------
    >>> float(cached_input_saving_fraction(1)), float(cached_input_saving_fraction(2))
    (0.5, 0.0)

    .. math:: \\phi = 1 - \\frac{c}{2}
    """
    return 1 - linear_input_bytes / 2


GATED_DELTANET = ("Yang, Kautz, Hatamizadeh 2024 (Gated Delta Networks), arXiv:2412.06464; "
                  "flash-linear-attention chunk_gated_delta_rule (saves q, k, v, g, beta and "
                  "the chunk matrices A for backward, recomputes the chunk states)")


@formula(reference=KORTHIKANTI + " s4.1 (the attention block's Q, K, V, output-projection "
         "input and, when stored, scores, softmax and mask), with the heads' sizes",
         domain={"seq_len": ">0", "micro_batch": ">0", "heads": ">=1", "kv_heads": ">=1",
                 "head_dim": ">0", "v_head_dim": ">0", "tp": ">=1",
                 "attention_scores_stored": "[0,1]", "dropout_masks": "[0,1]"},
         symbols={**_SYM, "head_dim": "d_h", "v_head_dim": "d_v"},
         result_latex=r"A_{softmax}")
def softmax_attention_activation_bytes(seq_len, micro_batch, heads, kv_heads, head_dim,
                                       v_head_dim, tp, attention_scores_stored,
                                       dropout_masks):
    """Activation bytes per GPU of one layer's softmax-attention core tensors.

    The part of :func:`activation_bytes_per_layer` plus
    :func:`attention_shape_activation_bytes` (without MLA) that a linear-attention layer
    does not keep: Q, K, V and the output-projection input, 2sb (a + a_kv)(d_h + d_v) /t
    in 16-bit, and the scores, softmax and mask (4 + delta) a s^2 b chi / t.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per context-parallel rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads [1].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    tp : numeric
        Tensor-parallel degree t [1].
    attention_scores_stored : numeric
        1 if the s x s scores are kept, 0 with flash attention [1].
    dropout_masks : numeric
        1 if the model trains with dropout, 0 without [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    Qwen3-Next's full-attention layers (16 heads, 2 KV heads, 256 wide), flash:

    >>> softmax_attention_activation_bytes(4096, 1, 16, 2, 256, 256, 1, 0, 0)
    75497472.0

    .. math:: A_{softmax} = \\frac{2 s b (a + a_{kv})(d_h + d_v)
        + (4 + \\delta) a s^2 b \\chi}{t}
    """
    sb = seq_len * micro_batch
    return (2 * sb * (heads + kv_heads) * (head_dim + v_head_dim)
            + (4 + dropout_masks) * heads * seq_len**2 * micro_batch
            * attention_scores_stored) / tp


@formula(reference="Gemma Team 2024, 'Gemma 2', arXiv:2408.00118 s2 (attention logits "
         "soft-capped by tanh); unfused in Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge@"
         "5776a6d90b src/megatron/bridge/models/gemma/gemma2_provider.py: logit_softcapping "
         "= cap * torch.tanh(logits / cap) on the scores; autograd keeps tanh's output)",
         domain={"seq_len": ">0", "micro_batch": ">0", "heads": ">=1", "tp": ">=1"},
         symbols=_SYM, result_latex=r"A_{cap}")
def softcap_activation_bytes(seq_len, micro_batch, heads, tp):
    """Activation bytes per GPU of one layer's soft-capped scores kept for the backward.

    Unfused soft-capping keeps the 16-bit tanh output of the s x s scores, 2 a s^2 b / t,
    beside the softmax tensors of :func:`activation_bytes_per_layer` (the fused kernels
    that cap recompute it in their tiles and keep nothing).

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per context-parallel rank for the query rows) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    heads : numeric
        Query heads a [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    Gemma 2 9B's 16 heads at 8,192 tokens, one sequence, TP 1:

    >>> softcap_activation_bytes(8192, 1, 16, 1)
    2147483648.0

    .. math:: A_{cap} = \\frac{2\\, a s^2 b}{t}
    """
    return 2 * heads * seq_len**2 * micro_batch / tp


@formula(reference=GATED_DELTANET + "; transformers Qwen3NextGatedDeltaNet (short "
         "convolution on the projected q, k, v; gated RMSNorm before out_proj)",
         domain={"seq_len": ">0", "micro_batch": ">0", "key_heads": ">=1",
                 "value_heads": ">=1", "head_dim": ">0", "chunk": ">0", "tp": ">=1"},
         symbols={**_SYM, "key_heads": "a_k", "value_heads": "a_v", "head_dim": "d",
                  "chunk": "C"},
         result_latex=r"A_{gdn}")
def gated_deltanet_activation_bytes(seq_len, micro_batch, key_heads, value_heads, head_dim,
                                    chunk, tp):
    """Activation bytes per GPU one Gated DeltaNet token mixer keeps for backward.

    In 16-bit, heads split over TP: the short convolution's input and output (the
    projected q, k and v: 2 (2 a_k d + a_v d)), the output gate (a_v d), the core's
    output and the gated norm's output (the output projection's input, 2 a_v d), the
    chunk matrices A (a_v C a token) and beta and the decay in FP32 (2 a_v, 4 bytes).
    The d x d chunk states are recomputed in backward (one layer's working set,
    :func:`gated_delta_rule_state_bytes`).

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per context-parallel rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    key_heads : numeric
        Query/key heads a_k [1].
    value_heads : numeric
        Value heads a_v [1].
    head_dim : numeric
        Key and value head size d [1].
    chunk : numeric
        Chunk length C of the chunked kernel [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    Qwen3-Next-80B-A3B (16 key and 32 value heads of 128), s = 4096, b = 1:

    >>> gated_deltanet_activation_bytes(4096, 1, 16, 32, 128, 64, 1)
    252706816.0

    .. math:: A_{gdn} = \\frac{2 s b\\,(4 a_k d + 5 a_v d + a_v C + 4 a_v)}{t}
    """
    per_token = 4 * key_heads * head_dim + 5 * value_heads * head_dim + value_heads * chunk \
        + 4 * value_heads
    return 2 * seq_len * micro_batch * per_token / tp


@formula(reference=GATED_DELTANET + " (d_k x d_v state per head, one per chunk of C tokens)",
         domain={"seq_len": ">0", "micro_batch": ">0", "value_heads": ">=1",
                 "head_dim": ">0", "chunk": ">0", "tp": ">=1", "bytes_per_element": ">0"},
         symbols={**_SYM, "value_heads": "a_v", "head_dim": "d", "chunk": "C",
                  "bytes_per_element": "e"},
         result_latex=r"M_{state}")
def gated_delta_rule_state_bytes(seq_len, micro_batch, value_heads, head_dim, chunk, tp,
                                 bytes_per_element):
    """Bytes of the chunk states of one linear-attention layer (forward, or recomputed in
    backward): one d x d state per head, sequence and chunk of C tokens.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per context-parallel rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    value_heads : numeric
        Value heads a_v [1].
    head_dim : numeric
        Key and value head size d [1].
    chunk : numeric
        Chunk length C [1].
    tp : numeric
        Tensor-parallel degree t [1].
    bytes_per_element : numeric
        Bytes per state element e [B].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    >>> gated_delta_rule_state_bytes(4096, 1, 32, 128, 64, 1, 2)
    67108864.0

    .. math:: M_{state} = \\frac{e\\, b\\, (s / C)\\, a_v d^2}{t}
    """
    return bytes_per_element * micro_batch * seq_len / chunk * value_heads * head_dim**2 / tp



MAMBA2 = ("Dao & Gu 2024 (Mamba-2), arXiv:2405.21060, s7; NVIDIA/Megatron-LM@d98e8a6 "
          "megatron/core/ssm/mamba_mixer.py _ssm_training: mamba_split_conv1d_scan_combined "
          "(mamba_ssm: saves z, x, B, C, dt and the scan's output, recomputes the convolution "
          "and the chunk states), then the gated RMSNorm and out_proj)")


@formula(reference=MAMBA2,
         domain={"seq_len": ">0", "micro_batch": ">0", "heads": ">=1", "head_dim": ">0",
                 "state_dim": ">0", "groups": ">=1", "tp": ">=1"},
         symbols={**_SYM, "heads": "H", "head_dim": "P", "state_dim": "N", "groups": "G"},
         result_latex=r"A_{mamba}")
def mamba2_activation_bytes(seq_len, micro_batch, heads, head_dim, state_dim, groups, tp):
    """Activation bytes per GPU one Mamba-2 token mixer keeps for backward.

    In 16-bit, heads and groups split over TP (d = H P): the input projection's output
    (z, x, B, C, dt: 2 d + 2 G N + H) and the scan's output (d), which the fused
    convolution-and-scan kernel keeps (it recomputes the convolution in backward), its
    gated output (the norm's input, d) and the norm's output (the output projection's
    input, d).  The mixer's input (the block norm's output) is the layer's norm term; the
    N x P chunk states are recomputed in backward (one layer's working set,
    :func:`ssd_state_bytes`).

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per context-parallel rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    heads : numeric
        SSM heads H [1].
    head_dim : numeric
        Head size P [1].
    state_dim : numeric
        State size N [1].
    groups : numeric
        Groups G sharing B and C [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    Nemotron-H 56B (256 heads of 64, state 256, 8 groups), s = 8192, b = 1, TP 2:

    >>> mamba2_activation_bytes(8192, 1, 256, 64, 256, 8, 2)
    706740224.0

    .. math:: A_{mamba} = \\frac{2 s b\\,(5 H P + 2 G N + H)}{t}
    """
    per_token = 5 * heads * head_dim + 2 * groups * state_dim + heads
    return 2 * seq_len * micro_batch * per_token / tp


@formula(reference=MAMBA2 + " (an N x P state per head and chunk of Q tokens, FP32)",
         domain={"seq_len": ">0", "micro_batch": ">0", "heads": ">=1", "head_dim": ">0",
                 "state_dim": ">0", "chunk": ">0", "tp": ">=1"},
         symbols={**_SYM, "heads": "H", "head_dim": "P", "state_dim": "N", "chunk": "Q"},
         result_latex=r"M_{ssd}")
def ssd_state_bytes(seq_len, micro_batch, heads, head_dim, state_dim, chunk, tp):
    """Bytes of the chunk states of one Mamba-2 layer (forward, or recomputed in
    backward): one N x P state per head, sequence and chunk of Q tokens, in FP32.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s (per context-parallel rank) [1].
    micro_batch : numeric
        Micro-batch size b [1].
    heads : numeric
        SSM heads H [1].
    head_dim : numeric
        Head size P [1].
    state_dim : numeric
        State size N [1].
    chunk : numeric
        Chunk length Q [1].
    tp : numeric
        Tensor-parallel degree t [1].

    Returns
    -------
    numeric
        Bytes per layer per micro-batch [B].

    Examples
    --------
    >>> ssd_state_bytes(8192, 1, 256, 64, 256, 128, 2)
    536870912.0

    .. math:: M_{ssd} = \\frac{4 b\\,(s / Q)\\, H N P}{t}
    """
    return 4 * micro_batch * seq_len / chunk * heads * state_dim * head_dim / tp
