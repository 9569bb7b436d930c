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
from .ops import maximum

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
}


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
