"""Compute: parameter counts, FLOP counts, achieved efficiency and op time.

A decoder-only transformer layer of hidden size h, a attention heads (of which
kv share keys and values, GQA/MQA), MLP width f with 2 (GELU) or 3 (SwiGLU,
GeGLU) weight matrices, trained on sequences of s tokens.  FLOPs count one
multiply-add as 2 FLOP; the backward pass costs twice the forward pass.
Attention scores are counted as in Narayanan et al. (non-causal: no saving
from the causal mask), so the counts agree with their eq. (3).

References
----------
.. [Kaplan2020] J. Kaplan et al., "Scaling Laws for Neural Language Models",
   arXiv:2001.08361, 2020, s2.1.
.. [Narayanan2021] D. Narayanan et al., "Efficient Large-Scale Language Model
   Training on GPU Clusters Using Megatron-LM", SC'21, arXiv:2104.04473,
   doi:10.1145/3458817.3476209, s5.1 and Appendix.
.. [Chowdhery2022] A. Chowdhery et al., "PaLM: Scaling Language Modeling with
   Pathways", arXiv:2204.02311, 2022, Appendix B.
.. [Williams2009] S. Williams, A. Waterman, D. Patterson, "Roofline: an
   insightful visual performance model for multicore architectures",
   Commun. ACM 52(4):65-76, 2009. doi:10.1145/1498765.1498785
.. [NVIDIA2023] NVIDIA, "Matrix Multiplication Background User's Guide",
   DU-09799-001, Deep Learning Performance documentation, 2023, ch. 2-3.
.. [Isaev2023] M. Isaev et al., "Calculon: a methodology and tool for
   high-level co-design of systems and large language models", SC'23,
   doi:10.1145/3581784.3607102.
"""

from __future__ import annotations

from .core import formula
from .ops import ceil, expm1, log1p, maximum, minimum

KAPLAN = "Kaplan et al. 2020, arXiv:2001.08361"
NARAYANAN = "Narayanan et al. 2021 (SC'21), arXiv:2104.04473, doi:10.1145/3458817.3476209"
PALM = "Chowdhery et al. 2022 (PaLM), arXiv:2204.02311, App. B"

_SYM = {
    "params": "N", "tokens": "D", "batch_size": "B", "seq_len": "s", "layers": "l",
    "hidden": "h", "vocab": "V", "recompute": "r", "heads": "a", "kv_heads": "a_{kv}",
    "ffn": "f", "moe_ffn": "f_e", "mlp_matrices": "n_m", "embedding_matrices": "n_e",
    "experts": "E", "experts_per_token": "k", "shared_experts": "E_s",
    "forward_flops_per_token": "F", "recomputed_forward_flops_per_token": "R",
    "min_dim": "d", "max_efficiency": r"\eta_{max}", "half_efficiency_dim": "d_{1/2}",
    "flops": "W", "bytes_moved": "Q", "peak_flops_per_s": "P",
    "compute_efficiency": r"\eta_c", "memory_bandwidth_bytes_per_s": "\\beta",
    "memory_efficiency": r"\eta_m", "model_flops_per_s_per_gpu": "X_m",
    "hardware_flops_per_s_per_gpu": "X_h", "gpus": "n", "flops_per_s_per_gpu": "X",
    "device_time_s": "t_d", "host_time_s": "t_h", "overlap_exponent": "k",
    "tp": "t_p", "ep": "e_p", "rows": "m", "cols": "n", "inner": "k",
    "bytes_per_element": "e", "sequence_parallel": r"\sigma", "cp": "c",
    "micro_batch": "b", "head_dim": "d_h", "unfused": "u",
    "fused_efficiency_factor": r"\eta_{fa}", "forward_time_s": "t_f",
    "recomputed_forward_time_s": "t_r", "layer_overhead_s": "t_o",
    "full_recompute": "r", "weight_bytes_per_param": "K_w",
    "grad_bytes_per_param": "K_g", "optimizer_bytes_per_param": "K_o",
    "moe_layers": "l_e", "active_experts": "k_a",
}

#: Display symbols of formulas whose ``tokens`` are those of one micro-batch on one rank.
_SYM_MB = {**_SYM, "tokens": "t"}

#: Element-wise ops of one transformer layer's forward pass that touch an h-wide
#: vector per token (see :func:`elementwise_bytes_per_token`), and f-wide ones.
H_WIDE_ELEMENTWISE_OPS = 8
F_WIDE_ELEMENTWISE_OPS = 2
#: Every element-wise op reads its input once and writes its output once.
ACCESSES_PER_ELEMENT = 2
#: The backward pass of a layer costs twice its forward pass (Narayanan et al. 2021, s5.1).
BACKWARD_PER_FORWARD = 2


# -- parameter counts ----------------------------------------------------------

@formula(reference="Narayanan et al. 2021, s5.1 (per layer 4h^2 for Q, K, V, output "
         "projection); GQA: Ainslie et al. 2023, arXiv:2305.13245 s2.2",
         domain={"hidden": ">0", "heads": ">=1", "kv_heads": ">=1"},
         symbols=_SYM, result_latex="P_{attn}")
def attention_params(hidden, heads, kv_heads):
    """Weights of one self-attention block (no biases).

    Q and the output projection are h x h; K and V are h x (h kv/a), i.e.
    grouped-query (GQA) or multi-query (MQA, kv = 1) attention; kv = a is
    ordinary multi-head attention (4h^2).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads, 1 <= kv <= a [1].

    Returns
    -------
    numeric
        Parameters per layer [1].

    .. math:: P_{attn} = 2h^2 + 2h \\cdot h\\,a_{kv}/a
    """
    return 2 * hidden**2 + 2 * hidden * (hidden * kv_heads / heads)


@formula(reference="Vaswani et al. 2017, arXiv:1706.03762 s3.3 (2 matrices); "
         "Shazeer 2020, arXiv:2002.05202 (GLU variants, 3 matrices)",
         domain={"hidden": ">0", "ffn": ">0", "mlp_matrices": ">=1"},
         symbols=_SYM, result_latex="P_{mlp}")
def mlp_params(hidden, ffn, mlp_matrices):
    """Weights of one MLP block (no biases).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    ffn : numeric
        MLP intermediate width f [1].
    mlp_matrices : numeric
        Weight matrices of size h x f: 2 for a GELU MLP, 3 for SwiGLU/GeGLU [1].

    Returns
    -------
    numeric
        Parameters per layer [1].

    .. math:: P_{mlp} = n_m h f
    """
    return mlp_matrices * hidden * ffn


@formula(reference="Two normalisations per pre-norm layer, one h-vector each: RMSNorm, "
         "Zhang & Sennrich 2019, arXiv:1910.07467; LayerNorm bias adds 2h more",
         domain={"hidden": ">0"}, symbols=_SYM, result_latex="P_{norm}")
def norm_params(hidden):
    """Weights of the two normalisation layers of one transformer layer.

    Counts one scale vector of size h per norm (RMSNorm, or LayerNorm without
    bias); LayerNorm with bias has 4h, a negligible difference.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].

    Returns
    -------
    numeric
        Parameters per layer [1].

    .. math:: P_{norm} = 2h
    """
    return 2 * hidden


@formula(reference="Press & Wolf 2017, arXiv:1608.05859 (tied input/output embeddings)",
         domain={"vocab": ">0", "hidden": ">0", "embedding_matrices": ">=1"},
         symbols=_SYM, result_latex="P_{emb}")
def embedding_params(vocab, hidden, embedding_matrices):
    """Weights of the token embedding and the output (unembedding) layer.

    Parameters
    ----------
    vocab : numeric
        Vocabulary size V [1].
    hidden : numeric
        Hidden size h [1].
    embedding_matrices : numeric
        1 if input and output embeddings are tied, 2 if untied [1].

    Returns
    -------
    numeric
        Parameters [1].

    .. math:: P_{emb} = n_e V h
    """
    return embedding_matrices * vocab * hidden


@formula(reference="NVIDIA 2026 (Nemotron 3 Super), arXiv:2604.12374 (LatentMoE: tokens "
         "projected to a latent space for routing to the experts and back); NVIDIA/Megatron-LM"
         "@d98e8a6 megatron/core/transformer/moe/moe_layer.py (fc1_latent_proj h -> l, "
         "fc2_latent_proj l -> h, duplicated over TP)",
         domain={"hidden": ">0", "latent_dim": ">0"},
         symbols={**_SYM, "latent_dim": r"\ell"}, result_latex="P_{lmoe}")
def moe_latent_projection_params(hidden, latent_dim):
    """Weights of a LatentMoE layer's two latent projections: the routed tokens go down
    from h to the latent size before the dispatch and back up after the combine; the
    routed experts work in the latent size, the shared experts in h.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    latent_dim : numeric
        Latent size of the routed experts l [1].

    Returns
    -------
    numeric
        Weights per MoE layer [1].

    Examples
    --------
    >>> moe_latent_projection_params(4096, 1024)  # Nemotron 3 Super
    8388608.0

    .. math:: P_{lmoe} = 2 h \\ell
    """
    return 2 * hidden * latent_dim


@formula(reference="Fedus et al. 2022 (Switch), arXiv:2101.03961 s2.1 (router h x E); "
         "shared experts: Dai et al. 2024 (DeepSeekMoE), arXiv:2401.06066 s3.2",
         domain={"hidden": ">0", "moe_ffn": ">0", "experts": ">=1", "shared_experts": ">=0",
                 "mlp_matrices": ">=1"},
         symbols=_SYM, result_latex="P_{moe}")
def moe_mlp_params(hidden, moe_ffn, experts, shared_experts, mlp_matrices):
    """All weights of one mixture-of-experts MLP layer: routed and shared experts, router.

    Shared experts are assumed to have the routed experts' width f_e (for a
    wider shared expert pass its width in multiples of f_e).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    moe_ffn : numeric
        Intermediate width of one expert f_e [1].
    experts : numeric
        Routed experts E [1].
    shared_experts : numeric
        Always-active shared experts E_s [1].
    mlp_matrices : numeric
        Weight matrices per expert: 2 (GELU) or 3 (SwiGLU) [1].

    Returns
    -------
    numeric
        Parameters per MoE layer [1].

    .. math:: P_{moe} = (E + E_s) n_m h f_e + h E
    """
    return (experts + shared_experts) * mlp_matrices * hidden * moe_ffn + hidden * experts


@formula(reference="Fedus et al. 2022 (Switch), arXiv:2101.03961 s2.1; top-k routing: "
         "Jiang et al. 2024 (Mixtral), arXiv:2401.04088 s2.1",
         domain={"hidden": ">0", "moe_ffn": ">0", "experts_per_token": ">=1",
                 "shared_experts": ">=0", "mlp_matrices": ">=1", "experts": ">=1"},
         symbols=_SYM, result_latex="P_{moe,active}")
def moe_active_mlp_params(hidden, moe_ffn, experts_per_token, shared_experts, mlp_matrices,
                          experts):
    """Weights of one MoE MLP layer that a single token uses (top-k, shared, router).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    moe_ffn : numeric
        Intermediate width of one expert f_e [1].
    experts_per_token : numeric
        Routed experts per token k (top-k) [1].
    shared_experts : numeric
        Always-active shared experts E_s [1].
    mlp_matrices : numeric
        Weight matrices per expert: 2 (GELU) or 3 (SwiGLU) [1].
    experts : numeric
        Routed experts E (sets the router size) [1].

    Returns
    -------
    numeric
        Active parameters per token per MoE layer [1].

    .. math:: P_{moe,active} = (k + E_s) n_m h f_e + h E
    """
    return (experts_per_token + shared_experts) * mlp_matrices * hidden * moe_ffn \
        + hidden * experts


@formula(reference="Zhang & Sennrich 2019, arXiv:1910.07467 (RMSNorm scale vector); pre-norm "
         "transformers end with a final norm before the output layer: Radford et al. 2019 "
         "(GPT-2 technical report) s2.3, Touvron et al. 2023 (Llama), arXiv:2302.13971 s2.2",
         domain={"hidden": ">0"}, symbols=_SYM, result_latex="P_{norm,f}")
def final_norm_params(hidden):
    """Weights of the normalisation after the last transformer layer (pre-norm models).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].

    Returns
    -------
    numeric
        Parameters [1].

    Examples
    --------
    Llama 3 70B's ``model.norm.weight``:

    >>> final_norm_params(8192)
    8192.0

    .. math:: P_{norm,f} = h
    """
    return 1 * hidden


@formula(reference=NARAYANAN + " s5.1 (layer = attention + MLP + norms, plus embeddings); "
         "MoE layers: Fedus et al. 2022 (Switch), arXiv:2101.03961 s2.1; GQA: Ainslie et al. "
         "2023, arXiv:2305.13245",
         domain={"layers": ">=1", "moe_layers": ">=0", "hidden": ">0", "heads": ">=1",
                 "kv_heads": ">=1", "ffn": ">0", "mlp_matrices": ">=1", "vocab": ">0",
                 "embedding_matrices": ">=1", "moe_ffn": ">0", "active_experts": ">=1",
                 "shared_experts": ">=0", "experts": ">=1"},
         symbols=_SYM, result_latex="P")
def model_params(layers, moe_layers, hidden, heads, kv_heads, ffn, mlp_matrices, vocab,
                 embedding_matrices, moe_ffn, active_experts, shared_experts, experts):
    """Parameters of a decoder-only transformer, dense or mixture-of-experts.

    Every layer has attention and two norms; dense layers have an MLP, MoE layers
    ``active_experts`` routed experts (all E for the total count, the top-k for the
    parameters a token uses), the shared experts and a router; then the embeddings
    and the final norm.  Biases, learned position embeddings and multi-token-prediction
    modules are not counted; multi-head latent attention (MLA) is counted as the
    multi-head attention of the same h and a (an overestimate of 1.12 B for
    DeepSeek-V3).

    Parameters
    ----------
    layers : numeric
        Transformer layers l [1].
    moe_layers : numeric
        Layers with a mixture-of-experts MLP, l_e (0 for dense models) [1].
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads [1].
    ffn : numeric
        MLP width of the dense layers f [1].
    mlp_matrices : numeric
        Weight matrices per MLP or expert: 2 (GELU) or 3 (SwiGLU) [1].
    vocab : numeric
        Vocabulary size V [1].
    embedding_matrices : numeric
        1 if input and output embeddings are tied, 2 if untied [1].
    moe_ffn : numeric
        Width of one expert f_e [1].
    active_experts : numeric
        Routed experts counted per MoE layer: E for all parameters, k for the
        parameters one token uses [1].
    shared_experts : numeric
        Shared experts per MoE layer E_s [1].
    experts : numeric
        Routed experts E (the router's width) [1].

    Returns
    -------
    numeric
        Parameters [1].

    Examples
    --------
    Llama 3 70B (published: 70,553,706,496 in the released checkpoint):

    >>> int(model_params(80, 0, 8192, 64, 8, 28672, 3, 128256, 2, 28672, 1, 0, 1))
    70553706496

    .. math::
        P = l (P_{attn} + P_{norm}) + (l - l_e) P_{mlp}
          + l_e P_{moe}(k_a) + P_{emb} + P_{norm,f}
    """
    return (layers * (attention_params(hidden, heads, kv_heads) + norm_params(hidden))
            + (layers - moe_layers) * mlp_params(hidden, ffn, mlp_matrices)
            + moe_layers * moe_active_mlp_params(hidden, moe_ffn, active_experts,
                                                 shared_experts, mlp_matrices, experts)
            + embedding_params(vocab, hidden, embedding_matrices)
            + final_norm_params(hidden))


@formula(reference=NARAYANAN + ", eq. (2)",
         domain={"layers": ">=1", "hidden": ">0", "vocab": ">0", "seq_len": ">0"},
         symbols=_SYM, result_latex="P")
def narayanan_params(layers, hidden, vocab, seq_len):
    """Parameters of a GPT model with biases, tied and learned position embeddings.

    Parameters
    ----------
    layers : numeric
        Transformer layers l [1].
    hidden : numeric
        Hidden size h (MLP width 4h) [1].
    vocab : numeric
        Vocabulary size V [1].
    seq_len : numeric
        Sequence length s (position embeddings) [1].

    Returns
    -------
    numeric
        Parameters [1].

    .. math:: P = 12 l h^2 \\left(1 + \\frac{13}{12h} + \\frac{V + s}{12 l h}\\right)
    """
    return 12 * layers * hidden**2 * (1 + 13 / (12 * hidden) + (vocab + seq_len)
                                      / (12 * layers * hidden))


# -- FLOP counts -----------------------------------------------------------------

@formula(reference=KAPLAN + ", s2.1 (C = 6ND)",
         domain={"params": ">=0", "tokens": ">=0"}, symbols=_SYM, result_latex="C")
def kaplan_training_flops(params, tokens):
    """Training compute of a dense model: 2 FLOP forward and 4 backward per parameter per token.

    Parameters
    ----------
    params : numeric
        Non-embedding (or all) parameters N [1].
    tokens : numeric
        Training tokens D [1].

    Returns
    -------
    numeric
        Training compute [FLOP].

    .. math:: C = 6 N D
    """
    return 6 * params * tokens


@formula(reference=NARAYANAN + ", eq. (3) and Appendix",
         domain={"batch_size": ">0", "seq_len": ">0", "layers": ">=1", "hidden": ">0",
                 "vocab": ">0", "recompute": "[0,1]"},
         symbols=_SYM, result_latex="F")
def narayanan_flops_per_iteration(batch_size, seq_len, layers, hidden, vocab, recompute):
    """FLOPs of one training iteration of a GPT model (Megatron-LM counting).

    Per layer and token the forward pass costs 24h^2 + 4sh; backward twice
    that; full activation recomputation (r = 1) one more forward of every
    layer.  The logit layer costs 6hV per token and is never recomputed.

    Parameters
    ----------
    batch_size : numeric
        Global batch B [1] (sequences).
    seq_len : numeric
        Sequence length s [1].
    layers : numeric
        Transformer layers l [1].
    hidden : numeric
        Hidden size h (MLP width 4h) [1].
    vocab : numeric
        Vocabulary size V [1].
    recompute : numeric
        1 with full activation recomputation, 0 without [1].

    Returns
    -------
    numeric
        FLOPs per iteration [FLOP]; r = 1 gives eq. (3),
        96Bslh^2(1 + s/6h + V/16lh).

    .. math:: F = 24(3 + r) B s l h^2 \\left(1 + \\frac{s}{6h}\\right) + 6 B s h V
    """
    return 24 * (3 + recompute) * batch_size * seq_len * layers * hidden**2 \
        * (1 + seq_len / (6 * hidden)) + 6 * batch_size * seq_len * hidden * vocab


@formula(reference=NARAYANAN + ", eq. (4)",
         domain={"tokens": ">=0", "params": ">=0", "gpus": ">=1",
                 "flops_per_s_per_gpu": ">0"},
         symbols=_SYM, result_latex="T")
def narayanan_training_time(tokens, params, gpus, flops_per_s_per_gpu):
    """End-to-end training time estimate with full recomputation (8 FLOP/param/token).

    Parameters
    ----------
    tokens : numeric
        Training tokens T [1].
    params : numeric
        Parameters P [1].
    gpus : numeric
        GPUs n [1].
    flops_per_s_per_gpu : numeric
        Achieved throughput per GPU X, counted as in eq. (3) [FLOP/s].

    Returns
    -------
    numeric
        Training time [s].

    .. math:: T \\approx \\frac{8 T P}{n X}
    """
    return 8 * tokens * params / (gpus * flops_per_s_per_gpu)


@formula(reference=NARAYANAN + ", s5.1/Appendix (QKV 6h^2, scores+values 4sh, "
         "projection 2h^2 per token); GQA K,V width: Ainslie et al. 2023, arXiv:2305.13245",
         domain={"hidden": ">0", "heads": ">=1", "kv_heads": ">=1", "seq_len": ">0"},
         symbols=_SYM, result_latex="F_{attn}")
def attention_forward_flops_per_token(hidden, heads, kv_heads, seq_len):
    """Forward FLOPs per token of one attention block (non-causal counting).

    QKV projection, the QK^T scores and attention over values (2sh each),
    and the output projection.  A causal kernel that skips masked blocks does
    about half the 4sh; Narayanan's counting (used for MFU) does not halve it.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads [1].
    seq_len : numeric
        Sequence length s [1].

    Returns
    -------
    numeric
        Forward FLOPs per token per layer [FLOP].

    .. math:: F_{attn} = 2\\left(h^2 + 2h^2\\frac{a_{kv}}{a}\\right) + 4 s h + 2h^2
    """
    return 2 * (hidden**2 + 2 * hidden**2 * kv_heads / heads) + 4 * seq_len * hidden \
        + 2 * hidden**2


@formula(reference=NARAYANAN + ", s5.1/Appendix (16h^2 for f = 4h, 2 matrices)",
         domain={"hidden": ">0", "ffn": ">0", "mlp_matrices": ">=1"},
         symbols=_SYM, result_latex="F_{mlp}")
def mlp_forward_flops_per_token(hidden, ffn, mlp_matrices):
    """Forward FLOPs per token of one MLP block (matrix multiplications only).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    ffn : numeric
        MLP intermediate width f (per active expert for MoE) [1].
    mlp_matrices : numeric
        Weight matrices: 2 (GELU) or 3 (SwiGLU) [1].

    Returns
    -------
    numeric
        Forward FLOPs per token per layer [FLOP].

    .. math:: F_{mlp} = 2 n_m h f
    """
    return 2 * mlp_matrices * hidden * ffn


@formula(reference=NARAYANAN + ", s5.1/Appendix (logit layer 2hV per token forward)",
         domain={"hidden": ">0", "vocab": ">0"}, symbols=_SYM, result_latex="F_{logit}")
def logits_forward_flops_per_token(hidden, vocab):
    """Forward FLOPs per token of the output (logit) projection.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    vocab : numeric
        Vocabulary size V [1].

    Returns
    -------
    numeric
        Forward FLOPs per token [FLOP].

    .. math:: F_{logit} = 2 h V
    """
    return 2 * hidden * vocab


@formula(reference="Fedus et al. 2022 (Switch), arXiv:2101.03961 s2.1 (router logits x W_r, "
         "W_r of size h x E); 2 FLOP per multiply-add as in " + NARAYANAN,
         domain={"hidden": ">0", "experts": ">=1"}, symbols=_SYM, result_latex="F_{router}")
def router_forward_flops_per_token(hidden, experts):
    """Forward FLOPs per token of a mixture-of-experts router (gating logits).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    experts : numeric
        Routed experts E [1].

    Returns
    -------
    numeric
        Forward FLOPs per token per MoE layer [FLOP].

    Examples
    --------
    Mixtral 8x7B (h = 4096, E = 8):

    >>> router_forward_flops_per_token(4096, 8)
    65536.0

    .. math:: F_{router} = 2 h E
    """
    return 2 * hidden * experts


@formula(reference=NARAYANAN + ", s5.1/Appendix (QK^T scores 2sh and attention over values "
         "2sh FLOP per token and layer, non-causal counting)",
         domain={"hidden": ">0", "seq_len": ">0"}, symbols=_SYM, result_latex="F_{core}")
def attention_core_forward_flops_per_token(hidden, seq_len):
    """Forward FLOPs per token of the attention core: scores QK^T and scores x V.

    The part of :func:`attention_forward_flops_per_token` that grows with s, and the
    part selective recomputation redoes.

    Parameters
    ----------
    hidden : numeric
        Hidden size h (all heads together) [1].
    seq_len : numeric
        Sequence length s [1].

    Returns
    -------
    numeric
        Forward FLOPs per token per layer [FLOP].

    Examples
    --------
    >>> attention_core_forward_flops_per_token(8192, 8192)
    268435456.0

    .. math:: F_{core} = 4 s h
    """
    return 4 * seq_len * hidden


@formula(reference=NARAYANAN + ", s5.1 (backward pass = 2x forward); " + KAPLAN + " s2.1",
         domain={"forward_flops_per_token": ">=0"}, symbols=_SYM, result_latex="F_{train}")
def training_flops_per_token(forward_flops_per_token):
    """Model FLOPs per token of one training step (forward + backward).

    Parameters
    ----------
    forward_flops_per_token : numeric
        Forward FLOPs per token F [FLOP].

    Returns
    -------
    numeric
        Training FLOPs per token, the numerator of MFU [FLOP].

    .. math:: F_{train} = 3 F
    """
    return 3 * forward_flops_per_token


@formula(reference=PALM + " (hardware FLOPs include rematerialisation); " + NARAYANAN,
         domain={"forward_flops_per_token": ">=0",
                 "recomputed_forward_flops_per_token": ">=0"},
         symbols=_SYM, result_latex="F_{hw}")
def hardware_flops_per_token(forward_flops_per_token, recomputed_forward_flops_per_token):
    """FLOPs per token actually executed: forward, backward and recomputed forward work.

    Parameters
    ----------
    forward_flops_per_token : numeric
        Forward FLOPs per token F [FLOP].
    recomputed_forward_flops_per_token : numeric
        Forward FLOPs per token executed again in the backward pass R (all
        layers' F for full recomputation, the attention core for selective) [FLOP].

    Returns
    -------
    numeric
        Executed FLOPs per token, the numerator of HFU [FLOP].

    .. math:: F_{hw} = 3F + R
    """
    return 3 * forward_flops_per_token + recomputed_forward_flops_per_token


# -- efficiency and time ---------------------------------------------------------

@formula(reference="Empirical saturating fit (not from a paper) to the shape effects in "
         "NVIDIA, Matrix Multiplication Background User's Guide, DU-09799-001 (2023) "
         "ch. 2-3; shape-dependent GEMM efficiency as in Isaev et al. 2023 (Calculon), "
         "doi:10.1145/3581784.3607102",
         domain={"min_dim": ">0", "max_efficiency": "(0,1]", "half_efficiency_dim": ">=0"},
         symbols=_SYM, result_latex=r"\eta_c")
def gemm_efficiency(min_dim, max_efficiency, half_efficiency_dim):
    """Achieved fraction of peak FLOP/s of a GEMM whose smallest dimension is d.

    An empirical, saturating model: small dimensions (thin GEMMs, small
    micro-batches, large TP) fill fewer tiles/waves and have lower arithmetic
    intensity; large ones approach ``max_efficiency``.  ``half_efficiency_dim``
    is the d at which half of it is reached; both are fitted per accelerator
    (catalog), not derived.

    Parameters
    ----------
    min_dim : numeric
        Smallest of the GEMM's M, N, K, d [1].
    max_efficiency : numeric
        Efficiency of very large GEMMs [1].
    half_efficiency_dim : numeric
        Dimension at which half of ``max_efficiency`` is reached, d_1/2 [1].

    Returns
    -------
    numeric
        Fraction of peak FLOP/s [1].

    .. math:: \\eta_c = \\eta_{max} \\frac{d}{d + d_{1/2}}
    """
    return max_efficiency * (min_dim / (min_dim + half_efficiency_dim))


@formula(reference="Overhead-bound regime: H. He, 'Making Deep Learning Go Brrrr From First "
         "Principles' (2022, horace.io/brrr_intro.html), PyTorch CUDA semantics "
         "(asynchronous execution); smooth maximum as a generalised (power) mean, exponent "
         "fitted to vTrain single-node runs (Bang et al., MICRO'24, arXiv:2312.12391)",
         domain={"device_time_s": ">=0", "host_time_s": ">=0", "overlap_exponent": ">=1"},
         symbols=_SYM, result_latex="t")
def host_bound_time(device_time_s, host_time_s, overlap_exponent):
    """Time of work the host launches asynchronously and the device executes.

    The host enqueues kernels ahead of the device, so the slower of the two sets the
    pace: device time for large kernels, host (launch and Python) time for small ones.
    Near the crossover neither hides the other completely; a power mean of exponent
    k blends the two (k -> infinity is the hard maximum).

    Parameters
    ----------
    device_time_s : numeric
        Device (GPU) busy time of the work, t_d [s].
    host_time_s : numeric
        Host time to issue the work, t_h [s].
    overlap_exponent : numeric
        Sharpness k of the smooth maximum [1].

    Returns
    -------
    numeric
        Elapsed time [s].

    Examples
    --------
    >>> round(host_bound_time(3e-3, 1e-3, 4.0) * 1e3, 4)
    3.0092
    >>> round(host_bound_time(1e-3, 1e-3, 4.0) * 1e3, 4)
    1.1892

    .. math:: t = \\left(t_d^k + t_h^k\\right)^{1/k}
    """
    return (device_time_s**overlap_exponent + host_time_s**overlap_exponent) ** (
        1 / overlap_exponent)


@formula(reference="The excess of formulas.compute.host_bound_time over the device time; "
         "H. He, 'Making Deep Learning Go Brrrr From First Principles' (2022, "
         "horace.io/brrr_intro.html); log1p/expm1 form: N. J. Higham, Accuracy and Stability "
         "of Numerical Algorithms (2nd ed., SIAM 2002), s1.14.1",
         domain={"device_time_s": ">0", "host_time_s": ">=0", "overlap_exponent": ">=1"},
         symbols=_SYM, result_latex="t_x")
def host_bound_excess_time(device_time_s, host_time_s, overlap_exponent):
    """Time the host's launches add to the device's work: the smooth maximum of
    :func:`host_bound_time` less the device time.

    Written as ``t_d * expm1(log1p((t_h/t_d)^k) / k)``, which keeps its significant digits
    when the host time is a tiny share of the device time (a whole-iteration CUDA graph's
    replay is ~1e-4 of it); the difference of the two times loses them to rounding (at
    t_h/t_d = 1e-5 and k = 3 it gives 4.4e-16 t_d for 3.3e-16 t_d, at 1e-6 it gives 0).

    Parameters
    ----------
    device_time_s : numeric
        Device (GPU) busy time of the work, t_d [s].
    host_time_s : numeric
        Host time to issue the work, t_h [s].
    overlap_exponent : numeric
        Sharpness k of the smooth maximum [1].

    Returns
    -------
    numeric
        Host time not hidden behind the device's work [s]; 0 when ``host_time_s`` is 0.

    Examples
    --------
    >>> round(host_bound_excess_time(3e-3, 1e-3, 4.0) * 1e6, 1)
    9.2
    >>> f"{host_bound_excess_time(1.0, 1e-5, 3.0):.4g}"
    '3.333e-16'

    .. math:: t_x = t_d\\left[\\left(1 + (t_h/t_d)^k\\right)^{1/k} - 1\\right]
    """
    return device_time_s * expm1(
        log1p((host_time_s / device_time_s) ** overlap_exponent) / overlap_exponent)


@formula(reference="Williams et al. 2009, Commun. ACM 52(4):65-76, doi:10.1145/1498765.1498785",
         domain={"flops": ">=0", "bytes_moved": ">=0", "peak_flops_per_s": ">0",
                 "compute_efficiency": "(0,1]", "memory_bandwidth_bytes_per_s": ">0",
                 "memory_efficiency": "(0,1]"},
         symbols=_SYM, result_latex="t")
def roofline_time(flops, bytes_moved, peak_flops_per_s, compute_efficiency,
                  memory_bandwidth_bytes_per_s, memory_efficiency):
    """Time of an operation bound by either achieved compute or achieved memory bandwidth.

    Parameters
    ----------
    flops : numeric
        Work W [FLOP].
    bytes_moved : numeric
        Memory traffic to/from HBM Q [B].
    peak_flops_per_s : numeric
        Peak throughput at the operation's precision P [FLOP/s].
    compute_efficiency : numeric
        Achieved fraction of peak FLOP/s [1].
    memory_bandwidth_bytes_per_s : numeric
        Peak memory bandwidth beta [B/s].
    memory_efficiency : numeric
        Achieved fraction of peak bandwidth [1].

    Returns
    -------
    numeric
        Operation time [s].

    .. math:: t = \\max\\left(\\frac{W}{P\\eta_c}, \\frac{Q}{\\beta \\eta_m}\\right)
    """
    return maximum(flops / (peak_flops_per_s * compute_efficiency),
                   bytes_moved / (memory_bandwidth_bytes_per_s * memory_efficiency))


@formula(reference="Williams et al. 2009, Commun. ACM 52(4):65-76, doi:10.1145/1498765.1498785 "
         "(the memory roof alone)",
         domain={"bytes_moved": ">=0", "memory_bandwidth_bytes_per_s": ">0",
                 "memory_efficiency": "(0,1]"},
         symbols=_SYM, result_latex="t")
def memory_bound_time(bytes_moved, memory_bandwidth_bytes_per_s, memory_efficiency):
    """Time of an operation limited by memory bandwidth (element-wise ops, optimizer step).

    Parameters
    ----------
    bytes_moved : numeric
        Memory traffic to/from HBM Q [B].
    memory_bandwidth_bytes_per_s : numeric
        Peak memory bandwidth beta [B/s].
    memory_efficiency : numeric
        Achieved fraction of peak bandwidth [1].

    Returns
    -------
    numeric
        Operation time [s].

    Examples
    --------
    1 GB at 80 % of 3.35 TB/s (H100 SXM):

    >>> round(memory_bound_time(1e9, 3.35e12, 0.8) * 1e6, 1)
    373.1

    .. math:: t = \\frac{Q}{\\beta \\eta_m}
    """
    return bytes_moved / (memory_bandwidth_bytes_per_s * memory_efficiency)


@formula(reference="Williams et al. 2009, doi:10.1145/1498765.1498785 (roofline); shape "
         "efficiency: NVIDIA, Matrix Multiplication Background User's Guide, DU-09799-001 "
         "(2023) ch. 2-3; 2 FLOP per multiply-add",
         domain={"rows": ">0", "cols": ">0", "inner": ">0", "min_dim": ">0",
                 "bytes_per_element": ">0", "peak_flops_per_s": ">0",
                 "max_efficiency": "(0,1]", "half_efficiency_dim": ">=0",
                 "memory_bandwidth_bytes_per_s": ">0", "memory_efficiency": "(0,1]"},
         symbols=_SYM, result_latex="t_{GEMM}")
def gemm_time(rows, cols, inner, min_dim, bytes_per_element, peak_flops_per_s, max_efficiency,
              half_efficiency_dim, memory_bandwidth_bytes_per_s, memory_efficiency):
    """Roofline time of one GEMM (m x k times k x n) at its shape's efficiency.

    Work 2mnk; traffic: both operands read and the product written once; compute
    efficiency :func:`gemm_efficiency` of the dimension that limits the tiling,
    normally min(m, n, k) (for the grouped GEMMs of MoE experts, the tokens one
    expert receives).

    Parameters
    ----------
    rows : numeric
        Rows m of the left operand and of the product (tokens) [1].
    cols : numeric
        Columns n of the right operand and of the product [1].
    inner : numeric
        Inner (reduction) dimension k [1].
    min_dim : numeric
        Dimension that sets the efficiency, d [1].
    bytes_per_element : numeric
        Bytes per element of the operands e [B].
    peak_flops_per_s : numeric
        Peak throughput at the GEMM's precision P [FLOP/s].
    max_efficiency : numeric
        Efficiency of very large GEMMs [1].
    half_efficiency_dim : numeric
        Dimension at which half of ``max_efficiency`` is reached, d_1/2 [1].
    memory_bandwidth_bytes_per_s : numeric
        Peak memory bandwidth beta [B/s].
    memory_efficiency : numeric
        Achieved fraction of peak bandwidth [1].

    Returns
    -------
    numeric
        GEMM time [s].

    Examples
    --------
    An 8192-cube bf16 GEMM on an H100 SXM (989 TFLOP/s, eta_max 0.8, d_1/2 = 128):

    >>> round(gemm_time(8192, 8192, 8192, 8192, 2, 989e12, 0.8, 128, 3.35e12, 0.8) * 1e3, 4)
    1.4114

    .. math::
        t = \\max\\left(\\frac{2mnk}{P \\eta_c(d)},
            \\frac{e (mk + kn + mn)}{\\beta \\eta_m}\\right)
    """
    efficiency = gemm_efficiency(min_dim, max_efficiency, half_efficiency_dim)
    moved = bytes_per_element * (rows * inner + inner * cols + rows * cols)
    return roofline_time(2 * rows * cols * inner, moved, peak_flops_per_s, efficiency,
                         memory_bandwidth_bytes_per_s, memory_efficiency)


@formula(reference="Amdahl over a recipe's GEMM FLOPs: NVIDIA, 'Pretraining Large Language "
         "Models with NVFP4', arXiv:2509.25149 (2025) s4 (about 15 % of the linear layers "
         "stay in BF16); the time per FLOP of each share at its own peak and efficiency",
         domain={"low_precision_share": "(0,1]", "low_peak_flops_per_s": ">0",
                 "high_peak_flops_per_s": ">0", "low_efficiency": "(0,1]",
                 "high_efficiency": "(0,1]"},
         symbols={"low_precision_share": "s", "low_peak_flops_per_s": "P_{lo}",
                  "high_peak_flops_per_s": "P_{hi}", "low_efficiency": r"\eta_{lo}",
                  "high_efficiency": r"\eta_{hi}"},
         result_latex="P_{mix}")
def mixed_precision_peak(low_precision_share, low_peak_flops_per_s, high_peak_flops_per_s,
                         low_efficiency, high_efficiency):
    """Peak of a GEMM mix in which a share s of the FLOPs runs at a low precision and the
    rest in BF16, stated at the low precision's efficiency.

    The mix takes s/(P_lo eta_lo) + (1-s)/(P_hi eta_hi) seconds per FLOP; the result is the
    peak that, at efficiency eta_lo, takes the same time, so a GEMM timed with it and
    eta_lo(d) costs what its low- and high-precision shares cost together.

    Parameters
    ----------
    low_precision_share : numeric
        Share s of the GEMM FLOPs at the low precision [1].
    low_peak_flops_per_s : numeric
        Dense peak at the low precision P_lo [FLOP/s].
    high_peak_flops_per_s : numeric
        Dense BF16 peak P_hi [FLOP/s].
    low_efficiency : numeric
        Large-GEMM efficiency at the low precision eta_lo [1].
    high_efficiency : numeric
        Large-GEMM efficiency in BF16 eta_hi [1].

    Returns
    -------
    numeric
        Peak of the mix at efficiency eta_lo [FLOP/s].

    Examples
    --------
    NVFP4 on a GB300 (15 PFLOP/s FP4 at 0.70, 2.5 PFLOP/s BF16 at 0.65), 85 % of the FLOPs
    in FP4: the 15 % left in BF16 take more time than the rest.

    >>> round(mixed_precision_peak(0.85, 15e15, 2.5e15, 0.70, 0.65) / 1e15, 3)
    8.245
    >>> mixed_precision_peak(1.0, 15e15, 2.5e15, 0.70, 0.65) / 1e15
    15.0

    .. math::
        P_{mix} = \\left(\frac{s}{P_{lo}} + \frac{(1-s)\\,\\eta_{lo}}{P_{hi}\\,\\eta_{hi}}
            \right)^{-1}
    """
    return 1 / (low_precision_share / low_peak_flops_per_s
                + (1 - low_precision_share) * low_efficiency
                / (high_peak_flops_per_s * high_efficiency))


@formula(reference="Q is h wide, K and V h a_kv/a wide each: Ainslie et al. 2023 (GQA), "
         "arXiv:2305.13245 s2.2; Shoeybi et al. 2019, arXiv:1909.08053 s3 (column-parallel "
         "QKV projection split over t ranks)",
         domain={"hidden": ">0", "heads": ">=1", "kv_heads": ">=1", "tp": ">=1"},
         symbols=_SYM, result_latex="n_{qkv}")
def qkv_projection_width(hidden, heads, kv_heads, tp):
    """Output width of one tensor-parallel rank's fused QKV projection.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads [1].
    tp : numeric
        Tensor-parallel ranks t [1].

    Returns
    -------
    numeric
        Columns of the rank's QKV GEMM [1].

    Examples
    --------
    Llama 3 70B (h = 8192, 64 heads, 8 KV heads) on TP 8:

    >>> qkv_projection_width(8192, 64, 8, 8)
    1280.0

    .. math:: n_{qkv} = \\frac{h (1 + 2 a_{kv}/a)}{t}
    """
    return hidden * (1 + 2 * (kv_heads / heads)) / tp


@formula(reference="Balanced top-k routing (capacity factor 1): Fedus et al. 2022 (Switch), "
         "arXiv:2101.03961 s2.2; expert parallelism gathers the tokens of the EP group: "
         "Lepikhin et al. 2020 (GShard), arXiv:2006.16668",
         domain={"tokens": ">0", "ep": ">=1", "experts_per_token": ">=1", "experts": ">=1"},
         symbols=_SYM_MB, result_latex="t_e")
def tokens_per_expert(tokens, ep, experts_per_token, experts):
    """Tokens one expert processes when each of ``ep`` ranks routes ``tokens`` tokens.

    Parameters
    ----------
    tokens : numeric
        Tokens per rank and micro-batch t [1].
    ep : numeric
        Expert-parallel ranks exchanging tokens [1].
    experts_per_token : numeric
        Routed experts per token k [1].
    experts : numeric
        Routed experts E [1].

    Returns
    -------
    numeric
        Tokens per expert, the M of its GEMMs [1].

    Examples
    --------
    Mixtral 8x7B (top-2 of 8) with 4096 tokens per rank on EP 8:

    >>> tokens_per_expert(4096, 8, 2, 8)
    8192.0

    .. math:: t_e = \\frac{t \\, e_p k}{E}
    """
    return tokens * ep * experts_per_token / experts


@formula(reference="Token permutation of expert parallelism: each routed copy of a token is "
         "gathered into its expert's contiguous block before the expert GEMMs and scattered "
         "back (weighted) after them - memory-bound copies (Megatron-Core MoE token "
         "dispatcher permute/unpermute; Gale et al. 2023 MegaBlocks, arXiv:2211.15841 s3; "
         "Rajbhandari et al. 2022 DeepSpeed-MoE, arXiv:2201.05596 s5.3)",
         domain={"tokens": ">=0", "experts_per_token": ">=1", "hidden": ">0",
                 "bytes_per_element": ">0"},
         symbols={**_SYM_MB, "experts_per_token": "k", "bytes_per_element": "e"},
         result_latex="S_{perm}")
def moe_permutation_bytes(tokens, experts_per_token, hidden, bytes_per_element):
    """HBM bytes of one MoE layer's token permutation and unpermutation (forward).

    Permutation reads each token's h-vector once per routed expert and writes the copy;
    unpermutation reads the k expert outputs and writes their weighted sum: 4 t k h
    elements moved.

    Parameters
    ----------
    tokens : numeric
        Tokens of the rank's micro-batch t [1].
    experts_per_token : numeric
        Routed experts per token k [1].
    hidden : numeric
        Hidden size h [1].
    bytes_per_element : numeric
        Bytes per activation element e [B].

    Returns
    -------
    numeric
        Bytes read and written [B].

    Examples
    --------
    >>> moe_permutation_bytes(4096, 8, 7168, 2)
    1879048192.0

    .. math:: S_{perm} = 4\\, e\\, t\\, k\\, h
    """
    return 4 * bytes_per_element * tokens * experts_per_token * hidden


@formula(reference="Unfused attention as two batched GEMMs of inner dimension h/a: Vaswani et "
         "al. 2017, arXiv:1706.03762 s3.2.1; fused kernels below large-GEMM efficiency: Dao "
         "2023 (FlashAttention-2), arXiv:2307.08691 s4.1 (50-73 % of peak vs. GEMM)",
         domain={"tokens": ">0", "head_dim": ">0", "seq_len": ">0", "unfused": "[0,1]",
                 "fused_efficiency_factor": "(0,1]", "max_efficiency": "(0,1]",
                 "half_efficiency_dim": ">=0"},
         symbols=_SYM_MB, result_latex=r"\eta_{core}")
def attention_core_efficiency(tokens, head_dim, seq_len, unfused, fused_efficiency_factor,
                              max_efficiency, half_efficiency_dim):
    """Achieved fraction of peak FLOP/s of the attention core (scores and values).

    Without flash attention (u = 1) the core runs as batched GEMMs whose smallest
    dimension is the head size; a fused (flash) kernel (u = 0) runs at a fixed
    fraction of the efficiency of a GEMM as large as its tiles, min(t, s).

    Parameters
    ----------
    tokens : numeric
        Query tokens per rank and micro-batch t [1].
    head_dim : numeric
        Head size h/a, d_h [1].
    seq_len : numeric
        Sequence length s [1].
    unfused : numeric
        1 without flash attention (scores materialised), 0 with it [1].
    fused_efficiency_factor : numeric
        Efficiency of fused attention relative to GEMMs [1].
    max_efficiency : numeric
        Efficiency of very large GEMMs [1].
    half_efficiency_dim : numeric
        Dimension at which half of ``max_efficiency`` is reached, d_1/2 [1].

    Returns
    -------
    numeric
        Fraction of peak FLOP/s [1].

    Examples
    --------
    >>> round(attention_core_efficiency(8192, 128, 8192, 1, 0.6, 0.8, 128), 4)
    0.4
    >>> round(attention_core_efficiency(8192, 128, 8192, 0, 0.6, 0.8, 128), 4)
    0.4726

    .. math::
        \\eta_{core} = u\\,\\eta_c(\\min(t, d_h))
            + (1 - u)\\,\\eta_{fa}\\,\\eta_c(\\min(t, s))
    """
    return unfused * gemm_efficiency(minimum(tokens, head_dim), max_efficiency,
                                     half_efficiency_dim) \
        + (1 - unfused) * fused_efficiency_factor * gemm_efficiency(
            minimum(tokens, seq_len), max_efficiency, half_efficiency_dim)


FA2 = "Dao 2023 (FlashAttention-2), arXiv:2307.08691"
FA3 = "Shah et al. 2024 (FlashAttention-3), arXiv:2407.08608"


@formula(reference="One query tile per thread block, its key/value tiles streamed through a "
         "software pipeline: " + FA2 + " s3.1 (Algorithm 1, tiles B_c = 128 keys) and s3.2 "
         "(parallelism over query blocks); " + FA3 + " s3.1-3.2 (producer/consumer warps, "
         "two-stage pipelining); causal kernels skip the masked tiles (FA2 s3.1.1)",
         domain={"keys": ">0", "fill_keys": ">=0"},
         symbols={"keys": "k", "fill_keys": "k_f"}, result_latex=r"\eta_{fill}")
def attention_pipeline_efficiency(keys, fill_keys):
    """Share of a fused attention kernel's time spent on key/value tiles.

    A fused (flash) kernel gives each tile of queries to one thread block, which loads
    the query tile and fills its load/compute pipeline before the first key tile, and
    rescales and writes the output after the last one: a fixed cost of about c key
    tiles per query tile, paid again for every query tile.  With k keys per query in
    capplan's counting (every query against all keys; a causal kernel visits k/2 on
    average) and key tiles of B_c keys, the useful share is k / (k + k_f) with
    k_f = 2 c B_c.  Short sequences pay it most: at k_f = 768 (c = 3, B_c = 128) a
    4,096-token sequence keeps 84 %, 131,072 tokens 99 %.

    Parameters
    ----------
    keys : numeric
        Keys each query attends to, k (the sequence, or a window's count) [1].
    fill_keys : numeric
        The kernel's fixed cost per query tile in keys of the same counting, k_f [1].

    Returns
    -------
    numeric
        Share of the kernel's time on key/value tiles [1].

    Examples
    --------
    >>> round(attention_pipeline_efficiency(4096, 768), 4)
    0.8421
    >>> attention_pipeline_efficiency(4096, 0)
    1.0

    .. math:: \\eta_{fill} = \\frac{k}{k + k_f}
    """
    return keys / (keys + fill_keys)


FA4 = "Zadouri et al. 2026 (FlashAttention-4), arXiv:2603.05451"


@formula(reference="One exponential per query-key score in the softmax: " + FA3 + " s3.1 "
         "(H100 SXM5: 989 TFLOP/s of BF16 matmul against 3.9 TFLOP/s of special functions, "
         "512 matmul FLOPs per exponential at head size 128); " + FA4 + " s2-3 (B200: 8,192 "
         "BF16 MMA FLOPs and 16 MUFU exponentials per clock and SM)",
         domain={"peak_flops_per_s": ">0", "exp_ops_per_s": ">0", "head_dim": ">0",
                 "v_head_dim": ">0"},
         symbols={"peak_flops_per_s": "P", "exp_ops_per_s": "R", "head_dim": "d_h",
                  "v_head_dim": "d_v"}, result_latex=r"\rho")
def attention_exp_time_ratio(peak_flops_per_s, exp_ops_per_s, head_dim, v_head_dim):
    """Time of the softmax's exponentials over that of the attention core's matmuls, each
    unit at its peak, in one forward pass.

    Each score costs 2 (d_h + d_v) matmul FLOPs (q k^T and the weighted sum of the values)
    and one exponential on the special-function unit; a causal kernel skips the same
    masked scores for both, so the ratio holds for any mask.

    Parameters
    ----------
    peak_flops_per_s : numeric
        Peak matmul rate of the attention core's precision, P [FLOP/s].
    exp_ops_per_s : numeric
        Peak rate of the exponential unit, R [1/s].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].

    Returns
    -------
    numeric
        rho [1].

    Examples
    --------
    H100 SXM and B200 at 128-wide heads, B200 at 64-wide heads (gpt-oss):

    >>> round(attention_exp_time_ratio(989.4e12, 3.865e12, 128, 128), 3)
    0.5
    >>> round(attention_exp_time_ratio(2.25e15, 4.395e12, 128, 128), 3)
    1.0
    >>> round(attention_exp_time_ratio(2.25e15, 4.395e12, 64, 64), 3)
    2.0

    .. math:: \rho = \frac{P}{2 R (d_h + d_v)}
    """
    return peak_flops_per_s / (2 * exp_ops_per_s * (head_dim + v_head_dim))


@formula(reference=FA3 + " s3.1 (the softmax's exponentials overlap the matmuls only in part: "
         "ping-pong scheduling of two warpgroups and intra-warpgroup pipelining); " + FA4
         + " s2-3 (B200: at head size 128 the forward's exponentials take as long as its "
         "matmuls); NVIDIA Technical Blog 'Making Softmax More Efficient with NVIDIA "
         "Blackwell Ultra' (2026): twice the MUFU.EX2 throughput speeds attention up; "
         "backward recomputes P = exp(S - L), one exponential per score beside twice the "
         "forward's matmul work: " + FA2 + " Algorithm 2; smooth maximum as a power mean, "
         "as :func:`host_bound_time`",
         domain={"exp_time_ratio": ">=0", "overlap_exponent": ">=1"},
         symbols={"exp_time_ratio": r"\rho", "overlap_exponent": "k_e"},
         result_latex=r"g_{e}")
def fused_attention_slowdown(exp_time_ratio, overlap_exponent):
    """Time of a fused attention kernel's forward and backward over that of their matmuls
    alone, when its softmax's exponentials compete for time.

    The forward's matmuls take t_m and its exponentials rho t_m (:func:`attention_exp_time_
    ratio`), both at the share of their unit's peak the kernel reaches; the backward
    recomputes the exponentials once beside 2 t_m of matmuls.  The kernel overlaps the two
    units in part: each pass takes the power mean of exponent k_e of its two times
    (k_e -> infinity: the slower unit alone).  Forward and backward together take g_e
    times the 3 t_m of their matmuls, so a run model that times the backward as twice the
    forward (:func:`training_pass_time`) scales the core's matmul time by g_e.  Where the
    exponential unit is fast (rho << 1: A100, Hopper at large heads) g_e is 1; Blackwell's
    BF16 matmuls are 2.25x Hopper's on the same 16 exponentials per clock and SM, so there
    small heads wait for the softmax.

    Parameters
    ----------
    exp_time_ratio : numeric
        Exponential over matmul time of the forward, rho [1].
    overlap_exponent : numeric
        Sharpness k_e of the smooth maximum [1].

    Returns
    -------
    numeric
        g_e >= 1 [1].

    Examples
    --------
    >>> round(fused_attention_slowdown(0.0, 10.0), 6)
    1.0
    >>> round(fused_attention_slowdown(1.0, 3.0), 4)
    1.1133
    >>> round(fused_attention_slowdown(2.0, 10.0), 4)
    1.3812

    .. math:: g_e = \frac{(1 + \rho^{k_e})^{1/k_e} + (2^{k_e} + \rho^{k_e})^{1/k_e}}{3}
    """
    # each power mean scaled by its larger term: no overflow at large k or rho
    forward = maximum(exp_time_ratio, 1.0)
    backward = maximum(exp_time_ratio, 2.0)
    return (forward * ((1 / forward)**overlap_exponent
                       + (exp_time_ratio / forward)**overlap_exponent) ** (1 / overlap_exponent)
            + backward * ((2 / backward)**overlap_exponent
                          + (exp_time_ratio / backward)**overlap_exponent)
            ** (1 / overlap_exponent)) / 3


@formula(reference="A fused (flash) attention kernel exists only for the variants it was "
         "written for; others run the unfused path (Transformer Engine DotProductAttention "
         "backend selection, docs.nvidia.com/deeplearning/transformer-engine, 'attention "
         "backends': a configuration no fused backend supports falls back to "
         "UnfusedDotProductAttention); head sizes up to 256: " + FA2 + " s3, " + FA3
         + "; learnable sinks: " + "OpenAI 2025, gpt-oss model card, arXiv:2508.10925 s2.1"
         + "; attention-logit soft-capping: Gemma Team 2024, arXiv:2408.00118 s2 "
         "(Megatron-Bridge runs it unfused: NVIDIA-NeMo/Megatron-Bridge@5776a6d90b "
         "src/megatron/bridge/models/gemma/gemma2_provider.py, Gemma2DotProductAttention)",
         domain={"sinks": "[0,1]", "fused_sinks": "[0,1]", "head_dim": ">0",
                 "v_head_dim": ">0", "fused_head_dim_max": ">0", "softcap": "[0,1]",
                 "fused_softcap": "[0,1]"},
         symbols={"sinks": "z", "fused_sinks": "z_f", "head_dim": "d_h", "v_head_dim": "d_v",
                  "fused_head_dim_max": r"d_{max}", "softcap": r"\kappa",
                  "fused_softcap": r"\kappa_f"},
         result_latex="u_k")
def attention_kernel_fallback(sinks, fused_sinks, head_dim, v_head_dim, fused_head_dim_max,
                              softcap=0, fused_softcap=1):
    """1 when the stack has no fused kernel for the model's attention variant, else 0.

    Softmax with learnable sinks (an extra logit per head in the denominator) and logits
    soft-capped by tanh before the softmax (Gemma 2) each need a kernel that implements
    them; heads larger than the kernel's largest head size do not fit its tiles.  Any of
    these sends the core to the unfused path (scores in HBM).  Head sizes are integers, so
    the indicator min(1, max(0, d_max + 1 - d)) is exact.

    Parameters
    ----------
    sinks : numeric
        1 if the model's softmax has learnable sinks, z [1].
    fused_sinks : numeric
        1 if the stack's fused kernel implements sinks, z_f [1].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    fused_head_dim_max : numeric
        Largest head size the fused kernel supports, d_max [1].
    softcap : numeric
        1 if the model soft-caps its attention logits, kappa [1].
    fused_softcap : numeric
        1 if the stack's fused kernel soft-caps them, kappa_f [1].

    Returns
    -------
    numeric
        1: unfused path, 0: fused kernel [1].

    Examples
    --------
    Sinks without a sink kernel, with one, a 320-wide head (kernels stop at 256), and
    Gemma 2's soft-capped logits on a kernel without soft-capping:

    >>> float(attention_kernel_fallback(1, 0, 64, 64, 256))
    1.0
    >>> float(attention_kernel_fallback(1, 1, 64, 64, 256))
    0.0
    >>> float(attention_kernel_fallback(0, 0, 320, 320, 256))
    1.0
    >>> float(attention_kernel_fallback(0, 0, 256, 256, 256, 1, 0))
    1.0

    .. math:: u_k = 1 - (1 - z (1 - z_f))(1 - \\kappa (1 - \\kappa_f))\\,
        \\min(1, \\max(0, d_{max} + 1 - \\max(d_h, d_v)))
    """
    fits = minimum(1, maximum(0, fused_head_dim_max + 1 - maximum(head_dim, v_head_dim)))
    return 1 - (1 - sinks * (1 - fused_sinks)) * (1 - softcap * (1 - fused_softcap)) * fits


@formula(reference="Fused attention kernels are compiled for a set of head sizes and pad "
         "the others up to the next (" + FA2 + ": head dimensions in steps of 32 up to 256; "
         + FA3 + ": 64, 96, 128, 192, 256, and 192 x 128 for MLA's q/k and v heads); a "
         "kernel without separate q/k and v sizes pads the smaller to the larger "
         "(DeepSeek-AI 2024, DeepSeek-V2, arXiv:2405.04434 s2.1: d_h + d_h^R = 192 q/k, "
         "128 v)",
         domain={"head_dim": ">0", "v_head_dim": ">0", "granule": ">=1",
                 "split_head_dims": "[0,1]"},
         symbols={"head_dim": "d_h", "v_head_dim": "d_v", "granule": "g",
                  "split_head_dims": "s_p"},
         result_latex=r"\eta_{pad}")
def attention_head_padding_efficiency(head_dim, v_head_dim, granule, split_head_dims):
    """Useful share of a fused attention kernel's work after head-size padding.

    The kernel computes q k^T over d_h' and p v over d_v', each padded up to a multiple
    of its head-size granule g; a kernel without separate q/k and v sizes (s_p = 0) runs
    both at max(d_h, d_v).

    Parameters
    ----------
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    granule : numeric
        Head-size step of the kernel's compiled tiles, g [1].
    split_head_dims : numeric
        1 if the kernel takes separate q/k and v head sizes, s_p [1].

    Returns
    -------
    numeric
        Useful share of the kernel's FLOPs [1].

    Examples
    --------
    MLA's 192/128 heads: native on a split kernel, padded to 192/192 on one without it;
    a head of 80 in steps of 64 runs as 128:

    >>> attention_head_padding_efficiency(192, 128, 32, 1)
    1.0
    >>> round(attention_head_padding_efficiency(192, 128, 32, 0), 4)
    0.8333
    >>> attention_head_padding_efficiency(80, 80, 64, 1)
    0.625

    .. math:: \\eta_{pad} = \\frac{d_h + d_v}{g \\lceil d_h'/g \\rceil + g \\lceil d_v'/g \\rceil},
        \\quad d' = s_p\\, d + (1 - s_p) \\max(d_h, d_v)
    """
    widest = maximum(head_dim, v_head_dim)
    q = split_head_dims * head_dim + (1 - split_head_dims) * widest
    v = split_head_dims * v_head_dim + (1 - split_head_dims) * widest
    return (head_dim + v_head_dim) / (granule * ceil(q / granule) + granule * ceil(v / granule))


@formula(reference="Dao et al. 2022 (FlashAttention), arXiv:2205.14135 s3.2 (Q, K, V read and "
         "O written once when the scores stay on chip); column-parallel heads: Shoeybi et "
         "al. 2019, arXiv:1909.08053 s3",
         domain={"tokens": ">0", "hidden": ">0", "tp": ">=1", "bytes_per_element": ">0"},
         symbols=_SYM_MB, result_latex="Q_{core}")
def attention_core_bytes(tokens, hidden, tp, bytes_per_element):
    """HBM traffic of the attention core of one rank: Q, K, V read, output written.

    K and V are counted at the query width h (an upper bound under GQA).

    Parameters
    ----------
    tokens : numeric
        Tokens per rank and micro-batch t [1].
    hidden : numeric
        Hidden size h [1].
    tp : numeric
        Tensor-parallel ranks t_p (each holds a/t_p heads) [1].
    bytes_per_element : numeric
        Bytes per activation element e [B].

    Returns
    -------
    numeric
        Bytes moved per layer forward [B].

    Examples
    --------
    >>> attention_core_bytes(4096, 8192, 8, 2)
    33554432.0

    .. math:: Q_{core} = \\frac{4 e t h}{t_p}
    """
    return bytes_per_element * tokens * (4 * hidden / tp)


@formula(reference="Korthikanti et al. 2022, arXiv:2205.05198 s4.1 (softmax output 2as^2b, "
         "dropout mask as^2b, dropout output 2as^2b bytes per layer, 16-bit activations)",
         domain={"seq_len": ">0", "micro_batch": ">0", "heads": ">=1", "tp": ">=1",
                 "cp": ">=1"},
         symbols=_SYM, result_latex="Q_{scores}")
def attention_scores_bytes(seq_len, micro_batch, heads, tp, cp):
    """HBM traffic of the materialised s x s attention scores (attention without flash).

    Softmax output, dropout mask and dropout output, 5 a s^2 b bytes per layer in
    Korthikanti's accounting, are each written once and read once: 10 a s^2 b.  Each
    of t_p tensor-parallel ranks holds a/t_p heads; each of c context-parallel ranks
    s/c query rows against all s keys.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    heads : numeric
        Attention heads a [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    cp : numeric
        Context-parallel ranks c [1].

    Returns
    -------
    numeric
        Bytes moved per layer forward on one rank [B].

    Examples
    --------
    GPT-3 175B (96 heads, s = 2048, b = 1) on TP 8:

    >>> attention_scores_bytes(2048, 1, 96, 8, 1)
    503316480.0

    .. math:: Q_{scores} = \\frac{10\\, a s^2 b}{t_p c}
    """
    return 10 * (heads / tp) * (seq_len / cp) * seq_len * micro_batch


@formula(reference="Gemma Team 2024, 'Gemma 2', arXiv:2408.00118 s2 (logits soft-capped "
         "by cap * tanh(logits / cap) before the softmax); its unfused form: "
         "NVIDIA-NeMo/Megatron-Bridge@5776a6d90b src/megatron/bridge/models/gemma/"
         "gemma2_provider.py (logit_softcapping on the baddbmm scores, then the softmax)",
         domain={"seq_len": ">0", "micro_batch": ">0", "heads": ">=1", "tp": ">=1",
                 "cp": ">=1"},
         symbols=_SYM, result_latex="Q_{cap}")
def softcap_scores_bytes(seq_len, micro_batch, heads, tp, cp):
    """HBM traffic of soft-capping the materialised s x s scores (unfused attention).

    The tanh pass reads the raw 16-bit scores and writes the capped ones, 4 a s^2 b bytes
    a layer forward, beside :func:`attention_scores_bytes`; split over tensor-parallel
    heads and context-parallel query rows as the scores are.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    heads : numeric
        Attention heads a [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    cp : numeric
        Context-parallel ranks c [1].

    Returns
    -------
    numeric
        Bytes moved per layer forward on one rank [B].

    Examples
    --------
    Gemma 2 9B (16 heads, s = 8192, b = 1) on one rank:

    >>> softcap_scores_bytes(8192, 1, 16, 1, 1)
    4294967296.0

    .. math:: Q_{cap} = \\frac{4\\, a s^2 b}{t_p c}
    """
    return 4 * (heads / tp) * (seq_len / cp) * seq_len * micro_batch


@formula(reference="Derived (no published figure) from the element-wise op list of a "
         "Megatron-LM GPT layer, Korthikanti et al. 2022, arXiv:2205.05198 s4.1 (norms, "
         "bias, dropout, residual, activation); sequence parallelism splits the h-wide ops: "
         "ibid. s4.2.2",
         domain={"hidden": ">0", "ffn": ">=0", "tp": ">=1", "sequence_parallel": "[0,1]",
                 "bytes_per_element": ">0"},
         symbols=_SYM, result_latex="Q_{elem}")
def elementwise_bytes_per_token(hidden, ffn, tp, sequence_parallel, bytes_per_element):
    """HBM traffic per token of one layer's element-wise (memory-bound) forward ops.

    The op list of a Megatron-LM GPT layer (Korthikanti et al. 2022, s4.1), each op
    reading its input once and writing its output once (2 accesses per element):

    * 8 ops on h-wide vectors: input norm, attention-output bias, dropout, residual
      add; post-attention norm, MLP-output bias, dropout, residual add -> 16 h;
    * 2 ops on f-wide vectors: MLP bias and activation (GeLU) -> 4 f.

    Not counted: the residual's second operand, 1-byte dropout masks, and the
    gating product of a SwiGLU MLP (which would add f); sequence parallelism
    splits the h-wide ops over the t TP ranks, tensor parallelism the f-wide ones.
    No source prints these constants; the count above is the derivation.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    ffn : numeric
        MLP width f [1].
    tp : numeric
        Tensor-parallel ranks t [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].
    bytes_per_element : numeric
        Bytes per activation element e [B].

    Returns
    -------
    numeric
        Bytes moved per token and layer forward on one rank [B].

    Examples
    --------
    h = 8192, f = 28672, bf16, TP 8 without and with sequence parallelism:

    >>> elementwise_bytes_per_token(8192, 28672, 8, 0, 2)
    290816.0
    >>> elementwise_bytes_per_token(8192, 28672, 8, 1, 2)
    61440.0

    .. math:: Q_{elem} = e \\left(\\frac{16 h}{1 + \\sigma (t - 1)} + \\frac{4 f}{t}\\right)
    """
    h_wide = ACCESSES_PER_ELEMENT * H_WIDE_ELEMENTWISE_OPS * hidden
    f_wide = ACCESSES_PER_ELEMENT * F_WIDE_ELEMENTWISE_OPS * ffn
    return bytes_per_element * (h_wide / (1 + sequence_parallel * (tp - 1)) + f_wide / tp)


@formula(reference="Derived from the loss kernels' passes over the logits: Megatron-Core "
         "megatron/core/fusions/fused_cross_entropy.py and tensor_parallel/cross_entropy.py "
         "(NVIDIA/Megatron-LM); PyTorch F.cross_entropy (log_softmax + nll_loss); the "
         "passes are memory-bound (Williams et al. 2009, doi:10.1145/1498765.1498785)",
         domain={"tokens": ">=0", "vocab": ">0", "tp": ">=1", "bytes_per_logit": ">=0"},
         symbols={**_SYM_MB, "bytes_per_logit": "e_L"}, result_latex="Q_{loss}")
def cross_entropy_loss_bytes(tokens, vocab, tp, bytes_per_logit):
    """HBM traffic of the cross-entropy loss over one micro-batch's logits, forward and
    backward together.

    The output layer's GEMM writes a logit per token and vocabulary entry; the loss then
    runs memory-bound passes over them: the softmax's maximum, exponentials and sum, the
    normalisation, and in the backward the gradient's scaling and cast. Each pass reads
    and writes every logit, so the traffic is the logits' count times the bytes one
    logit costs over all passes, a property of the loss kernel (the stack's
    ``loss_bytes_per_logit``):

    * unfused vocabulary-parallel loss (Megatron-LM 2021, Megatron-Core without fusion):
      FP32 cast (2 + 4), max (4), subtract (4 + 4), exp (4 + 4), sum (4), divide (4 + 4);
      backward scale (4 + 4) and BF16 cast (4 + 2): 52 B;
    * Megatron-Core's fused loss (``cross_entropy_loss_fusion``, native): the four
      jit-fused kernels move (2 + 4) + (4 + 4) + (4 + 4) + (4 + 2): 28 B;
    * PyTorch eager ``F.cross_entropy`` on FP32 logits: cast (6), log-softmax forward
      (three reads, one write: 16), NLL backward (zero fill: 4), log-softmax backward (16),
      cast back (6): 48 B;
    * one-pass fused kernels (flash-attn's/apex's xentropy, Inductor- or XLA-compiled
      losses): two reads of the 16-bit logits forward, one read and one write backward: 8 B.

    With tensor parallelism each rank holds V/t of the logits (vocabulary-parallel loss).

    Parameters
    ----------
    tokens : numeric
        Tokens of one micro-batch on one rank t [1].
    vocab : numeric
        Vocabulary size V [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    bytes_per_logit : numeric
        HBM bytes one logit costs over the loss's passes, forward and backward e_L [B].

    Returns
    -------
    numeric
        Bytes moved by the loss on one rank, one micro-batch [B].

    Examples
    --------
    Llama 3 8B (V = 128,256), one 8,192-token sequence, TP 1, Megatron-Core's fused loss:

    >>> round(cross_entropy_loss_bytes(8192, 128256, 1, 28) / 1e9, 1)
    29.4

    .. math:: Q_{loss} = e_L \\, t \\, \\frac{V}{t_p}
    """
    return bytes_per_logit * tokens * vocab / tp


@formula(reference="Rajbhandari et al. 2021 (ZeRO-Infinity), arXiv:2104.07857 s5.1/s6 "
         "(activation checkpoints offloaded to CPU memory, transfers overlapped with "
         "compute); asynchronous host offload of activations on a copy stream beside the "
         "compute: Megatron-Core/Transformer Engine CPU offloading (NVIDIA/TransformerEngine "
         "transformer_engine/pytorch/cpu_offload.py, get_cpu_offload_context: 'offloading "
         "... overlapped with computation'); JAX activation offloading through memory kinds "
         "(jax.checkpoint_policies.save_and_offload_only_these_names, as MaxText's remat "
         "policies name tensors '=offload')",
         domain={"copy_bytes": ">=0", "host_bytes_per_s": ">0", "forward_s": ">=0",
                 "backward_s": ">=0"},
         symbols={"copy_bytes": "Q_h", "host_bytes_per_s": r"\beta_h", "forward_s": "t_f",
                  "backward_s": "t_b"}, result_latex="t_{off}")
def offload_exposed_time(copy_bytes, host_bytes_per_s, forward_s, backward_s):
    """Exposed time of one layer's activations kept in host memory, one micro-batch.

    The tensor is copied to the host after the layer's forward and back before its
    backward, each copy on its own stream while the accelerator computes: a copy is hidden
    behind the compute it runs beside (the next layer's forward, the previous layer's
    backward) and only its excess shows.

    Parameters
    ----------
    copy_bytes : numeric
        Bytes offloaded for one layer and micro-batch Q_h [B].
    host_bytes_per_s : numeric
        Device-to-host (and host-to-device) copy bandwidth per accelerator beta_h [B/s].
    forward_s : numeric
        Compute time of one layer's forward pass the outgoing copy overlaps t_f [s].
    backward_s : numeric
        Compute time of one layer's backward pass (with its recompute) the incoming copy
        overlaps t_b [s].

    Returns
    -------
    numeric
        Exposed copy time per layer and micro-batch [s].

    Examples
    --------
    A 70B layer's input for one 8,192-token sequence (134 MB) over a 40 GB/s PCIe link,
    beside a 50 ms forward and a 150 ms backward: hidden; beside a 2 ms forward and a 6 ms
    backward, the 3.35 ms copy shows 1.35 ms in the forward and nothing in the backward:

    >>> offload_exposed_time(134e6, 40e9, 0.05, 0.15)
    0.0
    >>> round(offload_exposed_time(134e6, 40e9, 0.002, 0.006) * 1e3, 2)
    1.35

    .. math:: t_{off} = \\max\\left(0, \\frac{Q_h}{\\beta_h} - t_f\\right)
              + \\max\\left(0, \\frac{Q_h}{\\beta_h} - t_b\\right)
    """
    copy_s = copy_bytes / host_bytes_per_s
    return maximum(copy_s - forward_s, 0) + maximum(copy_s - backward_s, 0)


@formula(reference="Adam update (Kingma & Ba 2015, arXiv:1412.6980 Alg. 1) on mixed-precision "
         "states (Micikevicius et al. 2018, arXiv:1710.03740 s3.1): fp32 master weights and "
         "moments read and written, gradients read, 16-bit weights written; Rajbhandari et "
         "al. 2020 (ZeRO), arXiv:1910.02054 s3.1 (K = 12)",
         domain={"params": ">=0", "weight_bytes_per_param": ">=0",
                 "grad_bytes_per_param": ">=0", "optimizer_bytes_per_param": ">=0"},
         symbols=_SYM, result_latex="Q_{opt}")
def optimizer_step_bytes(params, weight_bytes_per_param, grad_bytes_per_param,
                         optimizer_bytes_per_param):
    """HBM traffic of one optimizer step over ``params`` parameters (memory bound).

    Parameters
    ----------
    params : numeric
        Parameters this rank updates N [1].
    weight_bytes_per_param : numeric
        Bytes of the working (16-bit) weights, written, K_w [B].
    grad_bytes_per_param : numeric
        Bytes of the gradients, read, K_g [B].
    optimizer_bytes_per_param : numeric
        Bytes of the optimizer states (master weights, moments), read and written,
        K_o [B].

    Returns
    -------
    numeric
        Bytes moved [B].

    Examples
    --------
    One billion parameters with bf16 weights and gradients and 12-byte Adam states:

    >>> optimizer_step_bytes(1e9, 2, 2, 12)
    28000000000.0

    .. math:: Q_{opt} = (2 K_o + K_w + K_g) N
    """
    return (optimizer_bytes_per_param * 2 + weight_bytes_per_param
            + grad_bytes_per_param) * params


@formula(reference=NARAYANAN + ", s5.1 (backward pass = 2x forward); recomputation adds "
         "forward work: Korthikanti et al. 2022, arXiv:2205.05198 s5",
         domain={"forward_time_s": ">=0", "recomputed_forward_time_s": ">=0"},
         symbols=_SYM, result_latex="t_{train}")
def training_pass_time(forward_time_s, recomputed_forward_time_s):
    """Time of forward, backward (twice the forward) and recomputed forward work.

    Parameters
    ----------
    forward_time_s : numeric
        Forward time t_f [s].
    recomputed_forward_time_s : numeric
        Forward work executed again in the backward pass, t_r [s].

    Returns
    -------
    numeric
        Training time of the work [s].

    Examples
    --------
    >>> training_pass_time(2e-3, 1e-3)
    0.007

    .. math:: t_{train} = 3 t_f + t_r
    """
    return (1 + BACKWARD_PER_FORWARD) * forward_time_s + recomputed_forward_time_s


@formula(reference=NARAYANAN + ", s5.1 (backward pass = 2x forward: gradients of inputs and "
         "of weights)",
         domain={"forward_time_s": ">=0"}, symbols=_SYM, result_latex="t_{bwd}")
def backward_time(forward_time_s):
    """Time of the backward pass of work whose forward pass takes ``forward_time_s``.

    Parameters
    ----------
    forward_time_s : numeric
        Forward time t_f [s].

    Returns
    -------
    numeric
        Backward time [s].

    Examples
    --------
    >>> backward_time(2e-3)
    0.004

    .. math:: t_{bwd} = 2 t_f
    """
    return BACKWARD_PER_FORWARD * forward_time_s


@formula(reference="Transformer Engine FP8 primer (docs.nvidia.com/deeplearning/"
         "transformer-engine, 'Using FP8 with Transformer Engine': each GEMM input is cast "
         "to FP8 with its scale, and the backward's weight-gradient GEMM reads the transposed "
         "copy the same cast writes, TE's cast_transpose); Micikevicius et al. 2022 (FP8 "
         "formats), arXiv:2209.05433 s4; row- and block-wise scales quantise each direction "
         "on its own: DeepSeek-V3, arXiv:2412.19437 s3.3.2 (1x128 tiles, and 128x1 for the "
         "backward), OCP Microscaling Formats (MX) v1.0 (32-element blocks along K); one "
         "copy when the weight gradient stays in high precision: torchao.float8 recipe "
         "rowwise_with_gw_hp (pytorch/ao@36027d82 docs/source/workflows/training.md)",
         domain={"cast_passes": ">=0", "low_bytes": ">0", "low_precision_share": "[0,1]",
                 "high_bytes": ">0", "quantised_copies": ">=1"},
         symbols={"cast_passes": "p_c", "low_bytes": "b_q", "low_precision_share": "s_q",
                  "high_bytes": "b_{16}", "quantised_copies": "n_q"}, result_latex="b_{cast}")
def quantisation_cast_bytes_per_element(cast_passes, low_bytes, low_precision_share,
                                        high_bytes=2, quantised_copies=2):
    """HBM bytes a low-precision recipe moves to quantise one element of a GEMM input.

    Each pass reads the 16-bit element; the quantised copy for this GEMM and its transpose
    for the backward's other GEMM are written once each (n_q = 2; one, n_q = 1, where the
    other GEMM, the weight gradient, stays in high precision).  A per-tensor scale
    (p_c = 1) writes both in one pass; row- or block-wise scales (p_c = 2) quantise each
    direction in its own pass.  Only the recipe's low-precision share of the layers casts;
    16-bit recipes (p_c = 0) cast nothing.

    Parameters
    ----------
    cast_passes : numeric
        Passes over the 16-bit input p_c: 0, 1 or 2 [1].
    low_bytes : numeric
        Bytes of a quantised element, scales included b_q [B].
    low_precision_share : numeric
        Share of the layers whose GEMM inputs are quantised s_q [1].
    high_bytes : numeric
        Bytes of the 16-bit element b_16 [B].
    quantised_copies : numeric
        Quantised copies written n_q: 2, or 1 with the weight gradient in high precision
        [1].

    Returns
    -------
    numeric
        Bytes read and written per element [B].

    Examples
    --------
    Per-tensor FP8: a 2-byte read, a 1-byte copy and its 1-byte transpose; row-wise
    scales, each direction in its own pass; row-wise for the forward and input-gradient
    GEMMs only (torchao's rowwise_with_gw_hp):

    >>> quantisation_cast_bytes_per_element(1, 1.0, 1.0)
    4.0
    >>> quantisation_cast_bytes_per_element(2, 1.0, 1.0)
    6.0
    >>> quantisation_cast_bytes_per_element(1, 1.0, 1.0, quantised_copies=1)
    3.0
    >>> quantisation_cast_bytes_per_element(0, 2.0, 1.0)
    0.0

    .. math:: b_{cast} = s_q\\, \\min(p_c, 1)\\, (p_c\\, b_{16} + n_q\\, b_q)
    """
    return low_precision_share * minimum(cast_passes, 1) * (cast_passes * high_bytes
                                                             + quantised_copies * low_bytes)


@formula(reference="torch.utils.checkpoint (PyTorch >= 2.1): non-reentrant checkpoint "
         "'stops recomputation as soon as it has computed all needed Tensors' "
         "(set_checkpoint_early_stop, default on); reentrant checkpoints (Megatron-LM "
         "tensor_parallel.checkpoint, use_reentrant=True) re-run the whole function; full "
         "recompute: Korthikanti et al. 2022, arXiv:2205.05198 s5",
         domain={"layer_forward_time_s": ">=0", "last_matmul_forward_time_s": ">=0",
                 "early_stop": "[0,1]"},
         symbols={"layer_forward_time_s": "t_l", "last_matmul_forward_time_s": "t_{last}",
                  "early_stop": "e_s"}, result_latex="t_{l,r}")
def checkpointed_layer_recompute_time(layer_forward_time_s, last_matmul_forward_time_s,
                                      early_stop):
    """Forward work a fully checkpointed layer runs again in its backward.

    A checkpoint that stops once every tensor the backward needs is back skips the
    layer's last matmul (the MLP's down projection): its input is the last tensor saved,
    and what follows it (the residual add) saves nothing.

    Parameters
    ----------
    layer_forward_time_s : numeric
        Forward time of the layer t_l [s].
    last_matmul_forward_time_s : numeric
        Forward time of its last matmul t_last [s].
    early_stop : numeric
        1 if the stack's checkpoint stops early (PyTorch non-reentrant), else 0 [1].

    Returns
    -------
    numeric
        Recomputed forward time [s].

    Examples
    --------
    >>> checkpointed_layer_recompute_time(3e-3, 1e-3, 1)
    0.002

    .. math:: t_{l,r} = t_l - e_s\\, t_{last}
    """
    return layer_forward_time_s - early_stop * last_matmul_forward_time_s


@formula(reference="Asynchronous kernel launches (PyTorch CUDA semantics); per-layer launch "
         "cost fitted to vTrain single-node runs (Bang et al., MICRO'24, arXiv:2312.12391); "
         "backward launches twice the forward's kernels: " + NARAYANAN + " s5.1",
         domain={"layers": ">=0", "layer_overhead_s": ">=0", "full_recompute": "[0,1]"},
         symbols=_SYM, result_latex="t_h")
def host_launch_time(layers, layer_overhead_s, full_recompute):
    """Host time to issue one micro-batch's kernels on a pipeline stage.

    Each layer costs t_o for its forward pass, twice that for its backward, and t_o
    more when it is recomputed (full recomputation).

    Parameters
    ----------
    layers : numeric
        Layers of the stage l [1].
    layer_overhead_s : numeric
        Host time of one layer's forward pass t_o [s].
    full_recompute : numeric
        1 with full activation recomputation, 0 without [1].

    Returns
    -------
    numeric
        Host time per micro-batch [s].

    Examples
    --------
    >>> round(host_launch_time(10, 0.9e-3, 1) * 1e3, 6)
    36.0

    .. math:: t_h = l (3 + r) t_o
    """
    return layers * (1 + BACKWARD_PER_FORWARD + full_recompute) * layer_overhead_s


@formula(reference="Megatron-Core documentation (--cuda-graph-scope full_iteration captures "
         "the forward and backward of every micro-batch); PyTorch documentation, 'CUDA "
         "semantics: CUDA Graphs' (a graph replays fixed shapes and addresses), so a dropless "
         "MoE dispatch (token counts that change every step) is not captured whole",
         domain={"cuda_graphs": ">=0", "dynamic_shapes": "[0,1]"},
         symbols={"cuda_graphs": "g", "dynamic_shapes": "d"}, result_latex="g_{eff}")
def capturable_graph_scope(cuda_graphs, dynamic_shapes):
    """The CUDA-graph scope a stack reaches on a model: its own, but no whole-iteration
    graph around shapes that change every step (then every kernel is launched eagerly).

    Parameters
    ----------
    cuda_graphs : numeric
        The stack's capture scope g: 0 none, 1 per layer, 2 whole iteration [1].
    dynamic_shapes : numeric
        1 if the iteration's shapes change every step (dropless MoE), else 0, d [1].

    Returns
    -------
    numeric
        Capture scope reached [1].

    Examples
    --------
    >>> capturable_graph_scope(2, 1), capturable_graph_scope(2, 0), capturable_graph_scope(1, 1)
    (0.0, 2.0, 1.0)

    .. math:: g_{eff} = g - 2 d \\max(g - 1, 0)
    """
    return cuda_graphs - 2.0 * dynamic_shapes * maximum(cuda_graphs - 1, 0)


@formula(reference="CUDA graphs: a captured sequence of kernels is replayed by one "
         "cudaGraphLaunch (PyTorch CUDA semantics, 'CUDA Graphs'; PyTorch blog 2021 "
         "'Accelerating PyTorch with CUDA Graphs'); per-layer capture: Transformer Engine "
         "make_graphed_callables, Megatron-Core --cuda-graph-scope attn/mlp/moe_router; "
         "whole-iteration capture: Megatron-Core --cuda-graph-impl local --cuda-graph-scope "
         "full_iteration; backward launches twice the forward's kernels: " + NARAYANAN
         + " s5.1",
         domain={"layers": ">=0", "eager_layer_s": ">=0", "graph_launch_s": ">=0",
                 "full_recompute": "[0,1]", "cuda_graphs": ">=0", "microbatches": ">=1"},
         symbols={**_SYM, "eager_layer_s": "t_o", "graph_launch_s": "t_g",
                  "cuda_graphs": "g", "microbatches": "m"},
         result_latex="t_h")
def graphed_host_launch_time(layers, eager_layer_s, graph_launch_s, full_recompute,
                             cuda_graphs, microbatches):
    """Host time to issue one micro-batch's layer kernels under a CUDA-graph scope.

    ``cuda_graphs`` is the stack's capture scope: 0 none (every kernel launched eagerly,
    t_o per layer forward, twice that in backward, once more when recomputed), 1 per layer
    (each layer's forward, backward and recomputed forward replayed from one graph each,
    t_g per replay, plus the launches left outside the graphs, t_o), 2 whole iteration
    (one replay per iteration of every micro-batch's forward and backward: t_g / m per
    micro-batch).

    Parameters
    ----------
    layers : numeric
        Layers of the stage l [1].
    eager_layer_s : numeric
        Host time of one layer forward's launches outside any CUDA graph t_o [s].
    graph_launch_s : numeric
        Host time of one CUDA graph replay t_g [s].
    full_recompute : numeric
        1 with full activation recomputation, 0 without [1].
    cuda_graphs : numeric
        Capture scope g: 0 none, 1 per layer, 2 whole iteration [1].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        Host time per micro-batch [s].

    Examples
    --------
    >>> round(graphed_host_launch_time(10, 0.9e-3, 1e-5, 0, 0, 8) * 1e3, 6)
    27.0
    >>> round(graphed_host_launch_time(10, 1e-4, 1e-5, 0, 1, 8) * 1e3, 6)
    3.2
    >>> round(graphed_host_launch_time(10, 0.9e-3, 1e-5, 0, 2, 8) * 1e6, 6)
    1.25

    .. math:: t_h = (1 - w)\\,l\\left[(3 + r) t_o + p (2 + r) t_g\\right] + w\\,t_g / m,
        \\quad w = \\max(g - 1, 0),\\ p = \\min(g, 1) - w
    """
    whole = maximum(cuda_graphs - 1, 0)
    per_layer = minimum(cuda_graphs, 1) - whole
    layer_s = (1 + BACKWARD_PER_FORWARD + full_recompute) * eager_layer_s \
        + per_layer * (2 + full_recompute) * graph_launch_s
    return (1 - whole) * layers * layer_s + whole * graph_launch_s / microbatches


@formula(reference=PALM,
         domain={"model_flops_per_s_per_gpu": ">=0", "peak_flops_per_s": ">0"},
         symbols=_SYM, result_latex="MFU")
def model_flops_utilization(model_flops_per_s_per_gpu, peak_flops_per_s):
    """Model FLOPs utilisation: model FLOP/s (no recomputation) over peak FLOP/s.

    Parameters
    ----------
    model_flops_per_s_per_gpu : numeric
        Achieved model FLOP/s per GPU, 3F x tokens/s/GPU [FLOP/s].
    peak_flops_per_s : numeric
        Peak FLOP/s of one GPU [FLOP/s].

    Returns
    -------
    numeric
        MFU [1].

    .. math:: MFU = X_m / P
    """
    return model_flops_per_s_per_gpu / peak_flops_per_s


@formula(reference=PALM + " (HFU)",
         domain={"hardware_flops_per_s_per_gpu": ">=0", "peak_flops_per_s": ">0"},
         symbols=_SYM, result_latex="HFU")
def hardware_flops_utilization(hardware_flops_per_s_per_gpu, peak_flops_per_s):
    """Hardware FLOPs utilisation: executed FLOP/s (with recomputation) over peak FLOP/s.

    Parameters
    ----------
    hardware_flops_per_s_per_gpu : numeric
        Executed FLOP/s per GPU, (3F + R) x tokens/s/GPU [FLOP/s].
    peak_flops_per_s : numeric
        Peak FLOP/s of one GPU [FLOP/s].

    Returns
    -------
    numeric
        HFU [1].

    .. math:: HFU = X_h / P
    """
    return hardware_flops_per_s_per_gpu / peak_flops_per_s


# -- attention shapes: head size, multi-head latent attention, sliding window, MTP --------

QWEN3 = "Qwen Team 2025, Qwen3 Technical Report, arXiv:2505.09388, Table 1-2"
GPT_OSS = "OpenAI 2025, gpt-oss-120b & gpt-oss-20b Model Card, arXiv:2508.10925, s2.1"
DEEPSEEK_V2 = "DeepSeek-AI 2024, DeepSeek-V2, arXiv:2405.04434, s2.1.2-2.1.3"
DEEPSEEK_V3 = "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437"
_SYM_SHAPE = {**_SYM, "head_dim": "d_h", "v_head_dim": "d_v", "q_lora_rank": "r_q",
              "kv_lora_rank": "r_{kv}", "qk_rope_head_dim": "d_r", "window": "w",
              "keys": "k", "weights": "P_w", "block_params": "P_b"}


@formula(reference="Q, K, V of a d_h-wide heads, K/V shared by a_kv heads: Ainslie et al. "
         "2023 (GQA), arXiv:2305.13245; head size set apart from h/a: " + QWEN3 + ", "
         + GPT_OSS + "; multi-head latent attention (low-rank Q and joint KV compression "
         "with a decoupled RoPE key): " + DEEPSEEK_V2 + ", eqs. (9)-(10), (12)-(17)",
         domain={"hidden": ">0", "heads": ">=1", "kv_heads": ">=1", "head_dim": ">0",
                 "v_head_dim": ">0", "q_lora_rank": ">=0", "kv_lora_rank": ">=0",
                 "qk_rope_head_dim": ">=0"},
         symbols=_SYM_SHAPE, result_latex="P_{qkv}")
def attention_input_params(hidden, heads, kv_heads, head_dim, v_head_dim, q_lora_rank,
                           kv_lora_rank, qk_rope_head_dim):
    """Weights of the matrices that make Q, K and V from a layer's input (no biases).

    Standard attention (r_kv = 0): Q is h x a d_h, K is h x a_kv d_h and V is
    h x a_kv d_v.  With d_h = d_v = h/a this is the 2h^2 + 2h^2 a_kv/a of
    :func:`attention_params` less the output projection.  Multi-head latent
    attention (r_kv > 0, DeepSeek-V2/V3): Q through a rank-r_q bottleneck
    (h x r_q, then r_q x a d_h; full rank h x a d_h when r_q = 0), K and V
    through one joint compression h x (r_kv + d_r), whose d_r columns are the
    RoPE key shared by all heads, then r_kv x a (d_h - d_r + d_v) up-projections;
    d_h = qk_nope + qk_rope is the query/key head size.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads a_kv (not used by MLA) [1].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    q_lora_rank : numeric
        MLA query compression rank r_q (0: full-rank Q) [1].
    kv_lora_rank : numeric
        MLA key/value compression rank r_kv (0: standard attention) [1].
    qk_rope_head_dim : numeric
        MLA decoupled RoPE key size d_r (0 without MLA) [1].

    Returns
    -------
    numeric
        Parameters per layer [1].

    Examples
    --------
    Qwen3-30B-A3B (h = 2048, 32 heads of 128, 4 KV heads):

    >>> attention_input_params(2048, 32, 4, 128, 128, 0, 0, 0)
    10485760.0

    DeepSeek-V3 (MLA: r_q = 1536, r_kv = 512, d_r = 64, d_h = 128 + 64, d_v = 128):

    >>> attention_input_params(7168, 128, 128, 192, 128, 1536, 512, 64)
    69664768.0

    .. math::
        P_{qkv} = (1 - \\mu)\\,h d_h (a + a_{kv}) + (1 - \\mu)\\,h a_{kv} d_v
            + \\mu \\left[\\rho (h r_q + r_q a d_h) + (1 - \\rho) h a d_h
            + h (r_{kv} + d_r) + r_{kv} a (d_h - d_r + d_v)\\right],
        \\quad \\mu = \\min(r_{kv}, 1),\\ \\rho = \\min(r_q, 1)
    """
    mla = minimum(kv_lora_rank, 1)  # ranks are whole numbers: 1 with MLA, 0 without
    low_rank_q = minimum(q_lora_rank, 1)
    standard = hidden * heads * head_dim + hidden * kv_heads * head_dim \
        + hidden * kv_heads * v_head_dim
    latent_q = low_rank_q * (hidden * q_lora_rank + q_lora_rank * heads * head_dim) \
        + (1 - low_rank_q) * hidden * heads * head_dim
    latent_kv = hidden * (kv_lora_rank + qk_rope_head_dim) \
        + kv_lora_rank * heads * (head_dim - qk_rope_head_dim + v_head_dim)
    return (1 - mla) * standard + mla * (latent_q + latent_kv)


@formula(reference="Output projection a d_v x h: Vaswani et al. 2017, arXiv:1706.03762 "
         "s3.2.2 (W^O); d_v set apart from h/a: " + DEEPSEEK_V2,
         domain={"hidden": ">0", "heads": ">=1", "v_head_dim": ">0"},
         symbols=_SYM_SHAPE, result_latex="P_o")
def attention_output_params(hidden, heads, v_head_dim):
    """Weights of the attention output projection (no bias).

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    v_head_dim : numeric
        Value head size d_v [1].

    Returns
    -------
    numeric
        Parameters per layer [1].

    Examples
    --------
    >>> attention_output_params(7168, 128, 128)
    117440512.0

    .. math:: P_o = a d_v h
    """
    return heads * v_head_dim * hidden


@formula(reference=DEEPSEEK_V2 + " (RMSNorm on the compressed latents c_Q and c_KV)",
         domain={"q_lora_rank": ">=0", "kv_lora_rank": ">=0"},
         symbols=_SYM_SHAPE, result_latex="P_{lat}")
def latent_norm_params(q_lora_rank, kv_lora_rank):
    """Weights of the RMSNorms of MLA's compressed query and key/value latents.

    Parameters
    ----------
    q_lora_rank : numeric
        Query compression rank r_q (0: none) [1].
    kv_lora_rank : numeric
        Key/value compression rank r_kv (0: standard attention) [1].

    Returns
    -------
    numeric
        Parameters per layer [1].

    Examples
    --------
    >>> latent_norm_params(1536, 512)
    2048.0

    .. math:: P_{lat} = r_q + r_{kv}
    """
    return 1.0 * q_lora_rank + kv_lora_rank


@formula(reference=NARAYANAN + ", s5.1 (a weight matrix costs 2 FLOP per weight per token, "
         "one multiply-add)",
         domain={"weights": ">=0"}, symbols=_SYM_SHAPE, result_latex="F_w")
def matmul_forward_flops_per_token(weights):
    """Forward FLOPs per token of the matrix multiplications with ``weights`` weights.

    Parameters
    ----------
    weights : numeric
        Weights of the matrices each token goes through, P_w [1].

    Returns
    -------
    numeric
        Forward FLOPs per token [FLOP].

    Examples
    --------
    >>> matmul_forward_flops_per_token(4096 * 4096)
    33554432.0

    .. math:: F_w = 2 P_w
    """
    return 2 * weights


@formula(reference="A column-parallel GEMM of input width h splits its output columns over "
         "t ranks: Shoeybi et al. 2019, arXiv:1909.08053 s3",
         domain={"weights": ">0", "hidden": ">0", "tp": ">=1"},
         symbols=_SYM_SHAPE, result_latex="n_w")
def projection_width(weights, hidden, tp):
    """Output width of one tensor-parallel rank's GEMM of ``weights`` weights and input h.

    MLA's down- and up-projections are taken as one GEMM of the same weights (and
    FLOPs).

    Parameters
    ----------
    weights : numeric
        Weights of the projection P_w [1].
    hidden : numeric
        Input width h [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].

    Returns
    -------
    numeric
        Columns of the rank's GEMM [1].

    Examples
    --------
    Qwen3-30B-A3B's QKV on TP 4:

    >>> projection_width(10485760, 2048, 4)
    1280.0

    .. math:: n_w = \\frac{P_w}{h\\, t_p}
    """
    return weights / (hidden * tp)


@formula(reference="Causal attention restricted to the last w keys (banded mask): Beltagy "
         "et al. 2020 (Longformer), arXiv:2004.05150 s3.1; Jiang et al. 2023 (Mistral 7B), "
         "arXiv:2310.06825 s2; Gemma Team 2024 (Gemma 2), arXiv:2408.00118 s2; " + GPT_OSS
         + "; expressed in the non-causal counting of " + NARAYANAN,
         domain={"seq_len": ">0", "window": ">0"}, symbols=_SYM_SHAPE, result_latex="k")
def attended_keys_per_query(seq_len, window):
    """Keys per query of sliding-window attention, in the non-causal counting.

    capplan counts attention as every query against all s keys (Narayanan's
    counting), twice the s^2/2 pairs a causal kernel computes.  A causal window of
    w <= s keys computes s w - w^2/2 pairs; in the same counting that is
    k = w (2 - w/s) keys per query, which is s when w >= s and about 2w when w << s.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    window : numeric
        Sliding window w [1].

    Returns
    -------
    numeric
        Keys per query k [1].

    Examples
    --------
    GPT-OSS's 128-token window in 4096-token sequences:

    >>> attended_keys_per_query(4096, 128)
    252.0
    >>> attended_keys_per_query(4096, 8192)
    4096.0

    .. math:: k = w' \\left(2 - \\frac{w'}{s}\\right),\\quad w' = \\min(w, s)
    """
    w = minimum(window, seq_len)
    return w * (2 - w / seq_len)


@formula(reference="Block-sparse fused attention computes whole tiles: a tile of b queries "
         "and b keys is skipped only when the mask hides all of it and is computed in full "
         "where the mask hides part of it (" + FA2 + " s3.1.1: 'skip the computation of "
         "blocks where all column indices are more than the row indices', the diagonal "
         "blocks masked; Pallas TPU splash attention, jax/experimental/pallas/ops/tpu/"
         "splash_attention: a block mask per (block_q, block_kv) tile, partial tiles "
         "masked element-wise); banded (sliding-window) masks as " + GPT_OSS + "; "
         "expressed in the non-causal counting of " + NARAYANAN,
         domain={"seq_len": ">0", "window": ">0", "block_tokens": ">=1"},
         symbols={**_SYM_SHAPE, "block_tokens": "b"}, result_latex="k_b")
def block_attended_keys_per_query(seq_len, window, block_tokens):
    """Keys per query a tiled causal attention kernel computes, in the non-causal counting.

    The kernel tiles queries and keys into blocks of b' = min(b, s) and computes every
    tile the causal (or banded) mask does not hide entirely.  Query block j needs the
    key blocks from the one holding its earliest visible key up to its own: 1 + min(j, m)
    of them with m = ceil((w' - 1)/b'), w' = min(w, s).  Averaged over the n = s/b'
    query blocks, each query computes b' (1 + mean_j min(j, m)) keys; doubled to the
    non-causal counting of :func:`attended_keys_per_query`.  Exact where b' divides s;
    a partial last block is taken as that fraction of a block.  A causal
    kernel (w >= s) computes s + b' keys per query where s are counted, the diagonal
    tiles in full; a window narrower than a tile computes about two tiles a query.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    window : numeric
        Keys visible to a query, w (the sequence for causal attention) [1].
    block_tokens : numeric
        Tile edge b of the kernel's query and key blocks [1].

    Returns
    -------
    numeric
        Keys per query the kernel computes, k_b [1].

    Examples
    --------
    Causal attention over 8,192 tokens in 128- and 2,048-token tiles, and GPT-OSS's
    128-token window in 1,024-token tiles (about 15 times the 252 keys it attends to):

    >>> block_attended_keys_per_query(8192, 8192, 128)
    8320.0
    >>> block_attended_keys_per_query(8192, 8192, 2048)
    10240.0
    >>> block_attended_keys_per_query(8192, 128, 1024)
    3840.0

    .. math:: k_b = 2 b' \\left(1 + \\frac{m(m+1)/2 + (n - 1 - m)\\, m}{n}\\right),\\quad
        n = s/b',\\ m = \\min(\\lceil (w' - 1)/b' \\rceil, n - 1)
    """
    tile = minimum(block_tokens, seq_len)
    blocks = seq_len / tile
    reach = minimum(ceil((minimum(window, seq_len) - 1) / tile), blocks - 1)
    return 2 * tile * (1 + (reach * (reach + 1) / 2 + (blocks - 1 - reach) * reach) / blocks)


@formula(reference=NARAYANAN + ", s5.1/Appendix (QK^T and attention over values, 2 FLOP per "
         "multiply-add); per-head sizes d_h and d_v: " + DEEPSEEK_V2 + ", " + QWEN3,
         domain={"keys": ">0", "heads": ">=1", "head_dim": ">0", "v_head_dim": ">0"},
         symbols=_SYM_SHAPE, result_latex="F_{core}")
def attention_core_flops_per_token(keys, heads, head_dim, v_head_dim):
    """Forward FLOPs per token of the attention core with k keys per query.

    Scores q k^T over a heads of size d_h and the weighted sum of the values of
    size d_v.  With k = s and d_h = d_v = h/a this is the 4sh of
    :func:`attention_core_forward_flops_per_token`.

    Parameters
    ----------
    keys : numeric
        Keys each query attends to, k (s for full attention) [1].
    heads : numeric
        Query heads a [1].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].

    Returns
    -------
    numeric
        Forward FLOPs per token per layer [FLOP].

    Examples
    --------
    >>> attention_core_flops_per_token(8192, 64, 128, 128)
    268435456.0

    .. math:: F_{core} = 2 k a (d_h + d_v)
    """
    return 2 * keys * heads * (head_dim + v_head_dim)


@formula(reference="Dao et al. 2022 (FlashAttention), arXiv:2205.14135 s3.2 (Q, K, V read and "
         "O written once); column-parallel heads: Shoeybi et al. 2019, arXiv:1909.08053 s3",
         domain={"tokens": ">0", "heads": ">=1", "head_dim": ">0", "v_head_dim": ">0",
                 "tp": ">=1", "bytes_per_element": ">0"},
         symbols={**_SYM_SHAPE, "tokens": "t"}, result_latex="Q_{core}")
def attention_core_head_bytes(tokens, heads, head_dim, v_head_dim, tp, bytes_per_element):
    """HBM traffic of the attention core of one rank with head sizes d_h and d_v.

    Q and K (d_h wide), V and the output (d_v wide), K and V counted at the query
    heads (an upper bound under GQA), as :func:`attention_core_bytes`, which this is
    when d_h = d_v = h/a.

    Parameters
    ----------
    tokens : numeric
        Tokens per rank and micro-batch t [1].
    heads : numeric
        Query heads a [1].
    head_dim : numeric
        Query/key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    bytes_per_element : numeric
        Bytes per activation element e [B].

    Returns
    -------
    numeric
        Bytes moved per layer forward [B].

    Examples
    --------
    >>> attention_core_head_bytes(4096, 64, 128, 128, 8, 2)
    33554432.0

    .. math:: Q_{core} = \\frac{2 e t a (d_h + d_v)}{t_p}
    """
    return bytes_per_element * tokens * (2 * heads * (head_dim + v_head_dim) / tp)


@formula(reference=DEEPSEEK_V3 + ", s2.2 eq. (21) (projection matrix M_k of size d x 2d of "
         "the concatenated hidden state and next-token embedding)",
         domain={"hidden": ">0"}, symbols=_SYM_SHAPE, result_latex="P_M")
def mtp_projection_params(hidden):
    """Weights of the projection M_k of one multi-token-prediction module.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].

    Returns
    -------
    numeric
        Parameters [1].

    Examples
    --------
    >>> mtp_projection_params(7168)
    102760448.0

    .. math:: P_M = 2h^2
    """
    return 2.0 * hidden**2


@formula(reference=DEEPSEEK_V3 + ", s2.2 eqs. (21)-(23) (MTP module k: RMSNorms of the "
         "hidden state and the embedding, projection M_k of size d x 2d, transformer block "
         "TRM_k; embedding and output head shared with the main model)",
         domain={"block_params": ">=0", "hidden": ">0"}, symbols=_SYM_SHAPE,
         result_latex="P_{mtp}")
def mtp_module_params(block_params, hidden):
    """Weights of one multi-token-prediction module beyond the shared embedding and head.

    Its transformer block, the projection M_k (h x 2h) of the concatenated hidden
    state and next-token embedding, their two RMSNorms and the norm before the
    shared output head.

    Parameters
    ----------
    block_params : numeric
        Weights of the module's transformer block (attention, MLP or MoE, norms) [1].
    hidden : numeric
        Hidden size h [1].

    Returns
    -------
    numeric
        Parameters per MTP module [1].

    Examples
    --------
    >>> mtp_module_params(0, 7168)
    102781952.0

    .. math:: P_{mtp} = P_b + 2h^2 + 3h
    """
    return block_params + mtp_projection_params(hidden) + 3 * hidden


@formula(reference=DEEPSEEK_V3 + ", s3.2.1 (the MTP modules run on the last pipeline stage, "
         "with the output head); stages of ceil(l/p) layers, the last holding the rest: "
         + NARAYANAN + ", s2.2",
         domain={"layers": ">=1", "pp": ">=1", "stage_layers": ">=1", "mtp_layers": ">=0"},
         symbols={**_SYM_SHAPE, "pp": "p", "stage_layers": "l_s", "mtp_layers": "D"},
         result_latex="D_{crit}")
def mtp_layers_beyond_fullest_stage(layers, pp, stage_layers, mtp_layers):
    """MTP modules that lengthen the fullest pipeline stage, in layer equivalents.

    The D modules sit on the last stage, which holds the l - (p - 1) l_s layers the
    others leave; they cost time and memory on the critical stage only insofar as
    the last stage then exceeds a full stage of l_s layers.  Without pipelining
    (p = 1) all D count.

    Parameters
    ----------
    layers : numeric
        Transformer layers l [1].
    pp : numeric
        Pipeline stages p [1].
    stage_layers : numeric
        Layers of the fullest stage l_s = ceil(l / p) [1].
    mtp_layers : numeric
        MTP modules D [1].

    Returns
    -------
    numeric
        MTP modules charged to the fullest stage [1].

    Examples
    --------
    DeepSeek-V3 (61 layers, D = 1) on PP 16 (stages of 4, the last of 1) and PP 1:

    >>> mtp_layers_beyond_fullest_stage(61, 16, 4, 1)
    0.0
    >>> mtp_layers_beyond_fullest_stage(61, 1, 61, 1)
    1.0

    .. math:: D_{crit} = \\min\\left(D, \\max\\left(0, l - p\\,l_s + D\\right)\\right)
    """
    return minimum(mtp_layers, maximum(0.0, layers - pp * stage_layers + mtp_layers))


# -- gated linear attention (Gated DeltaNet) ---------------------------------------

GATED_DELTANET = ("Yang, Kautz, Hatamizadeh 2024 (Gated Delta Networks), arXiv:2412.06464, "
                  "s3 (gated delta rule) and s3.3 (chunkwise form)")
DELTANET_CHUNKWISE = ("Yang et al. 2024 (Parallelizing Linear Transformers with the Delta Rule "
                      "over Sequence Length), arXiv:2406.06484, s3.2 eq. (7)-(9): WY "
                      "representation W = T K, U = T V with T = (I + tril(diag(beta) K K^T))^-1, "
                      "output Q S + (Q K^T (.) M)(U - W S), state S + K^T (U - W S)")
QWEN3_NEXT = ("Qwen Team 2025, Qwen3-Next-80B-A3B (https://huggingface.co/Qwen/"
              "Qwen3-Next-80B-A3B-Instruct config.json; transformers Qwen3NextGatedDeltaNet: "
              "in_proj_qkvz, in_proj_ba, out_proj)")
#: Chunk length C of the chunked gated-delta-rule kernels (flash-linear-attention,
#: fla/ops/gated_delta_rule/chunk.py: BT = 64), which Megatron-Core's Gated DeltaNet calls.
GATED_DELTA_CHUNK = 64.0
_SYM_LINEAR = {**_SYM_SHAPE, "key_heads": "a_k", "value_heads": "a_v", "head_dim": "d",
               "chunk": "C", "tokens": "t", "tp": "t_p", "bytes_per_element": "e"}


@formula(reference=GATED_DELTANET + "; " + QWEN3_NEXT,
         domain={"hidden": ">0", "key_heads": ">=1", "value_heads": ">=1", "head_dim": ">0"},
         symbols=_SYM_LINEAR, result_latex="P_{gdn}")
def gated_deltanet_params(hidden, key_heads, value_heads, head_dim):
    """Weights of one Gated DeltaNet token mixer (the attention block of a linear layer).

    The input projection gives the queries and keys (a_k heads of d each), the values
    and the output gate (a_v heads of d each) and one write strength beta and one decay
    alpha per value head; the output projection maps the a_v d gated outputs back to h.
    The depthwise short convolution (4 taps on 2 a_k d + a_v d channels), the decay
    bias and the gated norm's weights (together < 0.2 % of the block) are not counted.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    key_heads : numeric
        Query/key heads of the linear attention a_k [1].
    value_heads : numeric
        Value heads of the linear attention a_v [1].
    head_dim : numeric
        Key and value head size d [1].

    Returns
    -------
    numeric
        Weights per layer [1].

    Examples
    --------
    Qwen3-Next-80B-A3B (h = 2048, 16 key heads and 32 value heads of 128):

    >>> gated_deltanet_params(2048, 16, 32, 128)
    33685504.0

    .. math:: P_{gdn} = h\\,(2 a_k d + 2 a_v d + 2 a_v) + a_v d\\,h
    """
    return hidden * (2 * key_heads * head_dim + 2 * value_heads * head_dim + 2 * value_heads) \
        + value_heads * head_dim * hidden


@formula(reference=DELTANET_CHUNKWISE + "; gating: " + GATED_DELTANET
         + "; chunk C = 64 of flash-linear-attention's chunk_gated_delta_rule",
         domain={"value_heads": ">=1", "head_dim": ">0", "chunk": ">0"},
         symbols=_SYM_LINEAR, result_latex="F_{gdr}")
def gated_delta_rule_flops_per_token(value_heads, head_dim, chunk=GATED_DELTA_CHUNK):
    """Forward FLOPs per token of the chunked gated delta rule (the linear-attention core).

    Per head (key and value size d, chunk C, 2 FLOP per multiply-add; the keys are
    shared by the value heads, so the recurrence runs a_v times): the chunk-local
    products K K^T, T K, Q K^T (3 x 2Cd) and T V, (Q K^T)(U - W S) (2 x 2Cd), the
    triangular solve for T (C^3/3 multiply-adds a chunk) and the three d x d state
    products Q S, W S and K^T (U - W S) (3 x 2d^2).  Linear in the sequence length:
    the cost per token does not depend on it.  The decay gates are element-wise and
    not counted.

    Parameters
    ----------
    value_heads : numeric
        Heads the recurrence runs on, a_v [1].
    head_dim : numeric
        Key and value head size d [1].
    chunk : numeric
        Chunk length C of the chunked kernel [1].

    Returns
    -------
    numeric
        Forward FLOPs per token per layer [FLOP].

    Examples
    --------
    Qwen3-Next-80B-A3B (32 value heads of 128), chunks of 64:

    >>> round(gated_delta_rule_flops_per_token(32, 128, 64))
    5854549

    .. math:: F_{gdr} = a_v \\left(6 d^2 + 10 C d + \\frac{2 C^2}{3}\\right)
    """
    return value_heads * (6 * head_dim**2 + 10 * chunk * head_dim + 2 * chunk**2 / 3)


@formula(reference=DELTANET_CHUNKWISE + " (Q, K, V read and O written once; one d x d "
         "state per head and chunk written by the forward pass)",
         domain={"tokens": ">0", "value_heads": ">=1", "head_dim": ">0", "chunk": ">0",
                 "tp": ">=1", "bytes_per_element": ">0"},
         symbols=_SYM_LINEAR, result_latex="Q_{gdr}")
def gated_delta_rule_bytes(tokens, value_heads, head_dim, chunk, tp, bytes_per_element):
    """HBM traffic of the chunked gated delta rule of one rank, one layer forward.

    Q, K, V read and the output written (a_v heads of d, the keys repeated to the value
    heads), and the state of every chunk (d x d per head) written, heads split over TP.

    Parameters
    ----------
    tokens : numeric
        Tokens per rank and micro-batch t [1].
    value_heads : numeric
        Value heads a_v [1].
    head_dim : numeric
        Key and value head size d [1].
    chunk : numeric
        Chunk length C [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    bytes_per_element : numeric
        Bytes per activation element e [B].

    Returns
    -------
    numeric
        Bytes moved per layer forward [B].

    Examples
    --------
    >>> gated_delta_rule_bytes(4096, 32, 128, 64, 1, 2)
    201326592.0

    .. math:: Q_{gdr} = \\frac{e\\,t\\,a_v\\,(4 d + d^2 / C)}{t_p}
    """
    return bytes_per_element * tokens * value_heads * (4 * head_dim + head_dim**2 / chunk) / tp


# -- Mamba-2 state-space layers (hybrid models: Nemotron-H) ------------------------

MAMBA2 = ("Dao & Gu 2024 (Transformers are SSMs: Generalized Models and Efficient Algorithms "
          "Through Structured State Space Duality), arXiv:2405.21060, s6 (the SSD algorithm: "
          "intra-chunk outputs, chunk states, state passing, outputs from states) and s7 "
          "(the Mamba-2 block: one input projection to z, x, B, C, dt; short convolution; "
          "gated RMSNorm; output projection)")
MEGATRON_MAMBA = ("NVIDIA/Megatron-LM@d98e8a6 megatron/core/ssm/mamba_mixer.py (in_proj "
                  "d_inner * 2 + 2 * ngroups * d_state + nheads wide, conv1d over x, B, C with "
                  "d_conv = 4 taps, chunk_size = 128, heads and groups split over TP)")
#: Chunk length of Megatron-Core's Mamba-2 SSD kernel (mamba_mixer.py: chunk_size=128).
SSD_CHUNK = 128.0
#: Taps of the Mamba-2 block's causal depthwise convolution (mamba_mixer.py: d_conv=4).
MAMBA_CONV_TAPS = 4.0
_SYM_MAMBA = {**_SYM_SHAPE, "heads": "H", "head_dim": "P", "state_dim": "N", "groups": "G",
              "chunk": "Q", "tokens": "t", "tp": "t_p", "bytes_per_element": "e"}


@formula(reference=MAMBA2 + "; " + MEGATRON_MAMBA,
         domain={"hidden": ">0", "heads": ">=1", "head_dim": ">0", "state_dim": ">0",
                 "groups": ">=1"},
         symbols=_SYM_MAMBA, result_latex="P_{mamba}")
def mamba2_mixer_params(hidden, heads, head_dim, state_dim, groups):
    """Weights of one Mamba-2 token mixer (the mixer of a hybrid model's Mamba layer).

    The input projection h -> 2 d + 2 G N + H (the gate z and the input x, d = H P wide
    each; B and C, G groups of N; one step size dt per head), the causal depthwise
    convolution over x, B and C (4 taps and a bias per channel), A, D and the dt bias
    per head, the gated RMSNorm's scale (d) and the output projection d -> h.

    Parameters
    ----------
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        SSM heads H [1].
    head_dim : numeric
        Head size P [1].
    state_dim : numeric
        State size N [1].
    groups : numeric
        Groups G sharing B and C [1].

    Returns
    -------
    numeric
        Weights per layer [1].

    Examples
    --------
    Nemotron-H 56B (h = 8192, 256 heads of 64, state 256, 8 groups):

    >>> mamba2_mixer_params(8192, 256, 64, 256, 8)
    438424320.0

    .. math:: P_{mamba} = h (2 H P + 2 G N + H) + 5 (H P + 2 G N) + 3 H + H P + H P h
    """
    inner = heads * head_dim
    conv_channels = inner + 2 * groups * state_dim
    return hidden * (2 * inner + 2 * groups * state_dim + heads) \
        + (MAMBA_CONV_TAPS + 1) * conv_channels + 3 * heads + inner + inner * hidden


@formula(reference=MAMBA2 + "; " + MEGATRON_MAMBA,
         domain={"heads": ">=1", "head_dim": ">0", "state_dim": ">0", "groups": ">=1"},
         symbols=_SYM_MAMBA, result_latex="w_{in}")
def mamba2_in_proj_width(heads, head_dim, state_dim, groups):
    """Output width of a Mamba-2 mixer's input projection: z and x (H P each), B and C
    (G N each) and one step size dt per head.

    Parameters
    ----------
    heads : numeric
        SSM heads H [1].
    head_dim : numeric
        Head size P [1].
    state_dim : numeric
        State size N [1].
    groups : numeric
        Groups G sharing B and C [1].

    Returns
    -------
    numeric
        Output features of the projection [1].

    Examples
    --------
    >>> mamba2_in_proj_width(256, 64, 256, 8)  # Nemotron-H 56B
    37120.0

    .. math:: w_{in} = 2 H P + 2 G N + H
    """
    return 2 * heads * head_dim + 2 * groups * state_dim + heads


@formula(reference="NVIDIA 2025 (Nemotron-H), arXiv:2504.03624, s2.1; NVIDIA/Megatron-LM@"
         "d98e8a6 megatron/core/models/mamba (hybrid layer allocation: each block of "
         "hybrid_override_pattern is one Mamba, attention or MLP layer with its own pre-norm "
         "and TP collectives)",
         domain={"layers": ">=1", "mixer_free_layers": ">=0", "mlp_free_layers": ">=0"},
         symbols={**_SYM, "mixer_free_layers": "l_m", "mlp_free_layers": "l_f"},
         result_latex=r"\beta")
def hybrid_block_share(layers, mixer_free_layers, mlp_free_layers):
    """Share of a transformer layer's two blocks (token mixer, MLP) the average layer of a
    model holds: 1 for a transformer, less half a layer for each one-part block (a hybrid
    model's mixer-only or MLP-only layers).

    Parameters
    ----------
    layers : numeric
        Layers (blocks) l [1].
    mixer_free_layers : numeric
        Layers with an MLP and no token mixer l_m [1].
    mlp_free_layers : numeric
        Layers with a token mixer and no MLP l_f [1].

    Returns
    -------
    numeric
        Blocks per layer over two [1].

    Examples
    --------
    >>> hybrid_block_share(118, 54, 64)  # Nemotron-H 56B: every block one part
    0.5

    .. math:: \beta = 1 - \frac{l_m + l_f}{2 l}
    """
    return 1 - (mixer_free_layers + mlp_free_layers) / (2 * layers)


@formula(reference=MAMBA2 + " (chunk Q = 128: " + MEGATRON_MAMBA + ")",
         domain={"heads": ">=1", "head_dim": ">0", "state_dim": ">0", "groups": ">=1",
                 "chunk": ">0"},
         symbols=_SYM_MAMBA, result_latex="F_{ssd}")
def ssd_flops_per_token(heads, head_dim, state_dim, groups, chunk=SSD_CHUNK):
    """Forward FLOPs per token of the chunked SSD scan (the Mamba-2 layer's core).

    2 FLOP per multiply-add: the chunk-local C B^T of each group (Q N a token, the whole
    Q x Q block computed, then masked), its product with each head's inputs (Q P a
    token and head), each head's chunk state B^T X and its output C S (N P each).  The
    state passing between chunks (N P a chunk and head) and the element-wise decays are
    not counted.  Linear in the sequence length.

    Parameters
    ----------
    heads : numeric
        SSM heads H [1].
    head_dim : numeric
        Head size P [1].
    state_dim : numeric
        State size N [1].
    groups : numeric
        Groups G sharing B and C [1].
    chunk : numeric
        Chunk length Q [1].

    Returns
    -------
    numeric
        Forward FLOPs per token per layer [FLOP].

    Examples
    --------
    Nemotron-H 56B, chunks of 128:

    >>> ssd_flops_per_token(256, 64, 256, 8, 128)
    21495808.0

    .. math:: F_{ssd} = 2 Q N G + 2 Q P H + 4 N P H
    """
    return 2 * chunk * state_dim * groups + 2 * chunk * head_dim * heads \
        + 4 * state_dim * head_dim * heads


@formula(reference=MAMBA2 + " (x, B, C, dt read, y written; FP32 chunk states written and "
         "read); " + MEGATRON_MAMBA + " (convolution over x, B, C; gated RMSNorm of y by z)",
         domain={"tokens": ">0", "heads": ">=1", "head_dim": ">0", "state_dim": ">0",
                 "groups": ">=1", "chunk": ">0", "tp": ">=1", "bytes_per_element": ">0"},
         symbols=_SYM_MAMBA, result_latex="Q_{ssd}")
def ssd_bytes(tokens, heads, head_dim, state_dim, groups, chunk, tp, bytes_per_element):
    """HBM traffic of one Mamba-2 mixer's memory-bound kernels, one rank, one forward.

    The convolution reads and writes x, B and C (d + 2 G N a token, d = H P); the SSD
    scan reads them and dt and writes y (d), and writes and reads one N x P state per
    head and chunk in FP32; the gated RMSNorm reads y and z and writes its output (3 d).
    Heads and groups split over TP.

    Parameters
    ----------
    tokens : numeric
        Tokens per rank and micro-batch t [1].
    heads : numeric
        SSM heads H [1].
    head_dim : numeric
        Head size P [1].
    state_dim : numeric
        State size N [1].
    groups : numeric
        Groups G [1].
    chunk : numeric
        Chunk length Q [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    bytes_per_element : numeric
        Bytes per activation element e [B].

    Returns
    -------
    numeric
        Bytes moved per layer forward [B].

    Examples
    --------
    >>> ssd_bytes(8192, 256, 64, 256, 8, 128, 1, 2)
    4232052736.0

    .. math:: Q_{ssd} = \\frac{t \\left(e\\,(7 H P + 6 G N + H) + 8 H P N / Q\\right)}{t_p}
    """
    inner = heads * head_dim
    return tokens * (bytes_per_element * (7 * inner + 6 * groups * state_dim + heads)
                     + 8 * inner * state_dim / chunk) / tp

