"""Pipeline parallelism: bubbles and point-to-point traffic of 1F1B schedules.

p pipeline stages, m micro-batches per iteration (per pipeline), v model
chunks per GPU (v = 1: plain 1F1B / PipeDream-Flush; v >= 2: Megatron's
interleaved schedule).

References
----------
.. [Narayanan2021] D. Narayanan et al., "Efficient Large-Scale Language Model
   Training on GPU Clusters Using Megatron-LM", SC'21, arXiv:2104.04473,
   doi:10.1145/3458817.3476209, s2.2 and s4.1.
.. [Korthikanti2022] V. Korthikanti et al., "Reducing Activation
   Recomputation in Large Transformer Models", arXiv:2205.05198, s4.2.2.
.. [MCore] NVIDIA Megatron-Core, ``TransformerConfig`` options
   ``account_for_embedding_in_pipeline_split``, ``account_for_loss_in_pipeline_split``,
   ``num_layers_in_first_pipeline_stage`` and ``num_layers_in_last_pipeline_stage``
   (megatron/core/transformer/transformer_config.py, core_r0.12.0 and later): uneven
   pipeline stages, as in NVIDIA's Llama 3.1 405B recipe (126 layers, PP 8 x VP 8).
"""

from __future__ import annotations

from .core import formula
from .ops import ceil, maximum, minimum

NARAYANAN = "Narayanan et al. 2021 (SC'21), arXiv:2104.04473, doi:10.1145/3458817.3476209"

MCORE_SPLIT = ("Megatron-Core TransformerConfig: account_for_embedding_in_pipeline_split, "
               "account_for_loss_in_pipeline_split, num_layers_in_first/last_pipeline_stage "
               "(megatron/core/transformer/transformer_config.py, core_r0.12.0)")

DUALPIPE = ("DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437 s3.2.1 and "
            "Table 2; github.com/deepseek-ai/DualPipe README (B: a full backward chunk) and "
            "dualpipe/dualpipe.py@bb214e8 (num_ranks even; num_chunks even and >= 2 num_ranks)")

_SYM = {"pp": "p", "microbatches": "m", "virtual_stages": "v", "seq_len": "s",
        "micro_batch": "b", "hidden": "h", "bytes_per_element": "e", "tp": "t",
        "sequence_parallel": r"\sigma"}


@formula(reference=NARAYANAN + ", s2.2 (m = B / (d b) micro-batches per pipeline)",
         domain={"global_batch": ">0", "dp": ">=1", "micro_batch": ">0"},
         symbols={"global_batch": "B", "dp": "d", "micro_batch": "b"}, result_latex="m")
def microbatches_per_pipeline(global_batch, dp, micro_batch):
    """Micro-batches each pipeline (data-parallel replica) runs per iteration.

    Parameters
    ----------
    global_batch : numeric
        Global batch B [1] (sequences).
    dp : numeric
        Data-parallel replicas d [1].
    micro_batch : numeric
        Micro-batch size b [1] (sequences).

    Returns
    -------
    numeric
        Micro-batches per iteration m [1].

    Examples
    --------
    >>> microbatches_per_pipeline(1536, 96, 1)
    16.0

    .. math:: m = \\frac{B}{d\\, b}
    """
    return global_batch / (dp * micro_batch)


@formula(reference=NARAYANAN + ", s2.2.1",
         domain={"pp": ">=1", "microbatches": ">=1"}, symbols=_SYM, result_latex=r"\beta")
def bubble_fraction_1f1b(pp, microbatches):
    """Pipeline bubble of the 1F1B (PipeDream-Flush) or GPipe schedule.

    Idle time per iteration relative to the ideal compute time m(t_f + t_b):
    the (p - 1) fill and drain slots.

    Parameters
    ----------
    pp : numeric
        Pipeline stages p [1].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        Bubble time / ideal compute time [1].

    .. math:: \\beta = \\frac{p - 1}{m}
    """
    return (pp - 1) / microbatches


@formula(reference=NARAYANAN + ", s2.2.2",
         domain={"pp": ">=1", "microbatches": ">=1", "virtual_stages": ">=1"},
         symbols=_SYM, result_latex=r"\beta")
def bubble_fraction_interleaved(pp, microbatches, virtual_stages):
    """Pipeline bubble of the interleaved 1F1B schedule with v model chunks per GPU.

    Parameters
    ----------
    pp : numeric
        Pipeline stages (GPUs per pipeline) p [1].
    microbatches : numeric
        Micro-batches per iteration m (Megatron requires m a multiple of p) [1].
    virtual_stages : numeric
        Model chunks per GPU v; v = 1 gives :func:`bubble_fraction_1f1b` [1].

    Returns
    -------
    numeric
        Bubble time / ideal compute time [1].

    .. math:: \\beta = \\frac{p - 1}{v m}
    """
    return (pp - 1) / (virtual_stages * microbatches)


@formula(reference=DUALPIPE,
         domain={"pp": ">=1", "forward_s": ">=0", "backward_s": ">=0", "weight_grad_s": ">=0"},
         symbols={**_SYM, "forward_s": "F", "backward_s": "B", "weight_grad_s": "W"},
         result_latex="T_{bubble}")
def bubble_time_dualpipe(pp, forward_s, backward_s, weight_grad_s):
    """Pipeline bubble of one iteration under DeepSeek's DualPipe schedule.

    DualPipe feeds micro-batches from both ends of the pipeline: each of the
    p ranks holds two stages (stage i and stage p - 1 - i, two copies of the
    parameters), pairs the forward chunk of one micro-batch with the backward
    chunk of another so that each one's communication hides under the other's
    compute, and splits the backward into its input part and its weight part
    (zero-bubble), which fill the warm-up and drain.  The bubble is
    (p/2 - 1)(F&B + B - 3W) (DeepSeek-V3 Table 2), with F a forward chunk, B a
    full backward chunk (input and weight gradients), W its weight-gradient
    part and F&B an overlapped forward-backward pair, here F + B (the pair's
    communication hidden, its compute serial).  The 1F1B bubble in the same
    terms is (p - 1)(F + B).  Clamped at 0 (a backward no longer than its
    weight part plus a third of the forward leaves no idle time).

    Parameters
    ----------
    pp : numeric
        Pipeline ranks p (even under DualPipe) [1].
    forward_s : numeric
        Forward time of one micro-batch through one stage F [s].
    backward_s : numeric
        Full backward time of one micro-batch through one stage B (with any
        recomputation) [s].
    weight_grad_s : numeric
        The weight-gradient part of ``backward_s`` W [s].

    Returns
    -------
    numeric
        Idle time of a rank per iteration [s].

    Examples
    --------
    Sixteen ranks, a backward twice the forward and a weight part equal to it
    (GEMMs only): two forward chunks of idle time per half-pipeline rank,
    against 1F1B's (p - 1)(F + B) = 45 chunks:

    >>> float(bubble_time_dualpipe(16, 1.0, 2.0, 1.0))
    14.0

    .. math:: T_{bubble} = \\max\\left(\\frac{p}{2} - 1, 0\\right)
        \\max\\left(F + 2B - 3W,\\; 0\\right)
    """
    return maximum(pp / 2 - 1, 0) * maximum(forward_s + 2 * backward_s - 3 * weight_grad_s, 0)


@formula(reference=NARAYANAN + ", s4.1 (scatter/gather optimisation: each TP rank sends "
         "sbh/t); Korthikanti et al. 2022, arXiv:2205.05198 s4.2.2 (sequence parallel)",
         domain={"seq_len": ">0", "micro_batch": ">0", "hidden": ">0",
                 "bytes_per_element": ">0", "tp": ">=1", "sequence_parallel": "[0,1]"},
         symbols=_SYM, result_latex="S_{p2p}")
def pipeline_p2p_bytes(seq_len, micro_batch, hidden, bytes_per_element, tp,
                       sequence_parallel):
    """Bytes one GPU sends to the next stage per micro-batch and per direction.

    The boundary tensor is the b x s x h layer output (forward) or its
    gradient (backward).  Convention: per GPU, over that GPU's own link.
    ``sequence_parallel`` = 1 means every tensor-parallel rank sends only its
    1/t slice, true with sequence parallelism and with Megatron's
    scatter/gather optimisation (the receiving stage re-assembles the tensor
    with an all-gather over NVLink, not counted here); 0 means every rank
    sends the whole replicated tensor.

    Parameters
    ----------
    seq_len : numeric
        Sequence length s [1].
    micro_batch : numeric
        Micro-batch size b [1].
    hidden : numeric
        Hidden size h [1].
    bytes_per_element : numeric
        Bytes per activation element (2 for bf16) e [B].
    tp : numeric
        Tensor-parallel degree t [1].
    sequence_parallel : numeric
        1 with sequence parallelism or scatter/gather, 0 without [1].

    Returns
    -------
    numeric
        Bytes per GPU per micro-batch per direction [B].

    .. math:: S_{p2p} = \\frac{s b h e}{1 + \\sigma (t - 1)}
    """
    return seq_len * micro_batch * hidden * bytes_per_element \
        / (1 + sequence_parallel * (tp - 1))


@formula(reference=NARAYANAN + ", s2.2 (schedules) and s4.1 (blocking point-to-point "
         "send/receive between neighbouring stages)",
         domain={"pp": ">=1", "microbatches": ">=1", "virtual_stages": ">=1"},
         symbols=_SYM, result_latex="n_{p2p}")
def pipeline_p2p_count(pp, microbatches, virtual_stages):
    """Point-to-point transfers on the critical path of one iteration.

    The iteration of a 1F1B schedule spans v m + p - 1 chunk slots (m per
    chunk in the steady state, p - 1 to fill and drain; this is the bubble
    (p-1)/(vm) of :func:`bubble_fraction_interleaved`).  Megatron's
    send/receive are blocking and sit between consecutive compute steps, so
    every slot waits for one activation transfer (forward) and one gradient
    transfer (backward): 2(v m + p - 1) transfers of
    :func:`pipeline_p2p_bytes` each.  Without pipelining (p = 1) there are
    none (the min(p - 1, 1) switch; p is an integer).  Interleaving
    multiplies the steady-state transfers by v, as Narayanan s2.2.2 notes.

    Checked against a simulation of the non-interleaved schedule with
    blocking sends (tests/test_pipeline.py): the count is conservative, by
    exactly 3 transfers for p >= 3 (the first and last slots do not send),
    and about 2x for p = 2, where the two stages' exchanges overlap (m + 1).

    Parameters
    ----------
    pp : numeric
        Pipeline stages p [1].
    microbatches : numeric
        Micro-batches per iteration m [1].
    virtual_stages : numeric
        Model chunks per GPU v (1 = not interleaved) [1].

    Returns
    -------
    numeric
        Transfers on the critical path per iteration [1].

    .. math:: n_{p2p} = 2 (v m + p - 1) \\min(p - 1, 1)
    """
    return 2 * (virtual_stages * microbatches + pp - 1) * minimum(pp - 1, 1)


@formula(reference=MCORE_SPLIT + "; " + NARAYANAN + ", s2.2.2 (v model chunks per GPU)",
         domain={"layers": ">=1", "pp": ">=1", "virtual_stages": ">=1"},
         symbols={"layers": "L", "pp": "p", "virtual_stages": "v"}, result_latex="l_s")
def fullest_stage_layers(layers, pp, virtual_stages):
    """Transformer layers on the fullest pipeline stage, which sets the pipeline's pace.

    The L layers are split over p v virtual stages (v model chunks per GPU). When p v
    divides L every stage holds L / p. Otherwise the stages are uneven: Megatron-Core
    counts the embedding and the loss as stage units (L + 1 or L + 2 units; NVIDIA's
    Llama 3.1 405B recipe: 126 + 2 = 128 units over PP 8 x VP 8), or gives the first
    and last stage fewer layers; either way the fullest virtual stage holds
    ceil(L / (p v)) layers and the fullest GPU v of them.

    Parameters
    ----------
    layers : numeric
        Transformer layers L [1].
    pp : numeric
        Pipeline stages p [1].
    virtual_stages : numeric
        Model chunks per GPU v [1].

    Returns
    -------
    numeric
        Layers on the fullest stage [1].

    Examples
    --------
    >>> float(fullest_stage_layers(126, 8, 8))  # Llama 3.1 405B, 128 units / 64
    16.0
    >>> float(fullest_stage_layers(80, 4, 1))  # even: L / p
    20.0

    .. math:: l_s = v \\left\\lceil \\frac{L}{p v} \\right\\rceil
    """
    return virtual_stages * ceil(layers / (pp * virtual_stages))
