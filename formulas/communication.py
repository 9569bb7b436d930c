"""Collective communication: alpha-beta (latency-bandwidth) cost of NCCL-style collectives.

A message of S bytes between two ranks costs alpha + S/B (Hockney's model):
alpha is the per-message latency, B the achievable per-rank link bandwidth.
Collective costs follow the bandwidth-optimal ring / recursive algorithms
analysed by Thakur, Rabenseifner & Gropp; ``size_bytes`` is always the full
buffer size S as nccl-tests defines it (the all-reduced buffer, the gathered
output of an all-gather, the input of a reduce-scatter).  With one rank every
collective costs 0.

References
----------
.. [Hockney1994] R. W. Hockney, "The communication challenge for MPP: Intel
   Paragon and Meiko CS-2", Parallel Computing 20(3):389-398, 1994.
   doi:10.1016/S0167-8191(06)80021-9
.. [Thakur2005] R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of collective
   communication operations in MPICH", Int. J. High Perform. Comput. Appl.
   19(1):49-66, 2005. doi:10.1177/1094342005051521
.. [Sanders2009] P. Sanders, J. Speck, J. L. Traeff, "Two-tree algorithms for full
   bandwidth broadcast, reduction and scan", Parallel Computing 35(12):581-594,
   2009. doi:10.1016/j.parco.2009.09.001
.. [NCCLTests] NVIDIA nccl-tests, doc/PERFORMANCE.md ("bus bandwidth").
"""

from __future__ import annotations

from .core import formula
from .ops import log2, maximum, minimum

HOCKNEY = "Hockney 1994, Parallel Computing 20(3):389, doi:10.1016/S0167-8191(06)80021-9"
THAKUR = "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1):49-66, doi:10.1177/1094342005051521"
NCCL_TESTS = "NVIDIA nccl-tests doc/PERFORMANCE.md (bus bandwidth)"

_SYM = {"size_bytes": "S", "ranks": "n", "bandwidth_bytes_per_s": "B", "latency_s": r"\alpha"}
_DOM = {"size_bytes": ">=0", "ranks": ">=1", "bandwidth_bytes_per_s": ">0", "latency_s": ">=0"}

@formula(reference=THAKUR + ", s4.4 (ring = reduce-scatter + all-gather); " + HOCKNEY,
         domain=_DOM, symbols=_SYM, result_latex="T_{AR,ring}")
def ring_allreduce_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s):
    """Ring all-reduce time (bandwidth-optimal reduce-scatter then all-gather).

    2(n-1) steps, each moving one S/n chunk per rank.

    Parameters
    ----------
    size_bytes : numeric
        Buffer to all-reduce, S [B].
    ranks : numeric
        Ranks taking part, n [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank link bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Time of the collective; 0 for one rank [s].

    .. math:: T = 2(n-1)\\alpha + \\frac{2(n-1)}{n}\\frac{S}{B}
    """
    return 2 * (ranks - 1) * latency_s \
        + 2 * (ranks - 1) / ranks * size_bytes / bandwidth_bytes_per_s


@formula(reference="NVIDIA NCCL src/graph/tuning.cc (tree all-reduce: algbw = busbw/2, "
         "latency 2 log2(nodes) alpha); double binary tree: Sanders, Speck & Traeff 2009, "
         "doi:10.1016/j.parco.2009.09.001; " + HOCKNEY,
         domain=_DOM, symbols=_SYM, result_latex="T_{AR,tree}")
def tree_allreduce_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s):
    """Double-binary-tree all-reduce time, as NCCL models it.

    Pipelined reduce up and broadcast down two complementary binary trees, each
    carrying half the buffer: the latency grows with the tree depth log2(n) and
    every rank sends and receives 2S in total (NCCL's tuning model: algorithm
    bandwidth = bus bandwidth / 2, for any n >= 2).  The factor min(n-1, 1) only
    makes one rank cost nothing; for n >= 2 it is 1.

    Parameters
    ----------
    size_bytes : numeric
        Buffer to all-reduce, S [B].
    ranks : numeric
        Ranks taking part, n [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank link bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Time of the collective; 0 for one rank [s].

    .. math:: T = 2\\log_2(n)\\,\\alpha + 2\\min(n-1, 1)\\frac{S}{B}
    """
    return 2 * log2(ranks) * latency_s \
        + 2 * minimum(ranks - 1, 1) * size_bytes / bandwidth_bytes_per_s


@formula(reference=THAKUR + ", s4.1 (ring all-gather); " + HOCKNEY,
         domain=_DOM, symbols=_SYM, result_latex="T_{AG}")
def allgather_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s):
    """Ring all-gather time.

    n-1 steps, each forwarding one S/n chunk.

    Parameters
    ----------
    size_bytes : numeric
        Gathered output buffer (n chunks), S [B].
    ranks : numeric
        Ranks taking part, n [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank link bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Time of the collective; 0 for one rank [s].

    .. math:: T = (n-1)\\alpha + \\frac{n-1}{n}\\frac{S}{B}
    """
    return (ranks - 1) * latency_s + (ranks - 1) / ranks * size_bytes / bandwidth_bytes_per_s


@formula(reference=THAKUR + ", s4.3 (ring reduce-scatter); " + HOCKNEY,
         domain=_DOM, symbols=_SYM, result_latex="T_{RS}")
def reduce_scatter_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s):
    """Ring reduce-scatter time.

    n-1 steps, each reducing and forwarding one S/n chunk.

    Parameters
    ----------
    size_bytes : numeric
        Input buffer to reduce (n chunks), S [B].
    ranks : numeric
        Ranks taking part, n [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank link bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Time of the collective; 0 for one rank [s].

    .. math:: T = (n-1)\\alpha + \\frac{n-1}{n}\\frac{S}{B}
    """
    return (ranks - 1) * latency_s + (ranks - 1) / ranks * size_bytes / bandwidth_bytes_per_s


@formula(reference=THAKUR + ", s4.5 (pairwise-exchange all-to-all); " + HOCKNEY,
         domain=_DOM, symbols=_SYM, result_latex="T_{A2A}")
def alltoall_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s):
    """Pairwise-exchange all-to-all time.

    Each rank holds S bytes in n blocks and sends n-1 of them, one per step, to
    the other ranks; its own block stays local.

    Parameters
    ----------
    size_bytes : numeric
        Bytes each rank holds and sends in total (n blocks), S [B].
    ranks : numeric
        Ranks taking part, n [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank link bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Time of the collective; 0 for one rank [s].

    .. math:: T = (n-1)\\alpha + \\frac{n-1}{n}\\frac{S}{B}
    """
    return (ranks - 1) * latency_s + (ranks - 1) / ranks * size_bytes / bandwidth_bytes_per_s


@formula(reference=HOCKNEY, domain={"size_bytes": ">=0", "bandwidth_bytes_per_s": ">0",
                                     "latency_s": ">=0"},
         symbols=_SYM, result_latex="T_{p2p}")
def p2p_time(size_bytes, bandwidth_bytes_per_s, latency_s):
    """Point-to-point message time (Hockney's alpha-beta model).

    Parameters
    ----------
    size_bytes : numeric
        Message size, S [B].
    bandwidth_bytes_per_s : numeric
        Achievable link bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Transfer time [s].

    .. math:: T = \\alpha + S / B
    """
    return latency_s + size_bytes / bandwidth_bytes_per_s


@formula(reference=THAKUR + " (reduce-scatter, all-reduce and all-gather rings composed); "
         "two-level scheme as in NCCL/Horovod hierarchical all-reduce, e.g. Jia et al. 2018, "
         "arXiv:1807.11205 s3.3",
         domain={"size_bytes": ">=0", "ranks_intra": ">=1", "ranks_inter": ">=1",
                 "bandwidth_intra_bytes_per_s": ">0", "bandwidth_inter_bytes_per_s": ">0",
                 "latency_intra_s": ">=0", "latency_inter_s": ">=0"},
         symbols={"size_bytes": "S", "ranks_intra": "n_a", "ranks_inter": "n_e",
                  "bandwidth_intra_bytes_per_s": "B_a", "bandwidth_inter_bytes_per_s": "B_e",
                  "latency_intra_s": r"\alpha_a", "latency_inter_s": r"\alpha_e"},
         result_latex="T_{AR,hier}")
def hierarchical_allreduce_time(size_bytes, ranks_intra, ranks_inter,
                                bandwidth_intra_bytes_per_s, bandwidth_inter_bytes_per_s,
                                latency_intra_s, latency_inter_s):
    """Two-level all-reduce: reduce-scatter in the node, ring across nodes, all-gather.

    Every one of the n_a ranks of a node owns S/n_a bytes after the intra-node
    reduce-scatter and all-reduces them with its peers of the same local index
    on the other n_e nodes (n_a rings run in parallel, each rank on its own
    inter-node bandwidth), then the node all-gathers.  With n_e = 1 this is
    exactly :func:`ring_allreduce_time` over n_a ranks; with n_a = 1 the flat
    ring over n_e ranks.

    Parameters
    ----------
    size_bytes : numeric
        Buffer to all-reduce, S [B].
    ranks_intra : numeric
        Ranks per node (scale-up domain), n_a [1].
    ranks_inter : numeric
        Nodes, n_e [1].
    bandwidth_intra_bytes_per_s : numeric
        Achievable per-rank intra-node bandwidth, B_a [B/s].
    bandwidth_inter_bytes_per_s : numeric
        Achievable per-rank inter-node bandwidth, B_e [B/s].
    latency_intra_s : numeric
        Intra-node per-message latency, alpha_a [s].
    latency_inter_s : numeric
        Inter-node per-message latency, alpha_e [s].

    Returns
    -------
    numeric
        Time of the all-reduce [s].

    .. math::
        T = 2\\left[(n_a-1)\\alpha_a + \\frac{n_a-1}{n_a}\\frac{S}{B_a}\\right]
          + 2(n_e-1)\\alpha_e + \\frac{2(n_e-1)}{n_e}\\frac{S}{n_a B_e}
    """
    # reduce-scatter then all-gather, each the mirror image of the other
    return 2 * hierarchical_allgather_time(size_bytes, ranks_intra, ranks_inter,
                                           bandwidth_intra_bytes_per_s,
                                           bandwidth_inter_bytes_per_s,
                                           latency_intra_s, latency_inter_s)


@formula(reference=THAKUR + ", s4.1 (ring all-gather), applied per level as in NCCL's "
         "rail-aligned rings (Jeaugey, NCCL 2.0, GTC 2017); " + HOCKNEY,
         domain={"size_bytes": ">=0", "ranks_intra": ">=1", "ranks_inter": ">=1",
                 "bandwidth_intra_bytes_per_s": ">0", "bandwidth_inter_bytes_per_s": ">0",
                 "latency_intra_s": ">=0", "latency_inter_s": ">=0"},
         symbols={"size_bytes": "S", "ranks_intra": "n_a", "ranks_inter": "n_e",
                  "bandwidth_intra_bytes_per_s": "B_a", "bandwidth_inter_bytes_per_s": "B_e",
                  "latency_intra_s": r"\alpha_a", "latency_inter_s": r"\alpha_e"},
         result_latex="T_{AG,hier}")
def hierarchical_allgather_time(size_bytes, ranks_intra, ranks_inter,
                                bandwidth_intra_bytes_per_s, bandwidth_inter_bytes_per_s,
                                latency_intra_s, latency_inter_s):
    """Two-level all-gather: across nodes among same-index ranks, then inside the node.

    Each of the n_a ranks of a node gathers the chunks of its peers of the same local
    index on the other n_e nodes (n_a rings in parallel, each on its own inter-node
    bandwidth), so a node imports S (n_e - 1)/n_e over all its NICs together, not per
    rank; then the node all-gathers its n_a pieces of S/n_a.  The reduce-scatter of
    ZeRO-3/FSDP gradients is the mirror image and takes the same time.  With n_e = 1
    this is :func:`allgather_time` over n_a ranks; with n_a = 1 the flat ring over n_e.

    Parameters
    ----------
    size_bytes : numeric
        Gathered output buffer, S [B].
    ranks_intra : numeric
        Ranks per node (scale-up domain), n_a [1].
    ranks_inter : numeric
        Nodes, n_e [1].
    bandwidth_intra_bytes_per_s : numeric
        Achievable per-rank intra-node bandwidth, B_a [B/s].
    bandwidth_inter_bytes_per_s : numeric
        Achievable per-rank inter-node bandwidth, B_e [B/s].
    latency_intra_s : numeric
        Intra-node per-message latency, alpha_a [s].
    latency_inter_s : numeric
        Inter-node per-message latency, alpha_e [s].

    Returns
    -------
    numeric
        Time of the all-gather [s].

    Examples
    --------
    Eight nodes of eight GPUs gathering 26 GB (a 13B model in bf16) at 40 GB/s per NIC
    and 240 GB/s per GPU over NVLink: 0.07 s across nodes plus 0.09 s inside, where a flat
    ring over 64 ranks on the NICs alone would take 0.64 s.

    >>> round(hierarchical_allgather_time(26e9, 8, 8, 240e9, 40e9, 0.0, 0.0), 3)
    0.166

    .. math::
        T = (n_e-1)\\alpha_e + \\frac{n_e-1}{n_e}\\frac{S}{n_a B_e}
          + (n_a-1)\\alpha_a + \\frac{n_a-1}{n_a}\\frac{S}{B_a}
    """
    inter = (ranks_inter - 1) * latency_inter_s + (ranks_inter - 1) / ranks_inter \
        * size_bytes / (ranks_intra * bandwidth_inter_bytes_per_s)
    intra = (ranks_intra - 1) * latency_intra_s \
        + (ranks_intra - 1) / ranks_intra * size_bytes / bandwidth_intra_bytes_per_s
    return inter + intra


@formula(reference=NCCL_TESTS + ", AllReduce: busbw = algbw 2(n-1)/n",
         domain={"algorithm_bandwidth_bytes_per_s": ">=0", "ranks": ">=1"},
         symbols={"algorithm_bandwidth_bytes_per_s": r"B_{alg}", "ranks": "n"},
         result_latex=r"B_{bus}")
def allreduce_bus_bandwidth(algorithm_bandwidth_bytes_per_s, ranks):
    """Bus bandwidth of an all-reduce from its algorithm bandwidth (nccl-tests).

    The bus bandwidth is comparable with the link bandwidth regardless of n:
    for a ring, busbw = S_moved_per_rank / time.

    Parameters
    ----------
    algorithm_bandwidth_bytes_per_s : numeric
        Algorithm bandwidth S / time [B/s].
    ranks : numeric
        Ranks, n [1].

    Returns
    -------
    numeric
        Bus bandwidth [B/s].

    .. math:: B_{bus} = B_{alg} \\frac{2(n-1)}{n}
    """
    return algorithm_bandwidth_bytes_per_s * 2 * (ranks - 1) / ranks


@formula(reference=NCCL_TESTS + ", AllGather / ReduceScatter: busbw = algbw (n-1)/n",
         domain={"algorithm_bandwidth_bytes_per_s": ">=0", "ranks": ">=1"},
         symbols={"algorithm_bandwidth_bytes_per_s": r"B_{alg}", "ranks": "n"},
         result_latex=r"B_{bus}")
def allgather_bus_bandwidth(algorithm_bandwidth_bytes_per_s, ranks):
    """Bus bandwidth of an all-gather or reduce-scatter from its algorithm bandwidth.

    Parameters
    ----------
    algorithm_bandwidth_bytes_per_s : numeric
        Algorithm bandwidth S / time, S the full (gathered) buffer [B/s].
    ranks : numeric
        Ranks, n [1].

    Returns
    -------
    numeric
        Bus bandwidth [B/s].

    .. math:: B_{bus} = B_{alg} \\frac{n-1}{n}
    """
    return algorithm_bandwidth_bytes_per_s * (ranks - 1) / ranks


@formula(reference="Overlap of communication with independent compute; e.g. Narayanan et al. "
         "2021 (Megatron-LM SC21), arXiv:2104.04473 s4.2; Shoeybi et al. 2019, "
         "arXiv:1909.08053",
         domain={"comm_time_s": ">=0", "compute_time_s": ">=0", "overlap_fraction": "[0,1]"},
         symbols={"comm_time_s": "T_c", "compute_time_s": "T_x", "overlap_fraction": "f"},
         result_latex="T_{exp}")
def exposed_comm_time(comm_time_s, compute_time_s, overlap_fraction):
    """Communication time not hidden behind compute.

    At most the concurrent compute can hide communication; ``overlap_fraction``
    is the share of that hideable part actually hidden (0: fully exposed,
    1: perfect overlap).

    Parameters
    ----------
    comm_time_s : numeric
        Communication time, T_c [s].
    compute_time_s : numeric
        Compute that may run concurrently, T_x [s].
    overlap_fraction : numeric
        Share of the overlappable communication that is hidden, f [1].

    Returns
    -------
    numeric
        Exposed communication time [s], between 0 and T_c.

    .. math:: T_{exp} = T_c - f \\min(T_c, T_x)
    """
    return comm_time_s - overlap_fraction * minimum(comm_time_s, compute_time_s)


@formula(reference="Bucketed gradient reduction overlapped with backward: Li et al. 2020 "
         "(PyTorch DDP), VLDB 13(12), arXiv:2006.15704 s3.2.3 (gradient buckets all-reduced "
         "as soon as their gradients are ready); Megatron-Core DistributedDataParallelConfig "
         "overlap_grad_reduce / overlap_param_gather (NeMo communication-overlap guide: the "
         "distributed optimizer 'exposes only one DP communication chunk'); Zhao et al. 2023 "
         "(PyTorch FSDP), arXiv:2304.11277 s3.3 (per-unit reduce-scatter and prefetched "
         "all-gather); the two-stage pipeline of equal chunks: compute, then communication",
         domain={"comm_time_s": ">=0", "compute_time_s": ">=0", "buckets": ">=1",
                 "overlap_fraction": "[0,1]"},
         symbols={"comm_time_s": "T_c", "compute_time_s": "T_x", "buckets": "n",
                  "overlap_fraction": "f"},
         result_latex="T_{exp}")
def bucketed_exposed_comm_time(comm_time_s, compute_time_s, buckets, overlap_fraction):
    """Communication of n buckets not hidden behind the compute that produces them.

    The compute T_x produces n equal buckets in turn; each bucket's collective starts when
    the bucket is ready and the previous one is done (one communication stream).  What the
    compute cannot hide is the last bucket's collective, T_c / n, or, when communication
    outlasts compute, everything beyond the compute that follows the first bucket:
    T_c - (n-1)/n T_x.  ``overlap_fraction`` is 1 where the stack overlaps (the bucketed
    mechanism), 0 where it reduces after the compute (all of T_c exposed); values between
    weigh the two.

    Parameters
    ----------
    comm_time_s : numeric
        Communication time of all buckets, T_c [s].
    compute_time_s : numeric
        Compute the buckets come from and may hide behind, T_x [s].
    buckets : numeric
        Buckets (chunks) the communication is split into, n [1].
    overlap_fraction : numeric
        1 if the stack overlaps the buckets with the compute, 0 if not, f [1].

    Returns
    -------
    numeric
        Exposed communication time [s], between T_c / n and T_c when f = 1.

    Examples
    --------
    >>> bucketed_exposed_comm_time(0.8, 2.0, 8, 1.0)
    0.1
    >>> bucketed_exposed_comm_time(3.0, 2.0, 4, 1.0)
    1.5
    >>> bucketed_exposed_comm_time(0.8, 2.0, 8, 0.0)
    0.8

    .. math:: T_{exp} = f \\max\\left(\\frac{T_c}{n}, T_c - \\frac{n-1}{n} T_x\\right)
        + (1 - f) T_c
    """
    hidden_limit = maximum(comm_time_s / buckets,
                           comm_time_s - (buckets - 1) / buckets * compute_time_s)
    return overlap_fraction * minimum(hidden_limit, comm_time_s) \
        + (1 - overlap_fraction) * comm_time_s


@formula(reference="Each bucket is its own collective call: Li et al. 2020 (PyTorch DDP), VLDB "
         "13(12), arXiv:2006.15704 s3.2.3 (one all-reduce per gradient bucket); Megatron-Core "
         "DistributedDataParallel (one reduce-scatter / all-gather per bucket); Zhao et al. "
         "2023 (PyTorch FSDP), arXiv:2304.11277 s3.3 (per-unit collectives); the alpha-beta "
         "cost of a call: " + HOCKNEY,
         domain={"collective_time_s": ">=0", "call_fixed_time_s": ">=0", "buckets": ">=1"},
         symbols={"collective_time_s": "T_1", "call_fixed_time_s": "t_0", "buckets": "n"},
         result_latex="T_n")
def bucketed_collective_time(collective_time_s, call_fixed_time_s, buckets):
    """Time of a collective over S bytes issued as n bucket calls instead of one.

    The bytes move once whatever the split, but every call pays the collective's
    fixed part again: its per-message latencies ((n-1) alpha over a ring of n ranks,
    per level of a two-level collective) and the call's launch and synchronisation.
    With one bucket this is the single call.

    Parameters
    ----------
    collective_time_s : numeric
        Time of the collective as one call over all S bytes, T_1 [s].
    call_fixed_time_s : numeric
        Fixed time of one call (the collective over 0 bytes), t_0 [s].
    buckets : numeric
        Calls the bytes are split into, n [1].

    Returns
    -------
    numeric
        Time of the n calls [s].

    Examples
    --------
    A ring reduce-scatter over 64 nodes at 8 us per step costs 0.5 ms of latency per
    call; 32 bucket calls of a 2.6 GB gradient at 50 GB/s per rank:

    >>> round(bucketed_collective_time(63 * 8e-6 + 2.6e9 / 50e9, 63 * 8e-6, 32), 4)
    0.0681

    .. math:: T_n = T_1 + (n - 1)\\, t_0
    """
    return collective_time_s + (buckets - 1) * call_fixed_time_s


@formula(reference="Megatron-Core DistributedDataParallelConfig.bucket_size, https://github.com/"
         "NVIDIA/Megatron-LM/blob/main/megatron/core/distributed/"
         "distributed_data_parallel_config.py: 'If unspecified, MCore uses a "
         "default value of max(40000000, 1000000 * dp_size) parameters (larger DP sizes need "
         "larger buckets to ensure collectives do not become latency-bound)'",
         domain={"params": ">=0", "min_bucket_params": ">0",
                 "bucket_params_per_rank": ">=0", "dp_ranks": ">=1"},
         symbols={"params": "N", "min_bucket_params": "B_0", "bucket_params_per_rank": "b",
                  "dp_ranks": "d"},
         result_latex="n_b")
def gradient_bucket_count(params, min_bucket_params, bucket_params_per_rank, dp_ranks):
    """Gradient buckets of a rank's parameters when each bucket holds max(B_0, b d).

    Megatron-Core's data-parallel wrapper groups the gradients into buckets of a parameter
    count that grows with the data-parallel size, so that each bucket's reduce-scatter (or
    all-reduce) stays bandwidth-bound as its rings lengthen; each bucket is one collective
    call.  At least one bucket; fractions are kept (a closed form, not a count of calls).

    Parameters
    ----------
    params : numeric
        Parameters whose gradients the rank reduces, N [1].
    min_bucket_params : numeric
        Smallest bucket, B_0 [1] (Megatron-Core: 4e7).
    bucket_params_per_rank : numeric
        Bucket growth per data-parallel rank, b [1] (Megatron-Core: 1e6).
    dp_ranks : numeric
        Data-parallel ranks (with context parallelism), d [1].

    Returns
    -------
    numeric
        Buckets, n_b [1].

    Examples
    --------
    Llama 3 8B on one GPU per rank: 200 buckets at 8-way data parallelism, 16 at 512-way:

    >>> gradient_bucket_count(8e9, 4e7, 1e6, 8), gradient_bucket_count(8e9, 4e7, 1e6, 512)
    (200.0, 15.625)

    .. math:: n_b = \\max\\left(1, \\frac{N}{\\max(B_0, b\\,d)}\\right)
    """
    return maximum(1.0, params / maximum(min_bucket_params, bucket_params_per_rank * dp_ranks))


# -- which link a group uses -------------------------------------------------------------

@formula(reference="Dubey et al. 2024 (Llama 3), arXiv:2407.21783 s3.3.1: 24K GPUs in pods "
         "of 3,072 with full bisection inside a pod and a 1:7 oversubscription above it; "
         "the parallelism order keeps TP, CP and PP inside pods, DP crosses them",
         domain={"bandwidth_bytes_per_s": ">0", "oversubscription": ">=1",
                 "group_span_gpus": ">=1", "pod_gpus": ">=1"},
         symbols={"bandwidth_bytes_per_s": "B", "oversubscription": "R",
                  "group_span_gpus": "n_g", "pod_gpus": "n_p"},
         result_latex="B_{g}")
def pod_bandwidth(bandwidth_bytes_per_s, oversubscription, group_span_gpus, pod_gpus):
    """Per-GPU scale-out bandwidth of a group, thinned where it leaves its pod.

    Inside a pod the fabric is non-blocking; above it the spine carries 1/R of the
    injection bandwidth, so a collective whose ranks span more GPUs than a pod runs at
    B/R per GPU (every rank's traffic crosses the spine in a ring or tree across pods).

    Parameters
    ----------
    bandwidth_bytes_per_s : numeric
        Per-GPU scale-out bandwidth inside a pod, B [B/s].
    oversubscription : numeric
        Oversubscription ratio above the pod, R (1 = non-blocking) [1].
    group_span_gpus : numeric
        GPUs the group's ranks are spread over, n_g [1].
    pod_gpus : numeric
        GPUs under one non-blocking pod, n_p [1].

    Returns
    -------
    numeric
        Per-GPU bandwidth of the group [B/s].

    Examples
    --------
    >>> round(pod_bandwidth(50e9, 7, 16384, 3072) / 1e9, 3)
    7.143
    >>> pod_bandwidth(50e9, 7, 2048, 3072)
    50000000000.0

    .. math:: B_g = \\frac{B}{1 + (R - 1)\\,\\min(\\max(n_g - n_p, 0), 1)}
    """
    crosses = minimum(maximum(group_span_gpus - pod_gpus, 0), 1)  # 0 inside a pod, else 1
    return bandwidth_bytes_per_s / (1 + (oversubscription - 1) * crosses)



@formula(reference=NCCL_TESTS + ": achievable bus bandwidth = link bandwidth x measured "
         "efficiency",
         domain={"link_bandwidth_bytes_per_s": ">0", "bus_efficiency": "(0,1]"},
         symbols={"link_bandwidth_bytes_per_s": "B_l", "bus_efficiency": r"\eta_b"},
         result_latex="B")
def achievable_bandwidth(link_bandwidth_bytes_per_s, bus_efficiency):
    """Per-rank bandwidth a collective achieves on a link (nccl-tests bus bandwidth).

    Parameters
    ----------
    link_bandwidth_bytes_per_s : numeric
        Per-GPU link bandwidth, B_l [B/s].
    bus_efficiency : numeric
        Measured bus bandwidth over link bandwidth, eta_b [1].

    Returns
    -------
    numeric
        Achievable per-rank bandwidth [B/s].

    Examples
    --------
    NVLink 4 (450 GB/s per direction) at 80 %:

    >>> achievable_bandwidth(450e9, 0.8)
    360000000000.0

    .. math:: B = B_l \\eta_b
    """
    return link_bandwidth_bytes_per_s * bus_efficiency


@formula(reference="Group placement on the scale-up domain (NVLink) or the network: "
         "Narayanan et al. 2021, arXiv:2104.04473 s3 (tensor parallelism inside a server, "
         "pipeline and data parallelism across servers)",
         domain={"intra": "[0,1]", "bandwidth_intra_bytes_per_s": ">0",
                 "bandwidth_inter_bytes_per_s": ">0"},
         symbols={"intra": "i", "bandwidth_intra_bytes_per_s": "B_a",
                  "bandwidth_inter_bytes_per_s": "B_e"},
         result_latex="B")
def group_bandwidth(intra, bandwidth_intra_bytes_per_s, bandwidth_inter_bytes_per_s):
    """Per-rank bandwidth of a group inside (i = 1) or across (i = 0) scale-up domains.

    Parameters
    ----------
    intra : numeric
        1 if the whole group sits in one scale-up domain, 0 if not, i [1].
    bandwidth_intra_bytes_per_s : numeric
        Achievable scale-up bandwidth per rank, B_a [B/s].
    bandwidth_inter_bytes_per_s : numeric
        Achievable scale-out bandwidth per rank, B_e [B/s].

    Returns
    -------
    numeric
        Bandwidth the group's messages see [B/s].

    Examples
    --------
    >>> group_bandwidth(0, 360e9, 40e9)
    40000000000.0

    .. math:: B = i B_a + (1 - i) B_e
    """
    return intra * bandwidth_intra_bytes_per_s + (1 - intra) * bandwidth_inter_bytes_per_s


@formula(reference="Group placement as in group_bandwidth (Narayanan et al. 2021, "
         "arXiv:2104.04473 s3); " + HOCKNEY,
         domain={"intra": "[0,1]", "latency_intra_s": ">=0", "latency_inter_s": ">=0"},
         symbols={"intra": "i", "latency_intra_s": r"\alpha_a", "latency_inter_s": r"\alpha_e"},
         result_latex=r"\alpha")
def group_latency(intra, latency_intra_s, latency_inter_s):
    """Per-message latency of a group inside (i = 1) or across (i = 0) scale-up domains.

    Parameters
    ----------
    intra : numeric
        1 if the whole group sits in one scale-up domain, 0 if not, i [1].
    latency_intra_s : numeric
        Scale-up per-message latency, alpha_a [s].
    latency_inter_s : numeric
        Scale-out per-message latency, alpha_e [s].

    Returns
    -------
    numeric
        Latency the group's messages see [s].

    Examples
    --------
    >>> group_latency(1, 3e-6, 10e-6)
    3e-06

    .. math:: \\alpha = i \\alpha_a + (1 - i) \\alpha_e
    """
    return intra * latency_intra_s + (1 - intra) * latency_inter_s


# -- collectives of each kind of parallelism, per layer --------------------------------

@formula(reference="Shoeybi et al. 2019 (Megatron-LM), arXiv:1909.08053 s3 Fig. 3-4 (operators "
         "f and g: two all-reduces per layer forward, two backward); Korthikanti et al. "
         "2022, arXiv:2205.05198 s4.2.2 and s5 (sequence parallel pairs move the same bytes; "
         "full recomputation repeats the forward's)",
         domain={"full_recompute": "[0,1]"}, symbols={"full_recompute": "r"},
         result_latex="n_{TP}")
def tp_collectives_per_layer(full_recompute):
    """Tensor-parallel all-reduces (or all-gather + reduce-scatter pairs) per layer.

    Parameters
    ----------
    full_recompute : numeric
        1 with full activation recomputation, 0 without, r [1].

    Returns
    -------
    numeric
        Collectives per layer and micro-batch [1].

    Examples
    --------
    >>> tp_collectives_per_layer(0), tp_collectives_per_layer(1)
    (4.0, 6.0)

    .. math:: n_{TP} = 4 + 2 r
    """
    return 4 + 2 * full_recompute


@formula(reference="torchtitan's op-level selective activation checkpointing: its save list "
         "keeps the outputs of reduce_scatter_tensor (and all_to_all: 'Communication ops whose "
         "outputs should be saved to avoid re-communication') but not of "
         "all_gather_into_tensor or all_reduce (pytorch/torchtitan "
         "torchtitan/models/llama3/infra/parallelize.py _save_list, 2024-2025; "
         "torchtitan/distributed/activation_checkpoint.py, 2026), so the recomputation runs "
         "those again; " + THAKUR + " s4.1 (an all-gather moves half an all-reduce's bytes)",
         domain={"op_sac": "[0,1]", "sequence_parallel": "[0,1]"},
         symbols={"op_sac": "o", "sequence_parallel": "q"}, result_latex="n_{TP,SAC}")
def tp_recomputed_collectives_per_layer(op_sac, sequence_parallel):
    """Forward tensor-parallel collectives an op-level selective recompute runs again, per
    layer, in all-reduces (the unit of :func:`tp_collectives_per_layer`).

    With sequence parallelism a layer's forward all-gathers the sequence twice (before the
    attention and before the MLP: one all-reduce's bytes together) and reduce-scatters twice
    (saved); without it, its two all-reduces are not saved.

    Parameters
    ----------
    op_sac : numeric
        1 where the layer runs an op-level selective recompute policy, 0 otherwise, o [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without, q [1].

    Returns
    -------
    numeric
        All-reduce equivalents recomputed per layer and micro-batch [1].

    Examples
    --------
    >>> tp_recomputed_collectives_per_layer(1, 1), tp_recomputed_collectives_per_layer(1, 0)
    (1.0, 2.0)

    .. math:: n_{TP,SAC} = o (2 - q)
    """
    return op_sac * (2 - sequence_parallel)


@formula(reference="Fixed start-up cost per call, the alpha of " + HOCKNEY + " paid once per "
         "collective call (value fitted: planner/engine/inputs/execution.toml)",
         domain={"collective_overhead_s": ">=0", "ranks": ">=1"},
         symbols={"collective_overhead_s": "t_c", "ranks": "n"}, result_latex="t_{call}")
def collective_overhead_time(collective_overhead_s, ranks):
    """Fixed launch and synchronisation time of one collective call; none for one rank.

    Parameters
    ----------
    collective_overhead_s : numeric
        Time per call, t_c [s].
    ranks : numeric
        Ranks of the group, an integer n [1].

    Returns
    -------
    numeric
        Overhead of the call [s].

    Examples
    --------
    >>> collective_overhead_time(80e-6, 1), collective_overhead_time(80e-6, 8)
    (0.0, 8e-05)

    .. math:: t_{call} = t_c \\min(n - 1, 1)
    """
    return collective_overhead_s * minimum(ranks - 1, 1)


@formula(reference="Liu et al. 2023 (Ring Attention), arXiv:2310.01889 s3 (K/V blocks passed "
         "around the ring, c - 1 steps); backward passes K/V and their gradients: "
         "Megatron-Core context parallelism (NVIDIA, Megatron-Core documentation, "
         "context_parallel)",
         domain={"kv_bytes": ">=0", "cp": ">=1", "bandwidth_bytes_per_s": ">0",
                 "latency_s": ">=0"},
         symbols={"kv_bytes": "S_{kv}", "cp": "c", "bandwidth_bytes_per_s": "B",
                  "latency_s": r"\alpha"},
         result_latex="T_{CP}")
def ring_attention_comm_time(kv_bytes, cp, bandwidth_bytes_per_s, latency_s):
    """Context-parallel ring exchange of one layer: forward once, backward twice.

    The forward pass passes every rank's K/V chunk c - 1 steps around the ring; the
    backward pass passes K/V again and their gradients back, 3 (c - 1) point-to-point
    steps in all.

    Parameters
    ----------
    kv_bytes : numeric
        Bytes of a rank's K and V chunk, S_kv [B].
    cp : numeric
        Context-parallel ranks c [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Communication time per layer and micro-batch [s].

    Examples
    --------
    >>> round(ring_attention_comm_time(16e6, 4, 40e9, 10e-6) * 1e3, 3)
    3.69

    .. math:: T_{CP} = 3 (c - 1) \\left(\\alpha + \\frac{S_{kv}}{B}\\right)
    """
    return 3 * (cp - 1) * p2p_time(kv_bytes, bandwidth_bytes_per_s, latency_s)


@formula(reference=HOCKNEY + "; Mamba-2 context parallelism: NVIDIA/Megatron-LM@d98e8a6 "
         "megatron/core/ssm/mamba_context_parallel.py (pre_conv_ssm: all-to-alls of z, x, B, "
         "C and dt from sequence to head shards; post_conv_ssm: of the scan's output back)",
         domain={"tokens": ">0", "in_width": ">0", "inner": ">0", "cp": ">=1",
                 "bytes_per_element": ">0", "recomputed": "[0,1]", "bandwidth_bytes_per_s": ">0",
                 "latency_s": ">=0"},
         symbols={"tokens": "t", "in_width": "w_{in}", "inner": "d", "cp": "c",
                  "bytes_per_element": "e", "recomputed": "r", "bandwidth_bytes_per_s": "B",
                  "latency_s": r"\alpha"},
         result_latex="T_{CP,M}")
def mamba_context_parallel_time(tokens, in_width, inner, cp, bytes_per_element, recomputed,
                                bandwidth_bytes_per_s, latency_s):
    """All-to-all time of one Mamba-2 layer under context parallelism, one micro-batch.

    The scan runs over whole sequences: each CP rank trades its sequence chunk of the input
    projection's outputs (z, x, B, C, dt: w_in a token on this TP rank) for all the
    sequence's tokens of its share of the heads, and the scan's output (d a token) back;
    the forward, the backward (the gradients' all-to-alls) and a recomputed forward each
    run both, not hidden behind compute (the scan waits for them).

    Parameters
    ----------
    tokens : numeric
        Tokens of the rank's sequence chunk, t [1].
    in_width : numeric
        Input-projection output width on this TP rank, w_in [1].
    inner : numeric
        Scan output width on this TP rank, d [1].
    cp : numeric
        Context-parallel ranks c [1].
    bytes_per_element : numeric
        Bytes per activation element e [B].
    recomputed : numeric
        1 when the forward runs again in backward (full recompute), else 0, r [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank bandwidth of the CP group, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Time per layer and micro-batch; 0 for one CP rank [s].

    Examples
    --------
    Nemotron-H 56B at TP 2, CP 2: 8,192 tokens a rank, forward and backward:

    >>> round(mamba_context_parallel_time(8192, 18560, 8192, 2, 2, 0, 400e9, 5e-6) * 1e3, 3)
    1.116

    .. math:: T_{CP,M} = (2 + r) \\left(2 (c - 1)\\alpha
        + \\frac{c - 1}{c}\\frac{e\\,t\\,(w_{in} + d)}{B}\\right)
    """
    return (2 + recomputed) * (alltoall_time(bytes_per_element * tokens * in_width, cp,
                                             bandwidth_bytes_per_s, latency_s)
                               + alltoall_time(bytes_per_element * tokens * inner, cp,
                                               bandwidth_bytes_per_s, latency_s))


@formula(reference="K and V of a_kv heads: Ainslie et al. 2023 (GQA), arXiv:2305.13245; "
         "chunks exchanged by ring attention: Liu et al. 2023, arXiv:2310.01889 s3",
         domain={"tokens": ">0", "hidden": ">0", "heads": ">=1", "kv_heads": ">=1",
                 "tp": ">=1", "bytes_per_element": ">0"},
         symbols={"tokens": "t", "hidden": "h", "heads": "a", "kv_heads": "a_{kv}",
                  "tp": "t_p", "bytes_per_element": "e"},
         result_latex="S_{kv}")
def kv_chunk_bytes(tokens, hidden, heads, kv_heads, tp, bytes_per_element):
    """Bytes of the keys and values of ``tokens`` tokens on one tensor-parallel rank.

    Parameters
    ----------
    tokens : numeric
        Tokens of the chunk t [1].
    hidden : numeric
        Hidden size h [1].
    heads : numeric
        Query heads a [1].
    kv_heads : numeric
        Key/value heads [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    bytes_per_element : numeric
        Bytes per element e [B].

    Returns
    -------
    numeric
        Bytes of K and V [B].

    Examples
    --------
    8192 tokens of Llama 3 70B on TP 8, bf16:

    >>> kv_chunk_bytes(8192, 8192, 64, 8, 8, 2)
    4194304.0

    .. math:: S_{kv} = \\frac{2 e t h a_{kv}}{a\\, t_p}
    """
    return 2 * bytes_per_element * tokens * hidden * (kv_heads / heads) / tp


@formula(reference="K of d_h and V of d_v per key/value head: Ainslie et al. 2023 (GQA), "
         "arXiv:2305.13245; head sizes set apart from h/a: Qwen Team 2025, arXiv:2505.09388 "
         "and DeepSeek-AI 2024, arXiv:2405.04434 s2.1 (MLA's K and V after the "
         "up-projection, one per query head); chunks exchanged by ring attention: Liu et al. "
         "2023, arXiv:2310.01889 s3",
         domain={"tokens": ">0", "kv_heads": ">=1", "head_dim": ">0", "v_head_dim": ">0",
                 "tp": ">=1", "bytes_per_element": ">0"},
         symbols={"tokens": "t", "kv_heads": "a_{kv}", "head_dim": "d_h",
                  "v_head_dim": "d_v", "tp": "t_p", "bytes_per_element": "e"},
         result_latex="S_{kv}")
def kv_chunk_head_bytes(tokens, kv_heads, head_dim, v_head_dim, tp, bytes_per_element):
    """Bytes of the keys and values of ``tokens`` tokens on one tensor-parallel rank.

    :func:`kv_chunk_bytes` when d_h = d_v = h/a.

    Parameters
    ----------
    tokens : numeric
        Tokens of the chunk t [1].
    kv_heads : numeric
        Key/value heads a_kv (all query heads under MLA) [1].
    head_dim : numeric
        Key head size d_h [1].
    v_head_dim : numeric
        Value head size d_v [1].
    tp : numeric
        Tensor-parallel ranks t_p [1].
    bytes_per_element : numeric
        Bytes per element e [B].

    Returns
    -------
    numeric
        Bytes of K and V [B].

    Examples
    --------
    8192 tokens of Llama 3 70B on TP 8, bf16 (as :func:`kv_chunk_bytes`):

    >>> kv_chunk_head_bytes(8192, 8, 128, 128, 8, 2)
    4194304.0

    DeepSeek-V3 (128 heads, K 192 and V 128 wide) on TP 2:

    >>> kv_chunk_head_bytes(4096, 128, 192, 128, 2, 2)
    167772160.0

    .. math:: S_{kv} = \\frac{e t a_{kv} (d_h + d_v)}{t_p}
    """
    return bytes_per_element * tokens * kv_heads * (head_dim + v_head_dim) / tp


@formula(reference="Lepikhin et al. 2020 (GShard), arXiv:2006.16668 (dispatch and combine "
         "all-to-all per MoE layer); backward mirrors forward: Fedus et al. 2022 (Switch), "
         "arXiv:2101.03961 s2.2; " + THAKUR + ", s4.5",
         domain={"size_bytes": ">=0", "ranks": ">=1", "bandwidth_bytes_per_s": ">0",
                 "latency_s": ">=0"},
         symbols=_SYM, result_latex="T_{EP}")
def moe_alltoall_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s):
    """Expert-parallel all-to-alls of one MoE layer: dispatch and combine, fwd and bwd.

    Parameters
    ----------
    size_bytes : numeric
        Bytes each rank dispatches per all-to-all, S [B].
    ranks : numeric
        Expert-parallel ranks n [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Communication time per MoE layer and micro-batch [s].

    Examples
    --------
    >>> round(moe_alltoall_time(64e6, 8, 40e9, 10e-6) * 1e3, 3)
    5.88

    .. math:: T_{EP} = 4 \\left[(n-1)\\alpha + \\frac{n-1}{n}\\frac{S}{B}\\right]
    """
    return 4 * alltoall_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s)


@formula(reference="Megatron-Core MoE all-to-all token dispatcher with sequence parallelism: "
         "each TP rank dispatches the tokens of its sequence shard over the EP group, then "
         "the expert-tensor-parallel group all-gathers them (and reduce-scatters the expert "
         "outputs on combine); Korthikanti et al. 2022, arXiv:2205.05198 s4.2.2 (sequence "
         "parallelism shards the non-tensor-parallel regions by s/t)",
         domain={"tokens": ">=0", "tp": ">=1", "sequence_parallel": "[0,1]"},
         symbols={"tokens": "t", "tp": "t_p", "sequence_parallel": "s_p"},
         result_latex="t_{ep}")
def expert_dispatch_tokens(tokens, tp, sequence_parallel):
    """Tokens one rank dispatches to the experts: its sequence shard under sequence
    parallelism (t / TP), all t without it.

    Parameters
    ----------
    tokens : numeric
        Tokens of the rank's micro-batch t [1].
    tp : numeric
        Tensor-parallel size t_p [1].
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].

    Returns
    -------
    numeric
        Tokens dispatched by one rank [1].

    Examples
    --------
    >>> expert_dispatch_tokens(4096, 4, 1)
    1024.0
    >>> expert_dispatch_tokens(4096, 4, 0)
    4096.0

    .. math:: t_{ep} = t\\,(1 - s_p + s_p / t_p)
    """
    return tokens * (1 - sequence_parallel + sequence_parallel / tp)


@formula(reference="MoE parallel folding in Megatron-Core: the expert grid ETP x EP x EDP spans "
         "the attention grid TP x CP x DP, and the expert-tensor-parallel group all-gathers "
         "its ranks' dispatched tokens; Liu et al. 2025, arXiv:2504.14960 s3; without "
         "sequence parallelism every TP rank holds all t tokens (Korthikanti et al. 2022, "
         "arXiv:2205.05198 s4.2.2)",
         domain={"tokens": ">=0", "tp": ">=1", "etp": ">=1", "sequence_parallel": "[0,1]"},
         symbols={"tokens": "t", "tp": "t_p", "etp": "t_e", "sequence_parallel": "s_p"},
         result_latex="t_x")
def expert_rank_tokens(tokens, tp, etp, sequence_parallel):
    """Tokens one rank's expert GEMMs see (before routing multiplies them by k / E x EP):
    under sequence parallelism the ETP group gathers ETP sequence shards of t / TP.

    Parameters
    ----------
    tokens : numeric
        Tokens of the rank's micro-batch t [1].
    tp : numeric
        Tensor-parallel size of the attention t_p [1].
    etp : numeric
        Expert-tensor-parallel size t_e [1]; Megatron-Core's default is t_p.
    sequence_parallel : numeric
        1 with sequence parallelism, 0 without [1].

    Returns
    -------
    numeric
        Tokens of the expert-TP group a rank computes on [1].

    Examples
    --------
    ETP = TP (the default) keeps every token of the TP group; ETP 1 under TP 2 half of them:

    >>> expert_rank_tokens(4096, 2, 2, 1)
    4096.0
    >>> expert_rank_tokens(4096, 2, 1, 1)
    2048.0

    .. math:: t_x = t\\,(1 - s_p + s_p\\, t_e / t_p)
    """
    return tokens * (1 - sequence_parallel + sequence_parallel * etp / tp)


@formula(reference=THAKUR + ", s4.3 (ring all-gather and reduce-scatter); Megatron-Core MoE "
         "all-to-all dispatcher with expert tensor parallelism (tokens gathered over the "
         "expert-TP group after dispatch, outputs reduce-scattered before combine)",
         domain=_DOM, symbols=_SYM, result_latex="T_{ETP}")
def expert_tp_gather_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s):
    """Expert-tensor-parallel all-gathers and reduce-scatters of one MoE layer's routed
    tokens: after dispatch and before combine, forward and backward.

    Parameters
    ----------
    size_bytes : numeric
        Routed-token bytes gathered on each rank, S [B].
    ranks : numeric
        Expert-tensor-parallel ranks n [1].
    bandwidth_bytes_per_s : numeric
        Achievable per-rank bandwidth, B [B/s].
    latency_s : numeric
        Per-message latency, alpha [s].

    Returns
    -------
    numeric
        Communication time per MoE layer and micro-batch; 0 for one rank [s].

    Examples
    --------
    >>> round(expert_tp_gather_time(64e6, 4, 360e9, 3e-6) * 1e3, 3)
    0.569

    .. math:: T_{ETP} = 4 \\left[(n-1)\\alpha + \\frac{n-1}{n}\\frac{S}{B}\\right]
    """
    return 4 * allgather_time(size_bytes, ranks, bandwidth_bytes_per_s, latency_s)


@formula(reference="Top-k routing sends each token's h-vector to k experts: Fedus et al. 2022 "
         "(Switch), arXiv:2101.03961 s2.2; Lepikhin et al. 2020, arXiv:2006.16668",
         domain={"tokens": ">=0", "experts_per_token": ">=1", "hidden": ">0",
                 "bytes_per_element": ">0"},
         symbols={"tokens": "t", "experts_per_token": "k", "hidden": "h",
                  "bytes_per_element": "e"},
         result_latex="S_{a2a}")
def moe_dispatch_bytes(tokens, experts_per_token, hidden, bytes_per_element):
    """Bytes one rank sends in an expert-parallel dispatch (or combine) all-to-all.

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
        Bytes per all-to-all [B].

    Examples
    --------
    >>> moe_dispatch_bytes(4096, 2, 4096, 2)
    67108864.0

    .. math:: S_{a2a} = e\\, t\\, k\\, h
    """
    return bytes_per_element * tokens * experts_per_token * hidden


@formula(reference="Rajbhandari et al. 2020 (ZeRO), arXiv:1910.02054 s5.3 (parameters "
         "all-gathered before forward and before backward); Zhao et al. 2023 (PyTorch FSDP), "
         "arXiv:2304.11277 s3.2",
         domain={"allgather_time_s": ">=0", "microbatches": ">=1"},
         symbols={"allgather_time_s": "T_{AG}", "microbatches": "m"},
         result_latex="T_{Z3}")
def zero3_gather_time(allgather_time_s, microbatches):
    """Parameter all-gathers of ZeRO-3/FSDP in one iteration: forward and backward of each
    micro-batch.

    Parameters
    ----------
    allgather_time_s : numeric
        Time to all-gather the stage's parameters once, T_AG [s].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        All-gather time per iteration [s].

    Examples
    --------
    >>> zero3_gather_time(0.1, 8)
    1.6

    .. math:: T_{Z3} = 2 m T_{AG}
    """
    return 2 * microbatches * allgather_time_s


@formula(reference="Rajbhandari et al. 2020 (ZeRO), arXiv:1910.02054 s5.2 (ZeRO-2: gradients "
         "reduce-scattered as the backward produces them, each rank keeps its shard); Zhao "
         "et al. 2023 (PyTorch FSDP), arXiv:2304.11277 s3.2 (reduce-scatter in every "
         "backward, gradient accumulation without no_sync)",
         domain={"allreduce_time_s": ">=0", "microbatches": ">=1"},
         symbols={"allreduce_time_s": "T_{AR}", "microbatches": "m"},
         result_latex="T_{RS}")
def sharded_grad_reduce_time(allreduce_time_s, microbatches):
    """Gradient reduce-scatters of one iteration when gradients are sharded (ZeRO-2/3, FSDP).

    No rank keeps the full gradient between micro-batches, so each micro-batch's backward
    reduce-scatters its gradients: half an all-reduce (ring: the reduce-scatter phase),
    once per micro-batch, instead of one all-reduce of the accumulated gradients.

    Parameters
    ----------
    allreduce_time_s : numeric
        Time to all-reduce the stage's gradients once, T_AR [s].
    microbatches : numeric
        Micro-batches per iteration m [1].

    Returns
    -------
    numeric
        Reduce-scatter time per iteration [s].

    Examples
    --------
    >>> sharded_grad_reduce_time(0.2, 8)
    0.8

    .. math:: T_{RS} = m T_{AR} / 2
    """
    return microbatches * allreduce_time_s / 2


@formula(reference="Zhao et al. 2023 (PyTorch FSDP), arXiv:2304.11277 s3.2.2 (hybrid sharding: "
         "shard within a group, all-reduce the gradient shards across its replicas); Megatron-"
         "Core distributed optimizer instances (num_distributed_optimizer_instances); the "
         "all-reduce is " + THAKUR + " composed over two levels as in "
         "hierarchical_allreduce_time",
         domain={"size_bytes": ">=0", "shard_ranks": ">=1", "dp": ">=1",
                 "replica_intra_ranks": ">=1", "bandwidth_intra_bytes_per_s": ">0",
                 "bandwidth_inter_bytes_per_s": ">0", "latency_intra_s": ">=0",
                 "latency_inter_s": ">=0"},
         symbols={"size_bytes": "S", "shard_ranks": "n_s", "dp": "d",
                  "replica_intra_ranks": "r_a", "bandwidth_intra_bytes_per_s": "B_a",
                  "bandwidth_inter_bytes_per_s": "B_e", "latency_intra_s": r"\alpha_a",
                  "latency_inter_s": r"\alpha_e"},
         result_latex="T_{HSDP}")
def hsdp_replica_allreduce_time(size_bytes, shard_ranks, dp, replica_intra_ranks,
                                bandwidth_intra_bytes_per_s, bandwidth_inter_bytes_per_s,
                                latency_intra_s, latency_inter_s):
    """All-reduce of each gradient shard across the replicas of hybrid sharding (HSDP).

    Under HSDP the ZeRO state is sharded over a group of n_s data-parallel ranks and
    replicated d / n_s times; after the group's reduce-scatters every rank all-reduces
    its S / n_s bytes with the ranks of the same shard in the other replicas, once per
    iteration.  Of those d / n_s replicas r_a share a scale-up domain.  With n_s = d
    (plain ZeRO/FSDP) there is one replica and no traffic.

    Parameters
    ----------
    size_bytes : numeric
        Gradient bytes of the stage, S [B].
    shard_ranks : numeric
        Data-parallel ranks of one shard group, n_s [1].
    dp : numeric
        Data-parallel size, d [1].
    replica_intra_ranks : numeric
        Replicas of one shard inside one scale-up domain, r_a [1].
    bandwidth_intra_bytes_per_s : numeric
        Achievable per-rank scale-up bandwidth, B_a [B/s].
    bandwidth_inter_bytes_per_s : numeric
        Achievable per-rank scale-out bandwidth, B_e [B/s].
    latency_intra_s : numeric
        Scale-up per-message latency, alpha_a [s].
    latency_inter_s : numeric
        Scale-out per-message latency, alpha_e [s].

    Returns
    -------
    numeric
        Time of the replicas' all-reduce per iteration [s].

    Examples
    --------
    >>> hsdp_replica_allreduce_time(8e9, 64, 64, 1, 3e11, 5e10, 0.0, 0.0)
    0.0
    >>> round(hsdp_replica_allreduce_time(8e9, 8, 64, 1, 3e11, 5e10, 0.0, 0.0), 6)
    0.035

    .. math::
        T = T_{AR,hier}\\left(\\frac{S}{n_s}, r_a, \\max\\left(\\frac{d}{n_s r_a}, 1\\right)\\right)
    """
    # at least one replica and one domain of them (d >= n_s r_a in every valid layout)
    domains = maximum(dp / (shard_ranks * replica_intra_ranks), 1)
    return hierarchical_allreduce_time(size_bytes / shard_ranks, replica_intra_ranks, domains,
                                       bandwidth_intra_bytes_per_s,
                                       bandwidth_inter_bytes_per_s, latency_intra_s,
                                       latency_inter_s)
