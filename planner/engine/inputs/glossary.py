"""The glossary of the run model: every input's name, unit, meaning and allowed values.

One table, :data:`GLOSSARY`, is the only place an input is described.  The run model's
input list (:data:`INPUTS`, in the kernel's argument order, read by the kernel generator,
the sympy model and the workbook), the domains checked before any kernel call
(:data:`INPUT_DOMAINS`, :mod:`planner.engine.inputs.domains`), the docs and the error messages are
all read from it.  Units are SI (s, B, FLOP, W, J, USD); ``"1"`` is a count or a ratio.

To add an input: one line here, then use it in :mod:`planner.engine.run.model` and run
``python -m planner.codegen``.  The layout's inputs are not written here: their lines are
read from the layout's declaration (:data:`planner.engine.inputs.layout_rules.DIMENSIONS`: its
meaning and allowed sizes), in its order.

>>> GLOSSARY["hbm_bytes"].unit, GLOSSARY["hbm_bytes"].domain.text
('B', 'a finite number > 0')
>>> list(INPUTS)[:3]
['layers', 'hidden', 'heads']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from formulas.core import domain_text, in_domain, number_in_domain
from planner.engine.inputs.layout_rules import (
    DIMENSIONS,
    MAX_GLOBAL_BATCH,
    MAX_GPUS,
    Dimension,
)

# ---- the kinds of allowed values -------------------------------------------------------

#: Largest model dimension (layers, hidden, heads, vocabulary, sequence length ...): 2**31.
MAX_DIM = 2**31
#: Largest token count D: 1e18, some 70,000x Llama 3's 15T (keeps FLOP counts far from overflow).
MAX_TOKENS = 1e18
#: Most simulated runs (``simulate --replicas``): a million (the default is 10,000).
MAX_REPLICAS = 10**6
#: Most Monte Carlo draws (``--uncertainty --draws``): 100,000, some 0.7 GB of kernel
#: inputs for one layout (the defaults are 2,000 and 400).
MAX_DRAWS = 10**5
#: Largest LoRA adapter rank: 65,536.  An adapter of rank r on a d x k matrix is low-rank
#: only while r < min(d, k) (Hu et al. 2021, arXiv:2106.09685 s4.1), and no model's
#: hidden size reaches 65,536 (Llama 3 405B: 16,384); a larger rank is a typo, not a run.
MAX_LORA_RANK = 2**16


@dataclass(frozen=True)
class Domain:
    """Allowed values: a :mod:`formulas.core` spec (``">0"``, ``"[0,1]"`` ...), whether
    only integers are allowed, and an optional inclusive upper bound."""

    spec: str
    integer: bool = False
    maximum: float | None = None
    minimum: float | None = None
    #: what 0 means when it is allowed below ``minimum`` (e.g. "Daly's optimum"); None: not
    zero: str | None = None

    @property
    def text(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        lower = f">= {number_text(self.minimum)}" if self.minimum is not None else \
            domain_text(self.spec)
        upper = f" and <= {number_text(self.maximum)}" if self.maximum is not None else ""
        either = f"0 ({self.zero}) or " if self.zero is not None else ""
        return f"{either}{kind} {lower}{upper}"

    def ok(self, values) -> np.ndarray:
        """True where ``values`` (a number or a numeric array) lie in the domain."""
        array = np.asarray(values, dtype=float)
        good = in_domain(self.spec, array)
        if self.integer:
            good &= np.floor(array) == array
        if self.maximum is not None:
            good &= array <= self.maximum
        if self.minimum is not None:
            good &= array >= self.minimum
        if self.zero is not None:
            good |= array == 0
        return good

    def ok_number(self, value: float) -> bool:
        """:meth:`ok` for one Python float, without numpy calls (the same rules)."""
        return (number_in_domain(self.spec, value)
                and (not self.integer or value.is_integer())
                and (self.maximum is None or value <= self.maximum)
                and (self.minimum is None or value >= self.minimum)) or (
                    self.zero is not None and value == 0)


def number_text(value) -> str:
    """An integer as digits (powers of two above 1024 as ``2**n``), a float as ``%g``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        value = int(value)
    if isinstance(value, int):
        if value > 1024 and value & (value - 1) == 0:
            return f"2**{value.bit_length() - 1}"
        if abs(value) >= 10**7:
            return f"{value:.3g}" if abs(value) < 10**300 else f"a {len(str(value))}-digit number"
        return str(value)
    return f"{value:g}"


POSITIVE = Domain(">0")
NON_NEGATIVE = Domain(">=0")
FRACTION = Domain("[0,1]")
EFFICIENCY = Domain("(0,1]")
FLAG = Domain("[0,1]", integer=True)
#: A fixed checkpoint interval [s]: 0 for Daly's optimum, else at least one second (the
#: interval is never shorter than one step; a positive value below 1 s, e.g. 1e-300,
#: would silently mean "every step" while 0 means the optimum).
CHECKPOINT_INTERVAL_S = Domain(">0", minimum=1.0, maximum=1e12, zero="Daly's optimum")
COUNT = Domain(">=1", integer=True, maximum=MAX_DIM)
COUNT0 = Domain(">=0", integer=True, maximum=MAX_DIM)
GPU_COUNT = Domain(">=1", integer=True, maximum=MAX_GPUS)
SHARDS = Domain(">=1", maximum=MAX_GPUS)

#: A bandwidth flag in GB/s: 1 kB/s to 1 EB/s.
BANDWIDTH_GBPS = Domain(">0", minimum=1e-6, maximum=1e9)


def dimension_domain(d: Dimension) -> Domain:
    """The values a layout dimension ``d`` may take: a switch 0 or 1, else an integer size
    from ``d.smallest`` to ``d.largest``."""
    if d.dtype == "bool":
        return FLAG
    if d.smallest in (0, 1):
        return Domain(f">={d.smallest}", integer=True, maximum=d.largest)
    return Domain(">=0", integer=True, minimum=d.smallest, maximum=d.largest)


# ---- the inputs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One input: its unit (SI; ``"1"`` for counts and ratios), what it means, and its
    allowed values."""

    unit: str
    meaning: str
    domain: Domain


#: Every run-model input, in the kernel's argument order.
GLOSSARY: dict[str, Term] = {
    # model
    "layers": Term("1", "transformer layers", COUNT),
    "hidden": Term("1", "hidden size h", COUNT),
    "heads": Term("1", "attention heads", COUNT),
    "kv_heads": Term("1", "key/value heads (GQA/MQA)", COUNT),
    "ffn": Term("1", "MLP inner size of dense layers", COUNT),
    "mlp_matrices": Term("1", "2 (GELU MLP) or 3 (gated: SwiGLU/GeGLU)", COUNT),
    "vocab": Term("1", "vocabulary size", COUNT),
    "seq_len": Term("1", "sequence length s", COUNT),
    "embedding_matrices": Term("1", "1 if input/output embeddings are tied, else 2", COUNT),
    "moe_layers": Term("1", "number of MoE layers (0 for dense models)", COUNT0),
    "experts": Term("1", "routed experts per MoE layer (1 for dense)", COUNT),
    "experts_per_token": Term("1", "routed experts per token", COUNT),
    "shared_experts": Term("1", "shared experts per MoE layer", COUNT0),
    "moe_ffn": Term("1", "inner size of one expert", COUNT),
    "dropout_masks": Term("1", "1 if the model trains with dropout (masks stored), 0 without",
                           FLAG),
    "tokens": Term("1", "training tokens D", Domain(">=1", maximum=MAX_TOKENS)),
    "critical_batch_tokens": Term(
        "1", "critical batch B_noise [tokens] beyond which a larger batch needs more tokens "
        "(default: Kaplan et al. 2020 eq. 5.3 at the model's L(N, D); formulas.batch)",
        POSITIVE),
    "reference_batch": Term("1", "global batch B_ref [sequences] with which the run needs "
                            "`tokens` (another batch needs more or fewer: formulas.batch)",
                            Domain(">=1", maximum=MAX_GLOBAL_BATCH)),
    "head_dim": Term("1", "query/key head size d_h (h/a unless set; MLA: qk_nope + qk_rope)",
                      COUNT),
    "v_head_dim": Term("1", "value head size d_v (d_h unless MLA sets it)", COUNT),
    "q_lora_rank": Term("1", "MLA query compression rank (0: full-rank queries)", COUNT0),
    "kv_lora_rank": Term("1", "MLA key/value compression rank (0: standard attention)", COUNT0),
    "qk_rope_head_dim": Term("1", "MLA decoupled RoPE key size (0 without MLA)", COUNT0),
    "window": Term("1", "sliding-window size w of the windowed layers [tokens]", COUNT),
    "window_layers": Term("1", "layers with sliding-window attention (0: none)", COUNT0),
    "mtp_layers": Term("1", "multi-token-prediction modules (DeepSeek-V3: 1)", COUNT0),
    "linear_attention_layers": Term(
        "1", "layers whose token mixer is gated linear attention (Gated DeltaNet; 0: none)",
        COUNT0),
    "linear_key_heads": Term("1", "query/key heads of the linear-attention layers", COUNT),
    "linear_value_heads": Term("1", "value heads of the linear-attention layers", COUNT),
    "linear_head_dim": Term("1", "key and value head size of the linear-attention layers",
                            COUNT),
    "moe_latent_dim": Term("1", "latent size the routed experts work in (LatentMoE; 0: hidden)",
                           COUNT0),
    "mamba_layers": Term("1", "layers whose token mixer is a Mamba-2 SSD layer (0: none)",
                         COUNT0),
    "mamba_heads": Term("1", "SSM heads of the Mamba-2 layers", COUNT),
    "mamba_head_dim": Term("1", "head size of the Mamba-2 layers", COUNT),
    "mamba_state_dim": Term("1", "state size N of the Mamba-2 layers", COUNT),
    "mamba_groups": Term("1", "groups sharing B and C in the Mamba-2 layers", COUNT),
    "mixer_free_layers": Term("1", "layers with an MLP and no token mixer (hybrid models)",
                              COUNT0),
    "mlp_free_layers": Term("1", "layers with a token mixer and no MLP (hybrid models)",
                            COUNT0),
    "routed_node_limit": Term(
        "1", "most nodes one token is routed to (node-limited routing; experts_per_token: no limit)",
        COUNT),
    "attention_sinks": Term("1", "1 if the softmax has learnable per-head sinks (GPT-OSS)",
                            FLAG),
    "attention_softcap": Term("1", "1 if the attention logits are soft-capped by tanh "
                              "before the softmax (Gemma 2)", FLAG),
    # layout: its dimensions the run model reads (layout_rules.DIMENSIONS), then what follows
    **{d.name: Term("1", d.meaning or d.label, dimension_domain(d))
       for d in DIMENSIONS if d.kernel},
    "stage_layers": Term("1", "layers on the fullest pipeline stage, ceil(layers / pp)", COUNT),
    "selective": Term(
        "1", "1 for selective recompute of the attention core (without flash attention)",
        FLAG),
    "attention_scores_stored": Term(
        "1", "1 if the s x s attention scores are kept (no flash/selective)",
        FLAG),
    "full_recompute": Term("1", "1 for full activation recompute", FLAG),
    "selective_option": Term("1", "1 when the layout asks for selective recompute (whatever "
                             "the attention kernel)", FLAG),
    "op_selective_recompute": Term(
        "1", "1 if the stack's selective recompute is op-level (torchtitan: every second "
        "matmul and the element-wise ops recomputed), 0 for the attention core only", FLAG),
    "recompute_early_stop": Term(
        "1", "1 if the stack's full activation checkpoint stops once the backward's last saved "
        "tensor is recomputed (PyTorch non-reentrant: a dense layer's down projection is not "
        "re-run), 0 if it re-runs the whole layer", FLAG),
    "shard_ranks": Term("1", "DP ranks sharing one copy of the ZeRO state (dp; fewer under HSDP)",
                         SHARDS),
    "weight_shards": Term("1", "shards of the weights (the shard group under ZeRO-3, else 1)",
                           SHARDS),
    "grad_shards": Term("1", "shards of the gradients (the shard group under ZeRO>=2, else 1)",
                         SHARDS),
    "optimizer_shards": Term("1", "shards of the optimizer state (the shard group under ZeRO>=1)",
                              SHARDS),
    "expert_weight_shards": Term("1", "shards of the routed experts' weights (edp under ZeRO-3)",
                                  SHARDS),
    "expert_grad_shards": Term("1", "shards of the routed experts' gradients (edp under ZeRO>=2)",
                                SHARDS),
    "expert_optimizer_shards": Term(
        "1", "shards of the routed experts' optimizer state (edp = tp*cp*dp/(etp*ep) under ZeRO>=1)",
        SHARDS),
    "zero3": Term("1", "1 under ZeRO-3/FSDP (parameters all-gathered each pass)", FLAG),
    "tp_intra_ranks": Term("1", "TP ranks inside one scale-up domain, min(tp, domain)", SHARDS),
    "pp_intra": Term("1", "1 if pipeline neighbours share the scale-up domain", FLAG),
    "ep_intra": Term("1", "1 if the EP group (etp*ep ranks) fits in the scale-up domain", FLAG),
    "cp_intra": Term("1", "1 if the CP group (with its TP ranks) fits in the scale-up domain",
                      FLAG),
    "dp_intra_ranks": Term("1", "DP ranks inside one scale-up domain", SHARDS),
    "replica_intra_ranks": Term("1", "HSDP replicas of one shard inside one scale-up domain",
                                 SHARDS),
    "expert_dp_ranks": Term("1", "ranks holding the same routed-expert shard (expert-data-"
                            "parallel group: TP CP DP / (ETP EP))", SHARDS),
    "expert_shard_ranks": Term("1", "expert-data-parallel ranks sharing one copy of the "
                               "experts' ZeRO state (fewer under HSDP)", SHARDS),
    "expert_dp_intra_ranks": Term("1", "expert-data-parallel ranks inside one scale-up "
                                  "domain (floor(domain / (ETP EP)))", SHARDS),
    # hardware
    "peak_flops_per_s": Term("FLOP/s", "dense peak at the chosen precision", POSITIVE),
    "attention_peak_flops_per_s": Term(
        "FLOP/s", "dense peak the fused attention core runs at (BF16 under FP8/FP4)",
        POSITIVE),
    "gemm_max_efficiency": Term("1", "fraction of peak reached by large GEMMs", EFFICIENCY),
    "cast_bytes_per_element": Term(
        "B", "HBM bytes the precision recipe moves to quantise one element of a GEMM input or "
        "output gradient (0 for 16-bit recipes)", NON_NEGATIVE),
    "attention_gemm_max_efficiency": Term(
        "1", "fraction of the attention peak reached by large GEMMs in the attention core's "
        "precision (BF16 under FP8/FP4 recipes)", EFFICIENCY),
    "gemm_half_efficiency_dim": Term("1", "GEMM dimension reaching half of that", NON_NEGATIVE),
    "grouped_gemm_tile_tokens": Term("1", "MoE grouped-GEMM tile rows along the tokens",
                                      Domain(">=1", maximum=4096)),
    "grouped_gemm_token_half_dim": Term(
        "1", "tokens per expert at which a grouped GEMM's per-tile costs halve its efficiency",
        NON_NEGATIVE),
    "grouped_gemm_inner_half_dim": Term(
        "1", "inner size at which a grouped GEMM's per-tile costs halve its efficiency",
        NON_NEGATIVE),
    "hbm_bytes": Term("B", "HBM capacity per GPU", POSITIVE),
    "hbm_bandwidth_bytes_per_s": Term("B/s", "HBM bandwidth", POSITIVE),
    "exp_ops_per_s": Term("1/s", "peak rate of the exponential unit the softmax runs on "
                          "(MUFU.EX2)", POSITIVE),
    "hbm_efficiency": Term("1", "achievable fraction of HBM bandwidth", EFFICIENCY),
    "scale_up_bandwidth_bytes_per_s": Term("B/s", "per-GPU scale-up link bandwidth", POSITIVE),
    "scale_up_bus_efficiency": Term("1", "achievable bus-bandwidth fraction, scale-up",
                                     EFFICIENCY),
    "scale_out_bandwidth_bytes_per_s": Term("B/s", "per-GPU network bandwidth", POSITIVE),
    "scale_out_bus_efficiency": Term("1", "achievable bus-bandwidth fraction, scale-out",
                                      EFFICIENCY),
    "intra_latency_s": Term("s", "per-message latency in the scale-up domain", NON_NEGATIVE),
    "inter_latency_s": Term("s", "per-message latency across nodes", NON_NEGATIVE),
    "gpus_per_node": Term("1", "GPUs per node", GPU_COUNT),
    "scale_up_domain_gpus": Term("1", "GPUs of one scale-up (NVLink) domain", GPU_COUNT),
    "host_launch_factor": Term("1", "host launch time relative to an x86 host (Grace: own)",
                                Domain(">0", maximum=100)),
    "idle_power_w": Term("W", "GPU idle power", NON_NEGATIVE),
    "max_power_w": Term("W", "GPU max (TDP) power", POSITIVE),
    "node_overhead_power_w": Term("W", "node power beyond the GPUs", NON_NEGATIVE),
    "network_power_per_node_w": Term("W", "switch power attributable to one node", NON_NEGATIVE),
    "storage_write_bytes_per_s_per_node": Term("B/s", "checkpoint write bandwidth per node",
                                                POSITIVE),
    "storage_read_bytes_per_s_per_node": Term("B/s", "checkpoint read bandwidth per node",
                                               POSITIVE),
    "host_copy_bytes_per_s_per_gpu": Term("B/s", "device-to-host copy bandwidth", POSITIVE),
    "price_usd_per_gpu_hour": Term("USD/h", "cloud price per GPU-hour", NON_NEGATIVE),
    "capex_usd_per_gpu": Term(
        "USD", "capital per GPU: its purchase price and its share of the node, network and storage",
        NON_NEGATIVE),
    "lifetime_s": Term("s", "depreciation lifetime", POSITIVE),
    "opex_fraction_per_year": Term("1", "yearly maintenance/opex as a fraction of capex",
                                    NON_NEGATIVE),
    "residual_value_fraction": Term("1", "resale value at the end of the life, share of capex",
                                     Domain("[0,1)")),
    "facility_usd_per_kw_month": Term("USD/kW month", "facility rent per kW of peak IT power",
                                       NON_NEGATIVE),
    "utilisation": Term("1", "share of an owned cluster's life doing paid work", Domain("(0,1]")),
    "embodied_kg_per_gpu": Term("kgCO2e", "embodied carbon per GPU (incl. node share)",
                                 NON_NEGATIVE),
    "compute_power_fraction": Term(
        "1", "GPU power above idle while computing, share of max - idle",
        FRACTION),
    "comm_power_fraction": Term("1", "GPU power above idle during exposed communication, share",
                                 FRACTION),
    "oversubscription": Term("1", "scale-out oversubscription above a pod (1 = non-blocking)",
                              Domain(">=1", maximum=1e3)),
    "pod_gpus": Term("1", "GPUs under one non-blocking pod of the scale-out network", GPU_COUNT),
    # site
    "pue": Term("1", "power usage effectiveness", Domain(">=1")),
    "electricity_usd_per_kwh": Term("USD/kWh", "electricity price", NON_NEGATIVE),
    "grid_intensity_g_per_kwh": Term("gCO2e/kWh", "grid carbon intensity", NON_NEGATIVE),
    "use_tco": Term("1", "1 to cost the run by TCO, 0 by cloud price", FLAG),
    # execution
    "bytes_per_element": Term("B", "bytes of an activation/weight element (2 for bf16)", POSITIVE),
    "weight_bytes_per_param": Term("B", "weight bytes per parameter", POSITIVE),
    "grad_bytes_per_param": Term("B", "gradient bytes per parameter", POSITIVE),
    "optimizer_bytes_per_param": Term("B", "optimizer-state bytes per parameter", NON_NEGATIVE),
    "grad_comm_bytes_per_param": Term("B", "bytes per parameter in the gradient reduction",
                                       POSITIVE),
    "checkpoint_bytes_per_param": Term("B", "checkpointed bytes per parameter", POSITIVE),
    "memory_reserve_bytes": Term(
        "B", "memory not available to the model (context, NCCL, allocator)",
        NON_NEGATIVE),
    "linear_input_bytes": Term(
        "B", "bytes per element of a Linear input kept for backward (FP8: 1)",
        POSITIVE),
    "recompute_mla_up_proj": Term("1", "1 if the MLA up-projections are recomputed in backward",
                                   FLAG),
    "recompute_norms": Term("1", "1 if the norms are recomputed in backward (outputs not kept)",
                             FLAG),
    "tp_overlap": Term("1", "fraction of TP communication hidden behind compute", FRACTION),
    "dp_overlap": Term("1", "share of what per-layer DP buckets could hide that is hidden",
                        FRACTION),
    "cp_overlap": Term("1", "fraction of CP ring exchange hidden behind attention", FRACTION),
    "ep_overlap": Term("1", "fraction of EP all-to-all hidden behind expert compute", FRACTION),
    "attention_efficiency_factor": Term("1", "attention-core efficiency relative to GEMMs",
                                         POSITIVE),
    "layer_overhead_s": Term("s", "host time of one layer forward's launches outside CUDA graphs",
                              NON_NEGATIVE),
    "cuda_graphs": Term("1", "CUDA-graph capture scope: 0 none, 1 per layer, 2 whole iteration",
                         Domain(">=0", integer=True, maximum=2)),
    "graph_launch_s": Term("s", "host time of one CUDA graph replay", NON_NEGATIVE),
    "host_overlap_exponent": Term("1", "sharpness of the smooth max of host and device time",
                                   POSITIVE),
    "attention_fill_keys": Term("1", "fused attention kernel's fixed cost per query tile, in "
                                "keys per query", NON_NEGATIVE),
    "attention_exp_overlap_exponent": Term(
        "1", "sharpness of the smooth max of a fused attention kernel's matmul and "
        "exponential time", Domain(">=1")),
    "collective_overhead_s": Term("s", "fixed time per collective call (launch, synchronisation)",
                                   NON_NEGATIVE),
    "fp8_dispatch": Term("1", "1 if MoE tokens are dispatched in FP8 under FP8 recipes", FLAG),
    "hierarchical_dispatch": Term(
        "1", "1 if the dispatcher sends a token once per domain, then NVLink (DeepEP/HybridEP)",
        FLAG),
    "deepep_dispatch": Term("1", "1 if the dispatcher runs DeepEP's kernels", FLAG),
    "deepep_scale_up_bytes_per_s": Term(
        "B/s", "DeepEP's measured intranode dispatch bandwidth per GPU on the part", POSITIVE),
    "a2a_efficiency_factor": Term(
        "1", "achieved all-to-all bandwidth over the nccl-tests bus bandwidth",
        Domain(">0", maximum=1.5)),
    "moe_layer_overhead_s": Term("s", "host time of an MoE layer's forward beyond a dense layer's",
                                  NON_NEGATIVE),
    "expert_overhead_s": Term("s", "host time per local expert per MoE layer forward",
                               NON_NEGATIVE),
    "comm_sm_fraction": Term("1", "share of SMs an overlapped EP all-to-all occupies",
                              Domain("[0,1)")),
    "dispatch_host_sync": Term(
        "1", "1 if the host waits for the routed token counts every MoE layer",
        FLAG),
    "dualpipe": Term("1", "1 if the pipeline runs DeepSeek's DualPipe schedule (else 1F1B)",
                     FLAG),
    "recompute_moe_act": Term(
        "1", "1 if the experts' activation-function output is recomputed in backward", FLAG),
    "recompute_mlp": Term(
        "1", "1 if each dense layer's MLP is recomputed in backward from its input", FLAG),
    "recompute_core_attn": Term(
        "1", "1 if selective recompute runs the attention core's forward again in backward "
        "(fused kernel included)", FLAG),
    "recompute_moe": Term(
        "1", "1 if each MoE layer (router, dispatch, experts, combine) is recomputed in "
        "backward from its input", FLAG),
    "fsdp_keeps_gathered_under_pp": Term(
        "1", "1 if FSDP under PP keeps each stage's gathered parameters and unsharded "
        "gradients through the step (one gather and one reduce-scatter a step)", FLAG),
    "remat_keeps_named_only": Term(
        "1", "1 if the stack's recompute policy keeps only the tensors it names (JAX: "
        "save_only_these_names) and recomputes the rest from the layer input; 0 if a "
        "recomputed module keeps its inputs (Megatron-Core)", FLAG),
    "dp_collectives_flat": Term(
        "1", "1 if the data-parallel (ZeRO) collectives run flat over the group, every GPU's "
        "bytes through its own scale-out link; 0 node-aware (hierarchical)", FLAG),
    "loss_extra_bytes_per_logit": Term(
        "B", "bytes a logit the loss holds beyond a fused FP32 cross-entropy's 4",
        Domain(">=0", maximum=16)),
    "offloaded_activation_vectors": Term(
        "1", "h-wide activation vectors a token and layer kept in host memory between the "
        "layer's forward and backward (activation offloading; 1: the layer input)",
        Domain(">=0", maximum=16)),
    "loss_bytes_per_logit": Term(
        "B", "HBM bytes one logit costs over the loss's passes, forward and backward",
        Domain(">=0", maximum=128)),
    "loss_logit_chunks": Term(
        "1", "sequence chunks the loss computes its logits in, one held at a time (1: all)",
        Domain(">=1", maximum=1 << 20)),
    "moe_act_input_bytes": Term(
        "B", "bytes per element of the stored expert activation-function input (FP8: 1)",
        Domain(">0", maximum=4)),
    "expert_load_cv": Term(
        "1", "coefficient of variation of an EP rank's routed load (0: forced balance)",
        NON_NEGATIVE),
    "elementwise_traffic_factor": Term(
        "1", "element-wise HBM traffic relative to fused kernels (eager PyTorch: more)",
        Domain(">=1", maximum=20)),
    "fused_window_attention": Term(
        "1", "1 if the fused attention kernel skips a sliding window's masked blocks", FLAG),
    "fused_attention_sinks": Term("1", "1 if the fused attention kernel implements sinks",
                                  FLAG),
    "fused_attention_softcap": Term(
        "1", "1 if the fused attention kernel soft-caps the logits", FLAG),
    "dp_bucket_min_params": Term("1", "smallest data-parallel gradient bucket in parameters "
                                 "(0: one bucket per layer)", Domain(">=0", maximum=1e12)),
    "dp_bucket_params_per_dp_rank": Term("1", "parameters a gradient bucket grows by per "
                                         "data-parallel rank", Domain(">=0", maximum=1e12)),
    "low_precision_output_layer": Term("1", "1 if the output layer runs at the recipe's low "
                                       "precision, 0 if it stays BF16", FLAG),
    "fused_head_dim_max": Term("1", "largest head size the fused attention kernel supports",
                               Domain(">=1", maximum=4096)),
    "attention_head_dim_granule": Term(
        "1", "head-size step of the fused attention kernel's tiles (others padded up)",
        Domain(">=1", maximum=4096)),
    "fused_split_head_dims": Term(
        "1", "1 if the fused attention kernel takes different q/k and v head sizes", FLAG),
    "attention_block_tokens": Term(
        "1", "tile edge of the fused attention kernel's query and key blocks in its forward "
        "(a tile the causal or window mask hides in part is computed whole)",
        Domain(">=1", maximum=65536)),
    "attention_block_tokens_bwd": Term(
        "1", "tile edge of the fused attention kernel's query and key blocks in its backward",
        Domain(">=1", maximum=65536)),
    "gemm_tile_dim": Term("1", "GEMM tile along the expert width (and tokens: see grouped_gemm_tile_tokens)",
                           Domain(">=1", maximum=4096)),
    "token_drop": Term(
        "1", "1 if tokens beyond the expert capacity are dropped and inputs padded to it (static shapes), 0 dropless",
        FLAG),
    "capacity_factor": Term("1", "expert capacity over the mean load under token dropping",
                             Domain(">0", maximum=64)),
    # reliability
    "gpu_mtbf_s": Term("s", "mean time between job-stopping failures per GPU", POSITIVE),
    "node_mtbf_s": Term("s", "mean time between job-stopping failures per node, beyond its GPUs",
                         POSITIVE),
    "storage_write_cap_bytes_per_s": Term("B/s", "aggregate checkpoint write bandwidth of storage",
                                           POSITIVE),
    "storage_read_cap_bytes_per_s": Term("B/s", "aggregate checkpoint read bandwidth of storage",
                                          POSITIVE),
    "restart_overhead_s": Term("s", "detect, re-queue and warm up after a failure", NON_NEGATIVE),
    "ckpt_sync": Term("1", "1 for synchronous checkpoints to storage", FLAG),
    "ckpt_async": Term("1", "1 for asynchronous snapshots to host memory", FLAG),
    "ckpt_in_memory": Term("1", "1 for in-memory copies to a peer", FLAG),
    "ckpt_gockpt": Term("1", "1 for GoCkpt: the snapshot spread over k steps with gradients",
                         FLAG),
    "gockpt_steps": Term("1", "most steps one GoCkpt checkpoint is spread over",
                          Domain(">=1", maximum=1e6)),
    "step_time_cv": Term("1", "coefficient of variation of a rank's iteration time", NON_NEGATIVE),
    "pause_probability": Term("1", "per-rank per-iteration probability of a pause", FRACTION),
    "pause_duration_s": Term("s", "length of such a pause", NON_NEGATIVE),
    "network_mtbf_s": Term("s", "mean time between job-stopping network faults per node",
                            POSITIVE),
    "rack_mtbf_s": Term("s", "mean time between failures of one rack (scale-up domain)", POSITIVE),
    "software_mtbf_s": Term("s", "mean time between size-independent software faults of a job",
                             POSITIVE),
    "software_internode_mtbf_s": Term(
        "s", "mean time between inter-node software faults (NCCL hangs, timeouts) of a two-node job",
        POSITIVE),
    "software_node_exponent": Term(
        "1", "growth of inter-node software faults with the nodes beyond the first",
        Domain("(0,1]")),
    "rack_nodes": Term("1", "nodes of one rack (scale-up domain); a rack failure takes all out",
                        Domain(">=1", maximum=MAX_GPUS)),
    "failure_detection_s": Term("s", "time to detect a failure and stop the job", NON_NEGATIVE),
    "requeue_restart_s": Term("s", "restart when no hot spare is healthy (wait for nodes)",
                               NON_NEGATIVE),
    "manual_restart_fraction": Term("1", "share of failures whose restart needs a person",
                                     FRACTION),
    "manual_restart_s": Term("s", "restart of a failure that needs manual intervention",
                              NON_NEGATIVE),
    "node_repair_s": Term("s", "time until a failed node is healthy again", NON_NEGATIVE),
    # -1: choose the optimal count per candidate (--spares auto)
    "spare_nodes": Term("1", "hot-spare nodes reserved for the job",
                         Domain("real", integer=True, minimum=-1, maximum=MAX_GPUS)),
    "gc_interval_s": Term("s", "mean time between unplanned GC pauses on one rank", POSITIVE),
    "gc_duration_s": Term("s", "length of one garbage collection", NON_NEGATIVE),
    "gc_planned": Term("1", "1 if every rank collects together (planned GC)", FLAG),
    "gc_planned_steps": Term("1", "steps between planned collections",
                              Domain(">=1", integer=True, maximum=MAX_DIM)),
    "stage_extra_layers": Term("1", "extra layer-equivalents on the slowest pipeline stage",
                                NON_NEGATIVE),
    "slow_node_fraction": Term("1", "share of nodes that are slow", FRACTION),
    "slow_node_slowdown": Term("1", "step-time factor of a slow node", Domain(">=1")),
    # run overheads and a fixed checkpoint interval (issue 26)
    "checkpoint_interval_fixed_s": Term(
        "s", "checkpoint interval fixed by the user; 0: Daly's optimum",
        CHECKPOINT_INTERVAL_S),
    "eval_fraction": Term("1", "evaluation time per unit of training time",
                           Domain("[0,1)", maximum=0.99)),
    "maintenance_fraction": Term("1", "share of calendar time down for planned maintenance",
                                  Domain("[0,1)", maximum=0.99)),
    "loss_spike_probability": Term("1", "probability per step of a loss spike needing a rollback",
                                    FRACTION),
    "rollback_steps": Term("1", "steps redone after a loss-spike rollback",
                            Domain(">=0", maximum=1e9)),
    # a reserved tier's commitment (issue 41)
    "commitment_term_s": Term("s", "committed term of a reserved price tier; 0: pay as you go",
                              Domain(">=0", maximum=1e10)),
    "commitment_reuse_fraction": Term("1", "share of the unused committed term resold or reused",
                                      FRACTION),
    # the training method (planner.engine.inputs.method; issue 43)
    "frozen_base": Term("1", "1 if the base weights are frozen (LoRA, QLoRA)", FLAG),
    "lora_rank": Term("1", "rank of the LoRA adapters (0: none)",
                      Domain(">=0", integer=True, maximum=MAX_LORA_RANK)),
    "lora_q": Term("1", "1 if the query projection has a LoRA adapter", FLAG),
    "lora_k": Term("1", "1 if the key projection has a LoRA adapter", FLAG),
    "lora_v": Term("1", "1 if the value projection has a LoRA adapter", FLAG),
    "lora_o": Term("1", "1 if the attention output projection has a LoRA adapter", FLAG),
    "lora_gate": Term("1", "1 if the MLP gate projection has a LoRA adapter", FLAG),
    "lora_up": Term("1", "1 if the MLP up projection has a LoRA adapter", FLAG),
    "lora_down": Term("1", "1 if the MLP down projection has a LoRA adapter", FLAG),
    "base_weight_bytes_per_param": Term(
        "B", "bytes per frozen base weight (BF16 2, FP8 1, NF4 ~0.52)", POSITIVE),
    "dequantize_base": Term("1", "1 if the base is dequantised before every use (QLoRA)",
                             FLAG),
    "reference_model": Term("1", "1 if a frozen reference model runs a forward pass (DPO)",
                             FLAG),
    "token_efficiency": Term("1", "real tokens per processed token (padding: < 1)",
                              Domain("(0,1]")),
}

#: The run model's inputs: name -> (unit, meaning), in the kernel's argument order.
INPUTS: dict[str, tuple[str, str]] = {
    name: (term.unit, term.meaning) for name, term in GLOSSARY.items()}

#: The domain of every run-model input.
INPUT_DOMAINS: dict[str, Domain] = {name: term.domain for name, term in GLOSSARY.items()}
