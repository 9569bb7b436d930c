"""Inference: the rollout (generation) phase of RL post-training.

Generation has two parts.  Prefill runs the prompt through the model at once:
its GEMMs are large, so it is compute-bound.  Decode produces one token per
sequence per step: every step reads the weights and each sequence's KV cache
from HBM and does only 2 FLOP per weight per sequence, so it is memory-bound
until the batch is large (the roofline: time is the larger of bytes over
bandwidth and FLOP over compute rate).  A batch of sampled responses finishes
when its longest response does, so the number of decode steps is an order
statistic of the response-length distribution.

References
----------
.. [Kwon2023] W. Kwon et al., "Efficient Memory Management for Large Language
   Model Serving with PagedAttention", SOSP 2023, arXiv:2309.06180,
   doi:10.1145/3600006.3613165 (KV cache per token s2.2-s3, continuous batching).
.. [Pope2022] R. Pope et al., "Efficiently Scaling Transformer Inference",
   MLSys 2023, arXiv:2211.05102 (s2: decode memory time, weights + KV cache).
.. [Williams2009] S. Williams, A. Waterman, D. Patterson, "Roofline: an
   insightful visual performance model for multicore architectures",
   Commun. ACM 52(4):65-76, 2009. doi:10.1145/1498765.1498785
.. [DeepSeekV2] DeepSeek-AI, "DeepSeek-V2", arXiv:2405.04434, 2024, s2.1
   (multi-head latent attention caches d_c + d_h^R elements per token per layer).
.. [Shao2024] Z. Shao et al., "DeepSeekMath" (GRPO), arXiv:2402.03300, s4.1.
"""

from __future__ import annotations

from .core import formula
from .ops import exp, floor, log, log1p, maximum, sqrt
from .straggler import expected_max_lognormal

KWON = "Kwon et al. 2023 (vLLM, PagedAttention), arXiv:2309.06180"
POPE = "Pope et al. 2022, Efficiently Scaling Transformer Inference, arXiv:2211.05102 s2"
ROOFLINE = "Williams et al. 2009 (roofline), doi:10.1145/1498765.1498785"

_SYM = {
    "layers": "l", "kv_heads": "a_{kv}", "head_dim": "d_h", "bytes_per_element": "e",
    "kv_lora_rank": "d_c", "qk_rope_head_dim": "d_h^R", "active_params": "N_a",
    "tokens": "T", "attention_flops": "A", "peak_flops_per_s": "P",
    "compute_efficiency": r"\eta_c", "steps": "S", "weight_bytes_per_step": "W",
    "kv_bytes_read": "Q_{kv}", "decode_flops": "F", "memory_bandwidth_bytes_per_s": r"\beta",
    "memory_efficiency": r"\eta_m", "hbm_bytes": "M", "weight_bytes": "M_w",
    "reserve_bytes": "M_r", "kv_bytes_per_sequence": "m_{kv}", "batch_tokens": "B",
    "experts": "E", "experts_per_token": "k", "n": "n", "mean_len": r"\mu_L",
    "cv": "c_v", "sequences": "n", "concurrent": "B", "expected_max_len": r"\hat L",
    "prompt_len": "P_L", "heads": "a", "prompt_tokens": "T_p",
}


@formula(reference=KWON + " s2.2; " + POPE + " (K and V per layer per KV head)",
         domain={"layers": ">=0", "kv_heads": ">=1", "head_dim": ">0",
                 "bytes_per_element": ">0"},
         symbols=_SYM, result_latex="m_{kv}")
def kv_cache_bytes_per_token(layers, kv_heads, head_dim, bytes_per_element):
    """KV-cache bytes one token occupies in the whole model (multi-/grouped-query attention).

    Examples: Llama 3 8B (32 layers, 8 KV heads of 128, BF16) holds 131,072 B
    (128 KiB) per token.

    Parameters
    ----------
    layers : numeric
        Layers with softmax attention (a KV cache) [1].
    kv_heads : numeric
        Key/value heads per layer (GQA groups; = heads for MHA) [1].
    head_dim : numeric
        Dimension of one head [1].
    bytes_per_element : numeric
        Bytes of one cached element (2 for BF16, 1 for FP8) [B].

    Returns
    -------
    numeric
        Bytes per cached token [B].

    .. math:: m_{kv} = 2\\, l\\, a_{kv}\\, d_h\\, e
    """
    return 2 * layers * kv_heads * head_dim * bytes_per_element


@formula(reference="Dao & Gu 2024 (Mamba-2), arXiv:2405.21060 s7 (recurrent mode: an N x P "
         "state per head and the convolution's last taps); Yang et al. 2024 (Gated Delta "
         "Networks), arXiv:2412.06464 (a d x d state per head); vLLM's MambaSpec / "
         "mamba cache, " + KWON,
         domain={"layers": ">=0", "heads": ">=1", "head_dim": ">0", "state_dim": ">0",
                 "conv_channels": ">=0", "conv_taps": ">=1", "bytes_per_element": ">0"},
         symbols={**_SYM, "heads": "H", "head_dim": "P", "state_dim": "N",
                  "conv_channels": "c", "conv_taps": "w"},
         result_latex="m_{state}")
def recurrent_state_bytes_per_sequence(layers, heads, head_dim, state_dim, conv_channels,
                                       conv_taps, bytes_per_element):
    """Bytes of the recurrent state one sequence holds while it is generated, in the layers
    whose token mixer is a state-space or linear-attention layer (no KV cache there).

    Each such layer keeps one N x P state per head and the last w - 1 inputs of its short
    convolution over c channels, whatever the sequence's length.

    Parameters
    ----------
    layers : numeric
        Layers with a recurrent token mixer [1].
    heads : numeric
        Heads of the recurrence H [1].
    head_dim : numeric
        Value size of a head P [1].
    state_dim : numeric
        State (key) size of a head N [1].
    conv_channels : numeric
        Channels of the short convolution c [1].
    conv_taps : numeric
        Taps of the convolution w [1].
    bytes_per_element : numeric
        Bytes of one cached element [B].

    Returns
    -------
    numeric
        Bytes per sequence [B].

    Examples
    --------
    Nemotron-H 56B's 54 Mamba-2 layers (256 heads of 64, state 256, convolution over
    16,384 + 2 x 8 x 256 channels, 4 taps), BF16: 460 MB a sequence.

    >>> recurrent_state_bytes_per_sequence(54, 256, 64, 256, 20480, 4, 2) / 1e6
    459.620352

    .. math:: m_{state} = l\\,(H P N + c\\,(w - 1))\\,e
    """
    return layers * (heads * head_dim * state_dim + conv_channels * (conv_taps - 1)) \
        * bytes_per_element


@formula(reference="DeepSeek-AI 2024, DeepSeek-V2, arXiv:2405.04434 s2.1.2-2.1.3 "
         "(the compressed latent c^KV and the decoupled RoPE key k^R are cached)",
         domain={"layers": ">=0", "kv_lora_rank": ">0", "qk_rope_head_dim": ">=0",
                 "bytes_per_element": ">0"},
         symbols=_SYM, result_latex="m_{kv}")
def mla_kv_cache_bytes_per_token(layers, kv_lora_rank, qk_rope_head_dim, bytes_per_element):
    """KV-cache bytes one token occupies with multi-head latent attention (MLA).

    DeepSeek-V3 (61 layers, d_c = 512, d_h^R = 64, BF16): 70,272 B per token.

    Parameters
    ----------
    layers : numeric
        Transformer layers [1].
    kv_lora_rank : numeric
        Dimension of the compressed key-value latent, d_c [1].
    qk_rope_head_dim : numeric
        Dimension of the shared rotary key, d_h^R [1].
    bytes_per_element : numeric
        Bytes of one cached element [B].

    Returns
    -------
    numeric
        Bytes per cached token [B].

    .. math:: m_{kv} = l\\,(d_c + d_h^R)\\, e
    """
    return layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_element


@formula(reference=KWON + " s3 (the cache is the HBM left after weights); vLLM "
         "gpu_memory_utilization (docs.vllm.ai engine arguments documentation)",
         domain={"hbm_bytes": ">0", "weight_bytes": ">=0", "reserve_bytes": ">=0",
                 "kv_bytes_per_sequence": ">0"},
         symbols=_SYM, result_latex="B_{max}")
def max_concurrent_sequences(hbm_bytes, weight_bytes, reserve_bytes, kv_bytes_per_sequence):
    """Sequences whose KV cache fits at once in the memory left after the weights.

    All arguments are per GPU (weights and cache sharded the same way); zero
    when the weights and reserve do not leave room for one sequence.

    Parameters
    ----------
    hbm_bytes : numeric
        Memory the engine may use on one GPU [B].
    weight_bytes : numeric
        Weights held on one GPU [B].
    reserve_bytes : numeric
        Activations, CUDA graphs and allocator reserve on one GPU [B].
    kv_bytes_per_sequence : numeric
        KV cache of one sequence at its full length on one GPU [B].

    Returns
    -------
    numeric
        Concurrent sequences [1].

    .. math:: B_{max} = \\left\\lfloor \\frac{\\max(0, M - M_w - M_r)}{m_{kv}} \\right\\rfloor
    """
    return floor(maximum(hbm_bytes - weight_bytes - reserve_bytes, 0) / kv_bytes_per_sequence)


@formula(reference="Narayanan et al. 2021, arXiv:2104.04473 s5.1 (2 FLOP per weight per "
         "token forward); causal attention core halves the s^2 terms; " + ROOFLINE,
         domain={"active_params": ">0", "prompt_tokens": ">=0", "attention_flops": ">=0",
                 "peak_flops_per_s": ">0", "compute_efficiency": "(0,1]"},
         symbols=_SYM, result_latex="t_{pre}")
def prefill_time(active_params, prompt_tokens, attention_flops, peak_flops_per_s,
                 compute_efficiency):
    """Time to prefill prompts: compute-bound forward pass over all prompt tokens.

    Parameters
    ----------
    active_params : numeric
        Parameters each token passes through (MoE: the active ones), per GPU
        share already applied by the caller if sharded [1].
    prompt_tokens : numeric
        Prompt tokens prefilled [1].
    attention_flops : numeric
        FLOP of the attention core (QK^T and AV) over those prompts [FLOP].
    peak_flops_per_s : numeric
        Dense peak of the GPUs doing the work [FLOP/s].
    compute_efficiency : numeric
        Achieved fraction of the peak on these GEMMs [1].

    Returns
    -------
    numeric
        Prefill time [s].

    .. math:: t_{pre} = \\frac{2 N_a T_p + A}{\\eta_c P}
    """
    return (2 * active_params * prompt_tokens + attention_flops) / (
        compute_efficiency * peak_flops_per_s)


@formula(reference="Causal self-attention: QK^T and AV are 2 s^2 d_h/2 FLOP each per head "
         "(Narayanan et al. 2021, arXiv:2104.04473 s5.1, halved for the causal mask)",
         domain={"layers": ">=0", "heads": ">=1", "head_dim": ">0", "prompt_len": ">=0"},
         symbols=_SYM, result_latex="A_{seq}")
def causal_attention_flops(layers, heads, head_dim, prompt_len):
    """Attention-core FLOP of one causal forward pass over a sequence of length s.

    Parameters
    ----------
    layers : numeric
        Transformer layers [1].
    heads : numeric
        Query heads per layer [1].
    head_dim : numeric
        Dimension of one head [1].
    prompt_len : numeric
        Tokens in the sequence [1].

    Returns
    -------
    numeric
        FLOP of QK^T and AV with the causal mask [FLOP].

    .. math:: A_{seq} = 2\\, l\\, a\\, d_h\\, s^2
    """
    return 2 * layers * heads * head_dim * prompt_len * prompt_len


@formula(reference=POPE + " (decode time = max of memory time, weights + KV, and compute "
         "time); " + ROOFLINE,
         domain={"steps": ">=0", "weight_bytes_per_step": ">=0", "kv_bytes_read": ">=0",
                 "decode_flops": ">=0", "memory_bandwidth_bytes_per_s": ">0",
                 "memory_efficiency": "(0,1]", "peak_flops_per_s": ">0",
                 "compute_efficiency": "(0,1]"},
         symbols=_SYM, result_latex="t_{dec}")
def decode_time(steps, weight_bytes_per_step, kv_bytes_read, decode_flops,
                memory_bandwidth_bytes_per_s, memory_efficiency, peak_flops_per_s,
                compute_efficiency):
    """Time of S decode steps on one GPU by the roofline.

    Each step reads the weights once for the whole batch; the KV cache read
    grows with every sequence's context.  Summed over the steps, the time is
    the larger of the memory time and the compute time (a step-by-step max
    would be at least this: it is a lower bound when steps change regime).
    One step at batch 1 with a short context gives the time per output token.

    Parameters
    ----------
    steps : numeric
        Decode steps (one token per running sequence each) [1].
    weight_bytes_per_step : numeric
        Weight bytes one GPU reads per step [B].
    kv_bytes_read : numeric
        KV-cache bytes one GPU reads over all steps [B].
    decode_flops : numeric
        FLOP one GPU does over all steps (2 per active weight per token plus attention) [FLOP].
    memory_bandwidth_bytes_per_s : numeric
        Peak HBM bandwidth [B/s].
    memory_efficiency : numeric
        Achieved fraction of it in decode [1].
    peak_flops_per_s : numeric
        Dense peak [FLOP/s].
    compute_efficiency : numeric
        Achieved fraction of the peak [1].

    Returns
    -------
    numeric
        Decode time [s].

    .. math:: t_{dec} = \\max\\left(\\frac{S W + Q_{kv}}{\\eta_m \\beta},
              \\frac{F}{\\eta_c P}\\right)
    """
    return maximum((steps * weight_bytes_per_step + kv_bytes_read)
                   / (memory_efficiency * memory_bandwidth_bytes_per_s),
                   decode_flops / (compute_efficiency * peak_flops_per_s))


@formula(reference="Occupancy: each of B tokens routes to k of E experts; an expert is "
         "untouched with probability (1 - k/E)^B (Feller 1968, An Introduction to "
         "Probability Theory, vol. 1, ch. II.11, occupancy problems)",
         domain={"batch_tokens": ">=0", "experts": ">=1", "experts_per_token": ">=1"},
         symbols=_SYM, result_latex="f_E")
def experts_touched_fraction(batch_tokens, experts, experts_per_token):
    """Expected fraction of an MoE layer's experts a decode step must read.

    With few tokens per step, only the experts they route to are read from
    HBM; at large batch all of them are (routing taken as uniform).

    Parameters
    ----------
    batch_tokens : numeric
        Tokens in the decode step, B [1].
    experts : numeric
        Routed experts per MoE layer, E [1].
    experts_per_token : numeric
        Experts each token routes to, k <= E [1].

    Returns
    -------
    numeric
        Fraction of experts read [1].

    .. math:: f_E = 1 - \\left(1 - \\frac{k}{E}\\right)^B
    """
    return 1 - exp(batch_tokens * log1p(-experts_per_token / experts))


@formula(reference="Lognormal with mean mu and coefficient of variation c: "
         "sigma^2 = ln(1 + c^2), m = ln mu - sigma^2/2 (Johnson, Kotz & Balakrishnan 1994, "
         "Continuous Univariate Distributions vol. 1, ch. 14); maximum of n: "
         "formulas.straggler.expected_max_lognormal (Royston 1982, doi:10.2307/2347982)",
         domain={"n": ">=1", "mean_len": ">0", "cv": ">=0"},
         symbols=_SYM, result_latex=r"\hat L_n")
def expected_max_response_len(n, mean_len, cv):
    """Expected length of the longest of n sampled responses (lognormal lengths).

    A batch of responses generated together finishes when the longest does.
    Response lengths of sampled reasoning traces are right-skewed; a
    lognormal of the given mean and coefficient of variation is assumed.
    The caller caps it at the generation limit.

    Parameters
    ----------
    n : numeric
        Responses in the batch [1].
    mean_len : numeric
        Mean response length [1].
    cv : numeric
        Coefficient of variation of the length (std / mean) [1].

    Returns
    -------
    numeric
        Expected longest response, in tokens [1].

    .. math:: \\hat L_n = E[\\max_n L],\\; \\ln L \\sim
              \\mathcal N\\!\\left(\\ln \\mu_L - \\tfrac{\\sigma^2}{2}, \\sigma^2\\right),\\;
              \\sigma^2 = \\ln(1 + c_v^2)
    """
    sigma = sqrt(log(1 + cv * cv))
    return expected_max_lognormal(n, log(mean_len) - sigma * sigma / 2, sigma)


@formula(reference=KWON + " s4.1-4.5 (continuous batching: a finished sequence's slot "
         "is refilled at the next step)",
         domain={"sequences": ">=0", "concurrent": ">=1", "mean_len": ">0",
                 "expected_max_len": ">0"},
         symbols=_SYM, result_latex="S")
def decode_steps(sequences, concurrent, mean_len, expected_max_len):
    """Decode steps to generate ``sequences`` responses with at most B running at once.

    Under continuous batching each of the B slots generates n/B responses in
    turn; the work of the first n - B of them is spread evenly
    ((n/B - 1) mean lengths), and the last wave ends with its longest
    response.  With n <= B this is the longest response alone.

    Parameters
    ----------
    sequences : numeric
        Responses to generate on the engine, n [1].
    concurrent : numeric
        Sequences running at once, B [1].
    mean_len : numeric
        Mean response length [1].
    expected_max_len : numeric
        Expected longest response of the last wave (min(n, B) of them) [1].

    Returns
    -------
    numeric
        Decode steps [1].

    .. math:: S = \\hat L + \\max\\left(0, \\frac{n}{B} - 1\\right) \\mu_L
    """
    return expected_max_len + maximum(sequences / concurrent - 1, 0) * mean_len


@formula(reference=KWON + " s2.2 (each decode step attends to the whole context); "
         "E[L^2] = mu^2 (1 + c^2)",
         domain={"prompt_len": ">=0", "mean_len": ">0", "cv": ">=0"},
         symbols=_SYM, result_latex=r"\bar C")
def kv_tokens_read_per_sequence(prompt_len, mean_len, cv):
    """Cached tokens one sequence reads summed over its decode steps.

    Step j of a response attends to P + j cached tokens; summed over L steps
    that is P L + L^2/2, and its expectation over the length distribution
    uses E[L^2] = mu^2 (1 + c^2).

    Parameters
    ----------
    prompt_len : numeric
        Prompt length, P [1].
    mean_len : numeric
        Mean response length [1].
    cv : numeric
        Coefficient of variation of the response length [1].

    Returns
    -------
    numeric
        Token reads of the KV cache per sequence [1].

    .. math:: \\bar C = P_L \\mu_L + \\tfrac12 \\mu_L^2 (1 + c_v^2)
    """
    return prompt_len * mean_len + mean_len * mean_len * (1 + cv * cv) / 2
