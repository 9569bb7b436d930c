"""Mixture-of-Experts terms: token dispatch and combine, expert GEMM shapes, load imbalance,
the memory-bound routing passes and the host launches of an MoE layer.

A token routed to k experts is sent (dispatched) to the ranks holding them and its k
expert outputs are sent back and summed (combined); Lepikhin et al. 2020 (GShard,
arXiv:2006.16668).  DeepSeek-V3 (arXiv:2412.19437 s2.1.2, s3.2.2) limits each token to
at most M nodes and sends it once per node over InfiniBand, forwarding it to the GPUs of
that node over NVLink; DeepEP (github.com/deepseek-ai/DeepEP) implements that path.
Every size here is per rank and per micro-batch; times are in seconds, bytes in bytes.
"""

from __future__ import annotations

from .compute import roofline_time
from .core import formula
from .ops import ceil, log, maximum, minimum, sqrt

DEEPSEEK_V3 = "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, arXiv:2412.19437"
DEEPEP = ("DeepEP (github.com/deepseek-ai/DeepEP) docs/legacy.md 'Normal kernels with NVLink "
          "and RDMA forwarding': H800, 4096 tokens, 7168 hidden, top-4 groups, top-8 experts, "
          "FP8 dispatch, BF16 combine")


@formula(reference=DEEPSEEK_V3 + " s2.1.2 (node-limited routing: each token is sent to at "
         "most M nodes) and s3.2.2 (one IB transfer per destination node, then NVLink "
         "forwarding); " + DEEPEP,
         domain={"experts_per_token": ">=1", "domains": ">=1", "domain_limit": ">=1",
                 "hierarchical": "[0,1]"},
         symbols={"experts_per_token": "k", "domains": "G", "domain_limit": "M",
                  "hierarchical": "h_d"},
         result_latex="c_{out}")
def remote_copies_per_token(experts_per_token, domains, domain_limit, hierarchical):
    """Copies of one token's hidden vector that leave its scale-up domain on dispatch.

    The k routed experts sit uniformly over the G scale-up domains the EP group spans.
    A flat all-to-all (NCCL) sends every copy to its expert's rank: k(1 - 1/G) copies
    cross the network.  A hierarchical dispatcher (DeepEP, HybridEP) sends one copy per
    destination domain and forwards it inside that domain over NVLink: the expected
    number of distinct domains k experts fall in, G(1 - (1 - 1/G)^k), at most the
    routing limit M (DeepSeek-V3: 4 nodes), of which a share 1 - 1/G is remote.

    Parameters
    ----------
    experts_per_token : numeric
        Routed experts per token k [1].
    domains : numeric
        Scale-up domains the EP group spans G (1: the group is inside one) [1].
    domain_limit : numeric
        Most domains (nodes) one token may be routed to M (k: no limit) [1].
    hierarchical : numeric
        1 for a hierarchical dispatcher (once per domain, then NVLink), 0 for flat [1].

    Returns
    -------
    numeric
        Network copies per token and dispatch [1].

    Examples
    --------
    DeepSeek-V3 on 64 H800 (8 nodes), top-8 of 256 experts, at most 4 nodes:

    >>> round(float(remote_copies_per_token(8, 8, 4, 1)), 3)
    3.5
    >>> round(float(remote_copies_per_token(8, 8, 8, 0)), 3)
    7.0

    .. math:: c_{out} = \\left(1 - \\frac{1}{G}\\right)\\left[h_d \\min\\left(M,
        G\\left(1 - (1 - 1/G)^k\\right)\\right) + (1 - h_d) k\\right]
    """
    distinct = domains * (1 - (1 - 1 / domains) ** experts_per_token)
    per_domain = minimum(minimum(domain_limit, experts_per_token), distinct)
    return (1 - 1 / domains) * (hierarchical * per_domain
                                + (1 - hierarchical) * experts_per_token)


@formula(reference=DEEPSEEK_V3 + " s3.2.2 (tokens reaching a node over IB are forwarded over "
         "NVLink to the GPUs hosting their experts); " + DEEPEP,
         domain={"experts_per_token": ">=1", "domain_ranks": ">=1", "ranks": ">=1",
                 "hierarchical": "[0,1]"},
         symbols={"experts_per_token": "k", "domain_ranks": "r", "ranks": "n",
                  "hierarchical": "h_d"},
         result_latex="c_{up}")
def scale_up_copies_per_token(experts_per_token, domain_ranks, ranks, hierarchical):
    """Copies of one token's hidden vector that cross the scale-up links on dispatch.

    A flat all-to-all sends over NVLink only the copies for the other ranks of its own
    domain, k (r - 1)/n of the k; a hierarchical dispatcher also forwards every copy that
    arrives at a domain to the GPU of its expert: k (1 - 1/r).

    Parameters
    ----------
    experts_per_token : numeric
        Routed experts per token k [1].
    domain_ranks : numeric
        EP ranks inside one scale-up domain r [1].
    ranks : numeric
        EP ranks n [1].
    hierarchical : numeric
        1 for a hierarchical dispatcher, 0 for a flat all-to-all [1].

    Returns
    -------
    numeric
        Scale-up copies per token and dispatch [1].

    Examples
    --------
    >>> float(scale_up_copies_per_token(8, 8, 64, 1)), float(scale_up_copies_per_token(8, 8, 64, 0))
    (7.0, 0.875)

    .. math:: c_{up} = k\\left[h_d \\left(1 - \\frac{1}{r}\\right)
        + (1 - h_d)\\frac{r - 1}{n}\\right]
    """
    return experts_per_token * (hierarchical * (1 - 1 / domain_ranks)
                                + (1 - hierarchical) * (domain_ranks - 1) / ranks)


@formula(reference=DEEPSEEK_V3 + " s3.2.2 (IB and NVLink transfers of the all-to-all run "
         "concurrently: 'fully overlap IB and NVLink communication'); " + DEEPEP
         + " (NVLink 153-158 GB/s of ~160, RDMA 43-58 GB/s of ~50 logical bandwidth); Hockney "
         "1994 alpha-beta",
         domain={"scale_up_bytes": ">=0", "scale_out_bytes": ">=0",
                 "scale_up_bytes_per_s": ">0", "scale_out_bytes_per_s": ">0",
                 "domain_ranks": ">=1", "domains": ">=1", "intra_latency_s": ">=0",
                 "inter_latency_s": ">=0"},
         symbols={"scale_up_bytes": "S_{up}", "scale_out_bytes": "S_{out}",
                  "scale_up_bytes_per_s": "B_{up}", "scale_out_bytes_per_s": "B_{out}",
                  "domain_ranks": "r", "domains": "G", "intra_latency_s": r"\alpha_{up}",
                  "inter_latency_s": r"\alpha_{out}"},
         result_latex="T_{a2a}")
def two_level_alltoall_time(scale_up_bytes, scale_out_bytes, scale_up_bytes_per_s,
                            scale_out_bytes_per_s, domain_ranks, domains, intra_latency_s,
                            inter_latency_s):
    """One expert-parallel all-to-all (a dispatch or a combine) over NVLink and the NIC.

    The bytes a rank moves inside its scale-up domain and those it moves across the
    network flow at the same time; the slower level bounds the collective, plus one
    message latency per peer rank of the domain and per peer domain.

    Parameters
    ----------
    scale_up_bytes : numeric
        Bytes a rank sends over the scale-up links S_up [B].
    scale_out_bytes : numeric
        Bytes a rank sends over the network S_out [B].
    scale_up_bytes_per_s : numeric
        Achieved all-to-all bandwidth of the scale-up links per rank B_up [B/s].
    scale_out_bytes_per_s : numeric
        Achieved all-to-all bandwidth of the network per rank B_out [B/s].
    domain_ranks : numeric
        EP ranks inside one scale-up domain r [1].
    domains : numeric
        Scale-up domains the EP group spans G [1].
    intra_latency_s : numeric
        Message latency inside the domain alpha_up [s].
    inter_latency_s : numeric
        Message latency across domains alpha_out [s].

    Returns
    -------
    numeric
        Time of one all-to-all [s].

    Examples
    --------
    >>> round(float(two_level_alltoall_time(100e6, 50e6, 160e9, 50e9, 8, 8, 1e-6, 5e-6)) * 1e3, 3)
    1.042

    .. math:: T_{a2a} = \\max\\left(\\frac{S_{up}}{B_{up}}, \\frac{S_{out}}{B_{out}}\\right)
        + (r - 1)\\alpha_{up} + (G - 1)\\alpha_{out}
    """
    return (maximum(scale_up_bytes / scale_up_bytes_per_s,
                    scale_out_bytes / scale_out_bytes_per_s)
            + (domain_ranks - 1) * intra_latency_s + (domains - 1) * inter_latency_s)


@formula(reference="DeepEP V1 normal kernels' intranode (NVLink) dispatch and combine bandwidth "
         "as measured per part: H800 153-158 GB/s (github.com/deepseek-ai/DeepEP docs/legacy.md); "
         "B200 218 / 185 GB/s tuned (pytorch/torchtitan@f56546fe scripts/deepep/"
         "torchtitan_deepep_tune/TUNING_RESULTS_SUMMARY.md, EP4, Qwen3-30B-A3B shapes); GB200 169 / "
         "135 GB/s (deepseek-ai/DeepEP issue 394, 24 SMs)",
         domain={"link_bytes_per_s": ">0", "deepep_bytes_per_s": ">0",
                 "deepep_dispatch": "[0,1]"},
         symbols={"link_bytes_per_s": "B_{link}", "deepep_bytes_per_s": "B_{DeepEP}",
                  "deepep_dispatch": "f_{DeepEP}"},
         result_latex="B_{up}")
def dispatch_scale_up_bandwidth(link_bytes_per_s, deepep_bytes_per_s, deepep_dispatch):
    """Scale-up bandwidth of one EP dispatch or combine: the link's all-to-all bandwidth, or
    what DeepEP's kernels reach on this part when the stack dispatches with DeepEP.

    DeepEP V1's normal kernels were written for Hopper (NVLink 4); on Blackwell's NVLink 5
    they reach a quarter of the link (B200 185-218 of ~720 GB/s achievable), so the
    all-to-all bandwidth alone would overstate them about 3.5x.

    Parameters
    ----------
    link_bytes_per_s : numeric
        All-to-all bandwidth of the scale-up links per rank (nccl-tests bus bandwidth) [B/s].
    deepep_bytes_per_s : numeric
        DeepEP's measured intranode bandwidth on the part (the link's where not measured) [B/s].
    deepep_dispatch : numeric
        1 if the stack dispatches with DeepEP's kernels, else 0 [1].

    Returns
    -------
    numeric
        Scale-up bandwidth of the dispatch B_up [B/s].

    Examples
    --------
    >>> float(dispatch_scale_up_bandwidth(720e9, 200e9, 1)) / 1e9
    200.0
    >>> float(dispatch_scale_up_bandwidth(720e9, 200e9, 0)) / 1e9
    720.0

    .. math:: B_{up} = (1 - f_{DeepEP}) B_{link} + f_{DeepEP} B_{DeepEP}
    """
    return (1 - deepep_dispatch) * link_bytes_per_s + deepep_dispatch * deepep_bytes_per_s


@formula(reference="NVIDIA 2023, CUTLASS / cuBLAS tiled GEMMs: the output is computed in whole "
         "thread-block tiles (128 x 128 or 128 x 256 on Hopper and Blackwell; NVIDIA CUTLASS "
         "docs 'Efficient GEMM in CUDA', tile quantisation; NVIDIA Deep Learning Performance "
         "Guide 'Matrix Multiplication Background User's Guide', s 'Tile Quantization')",
         domain={"dim": ">0", "tile": ">=1"}, symbols={"dim": "d", "tile": "T"},
         result_latex=r"\eta_{tile}")
def tile_quantisation_efficiency(dim, tile):
    """Share of the computed tiles' work that is useful along one GEMM dimension.

    A dimension of d rows is padded to whole tiles of T: the kernel does ceil(d/T) T rows
    of work for d useful ones.  Small experts (few tokens per expert, narrow expert
    widths) lose most here.

    Parameters
    ----------
    dim : numeric
        GEMM dimension d (tokens of one expert, or the expert width) [1].
    tile : numeric
        Tile size along that dimension T [1].

    Returns
    -------
    numeric
        Useful share of the work along the dimension [1].

    Examples
    --------
    >>> round(float(tile_quantisation_efficiency(160, 128)), 3)
    0.625
    >>> float(tile_quantisation_efficiency(4096, 128))
    1.0

    .. math:: \\eta_{tile} = \\frac{d}{T \\lceil d / T \\rceil}
    """
    return dim / (tile * ceil(dim / tile))


DEEPGEMM = ("DeepGEMM (github.com/deepseek-ai/DeepGEMM) README, 2025-02 release, tables "
            "'Grouped GEMMs for MoE models' (contiguous and masked layouts), H800 SXM5, FP8")
GROUPED_GEMM_SHAPE = (
    "warp-specialised persistent grouped GEMMs: each CTA tile of T_m tokens x T_n columns "
    "streams the inner dimension in K-blocks behind a fixed prologue/epilogue (CUTLASS docs "
    "'Efficient GEMM in CUDA' and CUTLASS 3 sm90/sm100 grouped GEMM kernels; Hopper wgmma "
    "tiles 128 x 128 / 128 x 256, Blackwell tcgen05 2-CTA tiles 256 x N: NVIDIA Blackwell "
    "Tuning Guide s1.4.1 and PTX ISA 'tcgen05.mma' cta_group::2); fixed per-tile costs "
    "as saturating factors in the tokens per expert and the inner dimension, fitted to "
    + DEEPGEMM)


@formula(reference=GROUPED_GEMM_SHAPE,
         domain={"tokens_per_expert": ">0", "width": ">0", "inner": ">0",
                 "max_efficiency": "(0,1]", "token_half_dim": ">=0", "inner_half_dim": ">=0",
                 "token_tile": ">=1", "width_tile": ">=1"},
         symbols={"tokens_per_expert": "m", "width": "n", "inner": "k",
                  "max_efficiency": r"\eta_{max}", "token_half_dim": "m_{1/2}",
                  "inner_half_dim": "k_{1/2}", "token_tile": "T_m", "width_tile": "T_n"},
         result_latex=r"\eta_{grp}")
def grouped_gemm_efficiency(tokens_per_expert, width, inner, max_efficiency, token_half_dim,
                            inner_half_dim, token_tile, width_tile):
    """Achieved fraction of peak FLOP/s of an MoE grouped GEMM from its shape.

    Each expert's m tokens form whole tiles of T_m rows (tile quantisation), its n output
    columns whole tiles of T_n; every tile pays a fixed pipeline fill and epilogue, worth
    m_1/2 rows of the token dimension and k_1/2 elements of the inner dimension.  So
    efficiency saturates separately in the tokens per expert and in the inner size
    (a 2048-deep down-projection runs ~15 % below a 7168-deep one at equal tokens: DeepGEMM's
    H800 table), instead of in the smallest dimension alone.

    Parameters
    ----------
    tokens_per_expert : numeric
        Tokens one expert receives, m [1].
    width : numeric
        Output columns of the GEMM (expert width or hidden size), n [1].
    inner : numeric
        Inner (reduction) dimension, k [1].
    max_efficiency : numeric
        Efficiency of a very large grouped GEMM [1].
    token_half_dim : numeric
        Tokens per expert at which the token factor is one half, m_1/2 [1].
    inner_half_dim : numeric
        Inner size at which the inner factor is one half, k_1/2 [1].
    token_tile : numeric
        Tile rows along the tokens, T_m (Hopper 128, Blackwell 2-CTA 256) [1].
    width_tile : numeric
        Tile columns along the output, T_n [1].

    Returns
    -------
    numeric
        Fraction of peak FLOP/s [1].

    Examples
    --------
    DeepGEMM's 4 x 8192-token FP8 grouped GEMM (n 4096, k 7168) at the H800 values
    (published: 1,297 of 1,979 TFLOP/s, 0.655):

    >>> round(float(grouped_gemm_efficiency(8192, 4096, 7168, 0.715, 110, 560, 128, 128)), 3)
    0.654

    .. math:: \\eta_{grp} = \\eta_{max} \\frac{m}{m + m_{1/2}} \\frac{k}{k + k_{1/2}}
        \\eta_{tile}(m, T_m)\\, \\eta_{tile}(n, T_n)
    """
    return (max_efficiency * tokens_per_expert / (tokens_per_expert + token_half_dim)
            * inner / (inner + inner_half_dim)
            * tile_quantisation_efficiency(tokens_per_expert, token_tile)
            * tile_quantisation_efficiency(width, width_tile))


@formula(reference="Williams et al. 2009, Commun. ACM 52(4):65-76, doi:10.1145/1498765.1498785 "
         "(roofline); 2 FLOP per multiply-add; a grouped GEMM reads every local expert's "
         "weights once (" + DEEPGEMM + ")",
         domain={"copies": ">=0", "width": ">0", "inner": ">0", "local_experts": ">0",
                 "bytes_per_element": ">0", "peak_flops_per_s": ">0",
                 "efficiency": "(0,1]", "memory_bandwidth_bytes_per_s": ">0",
                 "memory_efficiency": "(0,1]"},
         symbols={"copies": "c", "width": "n", "inner": "k", "local_experts": "E_l",
                  "bytes_per_element": "e", "peak_flops_per_s": "P",
                  "efficiency": r"\eta_{grp}", "memory_bandwidth_bytes_per_s": r"\beta",
                  "memory_efficiency": r"\eta_m"},
         result_latex="t_{grp}")
def grouped_gemm_time(copies, width, inner, local_experts, bytes_per_element,
                      peak_flops_per_s, efficiency, memory_bandwidth_bytes_per_s,
                      memory_efficiency):
    """Roofline time of one grouped expert GEMM over a rank's routed token copies.

    Work 2 c n k over the c routed copies; traffic: the copies' inputs read and outputs
    written once, and every local expert's n x k weights read once.

    Parameters
    ----------
    copies : numeric
        Routed token copies the rank's experts process, c [1].
    width : numeric
        Output columns of the GEMM, n [1].
    inner : numeric
        Inner (reduction) dimension, k [1].
    local_experts : numeric
        Experts on the rank, E_l [1].
    bytes_per_element : numeric
        Bytes per element of the operands e [B].
    peak_flops_per_s : numeric
        Peak throughput at the GEMM's precision P [FLOP/s].
    efficiency : numeric
        Achieved fraction of peak of the grouped GEMM (:func:`grouped_gemm_efficiency`) [1].
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
    DeepGEMM's 4 x 8192-token FP8 shape on an H800 at 65.5 % of 1,979 TFLOP/s:

    >>> round(float(grouped_gemm_time(32768, 4096, 7168, 4, 1, 1978.9e12, 0.655, 3.35e12,
    ...                               0.9)) * 1e6, 1)
    1484.5

    .. math:: t_{grp} = \\max\\left(\\frac{2 c n k}{P \\eta_{grp}},
        \\frac{e (c k + E_l n k + c n)}{\\beta \\eta_m}\\right)
    """
    moved = bytes_per_element * (copies * inner + local_experts * inner * width
                                 + copies * width)
    return roofline_time(2 * copies * width * inner, moved, peak_flops_per_s, efficiency,
                         memory_bandwidth_bytes_per_s, memory_efficiency)


@formula(reference="Order statistics of routed counts: each of n EP ranks receives a "
         "multinomial share of the group's routed token copies, mean mu, variance ~mu "
         "(Poisson limit), plus a routing imbalance of coefficient of variation c; the "
         "expected maximum of n standard normals is at most sqrt(2 ln n) (the Gaussian "
         "maximal inequality, e.g. Boucheron, Lugosi & Massart 2013, Concentration "
         "Inequalities, Oxford UP, s2.5, doi:10.1093/acprof:oso/9780199535255.001.0001); "
         "Wang et al. 2024 (auxiliary-loss-free load balancing, arXiv:2408.15664) measure "
         "the balance as MaxVio = max load / mean load - 1",
         domain={"mean_copies": ">0", "ranks": ">=1", "load_cv": ">=0"},
         symbols={"mean_copies": r"\mu", "ranks": "n", "load_cv": "c"},
         result_latex=r"\lambda_{max}")
def busiest_rank_load_factor(mean_copies, ranks, load_cv):
    """Load of the busiest expert-parallel rank relative to the mean rank, per step.

    Every rank waits for the slowest at the combine; the slowest holds the most token
    copies.  Counts are Poisson-like around their mean (sd sqrt(mu)) plus a routing
    imbalance (sd c mu): c = 0 for forced balance (the benchmarks' force-balanced
    routing), a few per cent for auxiliary-loss-free routing.  The expected maximum of n
    standard normals is taken at its bound sqrt(2 ln n) (exact for n = 1; 2.88 against
    2.41 for n = 64): closed form in log and sqrt, so the compiled search evaluates it
    per candidate EP size, and on the safe side for the busiest rank.

    Parameters
    ----------
    mean_copies : numeric
        Token copies the mean rank processes per micro-batch mu [1].
    ranks : numeric
        EP ranks n [1].
    load_cv : numeric
        Coefficient of variation of a rank's load beyond multinomial noise c [1].

    Returns
    -------
    numeric
        Busiest rank's load over the mean load (1 for one rank) [1].

    Examples
    --------
    >>> round(float(busiest_rank_load_factor(32768, 64, 0.0)), 4)
    1.0159
    >>> round(float(busiest_rank_load_factor(32768, 64, 0.05)), 3)
    1.145

    .. math:: \\lambda_{max} = 1 + \\sqrt{2 \\ln n}\\,\\sqrt{1/\\mu + c^2}
    """
    return 1 + sqrt(2 * log(ranks)) * sqrt(1 / mean_copies + load_cv ** 2)


@formula(reference="Megatron-Core (NVIDIA 2025): the router's softmax / sigmoid scores, top-k selection and "
         "load-balancing statistics read and write the t x E score matrix in FP32 "
         "(Megatron-Core moe/router.py, moe_utils.py: topk_softmax_with_capacity, "
         "switch_load_balancing_loss_func); memory-bound, Williams et al. 2009 roofline",
         domain={"tokens": ">=0", "experts": ">=1"}, symbols={"tokens": "t", "experts": "E"},
         result_latex="S_{router}")
def router_score_bytes(tokens, experts):
    """HBM bytes of the routing passes over the score matrix in one forward pass.

    Logits written by the router GEMM, read by the score function (softmax or sigmoid)
    and written back, read by the top-k and by the auxiliary-loss statistics: five
    passes over t x E FP32 scores.

    Parameters
    ----------
    tokens : numeric
        Tokens routed on the rank t [1].
    experts : numeric
        Routed experts E [1].

    Returns
    -------
    numeric
        Bytes moved [B].

    Examples
    --------
    >>> router_score_bytes(4096, 256) / 1e6
    20.97152

    .. math:: S_{router} = 5 \\cdot 4\\,t E
    """
    return 5 * 4 * tokens * experts


@formula(reference="Host-bound MoE layers: NVIDIA 2025, Megatron-LM DeepSeek-V3 GB200 "
         "optimisation guide (docs/discussions/deepseek-v3-gb200-optimization, s1: 'the CPU kernel launch "
         "speed cannot keep up with the kernel execution speed'; CUDA graphs of the "
         "attention, router and preprocess remove their launches); Megatron-Core MoE "
         "README (grouped GEMM: one kernel for all local experts; sequential / multi-stream "
         "GEMMs: one launch per expert)",
         domain={"moe_layers": ">=0", "moe_layer_overhead_s": ">=0", "local_experts": ">=0",
                 "expert_overhead_s": ">=0", "full_recompute": "[0,1]"},
         symbols={"moe_layers": "l_m", "moe_layer_overhead_s": "t_m", "local_experts": "E_l",
                  "expert_overhead_s": "t_e", "full_recompute": "r"},
         result_latex="t_{h,moe}")
def moe_host_launch_time(moe_layers, moe_layer_overhead_s, local_experts, expert_overhead_s,
                         full_recompute):
    """Host time to issue the MoE-specific kernels of one micro-batch on a stage.

    Each MoE layer's forward costs t_m (router, top-k, permutation, the all-to-all and
    its token-count synchronisation) and t_e per local expert (its GEMM launches, 0 for a
    single grouped-GEMM kernel); the backward twice that, a full recompute once more,
    as :func:`formulas.compute.host_launch_time`.

    Parameters
    ----------
    moe_layers : numeric
        MoE layers of the stage l_m [1].
    moe_layer_overhead_s : numeric
        Host time of one MoE layer's forward beyond a dense layer's t_m [s].
    local_experts : numeric
        Routed experts on one rank E_l [1].
    expert_overhead_s : numeric
        Host time per local expert per forward t_e [s].
    full_recompute : numeric
        1 with full activation recomputation [1].

    Returns
    -------
    numeric
        Host time per micro-batch [s].

    Examples
    --------
    >>> round(moe_host_launch_time(8, 1e-3, 8, 50e-6, 0) * 1e3, 3)
    33.6

    .. math:: t_{h,moe} = l_m (3 + r)(t_m + E_l t_e)
    """
    return moe_layers * (3 + full_recompute) * (moe_layer_overhead_s
                                                + local_experts * expert_overhead_s)


@formula(reference="Lepikhin et al. 2020 (GShard), arXiv:2006.16668 (dispatch and combine "
         "all-to-alls around the experts); backward sends the gradients the opposite way: "
         "the dispatch's backward is a combine and the combine's a dispatch (DeepEP "
         "docs/legacy.md, dispatch_backward / combine_backward); a recomputed MoE layer "
         "runs its forward again in backward (Megatron-Core --recompute-modules moe: the "
         "MoE layer under tensor_parallel.checkpoint, megatron/core/transformer/moe/"
         "moe_layer.py)",
         domain={"dispatch_s": ">=0", "combine_s": ">=0", "recomputed": "[0,1]"},
         symbols={"dispatch_s": "T_d", "combine_s": "T_c", "recomputed": "r_m"},
         result_latex="T_{EP}")
def moe_layer_alltoall_time(dispatch_s, combine_s, recomputed=0):
    """All-to-all time of one MoE layer and micro-batch, forward and backward.

    Forward: a dispatch (tokens, in the dispatch precision) and a combine (expert
    outputs, BF16).  Backward: the combine's gradient goes out like a dispatch (DeepSeek-V3
    quantises it to FP8 too, arXiv:2412.19437 s3.3.3) and the dispatch's comes back like
    a combine.  A layer whose forward is recomputed in backward (``recomputed`` 1)
    dispatches and combines once more.

    Parameters
    ----------
    dispatch_s : numeric
        Time of one dispatch T_d [s].
    combine_s : numeric
        Time of one combine T_c [s].
    recomputed : numeric
        1 if the MoE layer's forward runs again in backward, r_m [1].

    Returns
    -------
    numeric
        All-to-all time per MoE layer and micro-batch [s].

    Examples
    --------
    >>> moe_layer_alltoall_time(1e-3, 2e-3)
    0.006
    >>> round(moe_layer_alltoall_time(1e-3, 2e-3, 1), 12)
    0.009

    .. math:: T_{EP} = (2 + r_m) (T_d + T_c)
    """
    return (2 + recomputed) * (dispatch_s + combine_s)


@formula(reference=DEEPSEEK_V3 + " s3.2.2 ('only 20 SMs are sufficient to fully utilize the "
         "bandwidths of IB and NVLink', of the H800's 132); DeepEP README (#SMs of the normal "
         "kernels: 24 in V1, 4-6 in V2 for V3-like training)",
         domain={"hidden_comm_s": ">=0", "sm_fraction": "[0,1)"},
         symbols={"hidden_comm_s": "T_h", "sm_fraction": "f_{sm}"},
         result_latex=r"\Delta t_{sm}")
def overlapped_comm_sm_time(hidden_comm_s, sm_fraction):
    """Compute time lost to the SMs an overlapped all-to-all occupies.

    An all-to-all hidden behind compute runs on SMs of its own (DeepEP, DualPipe): the
    compute it overlaps gets the other 1 - f of them, so each second of hidden
    communication stretches the compute under it by f / (1 - f).

    Parameters
    ----------
    hidden_comm_s : numeric
        Communication time hidden behind compute T_h [s].
    sm_fraction : numeric
        Share of the GPU's SMs the communication kernels occupy f_sm [1].

    Returns
    -------
    numeric
        Extra compute time [s].

    Examples
    --------
    DeepSeek-V3: 20 of 132 SMs, 1 s hidden:

    >>> round(overlapped_comm_sm_time(1.0, 20 / 132), 4)
    0.1786

    .. math:: \\Delta t_{sm} = T_h \\frac{f_{sm}}{1 - f_{sm}}
    """
    return hidden_comm_s * sm_fraction / (1 - sm_fraction)
