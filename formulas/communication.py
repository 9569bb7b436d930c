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
from .ops import log2, minimum

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
